"""Benchmark: a month's cost at 1, 5 and 10 years of age (issue 45).

The archives are the drill's shape (:mod:`bench.aged_archive`: two quiet
months of the drill's loop, the second replicated to 120 months through the
library's own writers), cut at 12, 60 and 120 months.  Each operation of a
month's cycle runs as production runs it: in a process of its own (cold
caches: Dagster starts a process per step, the timer one per check), its
modules imported first, and only the operation between two readings of the
CPU clock — the process's own CPU seconds, plus its children's and the
publication pool's (``publish.workers``), so the interpreter's start and its
imports are not counted.  Each age is measured "as the 1st of the next
month" (dates passed in, the clock moved with time-machine where the code
reads it), on a scratch copy of the same state for every operation that
writes.  That state is what production holds then:

* last month's publication in ``public/`` (built, untimed, by the code under
  test on the archive as it stood a month earlier, then the month's records
  added), so a publication that redoes only what changed is measured fairly;
* the coverage of every month before last recorded by the code under test
  (untimed, ``record_month`` as the coverage asset runs it on each 1st), so
  a code that seals closed months is measured on sealed months, as a running
  archive holds them, and older code on its own path;
* each chained log's checkpoint (where the code keeps them) at the log's end,
  as a running archive's appends leave it;
* the spend ledger's checkpoint as the last paid start of last month left it
  (for the month's first paid start), or as the first start of this month left
  it (for every other operation: the steady state of a month).

Printed: each operation's CPU seconds at each age (the median of three
processes for operations under ``CHEAP_S``, one otherwise), the ratio of the
oldest age to the youngest, then the month's whole cycle — each cost times
how often a month runs it (:data:`OPERATIONS`) — and its ratio; the load
average when the bench started (CPU seconds depend less on it than wall
time does, but a loaded machine still costs caches).

Run: ``.venv/bin/python bench/age_bench.py [--ages 1,5,10] [--only op,op] [--json]``.
The first run builds the archives (cached under /dev/shm/llmarchive-age/).
"""
import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import aged_archive  # noqa: E402

CHEAP_S = 0.5          # below this an operation is measured three times (median)
REPEATS = 3


@dataclass(frozen=True)
class Operation:
    name: str
    per_month: int
    writes: bool          # run on a scratch copy of the age's state
    what: str


OPERATIONS = (
    Operation("paid_start", 1, True, "the month's first paid start: the partition's permission (earmark, ladder) "
                                     "and its SpendMeter, the ledger's checkpoint from last month"),
    Operation("coverage", 1, True, "the coverage asset on the 1st (assets/coverage.py): record_month of the month "
                                   "just ended — its facts gathered, its periods judged, its rows written"),
    Operation("subject_fingerprint", 30, True, "the day's subject fingerprint (24 paid calls to the fake provider "
                                               "in its own process)"),
    Operation("lease_check", 1440, True, "lease.check + record_state (the hourly sensor and the hourly timer)"),
    Operation("model_watch", 120, True, "watch.watch on the provider's models list (the sensor, every 6 h)"),
    Operation("suspect", 42, False, "paid_run.suspect for a sweep run of the month"),
    Operation("sweep_prelude", 12, True, "sweep.sweep of one partition up to its run's subject (its prelude)"),
    Operation("status", 1, False, "`llmarchive status`'s own work (morning_status and its rendering); counted once "
                                  "a month"),
    Operation("publish", 1, True, "publish.publish_all"),
    Operation("publication_checks", 1, True, "the publication job's asset checks (checks.after_build) after it"),
)
BY_NAME = {op.name: op for op in OPERATIONS}
MODEL = "claude-sonnet-5"


# --------------------------------------------------------------------------
# the child: one operation, timed
# --------------------------------------------------------------------------

def _cpu() -> float:
    """CPU seconds of this process, its reaped children and the forkserver's (publish.workers' pool)."""
    import resource

    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
    try:
        from multiprocessing import forkserver

        pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    except ImportError:
        pid = None
    if pid:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def _sweep_pid(paths) -> str:
    from llmarchive.protocols import registry

    return registry.sweep_protocols(paths, "v0")[0]["protocol_id"]


