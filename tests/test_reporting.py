"""The Dagster UI's gate checks and plotted numbers are measure's own: names, flags and thresholds come from ``measure``.

``assets/reporting.py`` describes each gate of a measurement as an asset check
and publishes the measurement's numbers as typed metadata.  Measure owns the
gates (``measure.measurement.build``), their thresholds and the field types
(``measure.schema``); these tests build a real measurement and hold the
reporting to it, so a threshold or a name that moves in measure is seen here.
"""
import re
from fractions import Fraction

from assets import reporting
from measure import measurement as estimator
from measure.schema import FLAGS, MEASUREMENT_FIELD_NAMES, MEASUREMENT_FIELDS
from tests.measure_helpers import RUN, healthy_plan, protocol, trials_from

# The two thresholds a protocol declares, which the gate rules name.
PROTOCOL_THRESHOLDS = {"theta_positive_pct", "scenario_dominated_share_pct"}


def _measured() -> dict:
    return estimator.build(protocol(), trials_from(healthy_plan()), RUN)


def test_each_gate_check_is_a_gate_measure_evaluates_with_the_flag_it_raises():
    gates = _measured()["gates"]
    evaluated = {}
    for gate in gates:
        evaluated.setdefault(gate["check"], gate["flag"])
    assert reporting.GATE_FLAGS == evaluated, "reporting's checks and flags are not the gates measure builds"
    assert set(reporting.GATE_FLAGS.values()) <= set(FLAGS)
    assert list(reporting.gate_checks()) == [*evaluated, "on_curve"]
    for check, flag in reporting.GATE_FLAGS.items():
        assert reporting.gate_checks()[check].endswith(f"(else {flag})")


def test_the_checks_quote_the_thresholds_measure_applies():
    checks = reporting.gate_checks()
    for gate in _measured()["gates"]:
        if gate["check"] in ("drop_bound", "missingness_asymmetry"):
            assert f"≤ {gate['threshold']} " in checks[gate["check"]], (gate, checks[gate["check"]])
    assert f"< {float(estimator.DEGENERATE_ENTROPY)} " in checks["not_degenerate"]
    assert f"> {float(estimator.DEGENERATE_STABILITY_PCT)} " in checks["not_degenerate"]


def test_the_day_measure_moves_a_threshold_the_checks_say_the_new_one(monkeypatch):
    moved = {"DROP_BOUND_MAX_PCT": Fraction(5, 2), "ASYMMETRY_MAX_PCT": Fraction(3, 2),
             "DEGENERATE_ENTROPY": 0.25, "DEGENERATE_STABILITY_PCT": 85.0}
    for name, value in moved.items():
        monkeypatch.setattr(estimator, name, value)
    applied = {g["check"]: g["threshold"] for g in _measured()["gates"]}
    assert (applied["drop_bound"], applied["missingness_asymmetry"]) == (2.5, 1.5), "measure applies the moved ones"
    specs = {spec.name: spec.description for spec in reporting.gate_check_specs("commercial_measurements")}
    assert "≤ 2.5 " in specs["drop_bound"] and "2.0" not in specs["drop_bound"]
    assert "≤ 1.5 " in specs["missingness_asymmetry"] and "1.0" not in specs["missingness_asymmetry"]
    assert "< 0.25 " in specs["not_degenerate"] and "> 85.0 " in specs["not_degenerate"]


def test_every_name_a_gate_rule_quotes_is_a_field_or_flag_measure_knows():
    known = set(MEASUREMENT_FIELD_NAMES) | set(FLAGS) | PROTOCOL_THRESHOLDS
    for check, rule in reporting.gate_checks().items():
        quoted = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", rule))
        assert quoted <= known, f"{check}: {sorted(quoted - known)} are not measure's names"


def test_the_plotted_numbers_are_the_fields_measure_types_as_numbers():
    labels = dict(MEASUREMENT_FIELDS)
    assert reporting.FLOAT_FIELDS == tuple(n for n, label in MEASUREMENT_FIELDS if label in ("pct", "unit_interval"))
    assert all(labels[name] in ("int", "count") for name in reporting.INT_FIELDS)
    assert all(labels[name] == "bool" for name in reporting.BOOL_FIELDS)
    record = _measured()
    typed = reporting.typed_numbers(record)
    for name in reporting.FLOAT_FIELDS:
        if record[name] is not None:
            assert typed[name].value == record[name], name
    assert typed["n"].value == record["n"] and typed["on_curve"].value is record["on_curve"]
