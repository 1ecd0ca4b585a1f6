"""An outsider recomputes a published measurement from a copy of public/ alone, and bad input is one line."""
import csv
import io
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from llmarchive.cli.verify import public_command
from publish import publish_all
from tests import publish_helpers as ph

ROOT = Path(__file__).resolve().parent.parent
BUILD = "2026-12-03T00:00:00Z"
OPEN_RUN = "c-2026-11-rcf-wording"


@pytest.fixture(scope="module")
def public_copy(tmp_path_factory):
    """A copy of public/ in a folder of its own: no archive home, no private files beside it."""
    template = ph.template_archive(tmp_path_factory.mktemp("template") / "home")
    paths = ph.fresh_archive(template, tmp_path_factory.mktemp("pub") / "home")
    ph.populate(paths)
    publish_all(paths, build_time=BUILD)
    outsider = tmp_path_factory.mktemp("outsider")
    shutil.copytree(paths.public, outsider / "public")
    return outsider


def edit_cell(csv_file: Path, run_id: str, column: str, value: str) -> None:
    """Change one cell of one run's row, read and written as CSV (cells hold commas and quotes)."""
    header, *rows = list(csv.reader(io.StringIO(csv_file.read_text(encoding="utf-8"), newline="")))
    for row in rows:
        if row[header.index("run_id")] == run_id:
            row[header.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    csv_file.write_text(out.getvalue(), encoding="utf-8")


def verify(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "LLMARCHIVE_HOME": str(cwd / "no-home")}
    return subprocess.run([sys.executable, "-m", "llmarchive", "verify", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_the_public_command_recomputes_every_field_from_the_published_files(public_copy):
    assert public_command("public", OPEN_RUN) == f"llmarchive verify --public public {OPEN_RUN}"
    result = verify(public_copy, "--public", "public", OPEN_RUN)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert f"OK {OPEN_RUN}: 120 trials from public/open-lane/2026.jsonl, every field recomputes exactly" \
        in result.stdout
    assert sorted(p.name for p in public_copy.iterdir()) == ["public"]


def test_without_stability_csv_the_measurement_comes_from_the_database(public_copy, tmp_path):
    run_id = "ow-2026-11-rcf-wording"
    shutil.copytree(public_copy / "public", tmp_path / "public")
    (tmp_path / "public" / "stability.csv").unlink()
    result = verify(tmp_path, "--public", "public", run_id)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert f"OK {run_id}: " in result.stdout and "every field recomputes exactly" in result.stdout
    # The row it checked is the database's: edit that row alone and the edit is what differs.
    db = sqlite3.connect(tmp_path / "public" / "archive.db")
    with db:
        [(recorded,)] = db.execute("select stability_pct from measurements where run_id = ?", (run_id,)).fetchall()
        assert recorded != 12.5
        db.execute("update measurements set stability_pct = 12.5 where run_id = ?", (run_id,))
    db.close()
    edited = verify(tmp_path, "--public", "public", run_id)
    assert edited.returncode == 1, (edited.stdout, edited.stderr)
    assert f"DIFFERS stability_pct: recorded 12.5, recomputed {recorded!r}" in edited.stdout


def test_an_edited_published_measurement_is_reported_as_a_difference(public_copy, tmp_path):
    shutil.copytree(public_copy / "public", tmp_path / "public")
    edit_cell(tmp_path / "public" / "stability.csv", OPEN_RUN, "stability_pct", "99.5")
    result = verify(tmp_path, "--public", "public", OPEN_RUN)
    assert result.returncode == 1 and "DIFFERS stability_pct" in result.stdout


def test_a_guard_run_is_refused_in_words(public_copy):
    one_line_error(verify(public_copy, "--public", "public", "c-2026-11-rcf-anchoring"), "guard", "open-lane")


def test_a_datasette_row_and_header_saved_as_json_verify_with_their_json_cells_as_strings(public_copy, tmp_path):
    db = sqlite3.connect(public_copy / "public" / "archive.db")
    db.row_factory = sqlite3.Row
    row = dict(db.execute("select * from measurements where run_id = ?", (OPEN_RUN,)).fetchone())
    header = dict(db.execute("select * from protocols where protocol_id = ?", (row["protocol_id"],)).fetchone())
    (tmp_path / "m.json").write_text(json.dumps({"rows": [row]}))
    (tmp_path / "p.json").write_text(json.dumps(header))
    result = verify(tmp_path, "--trials", str(public_copy / "public" / "open-lane" / "2026.jsonl"),
                    "--measurement", "m.json", "--protocol", "p.json")
    assert result.returncode == 0, (result.stdout, result.stderr)
    other = dict(db.execute("select * from protocols where protocol_id = 'base_rate_neglect__wording__v0'").fetchone())
    (tmp_path / "other.json").write_text(json.dumps(other))
    one_line_error(verify(tmp_path, "--trials", str(public_copy / "public" / "open-lane" / "2026.jsonl"),
                          "--measurement", "m.json", "--protocol", "other.json"),
                   "other.json", "another protocol")


def _break(tmp_path: Path, public_copy: Path, how) -> Path:
    shutil.copytree(public_copy / "public", tmp_path / "public")
    lane = tmp_path / "public" / "open-lane" / "2026.jsonl"
    lane.write_bytes(how(lane.read_bytes()))
    return lane


def test_a_trials_file_that_is_not_utf8_is_one_line_naming_it(public_copy, tmp_path):
    _break(tmp_path, public_copy, lambda data: data.replace(b"DECISION", b"D\xe9CISION", 1))
    one_line_error(verify(tmp_path, "--public", "public", OPEN_RUN), "open-lane/2026.jsonl", "not UTF-8")


def test_a_truncated_trials_file_is_one_line_naming_it(public_copy, tmp_path):
    _break(tmp_path, public_copy, lambda data: data[:-40])
    one_line_error(verify(tmp_path, "--public", "public", OPEN_RUN), "open-lane/2026.jsonl", "truncated")


def test_a_trial_field_of_the_wrong_type_is_one_line_naming_file_line_and_field(public_copy, tmp_path):
    def retype(data: bytes) -> bytes:
        lines = data.split(b"\n")
        for i, line in enumerate(lines):
            if OPEN_RUN.encode() in line:
                record = json.loads(line)
                record["replicate_index"] = "0"
                lines[i] = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
                break
        return b"\n".join(lines)

    _break(tmp_path, public_copy, retype)
    one_line_error(verify(tmp_path, "--public", "public", OPEN_RUN), "open-lane/2026.jsonl, line",
                   "'replicate_index' should be a non-negative integer")


def test_a_measurement_cell_of_the_wrong_type_is_one_line_naming_the_file(public_copy, tmp_path):
    shutil.copytree(public_copy / "public", tmp_path / "public")
    edit_cell(tmp_path / "public" / "stability.csv", OPEN_RUN, "n", "many")
    one_line_error(verify(tmp_path, "--public", "public", OPEN_RUN), "stability.csv", "'n' should be an integer")


@pytest.mark.parametrize("args, needle", [
    (("--public", "nowhere", OPEN_RUN), "nowhere: not a folder"),
    (("--public", "public", "no-such-run"), "no measurement with run_id 'no-such-run'"),
    (("--public", "public"), "needs the run id"),
])
def test_missing_things_are_one_line(public_copy, args, needle):
    one_line_error(verify(public_copy, *args), needle)


def test_a_database_that_is_not_sqlite_is_one_line(public_copy, tmp_path):
    shutil.copytree(public_copy / "public", tmp_path / "public")
    (tmp_path / "public" / "archive.db").write_bytes(b"not a database at all" * 100)
    one_line_error(verify(tmp_path, "--public", "public", OPEN_RUN), "archive.db", "not a readable SQLite")


def test_the_reader_finds_the_files_under_the_names_the_publisher_gives_them(public_copy, tmp_path, monkeypatch):
    """A rename in the publisher cannot drift: the reader asks the publisher's modules for every name."""
    from publish.data import csvs, open_lane
    from publish.readback.files import public_inputs

    public = tmp_path / "public"
    shutil.copytree(public_copy / "public", public)
    (public / "stability.csv").rename(public / "measurements.csv")
    (public / "open-lane").rename(public / "trials")
    monkeypatch.setattr(csvs, "STABILITY_FILE", "measurements.csv")
    monkeypatch.setattr(open_lane, "file_name", lambda year: f"trials/{year}.jsonl")
    # The row read is the renamed CSV's (the database's copy of it is left as published).
    text = (public / "measurements.csv").read_text(encoding="utf-8")
    header = text.splitlines()[0].split(",")
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if f",{OPEN_RUN}," in line:
            cells = line.rstrip("\n").split(",")
            cells[header.index("stability_pct")] = "99.5"
            lines[i] = ",".join(cells) + "\n"
    (public / "measurements.csv").write_text("".join(lines), encoding="utf-8")
    found = public_inputs(public, OPEN_RUN)
    assert found.measurement["stability_pct"] == 99.5
    assert found.trials_file == public / "trials" / "2026.jsonl" and len(found.trials) == 120


def test_the_reader_refuses_bad_published_files_with_a_publish_error(public_copy, tmp_path):
    from publish import PublishError
    from publish.readback.files import public_inputs

    shutil.copytree(public_copy / "public", tmp_path / "public")
    (tmp_path / "public" / "archive.db").unlink()
    with pytest.raises(PublishError, match=r"archive\.db: no such file$"):
        public_inputs(tmp_path / "public", OPEN_RUN)
