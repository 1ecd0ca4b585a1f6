"""``make drill``: two years of the archive under Dagster's own scheduler and sensors, on a moved clock.

A fresh home (:mod:`scripts.drill_home`) on a Dagster instance of its own
(:mod:`scripts.drill_dagster`), against the fake Anthropic provider over
real HTTP and a scripted reference engine, is driven through the script of
:mod:`scripts.drill_script`: every schedule and sensor on, paid ones
included, as an owner runs them; the clock stepped to every schedule tick
and to every sensor's evaluation (no finer than ``--sensor-every``, see
below); the script's events applied on their instants — the provider's
models list, its outages, the daemon's downtime, a full disk, the owner's
budget, the owner's webhook down, hung or answering 500, and what a person
does in the UI.  At every month's publication and
at the end the checks of :mod:`scripts.drill_checks` run; the output is the
month-by-month table of :mod:`scripts.drill_report` and the verdicts, and
the exit status is 1 when a verdict fails.

``--sensor-every``.  Four of the sensors ask to be evaluated every ten
minutes or every hour, and Dagster evaluates a sensor at a daemon pass once
its interval has elapsed.  Visiting each of those instants would be 144
passes a simulated day (about 50 s at a third of a second a pass); the
drill steps the clock every ``--sensor-every`` instead (default twelve
hours) and at every schedule tick, and each pass evaluates every sensor
that is due, so each sensor runs about four times a simulated day.  Nothing
the archive does depends on a finer pace: the lease's dead-man waits 36 h,
the alerts are posted on the day they are raised.  ``--sensor-every 600``
visits every instant they would see.  The schedules' ticks are always
visited, each one.

``--runs`` and ``--hourly-days``: what a month costs an owner.  By
default every run, every outside check and each month's ``llmarchive
status`` run in a process of their own (:mod:`scripts.drill_child`), as
production starts them, so every per-process cache is cold at each step's
start; and on the 1st, the 15th and the last day of each month the sensors
are evaluated and the outside check runs every hour, as in production.  The
table gives each month's CPU seconds of the work
(:meth:`scripts.drill_loop.Loop.cpu`) and a verdict holds the last month to
1.25 times the third.  ``--runs thread`` executes the runs in threads of
the drill's process instead (warm caches, a second or two less a run: the
suite's drills, which prove the verdicts, not the cost) and ``--hourly-days
""`` samples no day hourly.

Usage: ``python -m scripts.drill [--script full|short] [--months N] [--root DIR] [--sensor-every SECONDS]
[--runs process|thread] [--hourly-days DAYS] [--profile FILE]``.
"""
import argparse
import contextlib
import cProfile
import datetime as dt
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import time_machine

from scripts.drill_loop import HOURLY_DAYS, Loop, Outcome, hourly_days
from scripts.drill_script import SCRIPTS, Script


def run(script: Script, root: Path, sensor_every: dt.timedelta, months: Optional[int] = None,
        profile: Optional[str] = None, runs: str = "process", hourly: str = HOURLY_DAYS) -> Outcome:
    """Drive ``script`` (its first ``months`` months when given) under ``root``; the outcome.

    ``profile``: a file for the cProfile of the loop and of every run's thread or process, merged.
    ``runs`` and ``hourly``: ``--runs`` and ``--hourly-days`` (the module docstring).
    """
    script = script.cut(months)
    started = time.monotonic()
    traveller = time_machine.travel(script.start, tick=True)
    coordinates = traveller.start()
    main_profile = cProfile.Profile() if profile else None
    try:
        with Loop(script, root, sensor_every, coordinates, runs, hourly_days(hourly)) as loop:
            if main_profile is not None:
                loop.state.launcher.profiling = True
                main_profile.enable()
            loop.drive()
            outcome = loop.finish()
            if main_profile is not None:
                main_profile.disable()
                stats = pstats.Stats(main_profile)
                for thread_profile in loop.state.launcher.profiles:
                    stats.add(thread_profile)
                stats.dump_stats(profile)
    finally:
        traveller.stop()
    outcome.seconds = time.monotonic() - started
    return outcome


def _arguments(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scripts.drill", description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", choices=sorted(SCRIPTS), default="full")
    parser.add_argument("--months", type=int, help="stop after this many months of the script")
    parser.add_argument("--root", help="where the drill's home and Dagster instance go (default: a new folder "
                                       "under /dev/shm, else the system's temp folder)")
    parser.add_argument("--sensor-every", type=int, default=12 * 3600,
                        help="seconds between two sensor evaluations at most (default 43200; 600 = every tick)")
    parser.add_argument("--runs", choices=["process", "thread"], default="process",
                        help="each run (and outside check, and status) in a process of its own, as production "
                             "(default), or each run in a thread of the drill's process (warm caches, faster)")
    parser.add_argument("--hourly-days", default=HOURLY_DAYS,
                        help="days of each month whose sensors and outside check run hourly, as production's: "
                             f"day numbers and 'last', comma-separated, '' for none (default {HOURLY_DAYS})")
    parser.add_argument("--profile", help="write a cProfile of the drill (the loop and every run's thread, merged) "
                                          "to this file")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> int:
    args = _arguments(argv)
    shm = Path("/dev/shm")
    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="llmarchive-drill-",
                                                                  dir=shm if shm.is_dir() else None))
    root.mkdir(parents=True, exist_ok=True)
    log = root / "drill.log"
    print(f"drill {args.script}: home and Dagster instance under {root}; Dagster's own output in {log}", flush=True)
    with open(log, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        outcome = run(SCRIPTS[args.script], root, dt.timedelta(seconds=args.sensor_every), args.months,
                      args.profile, args.runs, args.hourly_days)
    print(outcome.table)
    for name, ok, detail in outcome.verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f": {detail}" if detail else ""))
    per_month = [s for s in outcome.month_seconds.values()]
    print(f"\n{len(outcome.month_seconds)} months in {outcome.seconds / 60:.1f} min "
          f"({outcome.passes} daemon passes; a month {min(per_month, default=0):.0f}–{max(per_month, default=0):.0f} s)")
    cpu = [outcome.month_cpu[m] for m in sorted(outcome.month_cpu)]
    print(f"the work's CPU (--runs {args.runs}): a month {min(cpu, default=0):.0f}–{max(cpu, default=0):.0f} s; "
          "each month " + ", ".join(f"{m} {s:.0f}" for m, s in sorted(outcome.month_cpu.items()))
          + "; status " + ", ".join(f"{m} {s:.1f}" for m, s in sorted(outcome.status_cpu.items())))
    for part, seconds in sorted(outcome.parts.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds / 60:6.1f} min  {part}")
    for note in outcome.notes:
        print(f"note: {note}")
    return 0 if outcome.passed else 1


if __name__ == "__main__":
    sys.exit(main())
