"""The sealed-text check: guard and sealed wording never reaches a published byte."""
import html
import json
import sqlite3

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from panels.instruction import INSTRUCTION
from panels.template import words as panel_words
from publish import LeakError, publish_all
from publish.site import pages
from publish.boundary.sealed import _WORD, SealedTextCheck, words
from publish.data import ProtocolText
from tests import publish_helpers as ph

BUILD = "2026-12-03T00:00:00Z"
GUARD_ID = "risky_choice_framing__anchoring__v0"


def guard_words(archive, item_index=3, version="B"):
    text = ph.protocol(archive, GUARD_ID)["panel"][item_index]["versions"][version]
    body = text[: len(text) - len(INSTRUCTION)] if text.endswith(INSTRUCTION) else text
    return body.split()


def test_a_planted_twelve_word_run_in_an_open_trial_is_refused_and_nothing_is_written(archive):
    open_protocol = ph.protocol(archive, "risky_choice_framing__wording__v0")
    ph.write_run(archive, open_protocol, "clean", "2026-10-02")
    publish_all(archive, build_time=BUILD)
    before = {p.name: p.read_bytes() for p in archive.public.iterdir() if p.is_file()}

    leaked = " ".join(guard_words(archive)[10:22])
    ph.write_run(archive, open_protocol, "leaky", "2026-11-02",
                 response=f"It reminds me of this: {leaked}.\nDECISION: A")
    with pytest.raises(LeakError) as caught:
        publish_all(archive, build_time="2026-12-04T00:00:00Z")
    message = str(caught.value)
    assert ("open-lane/2026.jsonl" in message or "table open_lane_trials" in message)
    assert GUARD_ID in message and "item s04" in message and "version" in message
    assert leaked not in message and " ".join(leaked.split()[:4]) not in message
    after = {p.name: p.read_bytes() for p in archive.public.iterdir() if p.is_file()}
    assert after == before
    assert not [p for p in archive.home.iterdir() if p.name.startswith(".publish-staging")]


def test_eleven_consecutive_words_are_not_a_leak(archive):
    open_protocol = ph.protocol(archive, "risky_choice_framing__wording__v0")
    eleven = " ".join(guard_words(archive)[10:21])
    response = f"{eleven}\nDECISION: A"
    ph.write_run(archive, open_protocol, "near", "2026-10-02", response=response)
    publish_all(archive, build_time=BUILD)
    # Not only refused nothing: the eleven words are published, in the open-lane file and the database.
    lines = (archive.public / "open-lane" / "2026.jsonl").read_text(encoding="utf-8").splitlines()
    published = [json.loads(line)["response_text"] for line in lines if json.loads(line)["run_id"] == "near"]
    assert len(published) == open_protocol["n"] * 4 and set(published) == {response}
    db = sqlite3.connect(archive.public / "archive.db")
    try:
        rows = db.execute("select response_text from open_lane_trials where run_id = 'near'").fetchall()
    finally:
        db.close()
    assert len(rows) == len(published) and {r for (r,) in rows} == {response}


def test_a_leak_disguised_by_case_punctuation_and_markup_in_a_record_is_refused(archive):
    run = guard_words(archive, item_index=7, version="A")[5:19]
    disguised = " , ".join(w.upper() for w in run).replace("THE", "<b>the</b>")
    # A model id is the provider's text, published as recorded: the check reads it like any other byte.
    ph.add_record(archive, "subject_model", date="2026-11-15", model_family="claude-sonnet", model_id=disguised,
                  previous_model_id="claude-sonnet-5", declared_by="models_endpoint")
    with pytest.raises(LeakError, match=r"risky_choice_framing__anchoring__v0, item s08"):
        publish_all(archive, build_time=BUILD)


