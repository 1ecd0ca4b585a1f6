"""Benchmark: the demo pipeline (``make demo``) — how much of its wall time is not the model.

Runs :func:`scripts.demo.run_demo` for real (every step a Dagster
materialisation on the embedded model) in a throw-away archive home and a
throw-away Dagster home, while timing every moment the model is working:
each reference call (``ReferenceSubject.call``), each fingerprint generation
(``LogprobEngine.generate``) and each model load.  Calls overlap (two
instances answer side by side), so the model's share is the *union* of those
intervals — wall time during which at least one model was busy.

It prints, measured in the same run:

* the pipeline's wall time and the model-busy time (the baseline: what the
  model itself costs);
* their ratio and the share outside model work — Dagster, the runner's
  trial log and fsyncs, the estimator, coverage, publication, checks.
  The target is ≤ 10 %;
* per step, wall time and model-busy time.

Run: ``.venv/bin/python bench/demo_bench.py`` (about 20–25 minutes on two
cores).  ``--protocols`` and ``--max-tokens`` shorten the open-weights step
(a shortened run is exploratory, and the overhead share then grows because
the model has less to do).
"""
import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llmarchive.instrument.engine import LogprobEngine  # noqa: E402
from llmarchive.subjects.reference import ReferenceSubject  # noqa: E402


class BusyClock:
    """Collects (start, end) intervals from any thread; reports their union."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.intervals: list[tuple[float, float]] = []

    def wrap(self, owner: type, name: str) -> None:
        original = getattr(owner, name)
        clock = self

        def timed(*args, **kwargs):
            started = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                with clock.lock:
                    clock.intervals.append((started, time.monotonic()))

        setattr(owner, name, timed)

    def busy(self, since: float = float("-inf"), until: float = float("inf")) -> float:
        """Seconds within [since, until] during which at least one interval was open."""
        with self.lock:
            spans = sorted((max(a, since), min(b, until)) for a, b in self.intervals if b > since and a < until)
        total, current_start, current_end = 0.0, None, None
        for a, b in spans:
            if current_end is None or a > current_end:
                if current_end is not None:
                    total += current_end - current_start
                current_start, current_end = a, b
            else:
                current_end = max(current_end, b)
        if current_end is not None:
            total += current_end - current_start
        return total


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocols", nargs="*", default=None, help="open protocols to run (default: all open v0)")
    parser.add_argument("--max-tokens", type=int, default=None, help="override max_tokens (exploratory)")
    parser.add_argument("--target-pct", type=float, default=10.0)
    args = parser.parse_args(argv)

    clock = BusyClock()
    clock.wrap(ReferenceSubject, "call")
    clock.wrap(ReferenceSubject, "_load")
    clock.wrap(LogprobEngine, "generate")
    clock.wrap(LogprobEngine, "_load")

    steps: list[tuple[str, float, float]] = []
    import scripts.demo as demo

    original_step = demo._step

    def timed_step(title, *rest, **kwargs):
        started = time.monotonic()
        elapsed = original_step(title, *rest, **kwargs)
        steps.append((title.split(":")[0], elapsed, clock.busy(started, time.monotonic())))
        return elapsed

    demo._step = timed_step
    with tempfile.TemporaryDirectory(prefix="llmarchive-demo-bench-") as tmp:
        os.environ["DAGSTER_HOME"] = str(Path(tmp) / "dagster")
        started = time.monotonic()
        demo.run_demo(home=str(Path(tmp) / "archive"), protocols=args.protocols, max_tokens=args.max_tokens)
        wall = time.monotonic() - started
    busy = clock.busy()
    outside = wall - busy
    share = 100.0 * outside / wall
    print("\n== demo pipeline benchmark")
    print(f"{'step':<52} {'wall s':>8} {'model s':>8} {'other %':>8}")
    for title, elapsed, model in steps:
        other = 100.0 * (elapsed - model) / elapsed if elapsed else 0.0
        print(f"{title[:52]:<52} {elapsed:8.1f} {model:8.1f} {other:8.1f}")
    print(f"model calls timed: {len(clock.intervals)}")
    print(f"pipeline wall time {wall:.1f} s; model busy (baseline, same run) {busy:.1f} s; "
          f"ratio {wall / busy:.3f}×")
    print(f"outside model work: {outside:.1f} s = {share:.1f} % of wall time (target ≤ {args.target_pct:.0f} %): "
          f"{'OK' if share <= args.target_pct else 'OVER TARGET'}")
    return 0 if share <= args.target_pct else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
