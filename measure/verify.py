"""Recompute a published measurement from its trials and list what differs.

This is what an outsider runs on the open lane: take the trials of a run
(``open-lane/<year>.jsonl``), the protocol's text-free header (the public
``protocols`` table) and the published measurement row, and check that the
frozen estimator gives back exactly the published record.  It also

* re-extracts every trial that kept its response text and whose outcome is
  the grammar's (``valid`` / ``unparseable``), so a wrong ``token`` cannot
  hide behind a consistent count;
* checks the trial log's hash chain when the trials carry one.

Fields that record facts of the moment rather than computations (the
protocol's status, lane and twin at measurement time, and the two flags only
the caller can raise, ``instrument_suspect`` and ``exploratory``) are taken
from the measurement itself, so a later promotion does not read as a
difference.
"""
from typing import Iterable, Mapping

from measure import chain, extract
from measure.measurement import MeasurementError, build

RUN_FIELDS = (
    "run_id", "run_date", "subject_model_id", "series", "model_family", "returned_model_id",
    "api_surface_sha", "condition_profile", "replicate_index",
)


def run_from_measurement(measurement: Mapping) -> dict:
    """The ``run`` argument of :func:`measure.measurement.build`, as recorded."""
    run = {field: measurement.get(field) for field in RUN_FIELDS}
    reasons = measurement.get("flag_reasons") or {}
    for flag in ("instrument_suspect", "exploratory"):
        if flag in (measurement.get("flags") or []):
            run[flag] = reasons.get(flag, True)
    return run


def reextract(trials: Iterable[Mapping], options, grammar_version: int) -> list[dict]:
    """Differences between recorded and re-extracted decisions."""
    out = []
    for trial in trials:
        text = trial.get("response_text")
        if text is None or trial.get("outcome") not in ("valid", "unparseable"):
            continue
        found = extract(text, options, grammar_version)
        if (found.outcome, found.token) != (trial.get("outcome"), trial.get("token")):
            ident = f"{trial.get('item_id')}/{trial.get('version')}/{trial.get('replicate_index')}"
            out.append({
                "field": f"trial {ident}",
                "recorded": {"outcome": trial.get("outcome"), "token": trial.get("token")},
                "recomputed": {"outcome": found.outcome, "token": found.token},
            })
    return out


def recompute(measurement: Mapping, trials: Iterable[Mapping], protocol: Mapping) -> list[dict]:
    """Every difference between ``measurement`` and its recomputation.

    Returns a list of ``{"field", "recorded", "recomputed"}``; empty means the
    measurement verifies.
    """
    trials = list(trials)
    differences: list[dict] = []
    if any("record_sha256" in t for t in trials):
        broken = chain.first_break(trials)
        if broken is not None:
            differences.append({"field": "chain", "recorded": f"record #{broken}", "recomputed": "broken link"})
    header = dict(protocol)
    for field in ("lane", "twin_id"):
        header[field] = measurement.get(field)
    header["status"] = measurement.get("protocol_status")
    differences += reextract(trials, header["options"], header["grammar_version"])
    try:
        again = build(header, trials, run_from_measurement(measurement))
    except MeasurementError as exc:
        differences.append({"field": "build", "recorded": "a measurement", "recomputed": f"error: {exc}"})
        return differences
    for field, value in again.items():
        if measurement.get(field) != value:
            differences.append({"field": field, "recorded": measurement.get(field), "recomputed": value})
    for field in sorted(set(measurement) - set(again)):
        differences.append({"field": field, "recorded": measurement[field], "recomputed": None})
    return differences
