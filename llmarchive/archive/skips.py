"""Skips: a job that did not run says why, in one record whose cause code decides (method §10.4).

Every job that notices it cannot do its work — the sweep, a bridge, the
model watch, the subject fingerprint, a paid run the budget or the
pre-registration guard refuses — records a ``skip`` naming the *condition*
it observed.  The cause on the record is never written by hand: it comes
from :func:`cause_for`, the one mapping from observed conditions to the
closed list of gap causes (:data:`measure.schema.GAP_CAUSES`).  Coverage
(:mod:`llmarchive.schedule.coverage`) reads the same mapping when it explains a
period, so a skip and a coverage row can never disagree on a cause.

This module sits below both the jobs that record skips and coverage,
which reads them: the instrument records a skip without importing
coverage, and coverage imports the instrument without a cycle.

:data:`CONDITIONS` is ordered: when several conditions hold at once the
first wins — archive-wide states before decisions, decisions before
failures, failures before absence — so every gap has exactly one cause.
The table with what each condition means is in :mod:`llmarchive.schedule.coverage`.
"""
from typing import Iterable, Mapping, Optional

from llmarchive.archive import record_logs as records
from llmarchive.archive.paths import ArchivePaths
from measure.errors import ArchiveError
from measure.schema import GAP_CAUSES

CONDITIONS: dict[str, str] = {
    "period_before_archive_start": "before_archive_start",
    "archive_dormant": "dormant",
    "series_closed_without_successor": "generation_retired_early",
    "bridge_preempts_sweep": "generation_bridge",
    "budget_refused": "budget_halted",
    "budget_cut": "budget_halted",
    "not_preregistered": "protocol_confounded",
    "provider_unreachable": "provider_outage",
    "run_left_interrupted": "provider_outage",
    "storage_write_failed": "provider_outage",
    "run_record_unreadable": "provider_outage",
    "instrument_unavailable": "provider_outage",
    "provider_refused_request": "human_absent",
    "run_abandoned": "human_absent",
    "no_daily_cycle": "human_absent",
    "cycle_step_missing": "human_absent",
    "paid_job_not_started": "human_absent",
}
PRECEDENCE = tuple(CONDITIONS)
# For skip records written before conditions were recorded (the budget's, before it used record_skip):
# the cause's first condition.
DEFAULT_CONDITION = {cause: next(c for c in PRECEDENCE if CONDITIONS[c] == cause) for cause in GAP_CAUSES}


class UnexplainedGap(ArchiveError, RuntimeError):
    """A period with no output and no observed condition: the failure coverage exists to catch."""

    def __init__(self, message: str, gaps: Iterable[tuple] = ()) -> None:
        super().__init__(message)
        self.gaps = list(gaps)


def cause_for(conditions: Iterable[str]) -> str:
    """The one gap cause for a set of observed conditions (the first of :data:`PRECEDENCE` that holds).

    Raises :class:`UnexplainedGap` when nothing was observed, and
    :class:`ValueError` for a condition not in :data:`CONDITIONS`.
    """
    seen = set(conditions)
    unknown = sorted(seen - set(CONDITIONS))
    if unknown:
        raise ValueError(f"unknown condition(s) {', '.join(unknown)}; known: {', '.join(PRECEDENCE)}")
    for condition in PRECEDENCE:
        if condition in seen:
            return CONDITIONS[condition]
    raise UnexplainedGap("no output and no observed condition: a gap without a cause")


def first_condition(conditions: Iterable[str]) -> str:
    """Of several conditions observed at once, the one whose cause a single skip carries."""
    seen = set(conditions)
    cause_for(seen)  # refuses unknown conditions and an empty set
    return next(c for c in PRECEDENCE if c in seen)


# The structured facts a skip may carry beside its reason, each a public fact coverage may publish
# (llmarchive.schedule.coverage_wording): the budget's rung and pool by name, the month a pool was judged for.
PUBLIC_FACTS = ("rung", "pool", "month")


def record_skip(paths: ArchivePaths, day: str, job: str, protocol_id: Optional[str], condition: str,
                reason: str, facts: Optional[Mapping[str, str]] = None) -> dict:
    """A ``skip`` record whose cause comes from :func:`cause_for`.

    ``reason`` is the owner's, in full (it may name amounts, files, an
    error's text) and stays in the private log; what coverage publishes
    about the skip is composed from the condition, the job, the date, the
    protocol and ``facts`` (only :data:`PUBLIC_FACTS` keys, names not
    figures), never from ``reason``.
    """
    extra = dict(facts or {})
    unknown = sorted(set(extra) - set(PUBLIC_FACTS))
    if unknown:
        raise ValueError(f"a skip's public facts are {', '.join(PUBLIC_FACTS)}; got {', '.join(unknown)}")
    return records.append(paths, "skip", {"date": day, "job": job, "protocol_id": protocol_id, "reason": reason,
                                          "cause": cause_for([condition]), "condition": condition, **extra})


def skip_condition(record: dict) -> Optional[str]:
    """The condition a skip record observed (older records: their cause's default condition)."""
    condition = record.get("condition")
    if condition in CONDITIONS:
        return condition
    return DEFAULT_CONDITION.get(record.get("cause"))
