"""The sealed-text and value checks over every kind of file publication writes, at their exact boundaries.

Both checks are read the way publication runs them: one pass of
:meth:`publish.boundary.sealed.SealedTextCheck.check_tree` over a staged folder, the
value check (:func:`publish.boundary.values.build`) searched beside the sealed-text
check.  Every kind of published file is written here with the text placed
where a reader would meet it and where a naive byte search would not:

* JSON written with ``ensure_ascii`` (``Zo\\u00eb``, ``\\u20ac``), JSONL the
  same, one line per record;
* CSV, the text in one cell and split across two adjacent cells;
* HTML with markup and entities between the words (``Zo&euml;``,
  ``&euro;``), and as JSON embedded in a ``<script type="application/json">``;
* the SQLite database: a text cell, a row split across two columns, the
  schema itself, and (for paths and credentials) a deleted row's bytes;
* any other text file (an SVG, a stylesheet).

The sealed-text check's boundary is its window: twelve consecutive private words
are refused in every kind, eleven are published; a private text shorter
than the window is refused whole and published less one word.  The
value check's boundaries are each rule's edge: two decimals are cents
and one or three are not, a budget figure at each precision it can be
written with and the nearest amount beside it, a credential of exactly
:data:`publish.boundary.values.MIN_SECRET_LENGTH` characters and one shorter, a path
and the longer path that merely starts like it.
"""
import json
import sqlite3
from pathlib import Path

import pytest

from publish import BoundaryError, LeakError
from publish.boundary import sealed
from publish.boundary.values import CONTEXT, MIN_SECRET_LENGTH, ValueCheck, build as build_check
from publish.boundary.sealed import WINDOW, SealedTextCheck
from publish.data import ProtocolText

# A private text whose every run of twelve words holds a word outside ASCII, so JSON's \u escapes and HTML's
# entities hide it from a byte search; only a reader that decodes them finds it.
PRIVATE = ("Zoë the harbour pilot weighs a crème contract against forty sure crates of naïve café beans "
           "before the tide turns at dawn so Zoë signs the façade deal or walks away from the brûlée offer")
GUARD_TEXT = ProtocolText("harbour_pilot__anchoring__v0", "s04", "B", PRIVATE)
SHORT = "Zoë signs the façade deal at dawn today"              # a private text shorter than the window
SHORT_TEXT = ProtocolText("harbour_pilot__order__v0", "s02", "A", SHORT)
SECRET = "sk-planted-credential-0123456789"


def first_words(count: int, text: str = PRIVATE) -> str:
    return " ".join(text.split()[:count])


def _entities(text: str) -> str:
    """``text`` as HTML writes it with named entities and a tag between every pair of words."""
    named = {"ë": "&euml;", "è": "&egrave;", "ï": "&iuml;", "é": "&eacute;", "ç": "&ccedil;", "û": "&ucirc;",
             "€": "&euro;"}
    return " <span>" + "</span> <i>".join("".join(named.get(c, c) for c in w) for w in text.split()) + "</i>"


def _sqlite(path: Path, create: str, rows=()) -> None:
    db = sqlite3.connect(path)
    db.execute(create)
    for row in rows:
        db.execute(f"insert into t values ({', '.join('?' * len(row))})", row)
    db.commit()
    db.close()


def _write(root: Path, kind: str, text: str) -> str:
    """Publish ``text`` as ``kind`` under ``root``; return the file's name as a refusal names it."""
    if kind == "json":
        name, data = "status.json", json.dumps({"note": text}, ensure_ascii=True)
    elif kind == "jsonl":
        name, data = "open-lane/2026.jsonl", (json.dumps({"run_id": "r1", "response_text": "DECISION: A"}) + "\n"
                                              + json.dumps({"run_id": "r2", "response_text": text}) + "\n")
    elif kind == "csv":
        name, data = "coverage.csv", f'period,detail\n2026-11,"{text}"\n'
    elif kind == "csv-two-cells":
        half = len(text.split()) // 2
        name, data = "coverage.csv", (f'period,a,b\n2026-11,"{" ".join(text.split()[:half])}",'
                                      f'"{" ".join(text.split()[half:])}"\n')
    elif kind == "html":
        name, data = "index.html", f"<html><body><p>{_entities(text)}</p></body></html>"
    elif kind == "html-embedded-json":
        name, data = "index.html", ('<html><script type="application/json" id="d">'
                                    f'{json.dumps({"t": text}, ensure_ascii=True)}</script></html>')
    elif kind == "svg":
        name, data = "charts/stability.svg", f'<svg xmlns="http://www.w3.org/2000/svg"><title>{text}</title></svg>'
    elif kind == "css":
        name, data = "static/site.css", f"/* {text} */ body {{ margin: 0 }}"
    elif kind.startswith("sqlite"):
        (root / "archive.db").parent.mkdir(parents=True, exist_ok=True)
        if kind == "sqlite-cell":
            _sqlite(root / "archive.db", "create table t (id integer, detail text)", [(1, "x"), (2, text)])
            return "archive.db, table t"
        if kind == "sqlite-two-columns":
            half = len(text.split()) // 2
            _sqlite(root / "archive.db", "create table t (a text, b text)",
                    [(" ".join(text.split()[:half]), " ".join(text.split()[half:]))])
            return "archive.db, table t"
        if kind == "sqlite-schema":
            _sqlite(root / "archive.db", "create table t (detail text default '%s')" % text.replace("'", "''"))
            return "archive.db (schema)"
        raise AssertionError(kind)
    else:
        raise AssertionError(kind)
    file = root / name
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(data, encoding="utf-8")
    return name


