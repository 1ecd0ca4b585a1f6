"""Benchmark: one v1-sized measurement, fast bootstrap vs a naive resampler.

A v1 measurement has n = 120 responses per version, k = 2 options, 15 items
and B = 10,000 bootstrap replicates.  Both resamplers follow method §6's unit:
n responses per version, invalid ones included, the gap over the valid ones
of each draw.  The estimator draws each replicate's *counts* by inverting
exact binomial CDFs (see measure/stats.py); the naive reference, which lives
only here, draws the 120 responses of each version one by one with
replacement and counts them.  Both use the same SHA-256
stream, so the difference is the algorithm alone.

The record also carries the within-panel bootstrap (method §6.7: only the
repeats of each scenario and version resampled, B = 10,000), timed on its own
below for these trials and for a worst case in which every one of the 30 A/B
cells has a count vector of its own (no two cells can share a draw).

Targets: a whole measurement (measure.measurement.build, both bootstraps) in
≤ 100 ms, and the fast bootstrap ≥ 20× faster than the naive one.  Run:
``.venv/bin/python bench/measure_bench.py``.
"""
import statistics
import sys
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure import stats  # noqa: E402
from measure.measurement import build  # noqa: E402
from measure.rng import Stream  # noqa: E402
from tests.measure_helpers import ITEMS, RUN, protocol, set_items, trials_from, uniform  # noqa: E402

B = 10_000
REPEATS = 7


def v1_trials():
    plan = uniform({"A": ["A", "B"] * 4, "A_prime": ["A", "B"] * 4, "B": ["A", "B"] * 4, "C": ["B"] * 8})
    set_items(plan, "B", ITEMS[:6], ["B"] * 6 + ["A", "B"])
    plan["A"]["s09"] = ["unparseable"] + ["A", "B"] * 3 + ["A"]
    return trials_from(plan, 8)


def cells(trials, version):
    """Version ``version``'s cells as ``[invalid, A, B]`` counts, in item order (what build passes)."""
    out = {}
    for t in trials:
        if t["version"] == version:
            cell = out.setdefault(t["item_id"], [0, 0, 0])
            cell[0 if t["outcome"] != "valid" else 1 + ["A", "B"].index(t["token"])] += 1
    return [out[item] for item in sorted(out)]


def worst_case_cells():
    """30 cells, every one a count vector of its own, some with invalid answers (the slow path)."""
    a = [[0, i, 8 - i] for i in range(1, 8)] + [[1, i, 7 - i] for i in range(1, 7)] + [[2, 3, 3], [2, 4, 2]]
    b = [[0, i, 8 - i] for i in range(1, 8)] + [[1, i, 7 - i] for i in range(1, 7)] + [[2, 1, 5], [2, 5, 1]]
    return a, b


def naive_bootstrap_gaps(counts_x, counts_y, seed, b, n_x, n_y):
    """Reference: resample n individual responses per version per replicate.

    The same unit as the estimator (method §6): each version's bag holds all
    its ``n`` responses, the invalid ones as ``None``; a replicate draws
    ``n`` of them with replacement and takes the gap over the valid ones (a
    draw without any valid response counts as a gap of 1, as in
    ``measure.stats.replicate_gap``).
    """
    bag_x = [t for t, c in sorted(counts_x.items()) for _ in range(c)]
    bag_y = [t for t, c in sorted(counts_y.items()) for _ in range(c)]
    bag_x += [None] * (n_x - len(bag_x))
    bag_y += [None] * (n_y - len(bag_y))
    stream = Stream(seed)
    tokens = sorted(set(counts_x) | set(counts_y))
    out = []
    for _ in range(b):
        cx = Counter(bag_x[stream.below(n_x)] for _ in range(n_x))
        cy = Counter(bag_y[stream.below(n_y)] for _ in range(n_y))
        mx, my = n_x - cx[None], n_y - cy[None]
        if mx == 0 or my == 0:
            out.append(Fraction(1))
            continue
        out.append(Fraction(sum(abs(cx[t] * my - cy[t] * mx) for t in tokens), 2 * mx * my))
    return out


def timed(fn, repeats):
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    proto = protocol(8, grammar_version=2)
    trials = v1_trials()
    build_s, record = timed(lambda: build(proto, trials, RUN), REPEATS)
    x, y = record["decisions"]["A"], record["decisions"]["B"]
    seed = stats.bootstrap_seed(proto["protocol_id"], RUN["run_date"], RUN["subject_model_id"])
    n = proto["n"]
    fast_s, fast = timed(lambda: stats.bootstrap_gaps(x, y, seed, B, n_x=n, n_y=n), REPEATS)
    naive_s, naive = timed(lambda: naive_bootstrap_gaps(x, y, seed, B, n, n), 1)
    cx, cy = cells(trials, "A"), cells(trials, "B")
    strat_s, _ = timed(lambda: stats.stratified_bootstrap_ci_pct(cx, cy, seed, B), REPEATS)
    wx, wy = worst_case_cells()
    worst_s, _ = timed(lambda: stats.stratified_bootstrap_ci_pct(wx, wy, seed, B), REPEATS)
    ratio = naive_s / fast_s
    fast_mean = float(sum(fast) / len(fast)) * 100
    naive_mean = float(sum(naive) / len(naive)) * 100
    print(f"v1-sized measurement: n=120 per version, k=2, 15 items, B={B}")
    print(f"  measure.measurement.build (whole record)  median {build_s * 1000:8.1f} ms   target ≤ 100 ms")
    print(f"  bootstrap, inverse-CDF counts (fast)      median {fast_s * 1000:8.1f} ms")
    print(f"  within-panel bootstrap, these trials      median {strat_s * 1000:8.1f} ms")
    print(f"  within-panel bootstrap, 30 distinct cells median {worst_s * 1000:8.1f} ms   (worst case)")
    print(f"  bootstrap, naive per-response resampling         {naive_s * 1000:8.1f} ms")
    print(f"  speed-up naive / fast                            {ratio:8.1f}x   target ≥ 20x")
    print(f"  mean replicate gap: fast {fast_mean:.3f} pts, naive {naive_mean:.3f} pts (same distribution)")
    ok = build_s <= 0.100 and ratio >= 20
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
