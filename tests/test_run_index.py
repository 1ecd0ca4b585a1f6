"""The run index answers the archive's listings without opening every run record, and never disagrees with the folders."""
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from llmarchive.archive import store
from llmarchive.archive.jsonio import write_json
from llmarchive.archive.run_index import index_file

ROOT = Path(__file__).resolve().parent.parent
OLD_NS = 1_000_000_000 * 1_600_000_000   # 2020: a root time old enough to be trusted


def _record(run_id: str, run_date: str, status: str = "running") -> dict:
    return {"record_type": "experiment_run", "run_id": run_id, "run_date": run_date, "protocol_id": "p1",
            "series": "commercial", "subject_model_id": "m1", "job": "full_sweep", "status": status}


def _behind_the_back(paths, run_id: str, run_date: str, measured: bool = True) -> Path:
    """A run folder written without the store (older code, a copy): the index is not told."""
    folder = paths.run_dir(run_id)
    write_json(folder / "run.json", _record(run_id, run_date, "complete"))
    if measured:
        write_json(folder / "measurement.json", {"run_id": run_id})
    return folder


def _rows(paths) -> dict:
    """The index's rows as stored (no refresh): what the store wrote into it."""
    with sqlite3.connect(index_file(paths.experiments)) as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT run_id, kind, run_date FROM runs")}


def _age_root(paths) -> None:
    """Make the root's time old and let a listing trust it, so only the time gate can find a new folder."""
    os.utime(paths.experiments, ns=(OLD_NS, OLD_NS))
    store.archive_scan(paths)


def test_the_store_writes_a_runs_row_into_the_index_when_it_writes_its_record(paths):
    folder = paths.run_dir("r-2026-11-02")
    store.write_run(folder, _record("r-2026-11-02", "2026-11-02"))
    assert _rows(paths) == {"r-2026-11-02": ("run", "2026-11-02")}
    store.write_run(folder, _record("r-2026-11-02", "2026-11-03"))
    assert _rows(paths)["r-2026-11-02"] == ("run", "2026-11-03")


def test_a_folder_written_behind_the_index_s_back_is_found_by_the_listing(paths):
    store.write_run(paths.run_dir("a-old"), _record("a-old", "2026-10-01", "complete"))
    write_json(paths.run_dir("a-old") / "measurement.json", {"run_id": "a-old"})
    assert store.latest_complete_run_date(paths) == "2026-10-01"
    _age_root(paths)
    _behind_the_back(paths, "b-new", "2026-11-05")   # adds an entry: the root's time moves
    assert store.latest_complete_run_date(paths) == "2026-11-05"
    assert [r.run_id for r in store.archive_scan(paths).complete] == ["a-old", "b-new"]


def test_a_folder_removed_or_moved_away_leaves_the_index(paths):
    store.write_run(paths.run_dir("a-old"), _record("a-old", "2026-10-01", "complete"))
    write_json(paths.run_dir("a-old") / "measurement.json", {"run_id": "a-old"})
    _behind_the_back(paths, "b-new", "2026-11-05")
    assert store.latest_complete_run_date(paths) == "2026-11-05"
    _age_root(paths)
    os.rename(paths.run_dir("b-new"), paths.private / "elsewhere")
    assert store.latest_complete_run_date(paths) == "2026-10-01"
    assert set(_rows(paths)) == {"a-old"}


def test_an_open_run_completed_without_the_store_is_seen_by_the_run_clock(paths):
    """A crash between the measurement's write and the index's note leaves an open row: the clock reads it again."""
    folder = paths.run_dir("r1")
    store.write_run(folder, _record("r1", "2026-11-07"))
    assert store.latest_complete_run_date(paths) is None
    _age_root(paths)
    write_json(folder / "measurement.json", {"run_id": "r1"})
    assert store.latest_complete_run_date(paths) == "2026-11-07"


def test_a_record_rewritten_without_the_store_is_read_again_by_a_scan(paths):
    folder = paths.run_dir("r1")
    store.write_run(folder, _record("r1", "2026-11-02"))
    write_json(folder / "measurement.json", {"run_id": "r1"})
    assert store.archive_scan(paths).complete[0].record["status"] == "running"
    write_json(folder / "run.json", _record("r1", "2026-11-02", "complete"))   # the process died before the note
    assert store.archive_scan(paths).complete[0].record["status"] == "complete"
    assert store.index_disagreements(paths) == []


