"""Repeats of one prompt and the options' roles (method §6.1, §6.7).

``replicate_agreement_pct`` and the within-panel interval
(``ci_stratified_*``) say what the frozen interval means for a subject whose
repeats agree; ``gap_role_ab_pct`` is the A-B distance in the construct the
human comparison was measured on.  Each is built by
:func:`measure.measurement.build`, recorded by a run folder, recomputed by
``llmarchive verify``.
"""
import json
from fractions import Fraction
from pathlib import Path

import pytest

from llmarchive.cli import main
from llmarchive.archive import ChainedLog, write_json
from llmarchive.run import protocol_header
from measure import stats
from measure.measurement import MeasurementError, build, option_roles
from measure.rng import Stream
from measure.schema import MEASUREMENT_FIELD_NAMES
from measure.verify import recompute
from tests.measure_helpers import ITEMS, RUN, healthy_plan, protocol, set_items, trials_from, uniform

VECTORS = Path(__file__).resolve().parent.parent / "measure" / "vectors" / "stratified.json"
NEW_FIELDS = ("replicate_agreement_pct", "ci_stratified_low_pct", "ci_stratified_high_pct", "gap_role_ab_pct")
# The risky-choice panels' layout: the sure option is A on 13 scenarios, B on two.
ROLES = {item: ({"A": "sure", "B": "gamble"} if i < 13 else {"A": "gamble", "B": "sure"})
         for i, item in enumerate(ITEMS)}


def two_flips(n_per_scenario: int) -> dict:
    """Every repeat agrees; B flips two of the fifteen scenarios (stability exactly 86.7)."""
    plan = uniform({v: ["A"] * n_per_scenario for v in ("A", "A_prime", "B")} | {"C": ["B"] * n_per_scenario})
    set_items(plan, "A", ITEMS[:7], ["B"] * n_per_scenario)
    set_items(plan, "A_prime", ITEMS[:7], ["B"] * n_per_scenario)
    return set_items(plan, "B", ITEMS[:5], ["B"] * n_per_scenario)


# --------------------------------------------------------------------------
# measure.stats
# --------------------------------------------------------------------------

def _port_first_replicates(cells_x, cells_y, seed, b):
    """The documented draw order, re-implemented one replicate at a time from binomial thresholds."""
    stream = Stream(seed)

    def version(cells):
        fixed = [0] * len(cells[0])
        groups = {}
        for cell in cells:
            if sum(1 for c in cell if c) == 1:
                fixed = [f + c for f, c in zip(fixed, cell)]
            else:
                groups[tuple(cell)] = groups.get(tuple(cell), 0) + 1
        totals = [list(fixed) for _ in range(b)]
        for cell in sorted(groups):
            draws = groups[cell] * sum(cell)
            nonzero = [j for j, c in enumerate(cell) if c]
            lefts = [draws] * b
            for k, j in enumerate(nonzero[:-1]):
                rest = sum(cell[i] for i in nonzero[k:])
                words = stream.u64s(b)
                for r in range(b):
                    thresholds = stats.binomial_thresholds(lefts[r], cell[j], rest)
                    x = next(i for i, t in enumerate(thresholds) if words[r] < t)
                    totals[r][j] += x
                    lefts[r] -= x
            for r in range(b):
                totals[r][nonzero[-1]] += lefts[r]
        return totals

    out = []
    for x, y in zip(version(cells_x), version(cells_y)):
        mx, my = sum(x) - x[0], sum(y) - y[0]
        if mx == 0 or my == 0:
            out.append(Fraction(1))
        else:
            out.append(sum(abs(Fraction(a, mx) - Fraction(c, my)) for a, c in zip(x[1:], y[1:])) / 2)
    return out


def test_within_panel_bootstrap_golden_vectors_and_an_independent_port_agree():
    data = json.loads(VECTORS.read_text())
    assert len(data["cases"]) >= 4
    for case in data["cases"]:
        seed = stats.bootstrap_seed(case["protocol_id"], case["run_date"], case["subject_model_id"])
        assert f"{seed:016x}" == case["seed_hex"]
        x, y = case["cells_x"], case["cells_y"]
        first = stats.stratified_bootstrap_gaps(x, y, seed, len(case["first_gaps_b12"]))
        assert [f"{g.numerator}/{g.denominator}" for g in first] == case["first_gaps_b12"]
        assert first == _port_first_replicates(x, y, seed, len(case["first_gaps_b12"]))
        low, high = stats.stratified_bootstrap_ci_pct(x, y, seed, case["B"])
        assert (repr(low), repr(high)) == (case["ci_low_pct"], case["ci_high_pct"])