def _checkpoint_logs(paths) -> str:
    """Each chained log's checkpoint where the code keeps them, as the first append of a running archive's last
    process left it (the builder writes logs, not the state beside them): the log verified whole once, untimed."""
    from llmarchive.archive import jsonio, record_logs as records

    try:
        from llmarchive.archive.log_checkpoints import chained_logs
    except ImportError:             # older code: no checkpoints, every first append verifies its whole log
        return "no log checkpoints in this code"
    logs = [log for log in chained_logs(paths) if paths.experiments not in log.parents]   # closed trial logs aside
    for log in logs:
        jsonio.verify_log(log)
        jsonio.write_checkpoint(log, log.stat().st_size, jsonio.tail_hash(log))
    # Each summary of "every value ever seen" kept beside a log (the model watch's ids) brought to the log's end,
    # as the last reader in a running archive leaves it (the builder's copies end where the template's did).
    summaries = sorted(paths.records.glob("*.jsonl.distinct-*"))
    for summary in summaries:
        kind, fields = summary.name.split(".jsonl.distinct-", 1)
        records.distinct(paths, kind, tuple(fields.split("+")))
    return f"{len(logs)} logs checkpointed, {len(summaries)} summaries brought to their log's end"


class PreludeDone(BaseException):
    """Raised by the subject factory when the sweep asks for its run's subject: the prelude is over."""


def child(op: str, home: str, now: str) -> dict:
    """Run ``op`` on the archive at ``home`` as at ``now``; its CPU seconds (imports and set-up aside)."""
    import time_machine

    from llmarchive import budget as budget_mod
    from llmarchive.archive import ArchivePaths
    from llmarchive.archive.run_ids import sweep_run_id
    from llmarchive.schedule import coverage, lease, paid_run, sweep as sweep_mod, watch
    from llmarchive.succession import load_subject_models
    from llmarchive.subjects import make_subject

    paths = ArchivePaths(Path(home))
    day, month = now[:10], now[:7]
    previous = aged_archive.month_of(aged_archive.index_of(month) - 1)
    base_url = os.environ.get("LLMARCHIVE_SUBJECT_BASE_URL")
    traveller = time_machine.travel(now, tick=True)
    traveller.start()
    config = load_subject_models()
    note = ""
    if op in ("publish", "publication_checks"):
        from publish import publish_all
        from publish.pipeline import checks
    if op == "status":
        from llmarchive.cli.status import publication_inputs_current, render
        from llmarchive.schedule.status import morning_status
    if op == "subject_fingerprint":
        from llmarchive.instrument.prompts import SUBJECT_MAX_TOKENS
        from llmarchive.instrument.subject import subject_fingerprint
        subject = make_subject("anthropic", max_tokens=SUBJECT_MAX_TOKENS, model=MODEL, base_url=base_url)
    if op in ("paid_start", "sweep_prelude", "suspect"):
        from llmarchive.protocols import registry
        pid = _sweep_pid(paths)
        budget = budget_mod.load_budget(paths)
    if op == "sweep_prelude":
        make_subject("anthropic", max_tokens=256, model=MODEL, base_url=base_url)   # its modules imported first
    if op == "paid_start":
        protocol = registry.load_protocol(paths, pid)
        headers = registry.sweep_protocols(paths, "v0")

    parts: dict = {}
    started = _cpu()
    if op == "paid_start":
        run_id = sweep_run_id(day, pid, MODEL)
        auth, earmark, ledger = paid_run.authorize(paths, protocol, "full_sweep", run_id, day, budget=budget,
                                                   all_headers=headers)
        try:
            budget_mod.SpendMeter(paths, auth, run_id, "anthropic", MODEL, budget, ledger=ledger)
        finally:
            if earmark is not None:
                earmark.release()
    elif op == "coverage":
        # What the asset calls: the code under test gathers what it needs (the open window where months are
        # sealed; a gather of the whole history by hand would measure a path the asset never takes).
        result, gap = coverage.record_month(paths, previous, dt.date.fromisoformat(day))
        note = f"{len(result.rows)} rows, {len(result.unexplained)} unexplained" + (f"; {gap}" if gap else "")
    elif op == "subject_fingerprint":
        out = subject_fingerprint(paths, day, subject)
        note = "recorded" if out.record is not None else f"no record: {out}"
    elif op == "lease_check":
        state = lease.check(paths)
        lease.record_state(paths, state)
        note = state.state
    elif op == "model_watch":
        out = watch.watch(paths, day, config, base_url=base_url)
        note = f"{len(out.listed)} listed, {len(out.written)} written" + (f", outage {out.outage}" if out.outage else "")
    elif op == "suspect":
        note = repr(paid_run.suspect(paths, day, sweep_run_id(day, pid, MODEL)))
    elif op == "sweep_prelude":
        asked = []

        def factory(model: str, max_tokens: int):
            asked.append(model)
            if len(asked) > 1:
                raise PreludeDone()
            return make_subject("anthropic", max_tokens=max_tokens, model=model, base_url=base_url)
        try:
            out = sweep_mod.sweep(paths, day, config, subject_factory=factory, budget=budget, only=[pid])
            note = f"no run to start: ran {out.ran}, skipped {out.skipped}"
        except PreludeDone:
            note = "stopped at the run's subject"
    elif op == "status":
        result = morning_status(paths, day, inputs_current=publication_inputs_current, webhook_url=None)
        render(result)
        errors = [k for k, v in result.items() if isinstance(v, dict) and "error" in v]
        note = f"parts in error: {errors}" if errors else ""
    elif op == "publish":
        manifest = publish_all(paths)
        note = f"{len(manifest.get('files', {}))} files"
    elif op == "publication_checks":
        if hasattr(checks, "after_build"):        # what the asset checks call: the build's verdicts while they hold
            found, build_time = checks.after_build(paths)
            note = "reported the build's verdicts" if build_time else "ran every check again"
        else:                                      # older code: the asset checks ran every check again
            found, note = checks.run_all(paths), "ran every check again"
        note += "; " + ("; ".join(f"{k}: {len(v)}" for k, v in found.items() if v) or "all pass")
    elif op == "prime":
        budget_mod.read_ledger(paths)
    elif op == "seal":
        # Last month's coverage asset on its 1st: the months before it recorded (and, where the code seals
        # months, sealed), as a running archive holds them.  ``now`` is late in last month, so the rows go
        # to the log's end in time order.
        _, gap = coverage.record_month(paths, previous, dt.date.fromisoformat(f"{month}-01"))
        try:
            from llmarchive.schedule import coverage_summary
            sealed = sorted(coverage_summary.current(paths).sealed)
        except ImportError:         # older code: no month is sealed, each is recomputed
            sealed = []
        note = (f"{len(sealed)} months sealed" + (f" ({sealed[0]}..{sealed[-1]})" if sealed else "")
                + (f"; unexplained: {gap}" if gap is not None else "") + f"; {_checkpoint_logs(paths)}")
    else:
        raise SystemExit(f"unknown operation {op!r}")
    seconds = _cpu() - started
    traveller.stop()
    return {"cpu": seconds, "note": note, "parts": parts}


