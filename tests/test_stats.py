"""The estimator's statistics: gap, entropy, floor, bootstrap, change rule."""
import json
import math
from collections import Counter
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from measure import stats
from measure.rng import Stream, seed_from_text

counts2 = st.fixed_dictionaries({"A": st.integers(0, 60), "B": st.integers(0, 60)}).filter(lambda c: sum(c.values()) > 0)


@given(counts2, counts2)
def test_gap_is_symmetric_and_within_0_and_100(x, y):
    g = stats.gap_pct(x, y)
    assert g == stats.gap_pct(y, x)
    assert 0 <= g <= 100


@given(counts2)
def test_gap_of_identical_inputs_is_zero(x):
    assert stats.gap_pct(x, dict(x)) == 0


@given(counts2, st.integers(2, 5))
def test_entropy_is_within_0_and_1(x, k):
    assert 0 <= stats.entropy_norm(x, k) <= 1


def test_binary_gap_is_the_difference_in_shares():
    assert stats.gap_pct({"A": 21, "B": 9}, {"A": 12, "B": 18}) == pytest.approx(30.0)


def test_entropy_extremes():
    assert stats.entropy_norm({"A": 30, "B": 0}, 2) == 0
    assert stats.entropy_norm({"A": 15, "B": 15}, 2) == pytest.approx(1.0)


def test_gap_refuses_a_version_without_valid_responses():
    with pytest.raises(ValueError, match="no valid response"):
        stats.gap_pct({"A": 0, "B": 0}, {"A": 3})