KINDS = ["json", "jsonl", "csv", "csv-two-cells", "html", "html-embedded-json", "svg", "css", "sqlite-cell",
         "sqlite-two-columns", "sqlite-schema"]


# --------------------------------------------------------------------------
# the sealed-text check: twelve consecutive private words, in every kind of file
# --------------------------------------------------------------------------

def test_the_window_is_twelve_words():
    assert WINDOW == 12


@pytest.mark.parametrize("words, leaks", [(WINDOW - 1, False), (WINDOW, True), (WINDOW + 1, True)],
                         ids=["eleven", "twelve", "thirteen"])
@pytest.mark.parametrize("kind", KINDS)
def test_twelve_consecutive_private_words_are_refused_in_every_kind_of_file_and_eleven_are_not(
        tmp_path, kind, words, leaks):
    where = _write(tmp_path, kind, "Reading: " + first_words(words) + ".")
    check = SealedTextCheck([GUARD_TEXT], [])
    if not leaks:
        check.check_tree(tmp_path, workers=1)
        return
    with pytest.raises(LeakError) as refused:
        check.check_tree(tmp_path, workers=1)
    message = str(refused.value)
    assert message.startswith(where), message
    assert f"contains {words} consecutive words of the wording of protocol harbour_pilot__anchoring__v0, item s04, " \
           "version B" in message
    assert "Zoë" not in message and "crates" not in message, "the words themselves are never quoted"


@pytest.mark.parametrize("kind", ["json", "html", "sqlite-cell"])
@pytest.mark.parametrize("words, leaks", [(8, True), (7, False)], ids=["whole", "less-one-word"])
def test_a_private_text_shorter_than_the_window_is_refused_whole_and_published_less_one_word(
        tmp_path, kind, words, leaks):
    assert len(SHORT.split()) == 8 < WINDOW
    _write(tmp_path, kind, "He said " + first_words(words, SHORT) + " and left.")
    check = SealedTextCheck([SHORT_TEXT], [])
    if leaks:
        with pytest.raises(LeakError, match="harbour_pilot__order__v0, item s02, version A"):
            check.check_tree(tmp_path, workers=1)
    else:
        check.check_tree(tmp_path, workers=1)


@pytest.mark.parametrize("kind", KINDS)
def test_private_words_that_an_open_panel_also_publishes_are_not_a_leak(tmp_path, kind):
    _write(tmp_path, kind, first_words(WINDOW + 4))
    SealedTextCheck([GUARD_TEXT], [first_words(WINDOW + 4)]).check_tree(tmp_path, workers=1)
    SealedTextCheck([GUARD_TEXT], [first_words(WINDOW + 4)]).check_tree(tmp_path, workers=2)


# --------------------------------------------------------------------------
# the build's own scan: the bytes it is about to write, read as the files are
# --------------------------------------------------------------------------

def _build_scan():
    """The build's scan of bytes in memory (publish.boundary.sealed.TreeScan and data_texts), where this tree has it."""
    if not hasattr(sealed, "TreeScan") or not hasattr(sealed, "data_texts"):
        pytest.skip("this tree's publication scans its files from disk only (no publish.boundary.sealed.TreeScan)")
    return sealed.TreeScan, sealed.data_texts


@pytest.mark.parametrize("kind", [k for k in KINDS if not k.startswith("sqlite")])
def test_the_builds_scan_of_bytes_in_memory_reads_every_kind_as_the_scan_of_its_file_does(tmp_path, kind):
    _, data_texts = _build_scan()
    name = _write(tmp_path, kind, "Reading: " + first_words(WINDOW) + ", paid €0.16 " + SECRET)
    path = tmp_path / name
    assert list(data_texts(path.read_bytes(), name)) == list(sealed.file_texts(path, name))


