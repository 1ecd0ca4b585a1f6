"""A new published file is one renderer and one entry of the table of published files, and nothing else.

The toy file below, ``toy_runs.csv``, exists in this file alone: one
renderer (:func:`toy_csv`) and one :class:`~publish.data.files.PublishedFile`
entry, registered by a fixture and taken out again after.  Everything the
table drives must see it: publication writes it and lists it in the render
manifest and on the site's Data page, ``croissant.json`` lists it (name,
``contentUrl``, encoding, sha256) with its record set, which mlcroissant
reads back, the boundary checks search its bytes, and the readback of a
copy of ``public/`` (:func:`publish.readback.files.published_problems`)
finds it where the table says.  A module that went back to a list of its
own (Croissant naming its files by literal strings, the pipeline rendering
a fixed set of CSVs) would miss ``toy_runs.csv`` and a test here fails;
:func:`test_no_module_names_a_published_file_by_a_string_of_its_own`
catches a published file's name written out again in those modules.
"""
import ast
import contextlib
import csv
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Iterator

import pytest

from publish import PublishError, publish_all
from publish.data import Inputs, files as published, panels
from publish.boundary import BoundaryError
from publish.readback.files import public_inputs, published_problems
from tests import publish_helpers as ph

ROOT = Path(__file__).resolve().parents[1]
BUILD = "2026-12-03T00:00:00Z"
OPEN_RUN = "c-2026-11-rcf-wording"
TOY_COLUMNS = (("run_id", "text", "The run the measurement belongs to."),
               ("run_date", "text", "The day the run was made."))


def toy_csv(inputs: Inputs) -> bytes:
    """The toy renderer: one row per measurement, from the inputs alone."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([name for name, _, _ in TOY_COLUMNS])
    writer.writerows(sorted((m["run_id"], m["run_date"]) for m in inputs.measurements))
    return out.getvalue().encode("utf-8")


TOY = published.PublishedFile(
    "toy_runs.csv", "text/csv", "tests.test_extending_published_file.toy_csv",
    "Every run of the archive and its day (a test's toy file).", render=toy_csv,
    records=published.Records("toy_runs", "The runs (toy_runs.csv).", TOY_COLUMNS))


@contextlib.contextmanager
def declared(entry: published.PublishedFile) -> Iterator[published.PublishedFile]:
    """``entry`` in the table while the block runs, and out of it after."""
    unregister = published.register(entry)
    try:
        yield entry
    finally:
        unregister()
    assert entry not in published.PUBLISHED


@pytest.fixture
def toy():
    """The toy entry in the table for one test."""
    with declared(TOY) as entry:
        yield entry


@pytest.fixture(scope="module")
def public(publish_template, tmp_path_factory):
    """One populated archive, published once with the toy file declared (the tests read the copy)."""
    paths = ph.fresh_archive(publish_template, tmp_path_factory.mktemp("pub") / "home")
    data = ph.populate(paths)
    with declared(TOY):
        publish_all(paths, build_time=BUILD)
    return paths.public, data


def test_publication_writes_the_toy_file_and_the_manifest_lists_it(public):
    folder, data = public
    rows = list(csv.reader(io.StringIO((folder / "toy_runs.csv").read_text(encoding="utf-8"))))
    assert rows[0] == ["run_id", "run_date"]
    assert sorted(r[0] for r in rows[1:]) == sorted(m["run_id"] for m in data["measurements"])
    manifest = json.loads((folder / "render_manifest.json").read_text(encoding="utf-8"))
    assert manifest["files"]["toy_runs.csv"]["sha256"] == hashlib.sha256((folder / "toy_runs.csv").read_bytes()).hexdigest()


def test_croissant_lists_the_toy_file_with_its_sha256_and_its_record_set(public):
    import mlcroissant as mlc

    folder, data = public
    document = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    entry = next(d for d in document["distribution"] if d["@id"] == "toy_runs.csv")
    assert entry["contentUrl"] == "toy_runs.csv" and entry["encodingFormat"] == "text/csv"
    assert entry["sha256"] == hashlib.sha256((folder / "toy_runs.csv").read_bytes()).hexdigest()
    assert entry["description"] == TOY.description
    record_set = next(r for r in document["recordSet"] if r["@id"] == "toy_runs")
    assert [f["name"] for f in record_set["field"]] == ["run_id", "run_date"]
    assert all(f["source"]["fileObject"]["@id"] == "toy_runs.csv" for f in record_set["field"])
    # the files listed before it keep their place: the table's order is Croissant's
    assert [d["@id"] for d in document["distribution"]][:4] == ["stability.csv", "outcomes.csv", "changes.csv",
                                                                 "coverage.csv"]
    records = list(mlc.Dataset(jsonld=folder / "croissant.json").records(record_set="toy_runs"))
    assert len(records) == len(data["measurements"])


def test_the_data_page_lists_the_toy_file_with_its_hash(public):
    folder, _ = public
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert 'href="toy_runs.csv"' in page
    assert hashlib.sha256((folder / "toy_runs.csv").read_bytes()).hexdigest() in page


def test_the_readback_finds_the_toy_file_where_the_table_says(public, toy):
    folder, _ = public
    assert published_problems(folder) == []
    assert public_inputs(folder, OPEN_RUN).measurement["run_id"] == OPEN_RUN    # `verify --public` unaffected
    (folder / "toy_runs.csv").rename(folder / "toy_runs.bak")
    try:
        problems = published_problems(folder)
    finally:
        (folder / "toy_runs.bak").rename(folder / "toy_runs.csv")
    assert "toy_runs.csv: declared but not published" in problems
    assert "toy_runs.bak: not a file the table of published files declares" in problems


def test_the_value_check_searches_the_toy_files_bytes(toy, archive):
    """A toy renderer that writes the archive home's path is refused, and public/ is left as it was."""
    ph.populate(archive)
    publish_all(archive, build_time=BUILD)
    before = {p: p.read_bytes() for p in archive.public.rglob("*") if p.is_file()}
    leaky = published.PublishedFile("toy_leak.csv", "text/csv", "a test", "A toy file that leaks a path.",
                                    render=lambda inputs: f"where\n{archive.home}/private\n".encode("utf-8"))
    with declared(leaky), pytest.raises(BoundaryError, match="toy_leak.csv"):
        publish_all(archive, build_time=BUILD)
    assert {p: p.read_bytes() for p in archive.public.rglob("*") if p.is_file()} == before


