"""Metadata a maintainer looks at in the Dagster UI, from run and measurement records."""
from typing import Iterable, Mapping, Optional

from dagster import MetadataValue

from measure.schema import VERSIONS


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


def measurement_metadata(m: Optional[Mapping]) -> dict:
    """Flat metadata for one measurement (single-protocol partitions)."""
    if m is None:
        return {"measurement": "none"}
    return {
        "stability_pct": m.get("stability_pct"),
        "ci_pct": f"{m.get('ci_low_pct')}–{m.get('ci_high_pct')}",
        "entropy_a": m.get("entropy_a"),
        "entropy_b": m.get("entropy_b"),
        "null_floor_pct": m.get("null_floor_pct"),
        "u_per_version": MetadataValue.json({v: m.get(f"u_{s}") for v, s in
                                             (("A", "a"), ("A_prime", "a_prime"), ("B", "b"), ("C", "c"))}),
        "flags": MetadataValue.json(m.get("flags") or []),
        "flag_reasons": MetadataValue.json(m.get("flag_reasons") or {}),
        "on_curve": bool(m.get("on_curve")),
        "outcomes": MetadataValue.json(m.get("outcomes") or {}),
    }


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
