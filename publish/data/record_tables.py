"""The tables made of the archive's own records: the instrument's checks, succession, the comparison points.

``archive.db`` holds them (:mod:`publish.data.database`) and the site shows the same rows
(:mod:`publish.site`), so both read them from here.
"""
from typing import Optional

from llmarchive.archive import shown_points
from publish.data.sources import ALARM, SUCCESSION_KINDS, Inputs, instrument_checks
from publish.data.status import public_instrument_detail
from publish.words import PRIVATE_FIELDS, numbers, public_reason


def _record_detail(record: dict, named: set) -> Optional[dict]:
    skip = named | {"record_type", "schema_version", "prev_sha256", "record_sha256", "recorded_at"}
    return {k: v for k, v in record.items() if k not in skip} or None


def instrument_rows(inputs: Inputs) -> list[dict]:
    """The instrument table: every published check's records (how each fills ``status``: its row's
    :class:`~llmarchive.archive.jobs.Public`), then the alarms."""
    shown = [(job.record.kind, job.public) for job in instrument_checks() if job.record and job.public]
    out = []
    for kind, public in [*shown, (ALARM, None)]:
        for r in inputs.by_kind(kind):
            status = public.status_of(r) if public else "alarm"
            named = {"date", "protocol_id", "run_id", "subject_model_id"} | (public.apart() if public else set())
            out.append({"record_sha256": r.get("record_sha256"), "kind": kind, "date": r.get("date"),
                        "status": status, "protocol_id": r.get("protocol_id"), "run_id": r.get("run_id"),
                        "subject_model_id": r.get("subject_model_id"),
                        "detail": public_instrument_detail(kind, status, _record_detail(r, named), r, inputs),
                        "recorded_at": r.get("recorded_at")})
    return sorted(out, key=lambda r: (str(r["date"]), r["kind"], str(r["record_sha256"])))


def succession_rows(inputs: Inputs) -> list[dict]:
    out = []
    for kind in SUCCESSION_KINDS:
        for r in inputs.by_kind(kind):
            model = r.get("model_id", r.get("new_model_id"))
            previous = r.get("previous_model_id", r.get("old_model_id"))
            named = {"date", "model_family", "model_id", "new_model_id", "previous_model_id", "old_model_id",
                     "status", "reason"}
            out.append({"record_sha256": r.get("record_sha256"), "kind": kind, "date": r.get("date"),
                        "model_family": r.get("model_family"), "model_id": model, "previous_model_id": previous,
                        "status": r.get("status"), "reason": public_reason(kind, r),
                        "detail": _record_detail(r, named | set(PRIVATE_FIELDS))})
    return sorted(out, key=lambda r: (str(r["date"]), r["kind"], str(r["record_sha256"])))


def comparison_rows(inputs: Inputs) -> list[dict]:
    """The comparison-points table: outside runs and the bridge runs of a model never declared a successor.

    A point a successor decision withdrew is left out: its run is a measurement of the series now, and
    one run is never shown both on a curve and beside it (method §4.3).  So is a point a later one replaced
    (the run was flagged ``instrument_suspect`` after the first was filed, method §7.4).
    """
    out = []
    for r in shown_points(inputs.by_kind("comparison_point"), inputs.by_kind("needs_review")):
        m = r.get("measurement") if isinstance(r.get("measurement"), dict) else {}
        out.append({**numbers.point_columns(r),
                    "record_sha256": r.get("record_sha256"), "date": r.get("date"), "run_date": m.get("run_date"),
                    "protocol_id": r.get("protocol_id"), "model_id": r.get("model_id"),
                    "submitted_by": r.get("submitted_by"),
                    **{k: m.get(k) for k in ("stability_pct", "ci_low_pct", "ci_high_pct", "entropy_a", "entropy_b",
                                             "null_floor_pct", "n", "grammar_version", "panel_sha256", "flags")},
                    "measurement": m or None,
                    # not a column: the site's drawer shows the server builds when the point recorded them
                    "system_fingerprints": r.get("system_fingerprints")})
    return sorted(out, key=lambda r: (str(r["run_date"]), str(r["date"]), str(r["record_sha256"])))
