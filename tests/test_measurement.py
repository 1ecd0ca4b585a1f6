"""measure.measurement.build: every field, every flag firing and not firing."""
import pytest

from measure.measurement import MeasurementError, build
from measure.schema import FLAGS, MEASUREMENT_FIELD_NAMES
from tests.measure_helpers import ITEMS, RUN, healthy_plan, protocol, set_items, trials_from, uniform

N8 = 8  # n_per_scenario for the near-threshold cases: n = 120


def measure(plan, n_per_scenario=2, run=None, **proto):
    return build(protocol(n_per_scenario, **proto), trials_from(plan, n_per_scenario), run or RUN)


def plan8():
    """The healthy plan at n = 120: B moves in eight scenarios, C everywhere."""
    plan = uniform({"A": ["A", "B"] * 4, "A_prime": ["A", "B"] * 4, "B": ["A", "B"] * 4, "C": ["B"] * 8})
    return set_items(plan, "B", ITEMS[:8], ["B"] * 8)


def lose(plan, version, item, count, n=8):
    answers = list(plan[version][item])
    for i in range(count):
        answers[i] = "unparseable"
    plan[version][item] = answers
    return plan


def test_record_has_every_schema_field_in_order():
    record = measure(healthy_plan())
    assert tuple(record) == MEASUREMENT_FIELD_NAMES


def test_healthy_measurement_has_no_flag_and_is_on_the_curve():
    record = measure(healthy_plan())
    assert record["flags"] == []
    assert record["on_curve"] is True
    assert record["gap_pct"] == pytest.approx(100 * 8 / 30)
    assert record["stability_pct"] == pytest.approx(100 - 100 * 8 / 30)
    assert record["gap_null_pct"] == 0
    assert record["gap_positive_pct"] == pytest.approx(50)
    assert record["u_a"] == record["u_b"] == 0
    assert record["scenario_concentration_pct"] == pytest.approx(25)
    assert record["scenario_gaps_pct"]["s01"] == pytest.approx(50)
    assert record["scenario_gaps_pct"]["s15"] == 0
    assert record["ci_low_pct"] <= record["stability_pct"] <= record["ci_high_pct"]
    assert record["bootstrap_seed"] and len(record["bootstrap_seed"]) == 16


def test_gates_list_one_entry_per_check_with_inputs_threshold_and_result():
    gates = measure(healthy_plan())["gates"]
    checks = [(g["check"], g["pair"]) for g in gates]
    assert checks.count(("drop_bound", "ab")) == 1
    assert {pair for check, pair in checks if check == "drop_bound"} == {"ab", "aa", "ac"}
    assert {pair for check, pair in checks if check == "missingness_asymmetry"} == {"ab", "aa", "ac"}
    assert all({"check", "pair", "rule", "inputs", "threshold", "pass", "flag"} <= set(g) for g in gates)
    assert all(g["pass"] for g in gates)


def test_drop_confounded_fires_on_any_pair_above_two_points():
    # n = 120: losing 2 in C and 1 in A gives drop_bound_pct_ac = 2.5 > 2.0.
    plan = lose(lose(plan8(), "C", "s01", 2), "A", "s02", 1)
    record = measure(plan, N8)
    assert "drop_confounded" in record["flags"]
    assert "drop_bound_pct_ac" in record["flag_reasons"]["drop_confounded"]
    assert record["on_curve"] is False


def test_drop_confounded_does_not_fire_at_exactly_two_points_or_below():
    # 1 + 1 losses: 1.67 points.  The exact-arithmetic boundary is tested in stats.
    plan = lose(lose(plan8(), "A", "s01", 1), "B", "s02", 1)
    assert "drop_confounded" not in measure(plan, N8)["flags"]


def test_asymmetric_missingness_fires_above_one_point_within_a_pair():
    plan = lose(plan8(), "B", "s01", 2)  # u_b − u_a = 1.67 points
    record = measure(plan, N8)
    assert "asymmetric_missingness" in record["flags"]
    assert "drop_confounded" not in record["flags"]


def test_asymmetric_missingness_does_not_fire_at_one_loss():
    plan = lose(plan8(), "B", "s01", 1)  # 0.83 points
    assert "asymmetric_missingness" not in measure(plan, N8)["flags"]


