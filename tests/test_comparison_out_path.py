"""``comparison import --out`` and ``comparison run --out`` write a new file, never the archive's or an input.

Issue 36, item 2: ``--out`` replaced whatever it named — a file already
there, the log being imported, the ``--panel`` file, and the archive's own
hash-chained record log (``private/records/comparison_point.jsonl``, after
which every ``publish`` refuses the broken chain).  One rule
(:class:`llmarchive.archive.outputs.OutputFile`) now holds for every
``--out``: a file already there only with ``--force``; never a file inside
the archive home nor one the command reads, whatever the flags and however
the path is spelled (``..``, a symlink, a hard link).  A refusal is one
line naming the path and why, exit 2, and the file named is left byte for
byte as it was.

The logs are real (the published Inspect task run by ``inspect eval``
against the simulated readers' server, :func:`tests.inspect_helpers.reader_run`)
and the comparison runs go over HTTP to :class:`tests.fake_provider.FakeProvider`;
every command is run through the CLI's entry point.
"""
import json
import os
import shutil
from pathlib import Path

import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.archive.jsonio import verify_log
from llmarchive.cli import main
from panels import readers
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.inspect_helpers import OPEN, reader_run

MODEL = "outside-lab-model-2026-11"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reader_run(tmp_path_factory)