def test_a_whole_guard_text_in_the_site_prose_is_refused(archive, monkeypatch):
    text = ph.protocol(archive, "sunk_cost_fallacy__default__v0")["panel"][0]["versions"]["C"]
    monkeypatch.setattr(pages, "VALUE", pages.VALUE + f'<pre class="scenario">{html.escape(text)}</pre>')
    with pytest.raises(LeakError, match=r"index.html.*sunk_cost_fallacy__default__v0, item s01"):
        publish_all(archive, build_time=BUILD)


def test_open_wording_and_the_shared_instruction_are_not_leaks(archive):
    open_protocol = ph.protocol(archive, "base_rate_neglect__wording__v0")
    echoed = open_protocol["panel"][5]["versions"]["B"]
    ph.write_run(archive, open_protocol, "echo", "2026-10-02", response=echoed + "\nDECISION: A")
    publish_all(archive, build_time=BUILD)
    page = (archive.public / "index.html").read_text()
    assert html.escape(INSTRUCTION).split("\n")[0] in page
    first = open_protocol["panel"][0]["versions"]["A"]
    assert html.escape(first.split("\n")[0]) in page


def test_no_private_run_of_twelve_words_is_in_any_published_byte(archive):
    """An independent check of a clean build: brute-force 12-grams over every file, the database by value."""
    from llmarchive.protocols import registry

    ph.populate(archive)
    publish_all(archive, build_time=BUILD)
    protocols = registry.load_all(archive)
    public_grams = set()
    for p in protocols:
        if p["lane"] == "open":
            for item in p["panel"]:
                for text in item["versions"].values():
                    w = panel_words(text)
                    public_grams.update(tuple(w[i:i + 12]) for i in range(len(w) - 11))
    w = panel_words(INSTRUCTION)
    public_grams.update(tuple(w[i:i + 12]) for i in range(len(w) - 11))
    private = set()
    for p in protocols:
        if p["lane"] != "open":
            for item in p["panel"]:
                for text in item["versions"].values():
                    w = panel_words(text)
                    private.update(tuple(w[i:i + 12]) for i in range(len(w) - 11))
    private -= public_grams
    assert len(private) > 10000

    # The open panels' full wording is among the files read (issue 20): every byte of them too.
    assert sorted(p.name for p in (archive.public / "panels").glob("*.json")) == [
        "base_rate_neglect__wording__v0.json", "risky_choice_framing__wording__v0.json"]
    texts = []
    for path in archive.public.rglob("*"):
        if not path.is_file():
            continue
        if path.suffix == ".db":
            db = sqlite3.connect(path)
            for (table,) in db.execute("select name from sqlite_master where type = 'table'"):
                for row in db.execute(f'select * from "{table}"'):
                    texts.extend(str(v) for v in row if isinstance(v, str))
        else:
            raw = path.read_text(encoding="utf-8")
            texts.append(raw)
            texts.append(html.unescape(raw))
            values = [json.loads(raw)] if path.suffix == ".json" else (
                [json.loads(line) for line in raw.splitlines() if line.strip()] if path.suffix == ".jsonl" else [])
            texts.extend(json.dumps(v, ensure_ascii=False).replace("\\n", " ") for v in values)
    for text in texts:
        w = panel_words(text)
        found = {tuple(w[i:i + 12]) for i in range(len(w) - 11)} & private
        assert not found


def test_the_sealed_text_check_finds_a_run_that_straddles_two_fields(archive):
    words = guard_words(archive, item_index=2, version="A_prime")[0:12]
    check = SealedTextCheck([ProtocolText("g", "s03", "A_prime", " ".join(guard_words(archive, 2, "A_prime")))], [])
    row = ",".join(['"' + " ".join(words[:6]) + '"', '"' + " ".join(words[6:]) + '"'])
    path = archive.home / "straddle.csv"
    path.write_text("a,b\n" + row + "\n")
    with pytest.raises(LeakError, match="straddle.csv"):
        check.check_file(path)


# --- the open panels in full (issue 20) -----------------------------------------------------------

OPEN_ID = "risky_choice_framing__wording__v0"