# --------------------------------------------------------------------------
# the parent: states, copies, processes
# --------------------------------------------------------------------------

def _env(base_url: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "LLMARCHIVE_SUBJECT_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "fake-bench-key", "NO_PROXY": "127.0.0.1", "LLMARCHIVE_WEBHOOK_URL": ""}


def run_child(op: str, home: Path, now: str, base_url: str) -> dict:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", op, "--home", str(home),
                           "--now", now], capture_output=True, text=True, env=_env(base_url), cwd=ROOT)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"cpu": None, "note": f"failed: {' | '.join(tail)}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def copy_home(source: Path, target: Path, merge: bool = False) -> Path:
    """A scratch copy: run folders hard-linked (no operation here rewrites one), everything else copied.

    ``merge``: copied over what ``target`` holds (a newer home over an older one: its logs replace theirs,
    its new run folders join), keeping what only ``target`` has."""
    if target.exists() and not merge:
        shutil.rmtree(target)

    def copy(src: str, dst: str) -> None:
        if "/experiments/" in src or "/instrument/runs/" in src or "/review/" in src:
            if os.path.exists(dst):
                os.unlink(dst)
            os.link(src, dst)
        else:
            shutil.copy2(src, dst)
    def kept(folder: str, names: list[str]) -> list[str]:
        # Merged over a published home, the newer home's own publication (the builder's template published
        # too) must not replace what last month's build left: public/ and what it keeps beside it.
        if not merge:
            return []
        where = Path(folder).relative_to(source).as_posix()
        return [n for n in names if (where, n) in (("", "public"), (".", "public"), ("private", "publication"))]
    shutil.copytree(source, target, copy_function=copy, symlinks=True, dirs_exist_ok=merge, ignore=kept)
    return target


