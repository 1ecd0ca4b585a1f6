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

from measure import bootstrap, stats
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


def test_bootstrap_seed_is_the_sha256_of_the_plain_concatenation():
    import hashlib
    digest = hashlib.sha256("p2026-11-29m".encode()).digest()
    assert stats.bootstrap_seed("p", "2026-11-29", "m") == int.from_bytes(digest[:8], "big")
    separated = hashlib.sha256("p|2026-11-29|m".encode()).digest()
    assert stats.bootstrap_seed("p", "2026-11-29", "m") != int.from_bytes(separated[:8], "big")


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
    # 5 and 3 invalid responses: both paths draw the invalid count first.
    a, b = {"A": 70, "B": 45}, {"A": 60, "B": 57}
    fast = stats.bootstrap_gaps(a, b, 9, B=500, n_x=120, n_y=120)
    sx, sy = stats.MultinomialSampler([5, 70, 45]), stats.MultinomialSampler([3, 60, 57])
    stream = Stream(9)
    slow = []
    for _ in range(500):
        p, q = stats.replicate_gap(sx.draw(stream), sy.draw(stream))
        slow.append(Fraction(p, q))
    assert fast == slow


def _naive_replicates(counts_x, n_x, counts_y, n_y, stream, reps):
    """Draw n individual responses per version, invalid ones (None) included."""
    def bag(counts, n):
        out = [t for t, c in sorted(counts.items()) for _ in range(c)]
        return out + [None] * (n - len(out))
    bx, by = bag(counts_x, n_x), bag(counts_y, n_y)
    for _ in range(reps):
        cx = Counter(bx[stream.below(n_x)] for _ in range(n_x))
        cy = Counter(by[stream.below(n_y)] for _ in range(n_y))
        yield cx, cy


def test_bootstrap_resamples_n_responses_with_the_invalid_ones_included():
    # Version X: 20 responses, 6 of them invalid.  The valid count of a draw
    # must follow Binomial(20, 14/20) — under the old unit it was always 14.
    x, y = {"A": 9, "B": 5}, {"A": 10, "B": 10}
    reps = 4000
    sx = stats.version_sampler(x, ["A", "B"], 20, "n_x")
    stream = Stream(21)
    valid_counts = Counter(20 - sx.draw(stream)[0] for _ in range(reps))
    assert len(valid_counts) > 5
    p = Fraction(14, 20)
    chi2, dof = 0.0, 0
    for m in range(21):
        expected = reps * float(comb(20, m) * p ** m * (1 - p) ** (20 - m))
        if expected >= 5:
            chi2 += (valid_counts[m] - expected) ** 2 / expected
            dof += 1
    assert chi2 < dof + 4 * math.sqrt(2 * dof) + 10, (chi2, dof)


def test_fast_bootstrap_and_naive_per_response_resampling_agree_in_distribution():
    # Same unit, different algorithm: compare the distributions of the replicate gap.
    x, y, n = {"A": 7, "B": 4}, {"A": 4, "B": 6}, 12
    reps = 6000
    fast = Counter(stats.bootstrap_gaps(x, y, 31, B=reps, n_x=n, n_y=n))
    naive = Counter()
    for cx, cy in _naive_replicates(x, n, y, n, Stream(32), reps):
        mx, my = n - cx[None], n - cy[None]
        if mx == 0 or my == 0:
            naive[Fraction(1)] += 1
        else:
            naive[abs(Fraction(cx["A"], mx) - Fraction(cy["A"], my))] += 1
    # Two-sample chi-square on gap bins of width 0.1.
    def binned(hist):
        out = Counter()
        for gap, count in hist.items():
            out[min(9, int(gap * 10))] += count
        return out
    bf, bn = binned(fast), binned(naive)
    chi2, dof = 0.0, -1
    for k in range(10):
        if bf[k] + bn[k] >= 10:
            chi2 += (bf[k] - bn[k]) ** 2 / (bf[k] + bn[k])
            dof += 1
    assert dof >= 4
    assert chi2 < dof + 4 * math.sqrt(2 * dof) + 10, (chi2, dof)


def test_a_draw_without_valid_responses_counts_as_the_largest_gap():
    assert stats.replicate_gap([3, 0, 0], [1, 1, 1]) == (1, 1)
    assert Fraction(*stats.replicate_gap([0, 2, 1], [0, 0, 3])) == Fraction(2, 3)
    # One valid response of three: (2/3)³ ≈ 30 % of draws have none, each a gap of 1
    # (more replicates reach 1 when Y's draw holds only "B").
    gaps = stats.bootstrap_gaps({"A": 1, "B": 0}, {"A": 1, "B": 1}, 5, B=2000, n_x=3, n_y=3)
    assert sum(1 for g in gaps if g == 1) / 2000 > 0.25
    assert gaps == stats.bootstrap_gaps({"A": 1, "B": 0}, {"A": 1, "B": 1}, 5, B=2000, n_x=3, n_y=3)
    low, high = stats.bootstrap_ci_pct({"A": 1, "B": 0}, {"A": 1, "B": 1}, 5, n_x=3, n_y=3)
    assert low == 0.0


