"""Time what a fresh process pays on logs of ~100k records: its first append, the lease check's reads, a day's lookup.

Each operation runs in a process of its own (as production starts a process
per step) and is timed in CPU seconds inside it, the interpreter's start
aside.  "whole" is the way main read them before issue 45 (the whole chain
verified at a first append; every record of a log read for its newest time
or a day's record); "from end" is the checkpoint and the reads from the end.

    PYTHONPATH=$PWD python scripts/log_reads_timing.py [RECORDS] [--before /path/to/main's tree]
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FILL = """
import sys
from datetime import date, timedelta
from llmarchive.archive import ArchivePaths, jsonio
from llmarchive.archive.record_logs import KINDS, _prepare
from llmarchive.archive.jobs import SUBJECT_FINGERPRINT as SUBJECT
paths, n = ArchivePaths.from_env(sys.argv[1]).ensure(), int(sys.argv[2])
day = lambda i: (date(2016, 1, 1) + timedelta(days=i // 30)).isoformat()     # 30 records a day, ~9 years
def rows(kind, make):
    for start in range(0, n, 5000):
        batch = []
        for i in range(start, min(n, start + 5000)):
            fields = {name: "x" for name in KINDS[kind]}
            fields.update(make(i), date=day(i))
            batch.append(_prepare(kind, fields, f"{day(i)}T04:00:{i % 30:02d}Z"))
        jsonio.append_records(paths.record_log(kind), batch)
rows("skip", lambda i: {"reason": f"r{i}", "cause": "budget_halted"})
rows("runtime_fingerprint", lambda i: {"status": "pass"})
rows(SUBJECT, lambda i: {"subject_model_id": "m"})
rows("model_observed", lambda i: {"provider": "anthropic", "model_id": f"m{i % 40}", "in_family": True})
"""

OPS = {
    "first append, whole chain": """
jsonio.checkpoint_file(paths.record_log("skip")).unlink(missing_ok=True)
t = time.process_time(); records.append(paths, "skip", SKIP); took = time.process_time() - t
""",
    "first append, from checkpoint": """
records.append(paths, "skip", SKIP)     # a previous process's first append wrote the checkpoint
t = time.process_time(); jsonio._verified.clear(); records.append(paths, "skip", SKIP); took = time.process_time() - t
""",
    "lease reads, whole logs": """
t = time.process_time()
beats = times_recorded(records.read(paths, "runtime_fingerprint"))
contacts = times_recorded(records.read(paths, "model_observed"))
took = time.process_time() - t
""",
    "lease reads, from end": """
t = time.process_time()
records.newest_time(paths, "runtime_fingerprint"); records.newest_time(paths, "model_observed")
took = time.process_time() - t
""",
    "day's record, whole log": """
t = time.process_time(); [r for r in records.read(paths, "runtime_fingerprint") if r.get("date") == LAST]
took = time.process_time() - t
""",
    "day's record, from end": """
t = time.process_time(); records.dated(paths, "runtime_fingerprint", LAST); took = time.process_time() - t
""",
    "ids ever seen, whole log": """
t = time.process_time(); {r.get("model_id") for r in records.read(paths, "model_observed")}
took = time.process_time() - t
""",
    "ids ever seen, summary": """
records.distinct(paths, "model_observed", ("provider", "model_id"))
t = time.process_time(); records.distinct(paths, "model_observed", ("provider", "model_id"))
took = time.process_time() - t
""",
    "deep verification, first (parse, chain)": """
from llmarchive.archive import log_checkpoints
log_checkpoints.state_file(paths).unlink(missing_ok=True)
t = time.process_time(); log_checkpoints.verify_all(paths, "2030-01-01", whole=False); took = time.process_time() - t
""",
    "deep verification, again (bytes hashed)": """
from llmarchive.archive import log_checkpoints
log_checkpoints.verify_all(paths, "2030-01-01", whole=False)
t = time.process_time(); log_checkpoints.verify_all(paths, "2030-01-08", whole=False); took = time.process_time() - t
""",
}

# The same calls, timed on this tree and on another (``--before /work/main``): the lease check as a whole (the
# hourly sensor's and timer's work; no run folders here, so it is all log reads) and the subject fingerprint's
# "is today's recorded?" lookup.
CALLS = {
    "lease.check": """
from llmarchive.schedule import lease
t = time.process_time(); lease.check(paths); took = time.process_time() - t
""",
    "subject fingerprint: today's record?": """
from llmarchive.instrument import subject
t = time.process_time(); subject._recorded(paths, NEXT, "m"); took = time.process_time() - t
""",
}

PRELUDE = """
import sys, time, json
from llmarchive.archive import ArchivePaths, jsonio, record_logs as records, times_recorded
paths = ArchivePaths.from_env(sys.argv[1])
SKIP = {"date": "2030-01-01", "job": "sweep", "protocol_id": "p", "reason": "x", "cause": "budget_halted"}
from measure import jsonl
with open(paths.record_log("runtime_fingerprint"), "rb") as fh:
    LAST = jsonl.last_record(fh)["date"]
from datetime import timedelta
from llmarchive.archive import parse_time
NEXT = (parse_time(LAST + "T00:00:00Z") + timedelta(days=1)).strftime("%Y-%m-%d")   # the usual question: not yet
"""


def timed(code: str, home: str, env: dict, tree: str = ".") -> float:
    took = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", PRELUDE + code + "\nprint(json.dumps(took))", home],
                             check=True, capture_output=True, text=True, env=env, cwd=tree).stdout
        took.append(json.loads(out.strip().splitlines()[-1]))
    return min(took)


def main() -> None:
    args = sys.argv[1:]
    before = args[args.index("--before") + 1] if "--before" in args else None
    args = [a for a in args if a != "--before" and a != before]
    n = int(args[0]) if args else 100_000
    with tempfile.TemporaryDirectory() as home:
        subprocess.run([sys.executable, "-c", FILL, home, str(n)], check=True)
        size = sum(p.stat().st_size for p in Path(home, "private", "records").glob("*.jsonl")) / 3 / 1e6
        print(f"logs of {n} records (~{size:.0f} MB each); CPU seconds in a fresh process, interpreter start aside")
        env = dict(os.environ)
        for name, code in OPS.items():
            print(f"  {name:42s} {timed(code, home, env):8.4f} s  (best of 3)")
        for name, code in CALLS.items():
            line = f"  {name:42s} {timed(code, home, env):8.4f} s"
            if before:
                line += f"   before ({before}): {timed(code, home, {**env, 'PYTHONPATH': before}, before):8.4f} s"
            print(line)


if __name__ == "__main__":
    main()