def test_an_open_panel_file_shares_its_guard_twins_lotteries_never_a_twelve_word_run(archive):
    """Byte for byte: the published panel holds the twin's numbers (by design) and none of its wording."""
    publish_all(archive, build_time=BUILD)
    for open_id in ("risky_choice_framing__wording__v0", "base_rate_neglect__wording__v0"):
        raw = (archive.public / "panels" / f"{open_id}.json").read_text(encoding="utf-8")
        doc = json.loads(raw)
        twin = ph.protocol(archive, doc["twin_id"])
        assert twin["lane"] == "guard"
        assert [i["structure"]["lotteries"] for i in doc["panel"]] == [i["structure"]["lotteries"] for i in twin["panel"]]
        public = set()
        for text in [t for i in doc["panel"] for t in i["versions"].values()] + [INSTRUCTION]:
            w = panel_words(text)
            public.update(tuple(w[k:k + 12]) for k in range(len(w) - 11))
        private = set()
        for item in twin["panel"]:
            for text in item["versions"].values():
                w = panel_words(text)
                private.update(tuple(w[k:k + 12]) for k in range(len(w) - 11))
        private -= public
        assert len(private) > 1000
        for text in (raw, " ".join(t for i in doc["panel"] for t in i["versions"].values())):
            w = panel_words(text)
            assert not {tuple(w[k:k + 12]) for k in range(len(w) - 11)} & private
        assert twin["panel"][0]["versions"]["A"].split("\n")[0] not in raw


def test_guard_wording_planted_in_an_open_panel_file_is_refused_and_nothing_is_written(archive, monkeypatch):
    from llmarchive.protocols import open_panels

    publish_all(archive, build_time=BUILD)
    before = {p.relative_to(archive.public).as_posix(): p.read_bytes() for p in archive.public.rglob("*")
              if p.is_file()}
    leaked = " ".join(guard_words(archive, item_index=9, version="C")[4:18])
    real = open_panels.panel_file

    def planted(protocol):
        doc = real(protocol)
        if doc["protocol_id"] == OPEN_ID:
            doc["how_to_send"]["note"] = leaked   # outside every hash: the file would still verify
        return doc

    monkeypatch.setattr(open_panels, "panel_file", planted)
    with pytest.raises(LeakError) as caught:
        publish_all(archive, build_time="2026-12-04T00:00:00Z")
    message = str(caught.value)
    assert f"panels/{OPEN_ID}.json" in message and f"{GUARD_ID}, item s10" in message and leaked not in message
    after = {p.relative_to(archive.public).as_posix(): p.read_bytes() for p in archive.public.rglob("*")
             if p.is_file()}
    assert after == before


def test_a_guard_protocol_is_never_made_into_a_panel_file_even_if_asked(archive, monkeypatch):
    from publish import PublishError
    from publish.data import panels

    monkeypatch.setattr(panels, "open_ids", lambda headers: [GUARD_ID])
    with pytest.raises(PublishError, match=f"protocol {GUARD_ID}: lane is 'guard'"):
        publish_all(archive, build_time=BUILD)
    assert not (archive.public / "panels" / f"{GUARD_ID}.json").exists()


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200)
       | st.text(alphabet=st.sampled_from("aZ_9 -.,;:!?\t\n\x00\x1c\x1f\x7f\"'<>&é€İ\u00a0\u2028ß"), max_size=80))
def test_the_ascii_road_to_words_gives_the_words_the_pattern_gives(text):
    """Every ASCII character (control, punctuation, digits, both cases) and a few that are not: the same words."""
    assert words(text) == _WORD.findall(text.casefold())


def test_words_split_on_every_non_word_ascii_character_and_fold_capitals():
    assert words("Hold\x1fTHE_line;\x00Option-B's 42nd\tSTEP") == ["hold", "the_line", "option", "b", "s", "42nd",
                                                                    "step"]


