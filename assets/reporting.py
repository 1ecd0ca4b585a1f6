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

from measure.schema import VERSIONS

# Measurement fields published as float metadata (each a number or None in the record).
FLOAT_FIELDS = ("stability_pct", "ci_low_pct", "ci_high_pct", "gap_pct", "gap_null_pct", "gap_positive_pct",
                "null_floor_pct", "entropy_a", "entropy_b", "u_a", "u_a_prime", "u_b", "u_c",
                "drop_bound_pct_ab", "drop_bound_pct_aa", "drop_bound_pct_ac",
                "drop_asymmetry_pct_ab", "drop_asymmetry_pct_aa", "drop_asymmetry_pct_ac",
                "scenario_concentration_pct")
INT_FIELDS = ("n", "k")
BOOL_FIELDS = ("on_curve",)

# One asset check per gate of measure.measurement (each names the flag it raises), and one for the curve.
GATE_CHECKS = {
    "drop_bound": "drop_bound_pct ≤ 2.0 on each pair (else drop_confounded)",
    "missingness_asymmetry": "drop_asymmetry_pct ≤ 1.0 on each pair (else asymmetric_missingness)",
    "finding_above_losses": "drop_bound_pct_ab < gap_pct (else below_drop_bound)",
    "above_surface_noise": "B moves more than the null change A′, losses included (else below_surface_noise)",
    "positive_control": "C moves the answer by more than theta_positive_pct (else not_reading)",
    "not_degenerate": "not one answer regardless of wording (else degenerate_candidate)",
    "scenario_concentration": "the two worst scenarios carry ≤ the declared share of the gap "
                              "(else scenario_dominated)",
    "on_curve": "no flag at all and an admitted protocol: the measurement is a point on the curve",
}


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
    u = " / ".join(f"{m.get(f'u_{s}')}" for s in ("a", "a_prime", "b", "c"))
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
        "u_per_version": MetadataValue.json({v: m.get(f"u_{s}") for v, s in
                                             (("A", "a"), ("A_prime", "a_prime"), ("B", "b"), ("C", "c"))}),
        "flags": MetadataValue.json(m.get("flags") or []),
        "flag_reasons": MetadataValue.json(m.get("flag_reasons") or {}),
        "outcomes": MetadataValue.json(m.get("outcomes") or {}),
    }


def gate_check_specs(asset: str) -> list[AssetCheckSpec]:
    """The gate checks of a measurement asset (evaluated by the asset itself, never blocking)."""
    return [AssetCheckSpec(name, asset=asset, description=f"Gate, severity WARN: {rule}.")
            for name, rule in GATE_CHECKS.items()]


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
    for check in GATE_CHECKS:
        failures: list[str] = []
        if missing is not None:
            failures.append(f"not evaluated: {missing}")
        for m in measurements:
            prefix = f"{m.get('protocol_id')}: " if len(measurements) > 1 else ""
            failures += [prefix + line for line in gate_failures(m, check)]
        results.append(AssetCheckResult(
            asset_key=asset, check_name=check, passed=not failures, severity=AssetCheckSeverity.WARN,
            description=("; ".join(failures) if failures else f"passed: {GATE_CHECKS[check]}")[:1000],
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