@pytest.fixture
def outsider(run, tmp_path, monkeypatch):
    """(a copy of the framing-sensitive reader's Inspect log, a copy of the panel file), in an outsider's folder
    with an empty archive home of its own."""
    monkeypatch.setenv("LLMARCHIVE_HOME", str(tmp_path / "outsider-home"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    folder = tmp_path / "downloads"
    folder.mkdir()
    log = folder / run.logs[readers.FRAMING_SENSITIVE].name
    shutil.copy(run.logs[readers.FRAMING_SENSITIVE], log)
    panel = folder / f"{OPEN}.json"
    shutil.copy(run.panels / f"{OPEN}.json", panel)
    return log, panel


@pytest.fixture
def archive_with_a_point(run, outsider, tmp_path, monkeypatch):
    """A copy of the admitted archive (made $LLMARCHIVE_HOME) with one comparison point filed, so its private
    record log holds a hash chain a broken write would break.  The log is a simulated reader's, which only the
    archive's known-answer step may file (``--known-answer``)."""
    log, panel = outsider
    home = tmp_path / "archive"
    shutil.copytree(run.home, home)
    monkeypatch.setenv("LLMARCHIVE_HOME", str(home))
    submission = tmp_path / "filed.jsonl"
    assert main(["comparison", "import", str(log), "--panel", str(panel), "--out", str(submission),
                 "--submitted-by", "an outside lab"]) == 0
    assert main(["comparison", "submit", str(submission), "--known-answer"]) == 0
    record_log = ArchivePaths(home).record_log("comparison_point")
    assert verify_log(record_log) == 1
    return home, record_log


def import_to(log: Path, panel: Path, out: Path, *extra: str) -> int:
    return main(["comparison", "import", str(log), "--panel", str(panel), "--out", str(out), *extra])


def one_line(capsys) -> str:
    """The one line a refused command printed on stderr."""
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    return err[0]


def test_an_import_onto_an_existing_file_is_refused_without_force_and_replaces_it_with_force(outsider, tmp_path,
                                                                                              capsys):
    log, panel = outsider
    out = tmp_path / "mine" / "submission.jsonl"
    out.parent.mkdir()
    out.write_bytes(b"my notes, not a submission\n")
    assert import_to(log, panel, out) == 2
    line = one_line(capsys)
    assert line == f"error: --out {out} already exists; give --force to replace it, or another path; nothing written"
    assert out.read_bytes() == b"my notes, not a submission\n"
    assert [p.name for p in out.parent.iterdir()] == ["submission.jsonl"], "no temporary file left behind"
    assert import_to(log, panel, out, "--force") == 0
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["record_type"] == "comparison_submission" and header["protocol_id"] == OPEN
    assert [p.name for p in out.parent.iterdir()] == ["submission.jsonl"], "written atomically, in place"


@pytest.mark.parametrize("target", ["the log", "the log by '..'", "the panel", "the panel by a hard link",
                                    "the panel by a symlink"])
def test_an_import_never_writes_over_the_log_or_the_panel_it_reads_even_with_force(outsider, tmp_path, capsys, target):
    log, panel = outsider
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outs = {"the log": log, "the log by '..'": elsewhere / ".." / "downloads" / log.name, "the panel": panel,
            "the panel by a hard link": elsewhere / "panel-link.json",
            "the panel by a symlink": elsewhere / "panel-symlink.json"}
    out = outs[target]
    if target.endswith("hard link"):
        os.link(panel, out)
    elif target.endswith("symlink"):
        out.symlink_to(panel)
    before = {f: f.read_bytes() for f in (log, panel)}
    assert import_to(log, panel, out, "--force") == 2
    line = one_line(capsys)
    what = "the log being imported" if "log" in target else "the --panel file"
    assert line.startswith(f"error: --out {out} is {what} (") and "not even with --force" in line, line
    assert {f: f.read_bytes() for f in (log, panel)} == before, "the inputs are untouched"


@pytest.mark.parametrize("spelling", ["as it is", "by '..'", "by a symlinked folder", "with --home"])
def test_an_import_never_writes_into_the_archive_home_even_with_force_and_its_record_log_stays_whole(
        outsider, archive_with_a_point, tmp_path, capsys, monkeypatch, spelling):
    log, panel = outsider
    home, record_log = archive_with_a_point
    before = record_log.read_bytes()
    alias = tmp_path / "alias"
    alias.symlink_to(home / "private")
    outs = {"as it is": record_log, "by '..'": home / "public" / ".." / "private" / "records" / record_log.name,
            "by a symlinked folder": alias / "records" / record_log.name, "with --home": record_log}
    out, extra = outs[spelling], []
    if spelling == "with --home":
        monkeypatch.setenv("LLMARCHIVE_HOME", str(tmp_path / "another-home"))
        extra = ["--home", str(home)]
    assert main([*extra, "comparison", "import", str(log), "--panel", str(panel), "--out", str(out), "--force"]) == 2
    line = one_line(capsys)
    assert line.startswith(f"error: --out {out} is inside the archive home {home.resolve()}"), line
    assert "not even with --force" in line
    assert record_log.read_bytes() == before and verify_log(record_log) == 1, "the chain publication reads is whole"
    assert not [p for p in record_log.parent.iterdir() if p.name.endswith(".tmp")], "no temporary file in the home"
    # a new file inside the home is refused as well: the home is the archive's alone
    fresh = home / "private" / "records" / "my-submission.jsonl"
    assert main([*extra, "comparison", "import", str(log), "--panel", str(panel), "--out", str(fresh)]) == 2
    assert "inside the archive home" in one_line(capsys)
    assert not fresh.exists()
    assert len(records.read(ArchivePaths(home), "comparison_point")) == 1


def comparison_run(panel: Path, fake: FakeProvider, out: Path, *extra: str) -> int:
    return main(["comparison", "run", "--panel", str(panel), "--base-url", fake.base_url, "--model", MODEL,
                 "--out", str(out), "--max-attempts", "1", "--quiet", *extra])


def test_a_comparison_run_onto_an_existing_file_is_refused_before_any_call_and_replaces_it_with_force(
        outsider, tmp_path, capsys):
    _, panel = outsider
    out = tmp_path / "mine" / "submission.jsonl"
    out.parent.mkdir()
    out.write_bytes(b"an earlier submission\n")
    with FakeProvider(decide_by_hash()) as fake:
        assert comparison_run(panel, fake, out) == 2
        assert one_line(capsys).startswith(f"error: --out {out} already exists; give --force")
        assert fake.chat_requests == [], "refused before anything was sent"
        assert out.read_bytes() == b"an earlier submission\n"
        assert comparison_run(panel, fake, out, "--force") == 0
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["record_type"] == "comparison_submission" and header["model_id"] == MODEL


@pytest.mark.parametrize("target", ["the panel", "the record log"])
def test_a_comparison_run_never_writes_over_its_panel_or_into_the_archive_home_even_with_force(
        outsider, archive_with_a_point, capsys, target):
    _, panel = outsider
    home, record_log = archive_with_a_point
    out = panel if target == "the panel" else record_log
    before = out.read_bytes()
    with FakeProvider(decide_by_hash()) as fake:
        assert comparison_run(panel, fake, out, "--force") == 2
        assert fake.chat_requests == [], "refused before anything was sent"
    line = one_line(capsys)
    why = "is the --panel file (" if target == "the panel" else f"is inside the archive home {home.resolve()}"
    assert line.startswith(f"error: --out {out} {why}") and "not even with --force" in line, line
    assert out.read_bytes() == before
    assert verify_log(record_log) == 1


@pytest.mark.parametrize("command", ["import", "run"])
def test_an_out_into_a_folder_that_is_not_there_is_refused_naming_it_and_no_folder_is_made(outsider, tmp_path,
                                                                                            capsys, command):
    """Issue 36: ``--out`` into missing folders made three folders silently; a mistyped path is refused instead."""
    log, panel = outsider
    out = tmp_path / "a" / "b" / "c" / "submission.jsonl"
    with FakeProvider(decide_by_hash()) as fake:
        code = import_to(log, panel, out) if command == "import" else comparison_run(panel, fake, out)
        assert fake.chat_requests == [], "refused before anything was sent"
    assert code == 2
    assert one_line(capsys) == (f"error: --out {out}: the folder {out.parent} does not exist; a command makes no "
                                "folder it is not asked for: create it first (mkdir -p), or give another path; "
                                "nothing written")
    assert not (tmp_path / "a").exists(), "no folder made"