_CELLS = st.one_of(st.none(), st.integers(min_value=-2**63, max_value=2**63 - 1), st.floats(allow_nan=False),
                   st.text(max_size=12), st.sampled_from(["", " ", "a\x00b", "€1.20", "é ü"]),
                   st.binary(max_size=6))


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(_CELLS, _CELLS, _CELLS), min_size=1, max_size=12))
def test_a_database_row_is_searched_as_its_text_cells_joined_whatever_the_cells_hold(tmp_path_factory, rows):
    from publish.boundary.texts import sqlite_parts, sqlite_texts

    path = tmp_path_factory.mktemp("db") / "t.db"
    with sqlite3.connect(path) as connection:
        connection.execute('create table "t" ("a" text, "b q" integer, "c" blob)')
        connection.executemany('insert into "t" values (?, ?, ?)', rows)
        stored = connection.execute('select * from "t" order by rowid').fetchall()   # after the columns' affinity
    connection.close()
    # what a reader sees: every text cell, blobs as UTF-8 (bad bytes replaced), numbers and nulls left out
    expected = [" ".join(v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v
                         for v in row if isinstance(v, (str, bytes))) for row in stored]
    found = [text for part in sqlite_parts(path)[1:] for _, text in sqlite_texts(path, "t.db", part)]
    assert found == expected


_PRIVATE = ("the ferry leaves at noon and the captain counts every passenger twice before the ramp "
            "is raised over the grey harbour water")
_TEXTS = [
    "a clean answer about apples and pears", "",
    "DECISION: A because the ferry leaves at noon and the captain counts every passenger twice before",  # 13
    "the ferry leaves at noon and the captain counts every passenger",                                    # 11
    "it costs €0.16 per call", "about euro zones, no amount", "stored under /srv/llmarchive-home/private",
    "the key is sekret-value-123", "Ünïcode Ferry LEAVES at noon and the captain counts every passenger twice",
    "twice before the ramp is raised over the grey harbour water tonight", "€1.20 left in the general pool",
    "€1.20 and the ferry leaves at noon and the captain counts every passenger twice before the ramp",
]


def _one_by_one(texts, check, also):
    """The rule the batched search must keep: each text in order, the sealed-text check first, then the value check."""
    for where, text in texts:
        leak = check.scan_text(text, where)
        if leak:
            return leak.message(), True
        message = also.scan_text(text, where)
        if message:
            return message, False
    return None


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(range(len(_TEXTS))), max_size=700),
       st.lists(st.integers(min_value=0, max_value=699), max_size=3))
def test_texts_searched_in_batches_are_refused_exactly_as_one_by_one(indexes, noise_positions):
    from publish.boundary import ValueCheck
    from publish.boundary.sealed import _first_refusal

    check = SealedTextCheck([ProtocolText("private_p", "s01", "B", _PRIVATE)], [INSTRUCTION])
    also = ValueCheck(paths=[("the archive home", "/srv/llmarchive-home")],
                            secrets=[("SOME_API_KEY", "sekret-value-123")])
    also.allow("it costs €0.16 per call")          # this wording's amount is exempt, in these words only
    clean = ["filler words number %d about nothing in particular" % i for i in range(700)]
    texts = [(f"f, line {n}", clean[n] if n in noise_positions or not indexes else _TEXTS[indexes[n % len(indexes)]])
             for n in range(len(indexes) or 5)]
    assert check.separator is not None
    assert _first_refusal(iter(texts), check, also) == _one_by_one(texts, check, also)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(_TEXTS))), st.sampled_from(range(len(_TEXTS))),
                          st.one_of(st.none(), st.integers(min_value=-9, max_value=9), st.binary(max_size=4),
                                    st.just("€9.99 in a blob".encode()))),
                max_size=700))
