"""Daily revalidation (method §8 ``revalidation_daily``): recompute old measurements, loudly.

One of the instrument's daily self-checks: where the fingerprints check that
the pipeline still computes today what it computed before, this checks that
the archive's past numbers still follow from their own data.

Every day ten historical measurements (the count is ``revalidation_daily``
in ``cadence.yaml``) are recomputed from their own trials with
:func:`measure.verify.recompute` — the frozen estimator, the grammar
re-extraction of every kept response, and the trial log's hash chain.

Which ten.  Every complete run folder dated before the day, sorted by
``run_id``; the day's window starts at ``(days since 2026-09-21 × count) mod
N`` and takes ``count`` consecutive runs, wrapping around.  The choice is a
pure function of the date and the archive, different every day, and visits
every measurement once every ``⌈N / count⌉`` days.

Each recomputation is a ``revalidation`` record: ``ok``, or ``differs`` with
every difference.  Any difference fails loudly — :class:`RevalidationFailed`
(and a non-zero exit from ``llmarchive revalidate``): a published number no
longer follows from its own data, and that is never a quiet event.
"""
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Optional

from llmarchive.archive import (ArchivePaths, MEASUREMENT_FILE, RecordFileError, complete_runs_dated, load_cadence,
                                load_run, record_logs as records)
from measure.verify import recompute
from measure.errors import ArchiveError

EPOCH = Date(2026, 9, 21)


class RevalidationFailed(ArchiveError, RuntimeError):
    """At least one historical measurement no longer recomputes to itself."""

    def __init__(self, message: str, differing: list[dict]) -> None:
        super().__init__(message)
        self.differing = differing


@dataclass
class RevalidationOutcome:
    date: str
    chosen: list[str]
    records: list[dict] = field(default_factory=list)

    @property
    def differing(self) -> list[dict]:
        return [r for r in self.records if r["status"] == "differs"]


def historical_runs(paths: ArchivePaths, before: str) -> list[str]:
    """Run ids of complete run folders dated before ``before``, sorted."""
    return sorted(r["run_id"] for r in complete_runs_dated(paths, before=before))


def choose(run_ids: list[str], day: str, count: int) -> list[str]:
    """The day's window of ``count`` runs (see the module docstring)."""
    if not run_ids:
        return []
    if len(run_ids) <= count:
        return list(run_ids)
    start = ((Date.fromisoformat(day) - EPOCH).days * count) % len(run_ids)
    return [run_ids[(start + i) % len(run_ids)] for i in range(count)]


def revalidate_run(paths: ArchivePaths, run_id: str) -> list[dict]:
    """Every difference between a run's stored measurement and its recomputation."""
    try:
        folder = load_run(paths.run_dir(run_id))
    except RecordFileError as exc:
        return [{"field": "run folder", "recorded": run_id, "recomputed": f"unreadable: {exc}"}]
    if folder.measurement is None:
        return [{"field": "measurement", "recorded": None, "recomputed": f"missing {MEASUREMENT_FILE}"}]
    try:
        header = folder.protocol_header
    except RecordFileError as exc:
        return [{"field": "protocol_header", "recorded": None, "recomputed": str(exc)}]
    return recompute(folder.measurement, folder.trials, header)


def revalidate(paths: ArchivePaths, day: str, count: Optional[int] = None, run_ids: Optional[list[str]] = None,
               raise_on_difference: bool = True) -> RevalidationOutcome:
    """Recompute the day's measurements, record each, and raise if any differs."""
    count = count or load_cadence().count("revalidation_daily")
    chosen = list(run_ids) if run_ids is not None else choose(historical_runs(paths, day), day, count)
    outcome = RevalidationOutcome(day, chosen)
    for run_id in chosen:
        differences = revalidate_run(paths, run_id)
        outcome.records.append(records.append(paths, "revalidation", {
            "date": day, "run_id": run_id, "status": "differs" if differences else "ok",
            "differences": differences}))
    if outcome.differing and raise_on_difference:
        names = ", ".join(f"{r['run_id']} ({len(r['differences'])} difference(s), first: "
                          f"{r['differences'][0]['field']})" for r in outcome.differing)
        raise RevalidationFailed(f"REVALIDATION FAILED on {day}: {names}. A stored measurement no longer follows "
                                 "from its trials; nothing was changed — find out why before publishing again.",
                                 outcome.differing)
    return outcome