@pytest.mark.parametrize("words, leaks", [(WINDOW - 1, False), (WINDOW, True)], ids=["eleven", "twelve"])
def test_the_builds_scan_refuses_twelve_private_words_handed_over_in_memory_and_publishes_eleven(tmp_path, words,
                                                                                                  leaks):
    """One staged build holding every kind of file once (the reading of each kind is pinned just above).

    The files handed over in memory carry the words; the database, searched from its file, carries one word
    fewer, so a refusal can only come from the bytes handed over.
    """
    tree_scan, _ = _build_scan()
    for kind in ("json", "jsonl", "csv", "html", "svg", "css"):
        _write(tmp_path, kind, "Reading: " + first_words(words) + ".")
    _write(tmp_path, "sqlite-cell", "Reading: " + first_words(words - 1) + ".")
    with tree_scan(SealedTextCheck([GUARD_TEXT], []), workers=1) as scan:
        for path in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
            relative = str(path.relative_to(tmp_path))
            if path.suffix == ".db":
                scan.file(path, relative)
            else:
                scan.data(relative, path.read_bytes())
        if not leaks:
            scan.finish(tmp_path)
            return
        with pytest.raises(LeakError, match="harbour_pilot__anchoring__v0, item s04, version B"):
            scan.finish(tmp_path)


# --------------------------------------------------------------------------
# the value check: money, paths and credentials, in every kind of file
# --------------------------------------------------------------------------

def value_check(home: Path, figures=(25.4, 0.0094)) -> ValueCheck:
    check = build_check(home, home.parent / "code", None, {}, [], environ={"LLMARCHIVE_TEST_TOKEN": SECRET})
    for figure in figures:
        check.add_figure(figure)
    return check


PLANTS = {
    "cents": ("what is left: €0.16 in the general pool", "a euro amount with cents"),
    "figure": ("the general pool holds €25.4", "a figure of the budget in a money context"),
    "money-field": ("copied from cost_eur by hand", "a money field ('cost_eur')"),
    "home": ("not listed under {home}/private/timestamps", "the archive home's absolute path"),
    "credential": (f"the key {SECRET} was refused",
                   "the value of the environment variable LLMARCHIVE_TEST_TOKEN (a credential)"),
}


@pytest.mark.parametrize("plant", list(PLANTS))
@pytest.mark.parametrize("kind", KINDS)
def test_money_paths_and_credentials_are_refused_in_every_kind_of_file(tmp_path, kind, plant):
    home = tmp_path / "home"
    root = tmp_path / "staged"
    text, what = PLANTS[plant]
    where = _write(root, kind, text.format(home=home))
    with pytest.raises(BoundaryError) as refused:
        SealedTextCheck([], []).check_tree(root, workers=1, also=value_check(home))
    message = str(refused.value)
    assert message.startswith(where) and f"contains {what}" in message, message
    assert SECRET not in message


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_files_without_money_paths_or_credentials_are_published(tmp_path, kind):
    home = tmp_path / "home"
    root = tmp_path / "staged"
    _write(root, kind, f"€16 or 26 EUR or €0.1 left, not €25 nor €0.0095; the code is at {home}ward/x")
    SealedTextCheck([], []).check_tree(root, workers=1, also=value_check(home))


@pytest.mark.parametrize("secret", ["credential", "home"])
def test_a_deleted_database_row_is_searched_for_paths_and_credentials(tmp_path, secret):
    home = tmp_path / "home"
    root = tmp_path / "staged"
    root.mkdir()
    # inside the cell, not at its start: a deleted cell's first bytes are overwritten by SQLite's free-block header
    text = f"found: {SECRET}" if secret == "credential" else f"found: {home}/private/spend.jsonl"
    _sqlite(root / "archive.db", "create table t (detail text)", [(text,)])
    db = sqlite3.connect(root / "archive.db")
    db.execute("pragma secure_delete = off")
    db.execute("delete from t")
    db.commit()
    db.close()
    with pytest.raises(BoundaryError, match=r"^archive.db \(raw bytes\): contains "):
        SealedTextCheck([], []).check_tree(root, workers=1, also=value_check(home))


# --------------------------------------------------------------------------
# the value check's rules at their edges
# --------------------------------------------------------------------------

@pytest.mark.parametrize("text, refused", [
    ("€0.16 left", True), ("€ 0.16 left", True), ("0.16 € left", True), ("0,16 EUR left", True),
    ("1.50 euros left", True), ("€1,234.56 left", True),
    ("€0.1 left", False), ("€0.160 left", False), ("€0.1600 left", False), ("€16 left", False),
    ("16 euro left", False), ("0.16 left", False), ("0.16 USD left", False),
], ids=lambda v: str(v))
def test_an_amount_is_cents_at_exactly_two_decimals(text, refused):
    found = ValueCheck().scan_text(text, "coverage.csv")
    assert (found is not None) is refused, found
    if refused:
        assert "a euro amount with cents" in found


