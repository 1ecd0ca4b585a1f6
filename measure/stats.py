"""The estimator and its checks (method §6), in exact arithmetic where it matters.

Inputs are *count maps* ``{token: count}`` of the valid responses of one
version; tokens missing from a map count zero.  Everything returned is in
published units: ``_pct`` values run 0–100.

Design notes
------------
* **Exact where a threshold is applied.**  Gaps, drop bounds and the noise
  floor are computed as fractions from integer counts, so a value that sits
  exactly on a threshold (a drop bound of exactly 2.0) is judged exactly,
  not by the luck of a binary rounding.
* **The bootstrap** (inverse-CDF multinomial draws, the percentile rule and
  the within-panel bootstrap) lives in :mod:`measure.bootstrap`; its names
  are re-exported here unchanged.
"""
import math
from fractions import Fraction
from math import comb
from typing import Mapping, Optional, Sequence

from measure.bootstrap import (  # re-exported: the estimator's names stay importable from measure.stats
    B_DEFAULT,
    CI_LEVEL_HIGH,
    CI_LEVEL_LOW,
    Counts,
    MultinomialSampler,
    _check_counts,
    _tokens,
    binomial_thresholds,
    bootstrap_ci_pct,
    bootstrap_gaps,
    bootstrap_seed,
    percentile,
    replicate_agreement_fraction,
    replicate_gap,
    stratified_bootstrap_ci_pct,
    stratified_bootstrap_gaps,
    total,
    version_sampler,
)
from measure.rng import Stream

# The noise floor is exact while the number of ways to split the pool stays
# below this; beyond it a Monte Carlo estimate with a stated error is used.
EXACT_FLOOR_LIMIT = 2_000_000
FLOOR_MC_TOLERANCE_PCT = 0.05


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------

def gap_fraction(counts_x: Counts, counts_y: Counts) -> Fraction:
    """Total variation distance of two empirical distributions, exactly."""
    _check_counts(counts_x, "counts_x")
    _check_counts(counts_y, "counts_y")
    nx, ny = total(counts_x), total(counts_y)
    if nx == 0 or ny == 0:
        raise ValueError("gap is undefined when a version has no valid response")
    diff = sum(abs(counts_x.get(t, 0) * ny - counts_y.get(t, 0) * nx) for t in _tokens(counts_x, counts_y))
    return Fraction(diff, 2 * nx * ny)


def gap_pct(counts_x: Counts, counts_y: Counts) -> float:
    """100 × total variation distance of the valid-response frequencies."""
    return float(100 * gap_fraction(counts_x, counts_y))


def entropy_norm(counts: Counts, k: int) -> float:
    """Shannon entropy of the frequencies divided by ``log k`` (0 … 1).

    ``k`` is the number of options the protocol offers, not the number of
    tokens observed, so a version that never uses one option is less spread
    out than one that uses both.
    """
    _check_counts(counts, "counts")
    if not isinstance(k, int) or k < 2:
        raise ValueError(f"k must be an int of at least 2, got {k!r}")
    n = total(counts)
    if n == 0:
        raise ValueError("entropy is undefined when a version has no valid response")
    if len([c for c in counts.values() if c > 0]) > k:
        raise ValueError(f"counts use more than k={k} tokens")
    h = -sum((c / n) * math.log(c / n) for c in counts.values() if c > 0)
    return min(1.0, max(0.0, h / math.log(k)))


def drop_bound_fraction(u_x: Fraction | float, u_y: Fraction | float) -> Fraction:
    """Worst-case error of a gap from lost responses, ``100 · (u_x + u_y)``, exactly.

    :func:`measure.measurement.build` applies the ``drop_bound ≤ 2.0`` gate to
    this exact value, so the bound a reader recomputes here and the bound the
    gate judged are one computation, not two that could drift apart.
    """
    for name, u in (("u_x", u_x), ("u_y", u_y)):
        if isinstance(u, bool) or not isinstance(u, (int, float, Fraction)) or not 0 <= u <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {u!r}")
    return 100 * (Fraction(u_x) + Fraction(u_y))


def drop_bound_pct(u_x: Fraction | float, u_y: Fraction | float) -> float:
    """Worst-case error of a gap from lost responses: ``100 · (u_x + u_y)``."""
    return float(drop_bound_fraction(u_x, u_y))


