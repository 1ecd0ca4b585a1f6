"""Every frozen threshold of the estimator, held at its exact value and one achievable step either side.

The gates are read through :func:`measure.measurement.build`, as a run
builds its record, and each test looks at its own gate's entry (``pass``)
and its own flag, so a gate is judged alone even where the same trials trip
another one.  The trials are chosen so that the quantity a gate compares
*is* the threshold as an exact fraction (a drop bound of exactly 2, a
positive-control margin of exactly 15); the steps either side are the
nearest values the same design can produce, one answer or one lost
response away.  The change rule is read through :func:`measure.stats.compare`
on records whose numbers are exact binary floats, with the steps either
side one unit in the last place away (``math.nextafter``).

A comparison flipped anywhere here (``<=`` for ``<``, ``>`` for ``>=``, a
subtraction left out) fails at least one of these tests.
"""
import math
from fractions import Fraction
from typing import Mapping, Optional, Sequence

import pytest

from measure import stats
from measure.measurement import DECIMALS, build
from tests.measure_helpers import ITEMS, RUN, protocol

LOST = "unparseable"


def trials(n_per_scenario: int, plan: Mapping[str, Sequence[str]], options: Sequence[str] = ("A", "B")) -> list:
    """Trials where version ``v``'s answers are ``plan[v]`` (``n`` of them, filled scenario by scenario).

    An answer that is an option is a valid decision; ``LOST`` is an
    unreadable one.  A version not in the plan answers ``A`` throughout.
    """
    n = 15 * n_per_scenario
    out = []
    for version in ("A", "A_prime", "B", "C"):
        answers = list(plan.get(version, ["A"] * n))
        assert len(answers) == n, f"{version} needs {n} answers, got {len(answers)}"
        for j, answer in enumerate(answers):
            valid = answer in options
            out.append({"record_type": "trial", "protocol_id": "risky_choice_framing__wording__v0",
                        "item_id": ITEMS[j // n_per_scenario], "version": version,
                        "replicate_index": j % n_per_scenario,
                        "outcome": "valid" if valid else answer, "token": answer if valid else None})
    return out


def answers(n: int, **counts: int) -> list[str]:
    """``n`` answers: ``counts`` of each named answer (``lost=`` for unreadable ones), the rest ``A``."""
    out = []
    for name, count in counts.items():
        out += [LOST if name == "lost" else name] * count
    assert len(out) <= n
    return out + ["A"] * (n - len(out))


def measured(n_per_scenario: int, plan: Mapping[str, Sequence[str]], options: Sequence[str] = ("A", "B")) -> dict:
    return build(protocol(n_per_scenario, options=list(options)), trials(n_per_scenario, plan, options), RUN)


def published(value: Fraction) -> float:
    """A value as the record carries it (rounded to DECIMALS places)."""
    return round(float(value), DECIMALS)


def gate(record: dict, check: str, pair: Optional[str] = None) -> dict:
    [entry] = [g for g in record["gates"] if g["check"] == check and (pair is None or g["pair"] == pair)]
    return entry


def passes(record: dict, check: str, pair: Optional[str] = None) -> bool:
    """The gate's own verdict, checked against its flag so the two cannot disagree."""
    entry = gate(record, check, pair)
    if not entry["pass"]:
        assert entry["flag"] in record["flags"]
    return entry["pass"]


# --------------------------------------------------------------------------
# losses: drop_bound_pct <= 2.0 and drop_asymmetry_pct <= 1.0, per pair
# --------------------------------------------------------------------------

OTHER_VERSION = {"ab": "B", "aa": "A_prime", "ac": "C"}


@pytest.mark.parametrize("pair", ["ab", "aa", "ac"])
@pytest.mark.parametrize("n_per_scenario, lost, passed", [
    (10, 2, True), (10, 3, True), (10, 4, False),           # n = 150: a lost answer is 2/3 of a point
    (100, 29, True), (100, 30, True), (100, 31, False),     # n = 1500: a lost answer is 1/15 of a point
], ids=["150-1.33", "150-exactly-2", "150-2.67", "1500-1.93", "1500-exactly-2", "1500-2.07"])
def test_drop_bound_gate_passes_up_to_and_including_two_points(pair, n_per_scenario, lost, passed):
    # Losses in the pair's second version only; at each n the middle case is a drop bound of exactly 2.
    n = 15 * n_per_scenario
    record = measured(n_per_scenario, {OTHER_VERSION[pair]: answers(n, lost=lost)})
    assert record[f"drop_bound_pct_{pair}"] == published(Fraction(lost * 100, n))
    assert passes(record, "drop_bound", pair) is passed
    assert all(passes(record, "drop_bound", other) for other in OTHER_VERSION if other != pair)
    assert ("drop_confounded" in record["flags"]) is not passed


@pytest.mark.parametrize("pair", ["ab", "aa", "ac"])
@pytest.mark.parametrize("n_per_scenario, lost, passed", [
    (20, 2, True), (20, 3, True), (20, 4, False),           # n = 300: a lost answer is 1/3 of a point
    (100, 14, True), (100, 15, True), (100, 16, False),     # n = 1500: a lost answer is 1/15 of a point
], ids=["300-0.67", "300-exactly-1", "300-1.33", "1500-0.93", "1500-exactly-1", "1500-1.07"])
def test_asymmetry_gate_passes_up_to_and_including_one_point(pair, n_per_scenario, lost, passed):
    # Losses on one side of the pair only, so the asymmetry equals the drop bound, which stays below 2.
    n = 15 * n_per_scenario
    record = measured(n_per_scenario, {OTHER_VERSION[pair]: answers(n, lost=lost)})
    assert record[f"drop_asymmetry_pct_{pair}"] == published(Fraction(lost * 100, n))
    assert passes(record, "missingness_asymmetry", pair) is passed
    assert passes(record, "drop_bound", pair), "the losses stay inside the drop bound"
    assert ("asymmetric_missingness" in record["flags"]) is not passed


def test_losses_on_both_sides_of_a_pair_cancel_in_the_asymmetry_but_add_in_the_drop_bound():
    # A and B lose 3 each at n = 300: asymmetry 0, drop bound exactly 2 (still passing).
    record = measured(20, {"A": answers(300, lost=3), "B": answers(300, lost=3)})
    assert record["drop_asymmetry_pct_ab"] == 0 and record["drop_bound_pct_ab"] == 2.0
    assert passes(record, "missingness_asymmetry", "ab") and passes(record, "drop_bound", "ab")


# --------------------------------------------------------------------------
# the finding against its losses: drop_bound_pct_ab < gap_pct
# --------------------------------------------------------------------------

@pytest.mark.parametrize("moved, passed", [(0, False), (1, False), (2, True)], ids=["0", "equal", "one-more"])
def test_finding_must_be_strictly_above_its_drop_bound(moved, passed):
    # n = 30, B loses one answer: drop_bound_pct_ab = 100/30.  A answers B `moved` times, B never:
    # gap = moved/30, so moved = 1 puts the gap exactly on the bound.
    record = measured(2, {"A": answers(30, B=moved), "B": answers(30, lost=1)})
    assert record["gap_pct"] == published(Fraction(100 * moved, 30))
    assert passes(record, "finding_above_losses", "ab") is passed
    assert ("below_drop_bound" in record["flags"]) is not passed


# --------------------------------------------------------------------------
# above the null change: gap_pct − drop_bound_pct_ab > gap_null_pct + drop_bound_pct_aa
# --------------------------------------------------------------------------

@pytest.mark.parametrize("b_moved, passed", [(1, False), (2, False), (3, True)], ids=["below", "equal", "above"])
def test_surface_noise_margin_without_losses_is_strict(b_moved, passed):
    # n = 30, no loss: A′ moves 2 answers, B `b_moved`; equal gaps do not clear the null change.
    record = measured(2, {"A_prime": answers(30, B=2), "B": answers(30, B=b_moved)})
    assert passes(record, "above_surface_noise", "aa") is passed
    assert ("below_surface_noise" in record["flags"]) is not passed


@pytest.mark.parametrize("b_moved, passed", [(1, False), (2, False), (3, True)], ids=["below", "equal", "above"])
def test_surface_noise_margin_takes_off_the_ab_losses_and_adds_the_aa_losses(b_moved, passed):
    # n = 30, A loses one answer, so drop_bound_pct_ab = drop_bound_pct_aa = 100/30 and A′ does not move.
    # B moving 2 answers gives gap − bound = 200/30 − 100/30 = 0 + 100/30 = null + bound: exactly equal.
    # Leaving out either loss term, or the strictness, lets "equal" through.
    record = measured(2, {"A": answers(30, lost=1), "B": answers(30, B=b_moved)})
    assert record["drop_bound_pct_ab"] == record["drop_bound_pct_aa"] == published(Fraction(100, 30))
    assert record["gap_null_pct"] == 0
    assert passes(record, "above_surface_noise", "aa") is passed
    assert ("below_surface_noise" in record["flags"]) is not passed


# --------------------------------------------------------------------------
# the positive control: gap_positive_pct − drop_bound_pct_ac > theta_positive_pct (15)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("c_moved, passed", [(8, False), (9, False), (10, True)], ids=["13.3", "exactly-15", "16.7"])
def test_positive_control_must_move_strictly_more_than_theta(c_moved, passed):
    # n = 60, no loss: C moving 9 of 60 answers is a gap of exactly 15 points.
    record = measured(4, {"C": answers(60, B=c_moved)})
    assert record["gap_positive_pct"] == published(Fraction(100 * c_moved, 60))
    assert passes(record, "positive_control", "ac") is passed
    assert ("not_reading" in record["flags"]) is not passed


@pytest.mark.parametrize("c_moved, passed", [(9, False), (10, False), (11, True)], ids=["below", "exactly-15", "above"])
def test_positive_control_takes_its_losses_off_before_the_comparison(c_moved, passed):
    # n = 60, A loses one answer: drop_bound_pct_ac = 100/60.  C moving 10 answers is a gap of 100/6,
    # and 100/6 − 100/60 = 15 exactly: on the threshold once the losses are taken off, above it if not.
    record = measured(4, {"A": answers(60, lost=1), "C": answers(60, B=c_moved)})
    lower = Fraction(100 * c_moved, 60) - Fraction(100, 60)
    assert (lower == 15) is (c_moved == 10)
    assert record["gap_positive_pct"] == published(Fraction(100 * c_moved, 60))
    assert passes(record, "positive_control", "ac") is passed
    assert ("not_reading" in record["flags"]) is not passed


def test_positive_control_reads_theta_from_the_protocol():
    plan = {"C": answers(60, B=10)}                       # a gap of 16.7 points
    assert passes(build(protocol(4, theta_positive_pct=16), trials(4, plan), RUN), "positive_control", "ac")
    assert not passes(build(protocol(4, theta_positive_pct=17), trials(4, plan), RUN), "positive_control", "ac")


# --------------------------------------------------------------------------
# collapse: not (max(entropy_a, entropy_b) < 0.20 and stability_pct > 90)
# --------------------------------------------------------------------------

EIGHT = ("A", "B", "C", "D", "E", "F", "G", "H")


@pytest.mark.parametrize("b_moved, degenerate", [(4, False), (3, False), (2, True)], ids=["86.7", "exactly-90", "93.3"])
def test_degenerate_needs_stability_strictly_above_ninety(b_moved, degenerate):
    # Eight options, so a version can be spread over two of them and still have normalised entropy below
    # 0.20 (with two options that forces stability near 100 and the stability clause could never decide).
    # A always answers A; B moves 3 of 30 answers: stability exactly 90.
    record = measured(2, {"B": answers(30, B=b_moved)}, options=EIGHT)
    assert record["stability_pct"] == published(100 - Fraction(100 * b_moved, 30))
    assert max(record["entropy_a"], record["entropy_b"]) < 0.20, "only the stability clause decides here"
    assert passes(record, "not_degenerate", "ab") is not degenerate
    assert ("degenerate_candidate" in record["flags"]) is degenerate


@pytest.mark.parametrize("a_moved, b_moved, degenerate", [(0, 0, True), (1, 1, False), (0, 1, False), (1, 0, False)],
                         ids=["entropy-0", "entropy-0.21", "only-b-spread", "only-a-spread"])
def test_degenerate_needs_the_larger_entropy_below_point_two(a_moved, b_moved, degenerate):
    # Two options, n = 30: one answer in 30 on the other option is normalised entropy 0.2108, the
    # nearest value above 0.20 at this n; none is 0.  Stability stays above 90 throughout, so only the
    # entropy clause decides — on the larger of the two versions' entropies.
    record = measured(2, {"A": answers(30, B=a_moved), "B": answers(30, B=b_moved)})
    assert record["stability_pct"] > 90
    assert (0.20 < max(record["entropy_a"], record["entropy_b"]) < 0.22) is not degenerate
    assert passes(record, "not_degenerate", "ab") is not degenerate


# --------------------------------------------------------------------------
# concentration: scenario_concentration_pct <= scenario_dominated_share_pct (40)
# --------------------------------------------------------------------------

def scenario_plan(full: int, half: int) -> dict:
    """B differs from A in ``full`` scenarios by both answers and in ``half`` more by one (n = 30)."""
    b = ["B", "B"] * full + ["B", "A"] * half
    return {"B": b + ["A"] * (30 - len(b))}


@pytest.mark.parametrize("full, half, share, passed", [
    (5, 0, Fraction(40), True),             # five equal scenario gaps: the two largest are exactly 40 %
    (1, 5, Fraction(300, 7), False),        # 1 + ½ of 1 + 5·½: 42.9 %, the nearest value above
    (1, 6, Fraction(75, 2), True),          # 1 + ½ of 1 + 6·½: 37.5 %, the nearest value below
], ids=["exactly-40", "42.9", "37.5"])
def test_scenario_concentration_passes_up_to_and_including_the_share(full, half, share, passed):
    record = measured(2, scenario_plan(full, half))
    assert record["scenario_concentration_pct"] == published(share)
    assert passes(record, "scenario_concentration", "ab") is passed
    assert ("scenario_dominated" in record["flags"]) is not passed


# --------------------------------------------------------------------------
# the noise floor: at_noise_floor when stability_pct >= 100 − null_floor_pct
# --------------------------------------------------------------------------

@pytest.mark.parametrize("b_moved, at_floor", [(1, True), (2, False)], ids=["equal", "below"])
def test_at_noise_floor_includes_a_stability_exactly_at_the_floor(b_moved, at_floor):
    # One B answer in the pool: every split of it gives a gap of 1/30, so the floor is exactly the gap.
    x, y = {"A": 30, "B": 0}, {"A": 30 - b_moved, "B": b_moved}
    assert (stats.null_floor_exact(x, y) == stats.gap_fraction(x, y)) is at_floor
    record = measured(2, {"B": answers(30, B=b_moved)})
    assert record["at_noise_floor"] is at_floor


# --------------------------------------------------------------------------
# the change rule: |Δ| >= bound and |Δ| > cap (measure.stats.compare)
# --------------------------------------------------------------------------

def point(stability: float, half_width: float, drop: float) -> dict:
    return {"stability_pct": stability, "ci_low_pct": stability - half_width,
            "ci_high_pct": stability + half_width, "drop_bound_pct_ab": drop}


def below(value: float) -> float:
    return math.nextafter(value, -math.inf)


def above(value: float) -> float:
    return math.nextafter(value, math.inf)


@pytest.mark.parametrize("to, label", [
    (55.0, "improved"), (below(55.0), "flat"), (above(55.0), "improved"),
    (45.0, "regressed"), (above(45.0), "flat"), (below(45.0), "regressed"),
], ids=["up-equal", "up-below", "up-above", "down-equal", "down-below", "down-above"])
def test_change_rule_calls_a_move_exactly_equal_to_the_random_bound(to, label):
    # Half-widths 3 and 4: bound = √(9 + 16) = 5 exactly; no losses.  Δ = ±5 is called (≥).
    x = {"stability_pct": 50.0, "ci_low_pct": 47.0, "ci_high_pct": 53.0, "drop_bound_pct_ab": 0.0}
    y = {"stability_pct": to, "ci_low_pct": 46.0, "ci_high_pct": 54.0, "drop_bound_pct_ab": 0.0}
    assert stats.compare(x, y) == label


@pytest.mark.parametrize("to, label", [
    (55.0, "flat"), (below(55.0), "flat"), (above(55.0), "improved"),
    (45.0, "flat"), (above(45.0), "flat"), (below(45.0), "regressed"),
], ids=["up-equal", "up-below", "up-above", "down-equal", "down-below", "down-above"])
def test_change_rule_does_not_call_a_move_exactly_equal_to_the_loss_cap(to, label):
    # No random error; drop bounds 2.5 + 2.5: cap = 5 exactly.  Δ = ±5 is not called (>).
    assert stats.compare(point(50.0, 0.0, 2.5), point(to, 0.0, 2.5)) == label


def test_change_rule_needs_both_margins_at_once():
    # |Δ| = 5 clears a bound of 5 but not a cap of 5; it clears a cap of 4.5 but not a bound of 5.5.
    assert stats.compare(point(50.0, 3.5, 2.5), point(55.0, 3.5, 2.5)) == "flat"
    assert stats.compare(point(50.0, 0.0, 2.25), point(55.0, 0.0, 2.25)) == "improved"
    assert stats.compare(point(50.0, 5.5 / math.sqrt(2), 2.25), point(55.0, 5.5 / math.sqrt(2), 2.25)) == "flat"


# --------------------------------------------------------------------------
# the noise floor's exact limit: exact up to EXACT_FLOOR_LIMIT splits, Monte Carlo (seeded) above
# --------------------------------------------------------------------------

def test_noise_floor_is_exact_at_exactly_the_split_limit_and_needs_a_seed_one_step_above():
    # Pools of 99, 99 and 199 with 199 draws: 100 · 100 · 200 = 2,000,000 splits, exactly the limit.
    at_limit_x, at_limit_y = {"A": 99, "B": 99, "C": 1}, {"A": 0, "B": 0, "C": 198}
    assert stats._split_count([99, 99, 199], 199) == stats.EXACT_FLOOR_LIMIT
    value = stats.null_floor_pct(at_limit_x, at_limit_y)      # no seed: it must be the exact sum
    assert value == float(100 * stats.null_floor_exact(at_limit_x, at_limit_y))
    # One more in the third pool and one more draw: 100 · 100 · 201 splits, above the limit.
    above_x, above_y = {"A": 99, "B": 99, "C": 2}, {"A": 0, "B": 0, "C": 198}
    assert stats._split_count([99, 99, 200], 200) > stats.EXACT_FLOOR_LIMIT
    with pytest.raises(ValueError, match="needs a recorded seed"):
        stats.null_floor_pct(above_x, above_y)


def test_monte_carlo_floor_runs_at_least_ten_thousand_permutations():
    # A pool with a single B: every split gives the same gap, so the error term is zero from the first
    # thousand on, and only the minimum number of permutations decides when it stops.
    estimate, used = stats.null_floor_monte_carlo({"A": 20}, {"A": 19, "B": 1}, seed=7)
    assert used == 10_000
    assert estimate == Fraction(1, 20)
