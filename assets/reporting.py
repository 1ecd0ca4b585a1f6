"""Metadata a maintainer looks at in the Dagster UI, from run and measurement records.

A measurement's numbers go out as typed metadata (float, int, bool), never
as text: the UI plots a numeric metadata key across an asset's partitions,
so ``stability_pct`` with its interval, the gap, the noise floor and the four
``u`` values draw the curve month by month in the asset's Plots tab.  The
gates of a measurement are asset checks of severity WARN, so an off-curve
measurement shows as a failed check that names its reason.
"""
from typing import Iterable, Mapping, Optional, Sequence

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, MetadataValue

from measure import measurement as estimator
from measure.schema import MEASUREMENT_FIELDS, PAIRS, VERSION_SUFFIX, VERSIONS

# Measurement fields published as float metadata: every field measure types as a percentage or a unit-interval
# number (each a number or None in the record), in the record's order.
FLOAT_FIELDS = tuple(name for name, label in MEASUREMENT_FIELDS if label in ("pct", "unit_interval"))
INT_FIELDS = ("n", "k")
BOOL_FIELDS = ("on_curve",)

# Each gate check of measure.measurement.build and the flag it raises when it fails (both names checked against
# the gates of a measurement measure builds, and the flags against measure.schema.FLAGS: tests/test_reporting.py).
GATE_FLAGS = {
    "drop_bound": "drop_confounded",
    "missingness_asymmetry": "asymmetric_missingness",
    "finding_above_losses": "below_drop_bound",
    "above_surface_noise": "below_surface_noise",
    "positive_control": "not_reading",
    "not_degenerate": "degenerate_candidate",
    "scenario_concentration": "scenario_dominated",
}


def _each_pair(field: str) -> str:
    return ", ".join(f"{field}_{pair}" for pair in PAIRS)


def gate_checks() -> dict[str, str]:
    """One asset check per gate of measure.measurement (each names the flag it raises), and one for the curve.

    Each threshold is read from :mod:`measure.measurement` when the checks are
    described, so the day measure moves one the checks say the new value.  The
    two thresholds a protocol declares (``theta_positive_pct``,
    ``scenario_dominated_share_pct``) are named, not quoted: they differ by protocol.
    """
    rules = {
        "drop_bound": f"each of {_each_pair('drop_bound_pct')} ≤ {float(estimator.DROP_BOUND_MAX_PCT)}",
        "missingness_asymmetry": f"each of {_each_pair('drop_asymmetry_pct')} ≤ "
                                 f"{float(estimator.ASYMMETRY_MAX_PCT)}",
        "finding_above_losses": "drop_bound_pct_ab < gap_pct",
        "above_surface_noise": "B moves more than the null change A′, losses included: "
                               "gap_pct − drop_bound_pct_ab > gap_null_pct + drop_bound_pct_aa",
        "positive_control": "C moves the answer by more than theta_positive_pct, losses included",
        "not_degenerate": f"not one answer regardless of wording: not max(entropy_a, entropy_b) < "
                          f"{float(estimator.DEGENERATE_ENTROPY)} with stability_pct > "
                          f"{float(estimator.DEGENERATE_STABILITY_PCT)}",
        "scenario_concentration": "the two worst scenarios carry ≤ scenario_dominated_share_pct of the gap",
    }
    checks = {check: f"{rule} (else {GATE_FLAGS[check]})" for check, rule in rules.items()}
    checks["on_curve"] = "no flag at all and an admitted protocol: the measurement is a point on the curve"
    return checks


def outcome_table(runs: Iterable[Mapping]) -> str:
    """Markdown: one row per run and version, every outcome counted."""
    rows = ["| run | version | outcomes |", "|---|---|---|"]
    for run in runs:
        for version in VERSIONS:
            counts = (run.get("outcomes") or {}).get(version, {})
            shown = ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "-"
            rows.append(f"| {run.get('run_id')} | {version} | {shown} |")
    return "\n".join(rows)


def measurement_row(m: Mapping) -> str:
    u = " / ".join(f"{m.get(f'u_{VERSION_SUFFIX[v]}')}" for v in VERSIONS)
    return (f"| {m['protocol_id']} | {m.get('stability_pct')} | {m.get('ci_low_pct')}–{m.get('ci_high_pct')} | "
            f"{m.get('entropy_a')} / {m.get('entropy_b')} | {m.get('null_floor_pct')} | {u} | "
            f"{', '.join(m.get('flags') or []) or 'none'} | {m.get('on_curve')} |")


def measurement_table(measurements: Iterable[Mapping]) -> str:
    rows = ["| protocol | stability_pct | CI | entropy A / B | null floor | u A / A′ / B / C | flags | on curve |",
            "|---|---|---|---|---|---|---|---|"]
    rows += [measurement_row(m) for m in measurements]
    return "\n".join(rows)


