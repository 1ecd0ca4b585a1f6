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

from llmarchive.archive import (ArchivePaths, UNREADABLE_CONDITION, Unreadable, jobs as job_table, parse_time,
                                record_logs as records, run_ids, run_reads, store,
                                times_recorded)
from llmarchive.schedule.coverage_conditions import BY_DAY, GAP_RECORD_TYPE, Facts, _day, log_kinds, month_bounds
from llmarchive.schedule.coverage_summary import Summary, latest_rows


class _Reopen(Exception):
    """Sealed months whose rows in the log are not whole or not in today's shape: they are judged again."""

    def __init__(self, months: set[str]) -> None:
        super().__init__(", ".join(sorted(months)))
        self.months = months


def opening(start: Optional[Date], since: Optional[str], sealed: set[str]) -> str:
    """The open window's first day: the 1st of the first month from ``since`` (else ``start``) on not in ``sealed``."""
    first = max(_day(since), start) if since and start else (start or (_day(since) if since else Date(1, 1, 1)))
    opens = first.replace(day=1)
    while f"{opens:%Y-%m}" in sealed:
        opens = month_bounds(f"{opens:%Y-%m}")[1] + timedelta(days=1)
    return opens.isoformat()


def _valid_day(value: object) -> Optional[Date]:
    try:
        return _day(str(value)[:10])
    except ValueError:
        return None


def first_day(paths: ArchivePaths, kind: str) -> Optional[Date]:
    """The earliest day a log's records are about (their ``date``), read from its start only until a record stamped
    more than a day after the earliest day seen: a record about a day is not stamped more than
    :data:`~llmarchive.archive.record_logs.DATED_SLACK` before it, and stamps do not go back along a log, so no later
    record is about an earlier day."""
    low: Optional[Date] = None
    for record in records.read_forward(paths, kind):
        at = parse_time(record.get("recorded_at"))
        if low is not None and at is not None and (at - records.DATED_SLACK).date() > low:
            break
        day = _valid_day(record.get("date")) if record.get("date") else None
        if day is not None and (low is None or day < low):
            low = day
    return low


def tail(paths: ArchivePaths, kind: str, lo: str) -> list[dict]:
    """The records of ``kind`` about ``lo`` or later, and every record stamped after the last one stamped before
    ``lo`` (the heartbeat before the window), oldest first; read back from the log's end and stopped at the first
    record both about a day before ``lo`` and stamped before the day before it (as
    :func:`llmarchive.archive.record_logs.dated` stops), which is kept (its stamp)."""
    horizon = (_day(lo) - records.DATED_SLACK).isoformat()
    found = []
    for record in records.read_back(paths, kind):
        found.append(record)
        at = record.get("recorded_at")
        if isinstance(at, str) and at < horizon and str(record.get("date"))[:10] < lo:
            break
    return found[::-1]


def window(paths: ArchivePaths, small: dict[str, list[dict]], since: Optional[str], sealed: set[str],
           **fixed) -> Facts:
    """The facts of the open window, read for it, with the look-back it needs beside them (``small``: the logs read
    whole; ``fixed``: the rest of :class:`Facts`, ``fingerprint_days`` of the whole history).

    The window opens on :func:`opening`'s day: a month period reaches back to
    its 1st, and a sealed month's rows are read back.  What a period looks
    back to — the archive's start (:func:`first_day` of the logs that open
    it), every complete run's day (dormancy, revalidation's first run: the
    run index's column), the last heartbeat before the window
    (:func:`tail`), closures and model switches (the small logs, whole),
    budget cuts — is kept whole or as the one value it needs.  The daily
    logs are read back to the window's start only, and the runs of the
    window only are read from the run index.
    """
    days = run_reads.complete_run_days(paths)
    opening_kinds = tuple(job.record.kind for job in job_table.covered() if job.record and job.covered.opens_archive)
    firsts = [_valid_day(d) for d in days]
    firsts += [first_day(paths, kind) for kind in opening_kinds]
    firsts += [_valid_day(r.get("date")) for kind in ("skip", "subject_model") for r in small.get(kind, [])
               if r.get("date")]
    known = [d for d in firsts if d is not None]
    start = min(known) if known else None
    lo = opening(start, since, sealed)

    def kept(rows: list[dict], key: str) -> list[dict]:
        return [r for r in rows if str(r.get(key))[:10] >= lo]

    # A window from the archive's start is the whole history: read whole, as a chain verification does not here.
    whole = start is None or lo <= start.isoformat()
    daily = {kind: records.read(paths, kind) if whole else tail(paths, kind, lo) for kind in job_table.record_kinds()}
    beats = times_recorded(daily.get("runtime_fingerprint", []))
    i = bisect_left(beats, datetime.fromisoformat(lo).replace(tzinfo=timezone.utc))
    logs = {kind: kept(daily[kind], "date") if kind in daily else (kept(small[kind], "date") if kind in BY_DAY
                                                                    else small[kind]) for kind in log_kinds()}
    fingerprint_days = fixed.pop("fingerprint_days")
    return Facts(run_reads.complete_runs_since(paths, lo), logs, heartbeats=beats[max(i - 1, 0):],
                 open_runs=kept([r.record for r in store.open_runs(paths) if r.run_date], "run_date"),
                 unreadable=[*run_reads.unreadable_runs(paths), *store.held_scan(paths).unreadable],
                 fingerprint_days=None if fingerprint_days is None else {d for d in fingerprint_days if d >= lo},
                 window_from=lo, start=start.isoformat() if start else None,
                 run_days=sorted(_day(str(d)[:10]) for d in days), **fixed)


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
