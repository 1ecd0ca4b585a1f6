"""The words coverage publishes: every ``detail`` of a coverage row, composed from public facts.

A coverage row is copied into ``coverage.csv`` and ``archive.db`` as it is,
so its ``detail`` is written in a public vocabulary only: condition and
cause names, jobs, dates, protocol and run ids, model ids, counts, and the
budget's rungs and pools *by name*.  It is never copied from the free text
of a private record — a skip's ``reason`` (which may name euro amounts), a
run's ``interruption.detail`` (an error's text, a file's path), an
instrument record's ``reason`` or a budget cut's.  Those stay in the
private logs for the owner; what coverage says about them comes from the
structured fields beside them (:data:`llmarchive.archive.skips.PUBLIC_FACTS`).

Rows written before this vocabulary existed carry no ``condition`` field;
:func:`public_detail` never publishes their ``detail`` as written but
composes one from their structured fields (:func:`legacy_detail`).
"""
import re
from typing import Any, Mapping, Optional

from llmarchive.budget import JOBS as PAID_JOBS, POOL_NAMES
from llmarchive.archive import CONDITIONS, DEFAULT_CONDITION

# What each condition means, in words a published row may carry (one entry per condition, a test checks it).
CONDITION_WORDS: dict[str, str] = {
    "period_before_archive_start": "the period ended before the archive began",
    "archive_dormant": "the archive was dormant: no run for too long",
    "series_closed_without_successor": "the series closed with no declared successor",
    "bridge_preempts_sweep": "a generation bridge took the month's sweep",
    "budget_refused": "the budget refused the work",
    "budget_cut": "a dated budget cut left it out",
    "not_preregistered": "no stamped pre-registration manifest lists the protocol's current hashes",
    "provider_unreachable": "no usable answer from the provider after retries",
    "run_left_interrupted": "a run stopped interrupted and the period ended with its slots open",
    "storage_write_failed": "the archive could not write what it received",
    "run_record_unreadable": "a run folder's record cannot be read",
    "instrument_unavailable": "the instrument job could not run",
    "provider_refused_request": "the provider refused the request",
    "run_abandoned": "a run was left unfinished and nobody resumed it in the period",
    "no_daily_cycle": "no daily cycle ran",
    "cycle_step_missing": "the daily cycle ran but this step recorded nothing",
    "paid_job_not_started": "the paid job was not started",
}
assert set(CONDITION_WORDS) == set(CONDITIONS), "every condition needs its public words"

# A value a record holds that is a code word (a job, a status, a cause): anything else is left out.
_CODE_WORD = re.compile(r"[a-z][a-z0-9_]{0,63}")
_DAY = re.compile(r"\d{4}-\d{2}(-\d{2})?")


def code_word(value: Any) -> Optional[str]:
    """``value`` when it is a code word (``provider_unreachable``, ``full_sweep``), else None."""
    return value if isinstance(value, str) and _CODE_WORD.fullmatch(value) else None


def count(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def day_of(value: Any) -> str:
    """The date part of a record's date or timestamp, or ``an unknown day``."""
    text = str(value)[:10]
    return text if _DAY.fullmatch(text) else "an unknown day"


def slots(run: Mapping) -> str:
    """``57/120 trials`` from a run record's counts (only integers are shown)."""
    recorded, planned = count(run.get("n_trials_recorded")), count(run.get("n_trials_planned"))
    return f"{'?' if recorded is None else recorded}/{'?' if planned is None else planned} trials"


def pool_name(pool: Any) -> Optional[str]:
    return POOL_NAMES.get(pool) if isinstance(pool, str) else None


def budget_words(job: Any, facts: Mapping) -> str:
    """A budget refusal by the rung or the pool *name* — never an amount."""
    rung = facts.get("rung")
    if isinstance(rung, str) and re.fullmatch(r"(at most \d+( [a-z/]+)? protocols|only subject_fingerprint)", rung):
        return f"the budget ladder's rung that keeps {rung} left it out"
    month = facts.get("month") if isinstance(facts.get("month"), str) and _DAY.fullmatch(facts["month"]) else None
    pool = pool_name(facts.get("pool"))
    if pool is None and job == "subject_fingerprint":
        return "the general pool and the heartbeat reserve had no room for the day's calls"
    if pool is None and job in PAID_JOBS:
        pool = POOL_NAMES[PAID_JOBS[job][1]]
    if pool is None:
        return CONDITION_WORDS["budget_refused"]
    return f"the {pool} had no room for it" + (f" in {month}" if month else "")


def skip_words(skip: Mapping, condition: str) -> str:
    """What a ``skip`` record observed, from its structured fields (never its ``reason``)."""
    job = code_word(skip.get("job")) or "a job"
    what = budget_words(job, skip) if condition == "budget_refused" else CONDITION_WORDS[condition]
    return f"{job} on {day_of(skip.get('date'))}: {what}"


def legacy_detail(row: Mapping) -> str:
    """Public words for a row written before the vocabulary: its condition (or its cause's) and run id only."""
    if row.get("status") == "ran":
        run_id = row.get("run_id")
        return f"ran: run {run_id}" if isinstance(run_id, str) and run_id else "ran"
    detail = row.get("detail")
    prefix = detail.split(":", 1)[0] if isinstance(detail, str) else None
    condition = prefix if prefix in CONDITIONS else DEFAULT_CONDITION.get(row.get("cause"))
    if condition is None:
        return "gap"
    return f"{condition}: {CONDITION_WORDS[condition]}"


def public_detail(row: Mapping) -> Optional[str]:
    """The ``detail`` a coverage row publishes: as written when composed in the public vocabulary (the row
    carries ``condition``), else recomposed from the row's structured fields."""
    if "condition" in row:
        return row.get("detail")
    return legacy_detail(row)