# --------------------------------------------------------------------------
# the noise floor
# --------------------------------------------------------------------------

def _split_gap_numerator(x: Sequence[int], pool: Sequence[int], nx: int, ny: int) -> int:
    return sum(abs(xi * ny - (ci - xi) * nx) for xi, ci in zip(x, pool))


def _compositions(pool: Sequence[int], draws: int):
    """Every way of taking ``draws`` items from categories of sizes ``pool``."""
    if len(pool) == 1:
        if draws <= pool[0]:
            yield (draws,)
        return
    rest = sum(pool[1:])
    for first in range(max(0, draws - rest), min(pool[0], draws) + 1):
        for tail in _compositions(pool[1:], draws - first):
            yield (first,) + tail


def _split_count(pool: Sequence[int], draws: int) -> int:
    ways = 1
    for c in pool:
        ways *= min(c, draws) + 1
    return ways


def null_floor_exact(counts_x: Counts, counts_y: Counts) -> Fraction:
    """Expected permutation gap, exactly (multivariate hypergeometric sum)."""
    tokens = _tokens(counts_x, counts_y)
    pool = [counts_x.get(t, 0) + counts_y.get(t, 0) for t in tokens]
    nx, ny = total(counts_x), total(counts_y)
    numerator = 0
    for x in _compositions(pool, nx):
        weight = 1
        for xi, ci in zip(x, pool):
            weight *= comb(ci, xi)
        numerator += weight * _split_gap_numerator(x, pool, nx, ny)
    return Fraction(numerator, comb(nx + ny, nx) * 2 * nx * ny)


def null_floor_monte_carlo(counts_x: Counts, counts_y: Counts, seed: int) -> tuple[Fraction, int]:
    """Permutation floor by simulation, run until 3 standard errors < 0.05 points.

    Returns the estimate and the number of permutations used.
    """
    tokens = _tokens(counts_x, counts_y)
    bag = [i for i, t in enumerate(tokens) for _ in range(counts_x.get(t, 0) + counts_y.get(t, 0))]
    nx, ny = total(counts_x), total(counts_y)
    pool = [0] * len(tokens)
    for i in bag:
        pool[i] += 1
    stream = Stream(seed)
    values: list[int] = []
    sum_v = sum_sq = 0
    denominator = 2 * nx * ny
    while True:
        for _ in range(1000):
            # Partial Fisher–Yates: the first nx positions are sample X.
            work = list(bag)
            x = [0] * len(tokens)
            for i in range(nx):
                j = i + stream.below(len(work) - i)
                work[i], work[j] = work[j], work[i]
                x[work[i]] += 1
            v = _split_gap_numerator(x, pool, nx, ny)
            values.append(v)
            sum_v += v
            sum_sq += v * v
        m = len(values)
        mean = sum_v / m
        var = max(0.0, sum_sq / m - mean * mean) * m / (m - 1)
        se_pct = 100 * math.sqrt(var / m) / denominator
        if 3 * se_pct < FLOOR_MC_TOLERANCE_PCT and m >= 10_000:
            return Fraction(sum_v, m * denominator), m


def null_floor_pct(counts_x: Counts, counts_y: Counts, seed: Optional[int] = None) -> float:
    """method §6.3's permutation noise floor, in points.

    Pool the valid responses of both versions, split the pool at random into
    samples of the two versions' sizes (without replacement), take the gap,
    and average over all splits.  The average is computed exactly when the
    number of distinct splits is manageable (always, for two options) and
    otherwise by Monte Carlo with three standard errors below 0.05 points,
    seeded by ``seed`` (required then).
    """
    _check_counts(counts_x, "counts_x")
    _check_counts(counts_y, "counts_y")
    if total(counts_x) == 0 or total(counts_y) == 0:
        raise ValueError("the noise floor is undefined when a version has no valid response")
    tokens = _tokens(counts_x, counts_y)
    pool = [counts_x.get(t, 0) + counts_y.get(t, 0) for t in tokens]
    if _split_count(pool, total(counts_x)) <= EXACT_FLOOR_LIMIT:
        return float(100 * null_floor_exact(counts_x, counts_y))
    if seed is None:
        raise ValueError("a Monte Carlo noise floor needs a recorded seed")
    return float(100 * null_floor_monte_carlo(counts_x, counts_y, seed)[0])