def test_below_drop_bound_fires_when_losses_could_explain_the_gap():
    plan = uniform({"A": ["A", "B"] * 4, "A_prime": ["A", "B"] * 4, "B": ["A", "B"] * 4, "C": ["B"] * 8})
    plan["B"]["s01"] = ["B"] * 2 + ["A", "B"] * 3   # one answer moves: gap 0.83
    plan = lose(lose(plan, "A", "s03", 1), "B", "s04", 1)  # drop bound 1.67
    record = measure(plan, N8)
    assert "below_drop_bound" in record["flags"]


def test_below_drop_bound_does_not_fire_when_the_gap_clears_the_losses():
    assert "below_drop_bound" not in measure(plan8(), N8)["flags"]


def test_below_surface_noise_fires_when_a_prime_moves_as_much_as_b():
    plan = healthy_plan()
    set_items(plan, "A_prime", ITEMS[:8], ["B", "B"])
    record = measure(plan)
    assert "below_surface_noise" in record["flags"]


def test_below_surface_noise_does_not_fire_when_b_clears_the_null_change():
    plan = healthy_plan()
    set_items(plan, "A_prime", ITEMS[:1], ["B", "B"])  # A′ moves 1 of 30, B moves 8
    assert "below_surface_noise" not in measure(plan)["flags"]


def test_not_reading_fires_when_the_positive_control_does_not_move():
    plan = healthy_plan()
    plan["C"] = {item: ["A", "B"] for item in ITEMS}
    record = measure(plan)
    assert "not_reading" in record["flags"]
    assert "theta_positive_pct" in record["flag_reasons"]["not_reading"]


def test_not_reading_respects_theta_exactly():
    # C moves 5 of 30 answers: 16.7 points > 15 passes; 4 of 30 (13.3) fails.
    plan = healthy_plan()
    plan["C"] = {item: ["A", "B"] for item in ITEMS}
    set_items(plan, "C", ITEMS[:5], ["B", "B"])
    assert "not_reading" not in measure(plan)["flags"]
    plan["C"][ITEMS[4]] = ["A", "B"]
    assert "not_reading" in measure(plan)["flags"]


def test_degenerate_candidate_fires_on_collapse_onto_one_answer():
    plan = uniform({"A": ["A", "A"], "A_prime": ["A", "A"], "B": ["A", "A"], "C": ["B", "B"]})
    record = measure(plan)
    assert record["entropy_a"] == record["entropy_b"] == 0
    assert record["stability_pct"] == 100
    assert "degenerate_candidate" in record["flags"]


def test_degenerate_candidate_does_not_fire_with_spread_answers():
    record = measure(healthy_plan())
    assert record["entropy_a"] == pytest.approx(1.0)
    assert "degenerate_candidate" not in record["flags"]


def test_scenario_dominated_fires_when_two_scenarios_make_the_gap():
    plan = uniform({"A": ["A", "B"], "A_prime": ["A", "B"], "B": ["A", "B"], "C": ["B", "B"]})
    set_items(plan, "B", ITEMS[:2], ["B", "B"])
    record = measure(plan)
    assert record["scenario_concentration_pct"] == 100
    assert "scenario_dominated" in record["flags"]


def test_scenario_dominated_does_not_fire_on_a_spread_gap():
    assert "scenario_dominated" not in measure(healthy_plan())["flags"]


@pytest.mark.parametrize("flag", ["instrument_suspect", "exploratory"])
def test_caller_flags_are_recorded_with_their_reason(flag):
    run = dict(RUN, **{flag: "runtime fingerprint failed on 2026-11-29"})
    record = measure(healthy_plan(), run=run)
    assert flag in record["flags"]
    assert record["flag_reasons"][flag] == "runtime fingerprint failed on 2026-11-29"
    assert record["on_curve"] is False
    assert flag not in measure(healthy_plan())["flags"]


def _flag_cases():
    """For every flag of the closed list, trials (and run fields) that must raise it."""
    moved_null = set_items(healthy_plan(), "A_prime", ITEMS[:8], ["B", "B"])
    unread = dict(healthy_plan(), C={item: ["A", "B"] for item in ITEMS})
    collapsed = uniform({"A": ["A", "A"], "A_prime": ["A", "A"], "B": ["A", "A"], "C": ["B", "B"]})
    tiny_gap = uniform({"A": ["A", "B"] * 4, "A_prime": ["A", "B"] * 4, "B": ["A", "B"] * 4, "C": ["B"] * 8})
    tiny_gap["B"]["s01"] = ["B"] * 2 + ["A", "B"] * 3
    two_scenarios = set_items(uniform({"A": ["A", "B"], "A_prime": ["A", "B"], "B": ["A", "B"], "C": ["B", "B"]}),
                              "B", ITEMS[:2], ["B", "B"])
    return {
        "below_surface_noise": (moved_null, 2, RUN),
        "not_reading": (unread, 2, RUN),
        "degenerate_candidate": (collapsed, 2, RUN),
        "drop_confounded": (lose(lose(plan8(), "C", "s01", 2), "A", "s02", 1), N8, RUN),
        "asymmetric_missingness": (lose(plan8(), "B", "s01", 2), N8, RUN),
        "below_drop_bound": (lose(lose(tiny_gap, "A", "s03", 1), "B", "s04", 1), N8, RUN),
        "scenario_dominated": (two_scenarios, 2, RUN),
        "instrument_suspect": (healthy_plan(), 2, dict(RUN, instrument_suspect=True)),
        "exploratory": (healthy_plan(), 2, dict(RUN, exploratory="a second contrast")),
    }