@pytest.mark.parametrize("n,expected", [(30, 10.1), (120, 5.1), (150, 4.6), (450, 2.7)])
def test_null_floor_reproduces_the_spec_table_for_a_binary_decision_at_one_half(n, expected):
    half = {"A": n // 2, "B": n - n // 2}
    assert abs(stats.null_floor_pct(half, half) - expected) < 0.1


def test_null_floor_is_the_mean_over_all_equally_likely_splits():
    # Tiny case checked by brute force over every split of a labelled bag.
    from itertools import combinations
    bag = ["A", "A", "A", "B", "B"]
    x_counts, y_counts = {"A": 2, "B": 1}, {"A": 1, "B": 1}
    gaps = []
    for chosen in combinations(range(5), 3):
        x = Counter(bag[i] for i in chosen)
        y = Counter(bag[i] for i in range(5) if i not in chosen)
        gaps.append(stats.gap_fraction(x, y))
    assert stats.null_floor_pct(x_counts, y_counts) == pytest.approx(float(100 * sum(gaps) / len(gaps)))


def test_monte_carlo_floor_agrees_with_the_exact_floor_within_its_tolerance():
    x, y = {"A": 10, "B": 12, "C": 8}, {"A": 14, "B": 9, "C": 7}
    exact = 100 * stats.null_floor_exact(x, y)
    estimate, used = stats.null_floor_monte_carlo(x, y, seed=7)
    assert abs(float(100 * estimate - exact)) < 0.05
    assert used >= 10_000


def test_bootstrap_seed_is_the_first_eight_bytes_of_the_sha256():
    import hashlib
    digest = hashlib.sha256("p|2026-11-29|m".encode()).digest()
    assert stats.bootstrap_seed("p", "2026-11-29", "m") == int.from_bytes(digest[:8], "big")


def test_binomial_thresholds_equal_the_exact_cdf():
    n, s, pop = 12, 5, 9
    thresholds = stats.binomial_thresholds(n, s, pop)
    p = Fraction(s, pop)
    cdf = Fraction(0)
    for i in range(n + 1):
        cdf += comb(n, i) * p ** i * (1 - p) ** (n - i)
        assert thresholds[i] == math.floor(cdf * 2 ** 64)
    assert thresholds[-1] == 2 ** 64


def naive_resample(counts, stream, n):
    """The reference: draw n individual responses with replacement."""
    bag = [t for t, c in sorted(counts.items()) for _ in range(c)]
    return Counter(bag[stream.below(len(bag))] for _ in range(n))


def test_fast_resampler_matches_the_naive_resampler_in_distribution():
    counts = {"A": 7, "B": 3, "C": 5}
    n = sum(counts.values())
    reps = 20_000
    sampler = stats.MultinomialSampler([counts[t] for t in sorted(counts)])
    fast_stream, naive_stream = Stream(11), Stream(12)
    fast = Counter(tuple(sampler.draw(fast_stream)) for _ in range(reps))
    naive = Counter(tuple(naive_resample(counts, naive_stream, n)[t] for t in sorted(counts)) for _ in range(reps))
    # Marginal of token "A": both must follow Binomial(n, 7/15); compare by chi-square.
    def marginal(hist, j):
        out = Counter()
        for vec, c in hist.items():
            out[vec[j]] += c
        return out
    for j in range(3):
        p = Fraction(counts[sorted(counts)[j]], n)
        for name, hist in (("fast", fast), ("naive", naive)):
            m = marginal(hist, j)
            chi2, dof = 0.0, 0
            for i in range(n + 1):
                expected = reps * float(comb(n, i) * p ** i * (1 - p) ** (n - i))
                if expected >= 5:
                    chi2 += (m[i] - expected) ** 2 / expected
                    dof += 1
            # 99.9th percentile of chi-square is below dof + 4·sqrt(2·dof) + 10 for these dof.
            assert chi2 < dof + 4 * math.sqrt(2 * dof) + 10, (name, j, chi2, dof)


def test_bootstrap_is_deterministic_for_a_seed_and_changes_with_it():
    a, b = {"A": 70, "B": 50}, {"A": 55, "B": 65}
    assert stats.bootstrap_ci_pct(a, b, 1) == stats.bootstrap_ci_pct(a, b, 1)
    # The interval sits on a lattice of 1/120 steps, so compare the replicates.
    assert stats.bootstrap_gaps(a, b, 1, B=200) != stats.bootstrap_gaps(a, b, 2, B=200)


def test_bootstrap_interval_brackets_the_estimate():
    a, b = {"A": 70, "B": 50}, {"A": 55, "B": 65}
    low, high = stats.bootstrap_ci_pct(a, b, 5)
    assert low <= 100 - stats.gap_pct(a, b) <= high
    assert 0 <= low < high <= 100


def test_general_path_and_two_option_fast_path_draw_identical_replicates():
    a, b = {"A": 70, "B": 50}, {"A": 60, "B": 60}
    fast = stats.bootstrap_gaps(a, b, 9, B=500)
    sx, sy = stats.MultinomialSampler([70, 50]), stats.MultinomialSampler([60, 60])
    stream = Stream(9)
    slow = []
    for _ in range(500):
        x, y = sx.draw(stream), sy.draw(stream)
        slow.append(Fraction(abs(x[0] * 120 - y[0] * 120) * 2, 2 * 120 * 120))
    assert fast == slow


def test_percentile_interpolates_linearly():
    values = [0.0, 10.0, 20.0, 30.0, 40.0]
    assert stats.percentile(values, 0.5) == 20.0
    assert stats.percentile(values, 0.1) == pytest.approx(4.0)


def test_drop_bound_adds_the_two_losses_exactly():
    assert stats.drop_bound_pct(0.01, 0.01) == 2.0


def _m(stability, low, high, drop):
    return {"stability_pct": stability, "ci_low_pct": low, "ci_high_pct": high, "drop_bound_pct_ab": drop}


def test_compare_spec_example_losses_turn_a_two_point_improvement_flat():
    x = _m(80.0, 79.5, 80.5, 0.3)
    y = _m(82.0, 81.5, 82.5, 1.8)
    # |Δ| = 2 clears the random bound √(0.5² + 0.5²) ≈ 0.71 but not the loss cap 2.1.
    assert stats.compare(x, y) == "flat"
    assert stats.compare(_m(80.0, 79.5, 80.5, 0.1), _m(82.0, 81.5, 82.5, 0.2)) == "improved"
    assert stats.compare(_m(82.0, 81.5, 82.5, 0.1), _m(80.0, 79.5, 80.5, 0.2)) == "regressed"


def test_compare_needs_both_checks():
    # Clears the loss cap but not the random bound.
    assert stats.compare(_m(80.0, 70.0, 90.0, 0.0), _m(83.0, 73.0, 93.0, 0.0)) == "flat"


def test_compare_refuses_a_measurement_without_numbers():
    with pytest.raises(ValueError, match="stability_pct"):
        stats.compare(_m(None, 1, 2, 0), _m(80, 79, 81, 0))


def test_aggregate_interval_comes_from_its_own_bootstrap_not_ci_over_root_m():
    pairs = [({"A": 20, "B": 10}, {"A": 14, "B": 16})] * 4
    agg = stats.aggregate_mean_pct(pairs, seed=3, B=2000)
    single_low, single_high = stats.bootstrap_ci_pct(*pairs[0], seed=3, B=2000)
    shortcut_half = (single_high - single_low) / 2 / math.sqrt(4)
    assert agg["ci_low_pct"] < agg["mean_stability_pct"] < agg["ci_high_pct"]
    assert agg["m"] == 4
    # Resampling the four measurements independently gives a half-width near the
    # shortcut's here (they are independent by construction), but it is computed.
    half = (agg["ci_high_pct"] - agg["ci_low_pct"]) / 2
    assert half == pytest.approx(shortcut_half, rel=0.35)
    assert half != shortcut_half


def test_rng_vectors_and_the_docstring_algorithm_agree():
    import hashlib
    import struct
    data = json.loads((Path(__file__).resolve().parent.parent / "measure" / "vectors" / "rng.json").read_text())
    for case in data["cases"]:
        seed = int(case["seed"])
        # Independent re-implementation straight from the docstring.
        words = []
        for block in range(2):
            digest = hashlib.sha256(seed.to_bytes(8, "big") + block.to_bytes(8, "big")).digest()
            words.extend(struct.unpack(">4Q", digest))
        assert [str(w) for w in words[:6]] == case["u64"]
        stream = Stream(seed)
        assert [stream.below(10) for _ in range(6)] == case["below_10"]
        stream = Stream(seed)
        assert [repr(stream.uniform()) for _ in range(3)] == case["uniform"]
    assert str(seed_from_text(data["seed_from_text"]["text"])) == data["seed_from_text"]["seed"]


def test_rng_bulk_and_single_draws_are_the_same_stream():
    a, b = Stream(99), Stream(99)
    first = [a.next_u64() for _ in range(3)] + a.u64s(9) + [a.next_u64()]
    assert first == [b.next_u64() for _ in range(13)]
