"""Benchmark: the cost of an append does not grow with the log.

Two figures, each against a baseline measured in the same run:

* **one record onto a 50,000-record log vs onto an empty one** — the
  median time of ``llmarchive.archive.record_logs.append`` (lock, read the tail hash,
  chain, write, fsync).  An append reads only the log's last line, so the
  ratio should stay near 1 (target ≤ 1.5).
* **a month's coverage write onto a ten-year log** — ~114 coverage rows
  (the jobs and protocols of one month) in one ``records.append_many`` batch
  onto a coverage log holding 120 months of such rows (target ≤ 1 s).

Printed beside them, without a target: a process's *first* append onto the
50,000-record log, which verifies the whole chain once (opening the log), so
that a log edited anywhere is refused rather than appended to.

The big logs are written directly with ``measure.chain`` (one write), so
building them does not count.  Run: ``.venv/bin/python bench/append_bench.py``.
"""
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmarchive.archive import record_logs as records
from llmarchive.archive.paths import ArchivePaths  # noqa: E402
from measure import chain  # noqa: E402
from measure.schema import SCHEMA_VERSION  # noqa: E402

BIG = 50_000
APPENDS = 200
MONTH_ROWS = 114
MONTHS = 120


def skip(i: int) -> dict:
    return {"date": "2026-11-02", "job": "sweep", "protocol_id": f"risky_choice_framing__wording__v{i % 2}",
            "reason": f"budget ladder rung 3, record {i}", "cause": "budget_halted"}


def coverage_row(period: str, i: int) -> dict:
    return {"period": period, "job": "sweep", "series": "commercial", "protocol_id": f"protocol_{i:03d}",
            "status": "gap", "cause": "budget_halted", "run_id": None, "detail": f"row {i}"}


def prefill(path: Path, rows) -> None:
    """Write a chained log in one go (the set-up, not the measurement)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prev = chain.GENESIS
    lines = []
    for kind, fields in rows:
        record = {"record_type": kind, "schema_version": SCHEMA_VERSION, "recorded_at": "2026-01-01T00:00:00Z"}
        record.update(fields)
        entry = chain.link(record, prev)
        prev = entry["record_sha256"]
        lines.append(chain.to_line(entry))
    path.write_text("".join(lines), encoding="utf-8")


def append_times(paths: ArchivePaths, count: int) -> list[float]:
    times = []
    for i in range(count):
        start = time.perf_counter()
        records.append(paths, "skip", skip(i))
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="append_bench_") as tmp:
        empty = ArchivePaths(Path(tmp) / "empty")
        big = ArchivePaths(Path(tmp) / "big")
        prefill(big.record_log("skip"), (("skip", skip(i)) for i in range(BIG)))
        # A process's first append opens the log: it verifies the whole chain once (figure 3).
        start = time.perf_counter()
        records.append(big, "skip", skip(BIG))
        open_ms = (time.perf_counter() - start) * 1000
        # Interleave so that disk and cache noise hits both alike.
        empty_t, big_t = [], []
        for _ in range(APPENDS // 20):
            empty_t += append_times(empty, 20)
            big_t += append_times(big, 20)
        empty_ms = statistics.median(empty_t) * 1000
        big_ms = statistics.median(big_t) * 1000
        ratio = big_ms / empty_ms

        decade = ArchivePaths(Path(tmp) / "decade")
        periods = [f"{2026 + m // 12}-{m % 12 + 1:02d}" for m in range(MONTHS)]
        prefill(decade.record_log("coverage"),
                (("coverage", coverage_row(p, i)) for p in periods for i in range(MONTH_ROWS)))
        month = [coverage_row("2036-01", i) for i in range(MONTH_ROWS)]
        start = time.perf_counter()
        written = records.append_many(decade, "coverage", month)
        month_s = time.perf_counter() - start
        assert len(written) == MONTH_ROWS
        total = records.verify(decade, "coverage")

    print(f"append one record ({APPENDS} appends each, median; lock + tail hash + write + fsync)")
    print(f"  onto an empty log                         {empty_ms:8.2f} ms")
    print(f"  onto a {BIG:,}-record log                 {big_ms:8.2f} ms")
    print(f"  ratio big / empty                         {ratio:8.2f}x   target ≤ 1.5")
    print(f"  first append of a process onto the {BIG:,}-record log (verifies the whole chain once) "
          f"{open_ms:8.1f} ms")
    print(f"a month's coverage ({MONTH_ROWS} rows, one batch) onto a ten-year log "
          f"({MONTHS * MONTH_ROWS:,} rows, {total:,} after)")
    print(f"  records.append_many                       {month_s * 1000:8.1f} ms   target ≤ 1000 ms")
    ok = ratio <= 1.5 and month_s <= 1.0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