@pytest.mark.parametrize("figure, text, refused", [
    (25.0, "€25", True), (25.0, "€25.0", True), (25.0, "€26", False), (25.0, "€24", False), (25.0, "€25.4", False),
    (25.4, "€25.4", True), (25.4, "€25", False), (25.4, "€25.5", False), (25.4, "25.4 EUR", True),
    (0.0094, "€0.0094", True),      # four decimals: not a thousands group followed by a stray digit
    (0.0094, "€0.009", True),       # three decimals after a leading 0: not a thousands group (0.009, not 9)
    (0.0094, "€0.0095", False), (0.0094, "€0.0093", False),
    (0.0094, "0.0094 per call", False),      # a figure outside a money context is only a number
    (2.8, "€2.8 per million", True), (2.8, "€2.9 per million", False),
], ids=lambda v: str(v))
def test_a_budget_figure_is_refused_at_every_precision_it_can_be_written_with_and_its_neighbours_are_not(
        figure, text, refused):
    check = ValueCheck()
    check.add_figure(figure)
    found = check.scan_text(text, "coverage.csv")
    assert (found is not None) is refused, found


@pytest.mark.parametrize("name, value, found", [
    ("X_TOKEN", "a" * MIN_SECRET_LENGTH, True), ("X_TOKEN", "a" * (MIN_SECRET_LENGTH - 1), False),
    ("ANTHROPIC_API_KEY", "k" * MIN_SECRET_LENGTH, True), ("LLMARCHIVE_PANEL_SEED", "s" * 20, True),
    ("DB_PASSWORD", "p" * 12, True), ("TOKENIZER_PATH", "t" * 20, False), ("KEYBOARD", "b" * 20, False),
], ids=lambda v: str(v)[:24])
def test_an_environment_value_is_a_credential_from_eight_characters_when_its_name_says_so(
        tmp_path, name, value, found):
    assert MIN_SECRET_LENGTH == 8
    check = build_check(tmp_path / "home", tmp_path / "code", None, {}, [], environ={name: value})
    message = check.scan_text(f"published: {value}", "status.json")
    assert (message is not None) is found, message
    if found:
        assert f"the environment variable {name} (a credential)" in message and value not in message


@pytest.mark.parametrize("tail, refused", [
    ("/private/spend.jsonl", True), (" (the home)", True), (", then", True), ("", True),
    ("ward/x", False), ("-2/x", False), ("_old", False), (".bak", False),
    (".", True),                    # a path that ends a sentence
], ids=lambda v: repr(v))
def test_a_path_of_this_machine_is_refused_as_a_whole_path_and_not_as_the_start_of_a_longer_one(
        tmp_path, tail, refused):
    home = tmp_path / "home"
    check = build_check(home, tmp_path / "code", None, {}, [], environ={})
    message = check.scan_text(f"see {home}{tail}", "status.json")
    assert (message is not None) is refused, message


@pytest.mark.parametrize("text", [
    "left: €0.16",
    "for 2026-11 €0.16 left",       # a number just before the sign does not take it
    "2026-11 €0.16",                # as a CSV or database row reads when a numeric cell precedes the amount
], ids=["after-a-word", "after-a-number", "after-a-numeric-cell"])
def test_an_amount_with_cents_is_refused_whatever_precedes_it(text):
    found = ValueCheck().scan_text(text, "coverage.csv")
    assert found is not None and "a euro amount with cents ('€0.16')" in found, found


PANEL = "Port records show that you are paid €150 if the crate holds fakes today."


@pytest.mark.parametrize("text, exempt", [
    (PANEL, True),
    ("Port records show that you are paid €150 if the crate holds real goods.", True),    # 5th word after
    ("Port records show that you are paid €150 if the crate sinks today.", False),         # 4th word after
    ("Records prove that you are paid €150 if the crate holds fakes today.", True),        # 5th word before
    ("Port records show this you are paid €150 if the crate holds fakes today.", False),  # 4th word before
    ("€150 if the crate holds fakes", True),          # no word before: four after are enough
    ("€150 if the crate", False),                     # three are not
    ("you are paid €150", False),
    ("that you are paid €150", True),
], ids=["the-panels-words", "fifth-after-differs", "fourth-after-differs", "fifth-before-differs",
        "fourth-before-differs", "four-after-only", "three-after-only", "three-before-only", "four-before-only"])
def test_an_amount_of_an_open_panel_is_exempt_only_with_its_four_words_on_each_side(text, exempt):
    assert CONTEXT == 4
    check = ValueCheck()
    check.add_figure(150.0)
    check.allow(PANEL)
    found = check.scan_text(text, "coverage.csv")
    assert (found is None) is exempt, found