@dataclass
class Age:
    years: int
    work: Path
    base_url: str

    @property
    def months(self) -> int:
        return 12 * self.years

    @property
    def now(self) -> str:
        return f"{aged_archive.month_of(self.months)}-01T06:00:00Z"

    def last_month(self, hour: str) -> str:
        last = aged_archive.month_of(self.months - 1)
        return f"{last}-{aged_archive.month_days(last):02d}T{hour}Z"


def prepare(age: Age, ops: list[Operation], log) -> Path:
    """The age's state primed last month (see the module docstring).

    When the publication or status is measured, the state is the archive a month younger, published by the
    code under test (untimed), then given the month's records: whatever the publication kept beside
    ``public/`` stays, as in production.
    """
    home = aged_archive.home_at(age.months, log)
    state = age.work / "state-prev"
    if any(op.name in ("status", "publish", "publication_checks") for op in ops):
        # Published where the measured publication will run (the scratch copy's path): a home's path is one of
        # the things the boundary checks search for, so a build remembers files found clean only under it.
        scratch = copy_home(aged_archive.home_at(age.months - 1, log), age.work / "scratch")
        published = run_child("publish", scratch, f"{aged_archive.month_of(age.months - 1)}-01T09:00:00Z",
                              age.base_url)
        if published["cpu"] is None:
            log(f"  last month's publication failed ({published['note']}); public/ left as it is")
        if state.exists():
            shutil.rmtree(state)
        scratch.rename(state)
        copy_home(home, state, merge=True)
    else:
        copy_home(home, state)
    sealed = run_child("seal", state, age.last_month("23:20:00"), age.base_url)
    log(f"  {age.years:>2} y  coverage recorded through {aged_archive.month_of(age.months - 2)} (untimed): "
        f"{sealed['note']}")
    run_child("prime", state, age.last_month("23:30:00"), age.base_url)
    return state


def measure(age: Age, ops: list[Operation], log) -> dict:
    """Each operation's CPU seconds at ``age`` (a part of one, such as the coverage's gather, under its own name)."""
    prev_state = prepare(age, ops, log)
    this_state: Optional[Path] = None
    results: dict = {}
    published: Optional[Path] = None
    for op in ops:
        if op.name != "paid_start" and this_state is None:
            # The month's first paid start verifies the ledger and leaves its checkpoint: every other operation
            # runs in that steady state (the paid start's own copy when it was measured, else one primed here).
            this_state = copy_home(prev_state, age.work / "state-this")
            run_child("prime", this_state, f"{aged_archive.month_of(age.months)}-01T00:00:30Z", age.base_url)
        values, notes, parts = [], [], []
        for attempt in range(REPEATS):
            if op.name == "publication_checks" and published is not None:
                home = published                         # the checks run on what the publication just built
            elif op.name == "paid_start":
                home = copy_home(prev_state, age.work / f"paid-{attempt}")
            elif op.writes:
                home = copy_home(this_state, age.work / "scratch")
            else:
                home = this_state
            found = run_child(op.name, home, age.now, age.base_url)
            notes.append(found["note"])
            if found["cpu"] is None:
                break
            values.append(found["cpu"])
            parts.append(found.get("parts") or {})
            if op.name == "publish":
                published = home.rename(age.work / "published")
            if op.name == "paid_start":
                if this_state is not None:
                    shutil.rmtree(this_state)
                this_state = home
            if found["cpu"] >= CHEAP_S or op.name in ("publish", "publication_checks"):
                break
        cpu = statistics.median(values) if values else None
        results[op.name] = {"cpu": cpu, "runs": len(values), "note": notes[-1] if notes else ""}
        for name in (parts[0] if parts else {}):
            results[name] = {"cpu": statistics.median(p[name] for p in parts), "runs": len(parts), "note": ""}
        log(f"  {age.years:>2} y  {op.name:<20} {'failed' if cpu is None else f'{cpu:8.3f} s'}"
            f"  ({len(values)} run(s)) {notes[-1] if notes else ''}"[:220])
    return results


PARTS: dict[str, tuple[str, ...]] = {}     # an operation shown as its parts, each timed by the child


def rows_of(ops: list[Operation]) -> list[tuple[str, int]]:
    """The table's rows: each operation, or its parts, with how often a month runs it."""
    return [(name, op.per_month) for op in ops for name in PARTS.get(op.name, (op.name,))]


def month_total(results: dict, ops: list[Operation]) -> float:
    return sum((results.get(name, {}).get("cpu") or 0.0) * times for name, times in rows_of(ops))


