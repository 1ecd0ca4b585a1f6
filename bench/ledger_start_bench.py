"""Benchmark: a paid run's start does not grow with the spend ledger's age.

A commercial partition's start — the permission with its earmark
(``budget.earmark_run``) and the meter (``SpendMeter``) — on ledgers of
1,000, 10,000 and 50,000 entries, each in the steady state of a running
archive: an earlier start took the checkpoint, and a neighbour appended a few
entries since.  Printed per size: the ledger entries and bytes the start
parsed (counted on the real JSONL reader), the median time of the whole start
and of ``SpendMeter.__init__`` alone; then the **ratio of the start at 50k to
the start at 1k**, measured in this one run (target ≤ 1.5).  Without a target,
the first start of a month on the 50k ledger, which verifies the whole chain.

Only the public budget API is used, so the same file measures an older
checkout for the before/after figures.  Run:
``.venv/bin/python bench/ledger_start_bench.py``.
"""
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmarchive import budget as B  # noqa: E402
from llmarchive.archive.paths import ArchivePaths  # noqa: E402
from llmarchive.archive.dates import utc_now  # noqa: E402
from measure import chain, jsonl  # noqa: E402
from measure.schema import SCHEMA_VERSION  # noqa: E402

SIZES = (1_000, 10_000, 50_000)
STARTS = 7
TAIL = 10
BUDGET = B.Budget(1_000_000.0, 5.0, 5.0, {"scenario": 0.01, "fingerprint": 0.001})
AUTH = B.Authorization("sweep", "scenario", "general", 0.01)
HEADER = {"protocol_id": "p_wording", "rewording_type": "wording", "lane": "guard", "n": 30}


def entry(i: int, month: str) -> dict:
    """A ledger entry shaped like the sweep's: a reservation, then the charge that settles it."""
    run, call = f"sweep-{i // 240:05d}", f"s{i // 2:06d}/item_{i // 2 % 24:02d}/A/0"
    base = {"schema_version": SCHEMA_VERSION, "recorded_at": f"{month}-05T00:00:00Z", "month": month,
            "job": "full_sweep", "category": "scenario", "pool": "general", "run_id": run, "call_key": call,
            "subject": "anthropic", "model_id": "claude-sonnet-5"}
    if i % 2 == 0:
        return {**base, "record_type": B.RESERVATION, "reservation_id": f"{run}/{call}/s1/1", "attempt": 1,
                "worst_input_tokens": 420, "max_tokens": 512, "worst_case_eur": 0.0087}
    return {**base, "record_type": B.CHARGE, "charge_id": f"{call}@s1", "trial": True, "answered": True,
            "input_tokens": 380, "output_tokens": 96, "attempts": 1, "unknown_attempts": 0, "basis": "usage",
            "settles": [f"{run}/{call}/s1/1"], "cost_eur": 0.0024}


def prefill(paths: ArchivePaths, count: int) -> None:
    month = utc_now()[:7]
    prev, lines = chain.GENESIS, []
    for i in range(count):
        record = chain.link(entry(i, month), prev)
        prev = record["record_sha256"]
        lines.append(chain.to_line(record))
    paths.spend_ledger.parent.mkdir(parents=True, exist_ok=True)
    paths.spend_ledger.write_text("".join(lines), encoding="utf-8")


class Parsed:
    """Ledger entries and bytes the real JSONL reader parses while counting is on."""

    def __init__(self) -> None:
        self.entries = self.bytes = 0
        real = jsonl.JsonlReader._parse

        def counting(reader, raw, number, start):
            found = real(reader, raw, number, start)
            if isinstance(found, dict) and found.get("record_type") in (B.CHARGE, B.RESERVATION):
                self.entries += 1
                self.bytes += len(raw)
            return found

        jsonl.JsonlReader._parse = counting


def start(paths: ArchivePaths, run_id: str) -> float:
    """One commercial start; returns the seconds ``SpendMeter.__init__`` took."""
    auth, held, ledger = B.earmark_run(paths, BUDGET, HEADER, "full_sweep", 120, run_id=run_id)
    try:
        begun = time.perf_counter()
        B.SpendMeter(paths, auth, run_id, "anthropic", "claude-sonnet-5", BUDGET, ledger=ledger)
        return time.perf_counter() - begun
    finally:
        if held is not None:
            held.release()


def measure(paths: ArchivePaths, size: int, counter: Parsed) -> dict:
    prefill(paths, size)
    B.write_budget(paths, BUDGET)
    begun = time.perf_counter()
    start(paths, "first-start")                    # the month's first start (the checkpoint is taken here)
    first_s = time.perf_counter() - begun
    neighbour = B.SpendMeter(paths, AUTH, "neighbour", "anthropic", "claude-sonnet-5", BUDGET)
    totals, meters, parsed = [], [], []
    for k in range(STARTS):
        for i in range(TAIL):
            neighbour.reserve(f"n{k}/{i}", "s1", 1, 400, 512)
        before = (counter.entries, counter.bytes)
        begun = time.perf_counter()
        meters.append(start(paths, f"run-{k}"))
        totals.append(time.perf_counter() - begun)
        parsed.append((counter.entries - before[0], counter.bytes - before[1]))
    return {"size": size, "first_s": first_s, "start_ms": statistics.median(totals) * 1000,
            "meter_ms": statistics.median(meters) * 1000, "entries": max(p[0] for p in parsed),
            "bytes": max(p[1] for p in parsed)}


def main() -> int:
    counter = Parsed()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ledger_start_bench_") as tmp:
        for size in SIZES:
            rows.append(measure(ArchivePaths(Path(tmp) / f"l{size}").ensure(), size, counter))
    print(f"a commercial run's start (earmark_run + SpendMeter), {STARTS} starts each, {TAIL} entries appended "
          "by a neighbour before each; median")
    print(f"  {'ledger':>8}  {'parsed entries':>14}  {'parsed bytes':>12}  {'start':>9}  {'meter init':>10}")
    for r in rows:
        print(f"  {r['size']:>8,}  {r['entries']:>14,}  {r['bytes']:>12,}  {r['start_ms']:>6.1f} ms  "
              f"{r['meter_ms']:>7.1f} ms")
    ratio = rows[-1]["start_ms"] / rows[0]["start_ms"]
    print(f"  ratio start at {SIZES[-1]:,} / at {SIZES[0]:,}            {ratio:8.2f}x   target ≤ 1.5")
    print(f"  the month's first start on {SIZES[-1]:,} entries (verifies the whole chain) "
          f"{rows[-1]['first_s'] * 1000:8.1f} ms")
    ok = ratio <= 1.5
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