def typed_numbers(m: Mapping, prefix: str = "") -> dict:
    """The measurement's numbers as typed metadata values; a field the record leaves empty is left out.

    ``prefix`` keeps several protocols of one partition apart (``<protocol_id>/stability_pct``).
    """
    out: dict = {}
    for name in FLOAT_FIELDS:
        value = m.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[prefix + name] = MetadataValue.float(float(value))
    for name in INT_FIELDS:
        value = m.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            out[prefix + name] = MetadataValue.int(value)
    for name in BOOL_FIELDS:
        out[prefix + name] = MetadataValue.bool(bool(m.get(name)))
    return out


def measurement_metadata(m: Optional[Mapping]) -> dict:
    """Flat metadata for one measurement (single-protocol partitions): typed numbers plus detail."""
    if m is None:
        return {"measurement": "none"}
    return {
        **typed_numbers(m),
        "ci_pct": f"{m.get('ci_low_pct')}–{m.get('ci_high_pct')}",
        "u_per_version": MetadataValue.json({v: m.get(f"u_{VERSION_SUFFIX[v]}") for v in VERSIONS}),
        "flags": MetadataValue.json(m.get("flags") or []),
        "flag_reasons": MetadataValue.json(m.get("flag_reasons") or {}),
        "outcomes": MetadataValue.json(m.get("outcomes") or {}),
    }


def gate_check_specs(asset: str) -> list[AssetCheckSpec]:
    """The gate checks of a measurement asset (evaluated by the asset itself, never blocking)."""
    return [AssetCheckSpec(name, asset=asset, description=f"Gate, severity WARN: {rule}.")
            for name, rule in gate_checks().items()]


def gate_failures(m: Mapping, check: str) -> list[str]:
    """Why ``m`` fails ``check``, one line per failing entry (empty when it passes)."""
    if check == "on_curve":
        if m.get("on_curve"):
            return []
        reasons = m.get("flag_reasons") or {}
        lines = [f"{flag}: {reasons.get(flag, 'flagged')}" for flag in m.get("flags") or []]
        if not lines:
            lines = [f"protocol status is {m.get('protocol_status')!r}, not 'admitted'"]
        return lines
    reasons = m.get("flag_reasons") or {}
    out = []
    for gate in m.get("gates") or []:
        if gate.get("check") == check and not gate.get("pass"):
            why = reasons.get(gate.get("flag"), gate.get("rule"))
            pair = f" ({gate['pair']})" if gate.get("pair") else ""
            out.append(f"{gate.get('flag')}{pair}: {why}")
    return out


def gate_check_results(asset: str, measurements: Sequence[Mapping],
                       missing: Optional[str] = None) -> list[AssetCheckResult]:
    """One WARN result per gate check over the partition's measurements.

    A check passes when every measurement passes it.  ``missing`` (why the
    partition has no measurement) fails every check with that reason: a gate
    that was never evaluated has not passed.
    """
    results = []
    checks = gate_checks()
    for check in checks:
        failures: list[str] = []
        if missing is not None:
            failures.append(f"not evaluated: {missing}")
        for m in measurements:
            prefix = f"{m.get('protocol_id')}: " if len(measurements) > 1 else ""
            failures += [prefix + line for line in gate_failures(m, check)]
        results.append(AssetCheckResult(
            asset_key=asset, check_name=check, passed=not failures, severity=AssetCheckSeverity.WARN,
            description=("; ".join(failures) if failures else f"passed: {checks[check]}")[:1000],
            metadata={"failing": MetadataValue.int(len(failures)),
                      "reasons": MetadataValue.json(failures),
                      "measurements": MetadataValue.int(len(measurements))}))
    return results


def cost_metadata(calls: int, rate_eur_per_call: Optional[float]) -> dict:
    """What a paid step is expected to cost: planned calls × the budget's per-call rate (when a budget exists)."""
    out: dict = {"planned_calls": MetadataValue.int(calls)}
    if rate_eur_per_call is not None:
        out["rate_eur_per_call"] = MetadataValue.float(float(rate_eur_per_call))
        out["estimated_cost_eur"] = MetadataValue.float(round(calls * rate_eur_per_call, 6))
    return out


def subject_fingerprint_cost_note(items: int) -> str:
    """The cost sentence of the paid subject fingerprint's description (its rate is private, read at run time)."""
    return (f"Cost: {items} calls a day; cost = {items} × rates_eur_per_call.fingerprint of the private budget.json "
            "(planned_calls, rate_eur_per_call and estimated_cost_eur in the materialisation metadata). Manual: "
            "nothing starts it but you — materialise today's partition by hand, or turn on "
            "daily_subject_fingerprint_schedule (created STOPPED).")


def run_metadata(run: Mapping) -> dict:
    return {
        "run_id": run.get("run_id"),
        "status": run.get("status"),
        "trials": f"{run.get('n_trials_recorded')}/{run.get('n_trials_planned')}",
        "subject_model_id": run.get("subject_model_id"),
        "returned_model_id": run.get("returned_model_id") or "-",
        "cost_eur": run.get("cost_eur") if run.get("cost_eur") is not None else "unknown",
        "tokens": f"{run.get('input_tokens')} in, {run.get('output_tokens')} out",
        "outcomes": MetadataValue.json(run.get("outcomes") or {}),
    }