def test_within_panel_bootstrap_resamples_each_cell_like_drawing_its_repeats_one_by_one():
    cells_x = [[0, 1, 1]] * 8 + [[0, 2, 0]] * 6 + [[1, 1, 0]]
    cells_y = [[1, 1, 0]] * 4 + [[0, 0, 2]] * 9 + [[0, 1, 1]] * 2
    b = 6000
    fast = [float(g) for g in stats.stratified_bootstrap_gaps(cells_x, cells_y, 11, b)]
    stream = Stream(12)
    naive = []
    for _ in range(b):
        totals = []
        for cells in (cells_x, cells_y):
            counts = [0, 0, 0]
            for cell in cells:
                bag = [j for j, c in enumerate(cell) for _ in range(c)]
                for _ in bag:
                    counts[bag[stream.below(len(bag))]] += 1
            totals.append(counts)
        p, q = stats.replicate_gap(*totals)
        naive.append(p / q)
    mean_f, mean_n = sum(fast) / b, sum(naive) / b
    sd = (sum((v - mean_n) ** 2 for v in naive) / b) ** 0.5
    assert abs(mean_f - mean_n) < 4 * sd * (2 / b) ** 0.5
    sd_f = (sum((v - mean_f) ** 2 for v in fast) / b) ** 0.5
    assert abs(sd_f - sd) < 0.1 * sd


def test_a_cell_whose_repeats_agree_is_never_resampled():
    agreeing = [[0, 2, 0]] * 13 + [[0, 0, 2]] * 2
    moved = [[0, 2, 0]] * 11 + [[0, 0, 2]] * 4
    assert stats.stratified_bootstrap_ci_pct(agreeing, moved, 5) == (86.66666666666667, 86.66666666666667)
    # One mixed cell widens it, and only its own answers can appear in a replicate.
    gaps = set(stats.stratified_bootstrap_gaps(agreeing, [[0, 1, 1]] + moved[1:], 5, 2000))
    assert gaps == {Fraction(6, 30), Fraction(5, 30), Fraction(4, 30)}


def test_replicate_agreement_needs_the_same_outcome_and_the_same_token():
    agree = stats.replicate_agreement_fraction
    assert agree([[("valid", "A"), ("valid", "A")], [("valid", "A"), ("valid", "B")]]) == Fraction(1, 2)
    assert agree([[("refused", None), ("unparseable", None)], [("refused", None)] * 2]) == Fraction(1, 2)
    assert agree([[("valid", "A")], [("valid", "B")]]) is None


def test_build_takes_its_drop_bounds_from_the_stats_function(monkeypatch):
    calls = []
    real = stats.drop_bound_fraction

    def spy(u_x, u_y):
        calls.append((u_x, u_y))
        return real(u_x, u_y)

    monkeypatch.setattr(stats, "drop_bound_fraction", spy)
    plan = set_items(healthy_plan(), "B", ["s15"], ["refused", "A"])
    record = build(protocol(), trials_from(plan), RUN)
    assert (Fraction(0), Fraction(1, 30)) in calls and len(calls) == 3
    assert record["drop_bound_pct_ab"] == round(stats.drop_bound_pct(0.0, 1 / 30), 9)
    assert stats.drop_bound_fraction(Fraction(1, 100), Fraction(1, 100)) == 2


# --------------------------------------------------------------------------
# measure.measurement.build
# --------------------------------------------------------------------------

def test_the_new_fields_are_appended_and_leave_every_other_field_as_it_was():
    assert MEASUREMENT_FIELD_NAMES[-4:] == NEW_FIELDS
    plain = build(protocol(), trials_from(healthy_plan()), RUN)
    with_roles = build(protocol(option_roles=ROLES), trials_from(healthy_plan()), RUN)
    assert {k: v for k, v in plain.items() if k != "gap_role_ab_pct"} == \
        {k: v for k, v in with_roles.items() if k != "gap_role_ab_pct"}


def test_replicate_agreement_counts_scenario_version_cells():
    record = build(protocol(), trials_from(healthy_plan()), RUN)
    # A and A' disagree in all 15 cells, B agrees in the 8 it moved, C agrees everywhere: 23 of 60.
    assert record["replicate_agreement_pct"] == round(100 * 23 / 60, 9)
    low, high = record["ci_stratified_low_pct"], record["ci_stratified_high_pct"]
    assert low < record["stability_pct"] < high


@pytest.mark.parametrize("n_per_scenario", [2, 8])
def test_a_subject_whose_repeats_agree_gets_a_zero_width_within_panel_interval(n_per_scenario):
    record = build(protocol(n_per_scenario), trials_from(two_flips(n_per_scenario), n_per_scenario), RUN)
    assert record["stability_pct"] == 86.666666667
    assert record["replicate_agreement_pct"] == 100.0
    assert record["ci_stratified_low_pct"] == record["ci_stratified_high_pct"] == record["stability_pct"]
    # The frozen interval is kept as it was, and is wide.
    assert record["ci_high_pct"] - record["ci_low_pct"] > 20