def test_a_file_the_table_does_not_declare_is_refused(archive, monkeypatch):
    """The table is the one door: a stage that writes a file no entry declares stops the publication."""
    ph.populate(archive)
    real = panels.files
    monkeypatch.setattr(panels, "files", lambda paths, headers: {**real(paths, headers), "stray.csv": b"a\n1\n"})
    with pytest.raises(PublishError, match="not in the table of published files.*stray.csv"):
        publish_all(archive, build_time=BUILD)
    assert not (archive.public / "stray.csv").exists()


def test_an_unregistered_entry_reaches_nothing(public):
    """Out of the table, the toy file is neither rendered nor listed, and its copy is not one of ours."""
    folder, _ = public
    assert TOY not in published.PUBLISHED
    assert published_problems(folder) == ["toy_runs.csv: not a file the table of published files declares"]
    assert published.declared("toy_runs.csv") is None
    assert "toy_runs.csv" not in {entry.name for entry in published.rendered() + published.in_croissant()}


# The modules that write, describe or read back the published files; each must take the names from the table.
TABLE_READERS = ("publish/data/croissant.py", "publish/pipeline/build.py", "publish/readback/files.py")
FILE_NAME = re.compile(r"(?<![\w.-])[\w-]+\.(?:csv|jsonl|json|db|html)\b")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            found |= {id(b.value) for b in body if isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)}
    return found


def test_no_module_names_a_published_file_by_a_string_of_its_own():
    """Croissant, the pipeline and the readback name no published file by a literal: the table does."""
    named = []
    for module in TABLE_READERS:
        tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        named += [f"{module}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                  and FILE_NAME.search(node.value)]
    assert named == []