def table(ages: list[int], ops: list[Operation], results: dict) -> list[str]:
    first, last = str(ages[0]), str(ages[-1])
    head = f"{'operation (times a month)':<30}" + "".join(f"{f'{a} y':>10}" for a in ages) + f"{'ratio':>8}"
    lines = [f"CPU seconds of one run of each operation; ratio = {last} y / {first} y", head]
    for name, times in rows_of(ops):
        row = f"{name + f' (x{times})':<30}"
        for a in ages:
            cpu = results[str(a)].get(name, {}).get("cpu")
            row += f"{'failed':>10}" if cpu is None else f"{cpu:10.3f}"
        a0, a1 = (results[k].get(name, {}).get("cpu") for k in (first, last))
        row += f"{a1 / a0:8.1f}" if a0 and a1 is not None and len(ages) > 1 else f"{'':>8}"
        lines.append(row)
    totals = {a: month_total(results[str(a)], ops) for a in ages}
    row = f"{'a month (cost x times)':<30}" + "".join(f"{totals[a]:10.1f}" for a in ages)
    if len(ages) > 1 and totals[ages[0]]:
        row += f"{totals[ages[-1]] / totals[ages[0]]:8.2f}"
    lines.append(row)
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ages", default="1,5,10", help="years (of 1, 2, 5, 10; default 1,5,10)")
    parser.add_argument("--only", help="operations to run, comma-separated: " + ", ".join(BY_NAME))
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    parser.add_argument("--now", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.home, args.now)))
        return 0
    ages = sorted(int(a) for a in args.ages.split(","))
    unknown = [a for a in ages if 12 * a not in aged_archive.SNAPSHOTS]
    if unknown:
        parser.error(f"ages are among {[m // 12 for m in aged_archive.SNAPSHOTS]} years, not {unknown}")
    names = args.only.split(",") if args.only else list(BY_NAME)
    if [n for n in names if n not in BY_NAME]:
        parser.error(f"unknown operation(s) {[n for n in names if n not in BY_NAME]}; known: {', '.join(BY_NAME)}")
    ops = [op for op in OPERATIONS if op.name in names]
    log = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json else \
        (lambda text: print(text, flush=True))
    load = os.getloadavg()
    log(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    started = time.monotonic()
    for a in ages:                  # build (or find) the archives first: their time is not the bench's
        aged_archive.home_at(12 * a, log)
        aged_archive.home_at(12 * a - 1, log) if 12 * a - 1 in aged_archive.SNAPSHOTS else None
    built = aged_archive.built_facts()
    results: dict = {}
    fake = subprocess.Popen([sys.executable, "-m", "tests.fake_provider"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        base_url = fake.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="age-bench-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None) \
                as tmp:
            for a in ages:
                age = Age(a, Path(tmp) / f"{a}y", base_url)
                age.work.mkdir()
                results[str(a)] = measure(age, ops, log)
                results[str(a)]["month_total"] = {"cpu": month_total(results[str(a)], ops)}
                shutil.rmtree(age.work, ignore_errors=True)
    finally:
        fake.stdin.close()
        fake.wait(10)
    sizes = {str(m // 12): built.get("homes", {}).get(str(m)) for m in (12 * a for a in ages)}
    if args.json:
        print(json.dumps({"load_average": load, "load_average_end": os.getloadavg(), "ages": ages, "results": results, "homes": sizes,
                          "per_month": dict(rows_of(ops)),
                          "build_seconds": built.get("seconds"), "seconds": round(time.monotonic() - started, 1)},
                         indent=1))
        return 0
    print()
    for line in table(ages, ops, results):
        print(line)
    for a in ages:
        s = sizes[str(a)] or {}
        print(f"home at {a} y: {s.get('files', 0):,} files, {s.get('mb', 0):,.0f} MB (as at {s.get('at', '?')})")
    drill = aged_archive.cache_dir() / "template" / "template.json"
    drill_s = json.loads(drill.read_text(encoding="utf-8")).get("seconds") if drill.exists() else None
    print(f"load average at start {load[0]:.2f}, at the end {os.getloadavg()[0]:.2f} (CPU seconds are counted, "
          f"not wall time); the bench took {time.monotonic() - started:.0f} s; the archives were built once "
          f"(the drill's two months {drill_s} s, the {aged_archive.MONTHS} months {built.get('seconds', '?')} s) "
          "and are cached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
