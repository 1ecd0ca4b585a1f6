"""The open window of coverage: the facts a window needs, and the rows of sealed months read back (method §10.4).

A month's coverage must not cost in proportion to the archive's age.  So
:func:`llmarchive.schedule.coverage.compute` judges only the months not yet
sealed (:mod:`llmarchive.schedule.coverage_summary`), from facts cut to them
(:func:`window`) with the look-back they need kept beside, and takes each
sealed month's rows back from the log (:func:`read_back`).
"""
from bisect import bisect_left
from datetime import date as Date, datetime, timedelta, timezone
from typing import Iterable, Optional

from llmarchive.archive import ArchivePaths, UNREADABLE_CONDITION, Unreadable, jobs as job_table, run_ids
from llmarchive.schedule.coverage_conditions import BY_DAY, GAP_RECORD_TYPE, Facts, _day, month_bounds
from llmarchive.schedule.coverage_summary import Summary, latest_rows


class Reopen(Exception):
    """Sealed months whose rows in the log are not whole or not in today's shape: they are judged again."""

    def __init__(self, months: set[str]) -> None:
        super().__init__(", ".join(sorted(months)))
        self.months = months


def window(facts: Facts, start: Optional[Date], since: Optional[str], sealed: set[str]) -> Facts:
    """``facts`` of the whole history cut to the open window, with the look-back the window needs kept beside.

    The window opens on the first day of the first month, from ``since``
    (else the archive's start) on, that is not in ``sealed``: a month
    period reaches back to its 1st, and a sealed month's rows are read back.
    What a period looks back to — the archive's start, the last run before
    it (dormancy), the first run ever (revalidation), the last heartbeat
    before it (a silence's start), closures and model switches, budget cuts
    — is kept whole or as the one value it needs.
    """
    first = max(_day(since), start) if since and start else (start or (_day(since) if since else Date(1, 1, 1)))
    opens = first.replace(day=1)
    while f"{opens:%Y-%m}" in sealed:
        opens = month_bounds(f"{opens:%Y-%m}")[1] + timedelta(days=1)
    lo = opens.isoformat()

    def kept(rows: list[dict], key: str) -> list[dict]:
        return [r for r in rows if str(r.get(key))[:10] >= lo]

    logs = {kind: (kept(rows, "date") if kind in BY_DAY or kind in job_table.record_kinds() else rows)
            for kind, rows in facts.logs.items()}
    beats = facts.heartbeats
    i = bisect_left(beats, datetime.fromisoformat(lo).replace(tzinfo=timezone.utc))
    return Facts(kept(facts.runs, "run_date"), logs, facts.protocols, facts.guard_order, facts.cadence,
                 beats[max(i - 1, 0):], kept(facts.open_runs, "run_date"), facts.budget_cuts, facts.declared_models,
                 facts.spend,
                 facts.unreadable, None if facts.fingerprint_days is None else {d for d in facts.fingerprint_days
                                                                                 if d >= lo},
                 lo, start.isoformat() if start else None,
                 sorted(_day(str(r["run_date"])[:10]) for r in facts.runs))


def read_back(row: Optional[dict], base: dict) -> Optional[dict]:
    """A sealed month's row as :func:`compute` would make it; None when the log's is not one (a key it lacks, a
    row written before rows named their condition or under an older series): then the month is judged again."""
    if row is None or "condition" not in row or row.get("series") != base["series"] \
            or row.get("status") not in ("ran", "gap"):
        return None
    fields = {**base, **{k: row.get(k) for k in ("status", "cause", "run_id", "detail", "condition")}}
    return {"record_type": GAP_RECORD_TYPE, **fields} if row["status"] == "gap" else fields


def unplaced(paths: ArchivePaths, facts: Facts, rows: list[dict], summary: Summary,
              sealed: set[str], whole: bool) -> list[Unreadable]:
    """Unreadable run folders no gap row names (its condition won the period), looking in a sealed month's rows
    read back when the folder's month was left out of this computation."""
    def named(bad: Unreadable, found: Iterable[dict]) -> bool:
        return any(row.get("status") == "gap" and str(row.get("detail")).startswith(
            f"{UNREADABLE_CONDITION}: run folder {bad.run_id} ") for row in found)

    left = [bad for bad in facts.unreadable if not named(bad, rows)]
    listed = {str(row["period"])[:7] for row in rows}
    elsewhere = {m for bad in left if (m := run_ids.parse(bad.run_id).month) in sealed and m not in listed}
    if not (whole and elsewhere):
        return left
    older = list(latest_rows(paths, summary, elsewhere).values())
    return [bad for bad in left if not named(bad, older)]