def test_an_edit_that_keeps_size_and_time_is_named_by_the_deep_comparison(paths):
    folder = paths.run_dir("r1")
    store.write_run(folder, _record("r1", "2026-11-02"))
    path = folder / "run.json"
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    with open(path, "r+", encoding="utf-8") as fh:   # in place: same inode, same size
        fh.write(text.replace("2026-11-02", "2026-11-09"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    problems = store.index_disagreements(paths)
    assert len(problems) == 1 and "r1" in problems[0] and "differs" in problems[0]
    from llmarchive.schedule import deep_rotation

    found, _ = deep_rotation.run(paths, "2026-11-10", None, whole=True)      # llmarchive verify --deep
    assert found.broken == [(deep_rotation.INDEX, problems[0])]
    found, _ = deep_rotation.run(paths, "2026-11-10", None)                  # the daily slice reads no folder
    assert found.broken == []


def test_an_archive_without_a_run_index_yet_has_nothing_to_disagree_with(paths):
    paths.experiments.mkdir(parents=True, exist_ok=True)
    assert not index_file(paths.experiments).exists()
    assert store.index_disagreements(paths) == []


def test_a_torn_index_is_rebuilt_from_the_folders(paths):
    store.write_run(paths.run_dir("a-old"), _record("a-old", "2026-10-01"))
    write_json(paths.run_dir("a-old") / "measurement.json", {"run_id": "a-old"})
    _behind_the_back(paths, "b-new", "2026-11-05")
    assert len(store.archive_scan(paths).complete) == 2
    file = index_file(paths.experiments)
    with sqlite3.connect(file) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = file.read_bytes()
    file.write_bytes(raw[:len(raw) // 3] + b"\0torn" * 10)
    assert store.latest_complete_run_date(paths) == "2026-11-05"
    assert set(_rows(paths)) == {"a-old", "b-new"}


def test_an_older_index_is_rebuilt_from_the_folders(paths):
    store.write_run(paths.run_dir("a-old"), _record("a-old", "2026-10-01", "complete"))
    write_json(paths.run_dir("a-old") / "measurement.json", {"run_id": "a-old"})
    with sqlite3.connect(index_file(paths.experiments)) as conn:
        conn.execute("UPDATE meta SET value='0' WHERE key='format'")
    assert [r.run_id for r in store.archive_scan(paths).complete] == ["a-old"]
    assert set(_rows(paths)) == {"a-old"}


def test_a_missing_index_is_answered_from_the_folders_and_built_by_the_next_write(paths):
    """A read never starts an index (a refused command leaves the home as it was); the store's next write does."""
    _behind_the_back(paths, "a-old", "2026-10-01")
    assert store.latest_complete_run_date(paths) == "2026-10-01"
    assert [r.run_id for r in store.archive_scan(paths).complete] == ["a-old"]
    assert not index_file(paths.experiments).exists()
    store.write_run(paths.run_dir("b-new"), _record("b-new", "2026-11-05"))
    assert set(_rows(paths)) == {"a-old", "b-new"}, "the first write reads in the folders it did not write"


def test_an_unreadable_record_is_still_listed_as_unreadable_through_the_index(paths):
    folder = paths.run_dir("r1")
    store.write_run(folder, _record("r1", "2026-11-02"))
    assert [r.run_id for r in store.archive_scan(paths).open] == ["r1"]
    (folder / "run.json").write_text('{"run_id": "r1", "run_date": "2026-11-0', encoding="utf-8")
    found = store.archive_scan(paths)
    assert found.open == [] and [u.run_id for u in found.unreadable] == ["r1"]
    assert "run.json" in found.unreadable[0].problem
    assert _rows(paths)["r1"][0] == "unreadable"


_WRITER = """
import sys
from pathlib import Path
from llmarchive.archive import ArchivePaths, store
paths = ArchivePaths.from_env()
for i in range(int(sys.argv[2])):
    run_id = f"{sys.argv[1]}-{i:03d}"
    store.write_run(paths.run_dir(run_id), {"run_id": run_id, "run_date": "2026-11-02", "status": "running"})
"""


def test_two_processes_writing_runs_at_once_are_both_indexed(paths):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, name, "40"], env=env) for name in ("a", "b")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    rows = _rows(paths)   # as the writers left it, no listing in between
    assert len(rows) == 80 and {k[0] for k in rows} == {"a", "b"}
    assert store.index_disagreements(paths) == []