@example([(0, 0, "€9.99 in a blob".encode())] * 3)          # a refusal only a blob holds
@example([(0, 1, None)] * 300 + [(0, 0, "€9.99 in a blob".encode())])
def test_a_database_searched_in_batches_is_refused_exactly_as_row_by_row(tmp_path_factory, rows):
    from publish.boundary import ValueCheck
    from publish.boundary.sealed import _check_task
    from publish.boundary.texts import sqlite_parts, sqlite_texts

    check = SealedTextCheck([ProtocolText("private_p", "s01", "B", _PRIVATE)], [INSTRUCTION])
    also = ValueCheck(paths=[("the archive home", "/srv/llmarchive-home")],
                            secrets=[("SOME_API_KEY", "sekret-value-123")])
    also.allow("it costs €0.16 per call")
    path = tmp_path_factory.mktemp("db") / "archive.db"
    with sqlite3.connect(path) as connection:
        connection.execute('create table "t" ("a" text, "b" text, "c")')
        connection.executemany('insert into "t" values (?, ?, ?)', [(_TEXTS[a], _TEXTS[b], c) for a, b, c in rows])
    connection.close()
    for part in sqlite_parts(path):
        expected = _one_by_one(list(sqlite_texts(path, "archive.db", part)), check, also)
        assert _check_task((str(path), "archive.db", part), check, also) == expected


def test_a_database_batch_found_clean_is_skipped_by_the_next_search_and_a_changed_one_is_searched(tmp_path):
    """The batch memo (publish.boundary.memo): the next build's database shares most batches with the last one's;
    those are not searched again, a batch with one changed row is, and the leak it holds is refused."""
    from publish.boundary import ValueCheck
    from publish.boundary.sealed import _check_task
    from publish.boundary.texts import sqlite_parts

    check = SealedTextCheck([ProtocolText("private_p", "s01", "B", _PRIVATE)], [INSTRUCTION])
    also = ValueCheck(paths=[("the archive home", "/srv/llmarchive-home")], secrets=[])
    path = tmp_path / "archive.db"
    with sqlite3.connect(path) as connection:
        connection.execute('create table "t" ("a" text)')
        connection.executemany('insert into "t" values (?)', [(f"row {i} of plain words",) for i in range(2000)])
        connection.execute('create table "money" ("a" text)')
        connection.executemany('insert into "money" values (?)', [(f"row {i} costs €{i} a call",) for i in range(600)])
    connection.close()

    def search(seen):
        batches: list = []
        found = [_check_task((str(path), "archive.db", part), check, also, seen, batches)
                 for part in sqlite_parts(path) if part[0]]
        return [f for f in found if f], batches

    found, first = search({})
    assert found == [] and len(first) == 8 + 3 and all(looked is not None for _, looked in first)
    assert {looked for k, looked in first} == {False, True}, "the money table's batches needed the money rules"
    seen = dict((k, bool(looked)) for k, looked in first)
    found, again = search(seen)
    assert found == [] and again == [(k, None) for k, _ in first], "every batch skipped, none searched"

    with sqlite3.connect(path) as connection:
        connection.execute('update "t" set "a" = ? where rowid = 700', (_PRIVATE,))
    connection.close()
    found, third = search(seen)
    assert len(found) == 1 and found[0][1] is True and "private_p" in found[0][0]
    # the money table's three batches (searched first, by name) and the two of "t" before row 700: skipped
    assert [looked for _, looked in third] == [None] * 5


def test_a_file_whose_skipped_batches_needed_the_money_rules_is_remembered_as_needing_them():
    """A file is remembered as clean whatever the money rules only when none of its texts needed them — skipped
    batches included, or a changed budget figure would never be looked for in it again."""
    from publish.boundary import ValueCheck
    from publish.boundary.sealed import _first_refusal

    check = SealedTextCheck([ProtocolText("private_p", "s01", "B", _PRIVATE)], [INSTRUCTION])
    also = ValueCheck(paths=[("the archive home", "/srv/llmarchive-home")], secrets=[])
    texts = [(f"f, line {i}", f"row {i} costs €{i} a call") for i in range(600)]
    batches: list = []
    assert _first_refusal(iter(texts), check, also, [], {}, batches) is None
    looked: list = []
    assert _first_refusal(iter(texts), check, also, looked, dict((k, bool(v)) for k, v in batches), []) is None
    assert looked and all(looked)
