"""Expected refusals as Dagster ``Failure``\\ s: the sentence and its facts, not a stack trace.

Some steps refuse by design — paid work without a key or a budget, a month
or a day that is not the one being measured (never a backfill), a budget
rung that stops a run.  Each is a decision the archive took on purpose, so
it reaches the UI as a :class:`dagster.Failure` (Dagster's intentional
failure) whose description is the whole sentence and whose metadata names
the kind of refusal, what was spent (nothing, for every refusal taken
before a call) and what to do.  Retries are off: asking again changes
nothing until a person acts.

:data:`KINDS` is the closed list of refusal kinds; the metadata key
``refusal`` carries one of them, so a run's failure can be told from a bug
by a machine too.
"""
from typing import Any, Optional

from dagster import Failure, MetadataValue

from llmarchive.budget import BudgetError

KINDS = {
    "no_key": "the paid provider's key is not set where the step runs",
    "no_budget": "no budget file: paid work needs one (`llmarchive budget init`)",
    "bad_budget": "the budget file cannot be read as a budget",
    "budget_refused": "the budget refused the run (a rung of the ladder, a reserve, a cap)",
    "not_this_month": "a month is measured in that month, never backfilled",
    "not_today": "the instrument observes the day it runs; a missed day is a coverage gap, never a backfill",
    "not_started": "the period has not started yet",
    "no_manifest": "no pre-registration manifest has this key",
    "no_guard_protocol": "no admitted guard protocol to rotate through",
    "run_busy": "the same run is being worked on by another launch (a double launch); that launch goes on",
    "provider_outage": "the provider could not be reached before any call; nothing was spent and the partition "
                       "still has to run this month",
}


def refusal(kind: str, description: str, *, spent_eur: Optional[float] = 0.0, what_to_do: Optional[str] = None,
            **facts: Any) -> Failure:
    """A ``Failure`` for an expected refusal of ``kind``; raise it ``from None`` (the sentence is the whole story).

    ``spent_eur`` None means the amount is not known (a run stopped midway:
    its spend is in the run record); every refusal taken before a call spent 0.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown refusal kind {kind!r}; kinds: {', '.join(KINDS)}")
    metadata: dict[str, Any] = {"refusal": kind, "refusal_means": KINDS[kind]}
    if spent_eur is not None:
        metadata["spent_eur"] = MetadataValue.float(float(spent_eur))
    if what_to_do:
        metadata["what_to_do"] = what_to_do
    metadata.update(facts)
    return Failure(description=description, metadata=metadata, allow_retries=False)


def required_budget(resource: Any, paths: Any, **facts: Any) -> Any:
    """The budget paid work runs under (``resource`` is an :class:`assets.resources.BudgetResource`), or a refusal.

    No budget file, or one that cannot be read, refuses the step before any
    call: nothing was spent.
    """
    try:
        loaded = resource.load(paths)
    except BudgetError as exc:
        raise refusal("bad_budget", f"{exc}. Nothing was spent.", what_to_do="correct private/budget.json (the "
                      "description names the field), then run again", **facts) from None
    if loaded is None:
        raise refusal("no_budget", "no budget is written for this archive: paid work never starts without one. "
                                   "Nothing was spent.",
                      what_to_do="write it with `llmarchive budget init …`, then run again", **facts) from None
    return loaded
