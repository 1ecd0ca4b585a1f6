"""The aged archives of bench/age_bench.py are archives the library accepts, not files shaped like one.

A three-month archive is built the way the bench builds its 120 months
(:mod:`bench.aged_archive`: the drill's two quiet months, the second moved to
the third month through the library's own writers) and read back by the
library as production reads it: every chain and every complete run's log
agrees with its record (the publication's blocking checks), the coverage
of the months it holds computes with no unexplained period, ``publish_all``
builds, the publication's four checks pass on what it built, and ``llmarchive
verify`` recomputes a replicated run's measurement exactly.  A byte changed
in a replicated trial log is then caught, so the checks did read the
synthetic files.

The drill's two months (the template) are built once and cached under
``$LLMARCHIVE_AGE_CACHE`` (default /dev/shm/llmarchive-age): minutes the first
time, seconds after.
"""
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import aged_archive  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.time_machine("2027-02-01T09:00:00Z")]


@pytest.fixture(scope="module")
def aged(tmp_path_factory):
    """A home as it stood at 00:00 on 2027-02-01, after three months (November to January)."""
    out = tmp_path_factory.mktemp("aged")
    found = aged_archive.build(3, (3,), out, log=lambda text: None)
    assert found["homes"][3]["files"] > 0
    return out / "home-3m" / "archive"


@pytest.fixture
def home(aged, tmp_path):
    copy = tmp_path / "archive"
    shutil.copytree(aged, copy, symlinks=True)
    return copy


def _sweep_runs(home: Path, month: str) -> list[Path]:
    return sorted(p for p in (home / "private" / "experiments").glob(f"sweep_{month}_*") if p.is_dir())


def test_the_replicated_month_holds_the_sweep_and_the_daily_records_of_its_own_dates(aged):
    from llmarchive.archive import ArchivePaths, record_logs as records

    paths = ArchivePaths(aged)
    assert len(_sweep_runs(aged, "2027-01")) == len(_sweep_runs(aged, "2026-12")) == 12
    for kind in ("runtime_fingerprint", "subject_fingerprint"):
        days = {r["date"] for r in records.read(paths, kind)}
        assert {f"2027-01-{d:02d}" for d in range(1, 32)} <= days, kind
        assert not any(d >= "2027-02" for d in days), kind
    daily = {(r["job"], r["period"]) for r in records.read(paths, "coverage") if len(str(r["period"])) == 10}
    for job in ("runtime_fingerprint", "subject_fingerprint", "guard_margin_rotation"):
        missing = {f"2026-12-{d:02d}" for d in range(1, 32)} - {p for j, p in daily if j == job}
        assert not missing, f"January's 1st wrote no {job} coverage row of {sorted(missing)}"


def test_the_library_reads_the_aged_archive_cleanly(home):
    from llmarchive import budget
    from llmarchive.archive import ArchivePaths
    from llmarchive.cli import main
    from llmarchive.schedule import coverage
    from publish import publish_all
    from publish.pipeline import checks

    paths = ArchivePaths(home)
    assert checks.blocking_problems(paths) == {}
    view = budget.read_ledger(paths)
    assert view.tally.count > 3 * 12 * 120 * 2
    result = coverage.compute(paths, "2027-01-31", today="2027-02-01")
    assert not result.unexplained, result.unexplained[:5]
    manifest = publish_all(paths)
    assert "archive.db" in manifest["files"]
    found = checks.run_all(paths)
    assert not any(found.values()), {k: v[:3] for k, v in found.items() if v}
    run = _sweep_runs(home, "2027-01")[0]
    assert main(["verify", str(run)]) == 0


def test_a_byte_changed_in_a_replicated_trial_log_is_caught(home):
    from llmarchive.archive import ArchivePaths
    from publish.pipeline import checks

    log = _sweep_runs(home, "2027-01")[3] / "trials.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[5])
    record["latency_ms"] = int(record.get("latency_ms") or 0) + 1
    lines[5] = json.dumps(record, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"
    log.write_text("".join(lines), encoding="utf-8")
    problems = checks.chain_problems(ArchivePaths(home))
    assert any(log.parent.name in p for p in problems), problems[:3]


def test_the_bench_primes_a_home_as_a_running_archive_holds_it_sealed_months_and_log_checkpoints(home):
    """Before timing, the bench lets the code under test record last months' coverage (sealing them) and leaves
    each chained log a checkpoint at its end: the timed operations then take the running archive's path, not a
    first-ever whole-history one."""
    import age_bench
    from llmarchive.archive import ArchivePaths, jsonio
    from llmarchive.schedule import coverage_summary

    paths = ArchivePaths(home)
    for checkpoint in paths.records.glob("*.jsonl.checkpoint"):     # the drill's own appends leave some behind
        checkpoint.unlink()
    assert not coverage_summary.current(paths).sealed and jsonio.read_checkpoint(paths.record_log("coverage")) is None
    found = age_bench.run_child("seal", home, "2027-01-31T23:20:00Z", "http://127.0.0.1:9")
    assert found["cpu"] is not None, found["note"]
    assert {"2026-11", "2026-12"} <= coverage_summary.current(paths).sealed, found["note"]
    for kind in ("coverage", "runtime_fingerprint", "subject_fingerprint"):
        log = paths.record_log(kind)
        assert jsonio.read_checkpoint(log) == (log.stat().st_size, jsonio.tail_hash(log)), kind