def test_bootstrap_refuses_fewer_responses_than_valid_ones():
    with pytest.raises(ValueError, match="n_x must be an int of at least the 12 valid responses"):
        stats.bootstrap_ci_pct({"A": 7, "B": 5}, {"A": 6, "B": 6}, 1, n_x=11)


def test_losses_widen_the_interval():
    x, y = {"A": 60, "B": 48}, {"A": 50, "B": 58}
    lo_all, hi_all = stats.bootstrap_ci_pct(x, y, 4, n_x=108, n_y=108)
    lo_lost, hi_lost = stats.bootstrap_ci_pct(x, y, 4, n_x=120, n_y=120)
    assert hi_lost - lo_lost > hi_all - lo_all


def _independent_two_option_replicate(words, n, invalid, first):
    """One version's draw for two options, written from the docstring with exact CDFs."""
    def inverse_cdf(draws, successes, population, word):
        if successes == 0:
            return 0
        if successes == population:
            return draws
        p = Fraction(successes, population)
        cdf = Fraction(0)
        for i in range(draws + 1):
            cdf += comb(draws, i) * p ** i * (1 - p) ** (draws - i)
            if word < math.floor(cdf * 2 ** 64):
                return i
        return draws
    lost = inverse_cdf(n, invalid, n, words[0]) if invalid else 0
    m = n - lost
    a = inverse_cdf(m, first, n - invalid, words[1]) if m else 0
    return m, a


def test_bootstrap_golden_vectors():
    data = json.loads((Path(__file__).resolve().parent.parent / "measure" / "vectors" / "bootstrap.json").read_text())
    assert len(data["cases"]) >= 4
    for case in data["cases"]:
        seed = stats.bootstrap_seed(case["protocol_id"], case["run_date"], case["subject_model_id"])
        assert f"{seed:016x}" == case["seed_hex"]
        x, y, nx, ny = case["counts_x"], case["counts_y"], case["n_x"], case["n_y"]
        first = stats.bootstrap_gaps(x, y, seed, len(case["first_gaps"]), n_x=nx, n_y=ny)
        assert [f"{g.numerator}/{g.denominator}" for g in first] == case["first_gaps"]
        low, high = stats.bootstrap_ci_pct(x, y, seed, case["B"], n_x=nx, n_y=ny)
        assert (repr(low), repr(high)) == (case["ci_low_pct"], case["ci_high_pct"])
        if len(x) == 2:
            # Re-derive the first replicates without measure.stats' sampler.
            stream = Stream(seed)
            for expected in case["first_gaps"]:
                words = stream.u64s(4)
                mx, a = _independent_two_option_replicate(words[:2], nx, nx - sum(x.values()), x["A"])
                my, b = _independent_two_option_replicate(words[2:], ny, ny - sum(y.values()), y["A"])
                gap = Fraction(1) if mx == 0 or my == 0 else abs(Fraction(a, mx) - Fraction(b, my))
                assert gap == Fraction(expected)


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


def test_aggregate_resamples_responses_with_their_losses():
    x, y = {"A": 20, "B": 8}, {"A": 14, "B": 14}
    no_losses = stats.aggregate_mean_pct([(x, y)] * 3, seed=3, B=1000)
    assert stats.aggregate_mean_pct([(x, y, 28, 28)] * 3, seed=3, B=1000) == no_losses
    with_losses = stats.aggregate_mean_pct([(x, y, 30, 30)] * 3, seed=3, B=1000)
    assert with_losses["mean_stability_pct"] == no_losses["mean_stability_pct"]
    assert with_losses["ci_low_pct"] != no_losses["ci_low_pct"]


def test_the_empty_draw_rule_can_only_lower_the_stability_interval(monkeypatch):
    """Documented direction: an empty draw as gap 1 puts both ends at or below any other choice (here: gap 0)."""
    # Three options (the general path); X kept 2 answers of 6, so ≈ 9 % of its draws hold none.
    x, y = {"A": 1, "B": 1, "C": 0}, {"A": 5, "B": 5, "C": 5}
    strict = stats.bootstrap_ci_pct(x, y, 7, B=2000, n_x=6, n_y=15)
    real = stats.replicate_gap

    def lenient(a, b):
        if sum(a) - a[0] == 0 or sum(b) - b[0] == 0:
            return 0, 1
        return real(a, b)

    monkeypatch.setattr(bootstrap, "replicate_gap", lenient)  # the bootstrap's own module, not the re-export
    favourable = stats.bootstrap_ci_pct(x, y, 7, B=2000, n_x=6, n_y=15)
    assert strict[0] <= favourable[0] and strict[1] <= favourable[1]
    assert strict[0] < favourable[0] and strict[1] < favourable[1], "empty draws are common enough to move both ends"