def test_one_call_per_prompt_has_no_agreement_and_no_within_panel_interval():
    plan = uniform({"A": ["A"], "A_prime": ["A"], "B": ["B"], "C": ["B"]})
    record = build(protocol(1), trials_from(plan, 1), RUN)
    assert record["replicate_agreement_pct"] is None
    assert record["ci_stratified_low_pct"] is None and record["ci_stratified_high_pct"] is None
    assert record["ci_low_pct"] is not None


def test_the_same_framing_effect_on_every_scenario_shows_in_full_by_role_and_as_11_15_by_letter():
    # A: everyone takes the sure option; B: everyone takes the gamble, on every scenario.
    plan = {"A": {}, "A_prime": {}, "B": {}, "C": {}}
    for item, roles in ROLES.items():
        sure = next(letter for letter, role in roles.items() if role == "sure")
        gamble = "B" if sure == "A" else "A"
        plan["A"][item] = plan["A_prime"][item] = [sure, sure]
        plan["B"][item] = plan["C"][item] = [gamble, gamble]
    record = build(protocol(option_roles=ROLES), trials_from(plan), RUN)
    assert record["gap_role_ab_pct"] == 100.0
    assert record["gap_pct"] == round(100 * 11 / 15, 9)


def test_without_option_roles_the_role_gap_is_null_and_bad_roles_are_refused():
    assert build(protocol(), trials_from(healthy_plan()), RUN)["gap_role_ab_pct"] is None
    with pytest.raises(MeasurementError, match="option_roles"):
        build(protocol(option_roles={"s01": {"A": "sure"}}), trials_from(healthy_plan()), RUN)
    with pytest.raises(MeasurementError, match="option_roles.*s02"):
        build(protocol(option_roles={"s01": ROLES["s01"]}), trials_from(healthy_plan()), RUN)


def test_option_roles_come_from_the_panel_structure_of_a_built_protocol(protocols):
    p = protocols["risky_choice_framing__wording__v0"]
    roles = option_roles(p)
    assert roles == {item["item_id"]: item["structure"]["roles"] for item in p["panel"]}
    assert sum(1 for r in roles.values() if r["A"] == "sure") == 13
    header = protocol_header(p)
    assert "panel" not in header and header["option_roles"] == roles


# --------------------------------------------------------------------------
# a run folder and llmarchive verify
# --------------------------------------------------------------------------

def _folder(tmp_path, header):
    trials = trials_from(healthy_plan())
    for t in trials:
        t["response_text"] = f"Some reasoning.\nDECISION: {t['token']}"
    folder = tmp_path / "run"
    log = ChainedLog(folder / "trials.jsonl")
    for t in trials:
        log.append(dict(t, run_id=RUN["run_id"]))
    record = build(header, log.records, RUN)
    write_json(folder / "run.json", dict(RUN, record_type="experiment_run", protocol_header=header))
    write_json(folder / "measurement.json", record)
    return folder, log.records, record


def test_verify_recomputes_the_new_fields_from_a_run_folder_that_records_roles(tmp_path, capsys):
    folder, trials, record = _folder(tmp_path, protocol(option_roles=ROLES))
    assert record["gap_role_ab_pct"] is not None and record["replicate_agreement_pct"] is not None
    assert main(["verify", str(folder)]) == 0
    assert "every field recomputes exactly" in capsys.readouterr().out
    for field in NEW_FIELDS:
        edited = dict(record, **{field: 1.0})
        assert [d["field"] for d in recompute(edited, trials, protocol(option_roles=ROLES))] == [field]


def test_a_run_folder_recorded_before_roles_still_verifies_with_a_null_role_gap(tmp_path, capsys):
    folder, _, record = _folder(tmp_path, protocol())
    assert "option_roles" not in json.loads((folder / "run.json").read_text())["protocol_header"]
    assert record["gap_role_ab_pct"] is None
    assert main(["verify", str(folder)]) == 0


def test_a_measurement_written_before_the_new_fields_is_published_with_them_null(tmp_path):
    from publish.data.sources import _check_measurement

    record = build(protocol(), trials_from(healthy_plan()), RUN)
    old = {k: v for k, v in record.items() if k not in NEW_FIELDS}
    folder = tmp_path / RUN["run_id"]
    checked = _check_measurement(old, folder)
    assert tuple(checked) == MEASUREMENT_FIELD_NAMES
    assert all(checked[f] is None for f in NEW_FIELDS)