def test_every_flag_of_the_closed_list_fires_on_trials_made_for_it_and_no_other_flag_exists():
    cases = _flag_cases()
    assert set(cases) == set(FLAGS), "a flag of the closed list with no trials that raise it"
    assert measure(healthy_plan())["flags"] == []
    for flag, (plan, n_per_scenario, run) in cases.items():
        record = measure(plan, n_per_scenario, run=run)
        assert flag in record["flags"], flag
        assert set(record["flags"]) <= set(FLAGS)
        assert record["flag_reasons"][flag] and record["on_curve"] is False
        own = [g["pass"] for g in record["gates"] if g["flag"] == flag]
        assert not own or not all(own), f"{flag} is raised but every gate of it passed"


def test_candidate_protocol_is_off_the_curve_without_a_flag():
    record = measure(healthy_plan(), status="candidate")
    assert record["flags"] == []
    assert record["on_curve"] is False


def test_at_noise_floor_when_stability_reaches_one_hundred_minus_the_floor():
    plan = uniform({"A": ["A", "B"], "A_prime": ["A", "B"], "B": ["A", "B"], "C": ["B", "B"]})
    record = measure(plan)
    assert record["at_noise_floor"] is True
    assert measure(healthy_plan())["at_noise_floor"] is False


def test_u_counts_every_non_valid_outcome():
    plan = plan8()
    plan["A"]["s01"] = ["refused", "blocked_upstream", "truncated", "empty", "off_format", "unparseable", "A", "B"]
    record = measure(plan, N8)
    assert record["u_a"] == pytest.approx(6 / 120)
    assert record["outcomes"]["A"]["refused"] == 1
    assert record["n_valid"]["A"] == 114


def test_incomplete_run_is_refused_naming_the_version():
    trials = trials_from(healthy_plan())[:-1]
    with pytest.raises(MeasurementError, match="version C has 29 trials"):
        build(protocol(), trials, RUN)


def test_duplicate_trial_is_refused():
    trials = trials_from(healthy_plan())
    trials[1] = dict(trials[0])
    with pytest.raises(MeasurementError, match="duplicate trial"):
        build(protocol(), trials, RUN)


def test_valid_trial_with_a_foreign_token_is_refused():
    trials = trials_from(healthy_plan())
    trials[0]["token"] = "C"
    with pytest.raises(MeasurementError, match="not in options"):
        build(protocol(), trials, RUN)


def test_version_without_valid_answers_gives_undefined_numbers_and_flags():
    plan = healthy_plan()
    plan["B"] = {item: ["refused", "refused"] for item in ITEMS}
    record = measure(plan)
    assert record["gap_pct"] is None and record["stability_pct"] is None
    assert {"drop_confounded", "below_drop_bound", "below_surface_noise"} <= set(record["flags"])
    assert record["on_curve"] is False


def test_build_is_deterministic():
    assert measure(healthy_plan()) == measure(healthy_plan())


def test_interval_resamples_n_responses_per_version_with_losses_included():
    from measure import stats
    plan = lose(lose(plan8(), "A", "s01", 1), "B", "s02", 1)
    record = measure(plan, N8)
    seed = stats.bootstrap_seed(record["protocol_id"], record["run_date"], record["subject_model_id"])
    assert record["bootstrap_seed"] == f"{seed:016x}"
    a, b = record["decisions"]["A"], record["decisions"]["B"]
    spec_unit = stats.bootstrap_ci_pct(a, b, seed, n_x=120, n_y=120)
    valid_only = stats.bootstrap_ci_pct(a, b, seed)
    assert (record["ci_low_pct"], record["ci_high_pct"]) == tuple(round(v, 9) for v in spec_unit)
    assert spec_unit != valid_only