# --------------------------------------------------------------------------
# the aggregate
# --------------------------------------------------------------------------

def aggregate_mean_pct(pairs: Sequence[tuple], seed: int, B: int = B_DEFAULT) -> dict:
    """Mean ``stability_pct`` of ``m`` measurements with its own bootstrap interval.

    ``pairs`` holds ``(counts_x, counts_y)`` or ``(counts_x, counts_y, n_x,
    n_y)`` per measurement.  Each replicate resamples every measurement's
    two versions (the same resampling as :func:`bootstrap_ci_pct`: ``n``
    responses per version, invalid ones included) and averages the ``m``
    stabilities; the interval is the 2.5th/97.5th percentile of those means.
    The ``CI/√m`` shortcut is never used: it assumes an independence between
    measurements that nothing here establishes.
    """
    if not pairs:
        raise ValueError("an aggregate needs at least one measurement")
    stream = Stream(seed)
    samplers = []
    point = 0.0
    for pair in pairs:
        if len(pair) not in (2, 4):
            raise ValueError("each aggregate entry is (counts_x, counts_y) or (counts_x, counts_y, n_x, n_y)")
        x, y = pair[0], pair[1]
        n_x, n_y = (pair[2], pair[3]) if len(pair) == 4 else (None, None)
        if total(x) == 0 or total(y) == 0:
            raise ValueError("every measurement in an aggregate needs valid responses in both versions")
        tokens = _tokens(x, y)
        samplers.append((version_sampler(x, tokens, n_x, "n_x"), version_sampler(y, tokens, n_y, "n_y")))
        point += 100 - gap_pct(x, y)
    point /= len(pairs)
    means = []
    for _ in range(B):
        s = 0.0
        for sx, sy in samplers:
            p, q = replicate_gap(sx.draw(stream), sy.draw(stream))
            s += 100 - (100 * p) / q
        means.append(s / len(samplers))
    means.sort()
    return {
        "m": len(pairs),
        "mean_stability_pct": point,
        "ci_low_pct": percentile(means, CI_LEVEL_LOW),
        "ci_high_pct": percentile(means, CI_LEVEL_HIGH),
        "B": B,
        "seed": seed,
    }


# --------------------------------------------------------------------------
# the change rule
# --------------------------------------------------------------------------

def _field(record: Mapping, name: str, label: str) -> float:
    value = record.get(name)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"measurement {label} has no numeric {name!r} (got {value!r})")
    return float(value)


def compare(x: Mapping, y: Mapping) -> str:
    """``improved`` / ``regressed`` / ``flat`` for measurement ``y`` against ``x``.

    ``Δ = stability(y) − stability(x)``; random error ``bound =
    √(hw(x)² + hw(y)²)`` with ``hw`` half the CI width; systematic error ``cap
    = drop_bound_ab(x) + drop_bound_ab(y)``.  A change is called only when
    ``|Δ| ≥ bound`` **and** ``|Δ| > cap``.
    """
    sx, sy = _field(x, "stability_pct", "x"), _field(y, "stability_pct", "y")
    hx = (_field(x, "ci_high_pct", "x") - _field(x, "ci_low_pct", "x")) / 2
    hy = (_field(y, "ci_high_pct", "y") - _field(y, "ci_low_pct", "y")) / 2
    cap = _field(x, "drop_bound_pct_ab", "x") + _field(y, "drop_bound_pct_ab", "y")
    delta = sy - sx
    bound = math.sqrt(hx * hx + hy * hy)
    if abs(delta) >= bound and abs(delta) > cap:
        return "improved" if delta > 0 else "regressed"
    return "flat"


__all__ = [
    "B_DEFAULT", "MultinomialSampler", "aggregate_mean_pct", "binomial_thresholds", "bootstrap_ci_pct",
    "bootstrap_gaps", "bootstrap_seed", "compare", "drop_bound_pct", "entropy_norm", "gap_fraction",
    "gap_pct", "null_floor_exact", "null_floor_pct", "percentile", "replicate_gap", "version_sampler",
    "drop_bound_fraction", "replicate_agreement_fraction", "stratified_bootstrap_ci_pct",
    "stratified_bootstrap_gaps",
]
