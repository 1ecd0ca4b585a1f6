"""The owner's morning check: the archive's state in one screen (``llmarchive status``).

Everything here is read from what the archive already keeps — the record
logs, the run folders, the budget file and the last publication — through
the functions that own each part (:mod:`llmarchive.instrument.verdict`,
:mod:`llmarchive.schedule.bridge`, :mod:`llmarchive.succession.review`, :mod:`llmarchive.budget`,
:mod:`llmarchive.schedule.coverage`).  Nothing is written.  A part that cannot be
read (a broken budget file, a missing ``cadence.yaml``) is reported as that
part's ``error`` instead of stopping the whole check: the morning check is
most useful exactly when something is wrong.

It is a report, not a job, yet it stands here beside the jobs: it reads the
open bridges and the month's coverage, which this package owns, so its
floor is theirs — the only floor above is the CLI's, and the Dagster health
asset (:mod:`assets.health`) reads two of its parts without going through
the command.

"Current" publication: when the caller passes ``inputs_current`` (the CLI
passes one that recomputes the render manifest's ``inputs_sha256`` with the
publisher's own digest — this layer may not import ``publish``), the
publication is current when that digest still matches.  Without it, the
fallback is by time: no record appended and no run finished after the build
time in ``public/status.json`` (which can also flag a record publication
does not read).
"""
from datetime import date as Date, timedelta
from pathlib import Path
from typing import Any, Callable, Optional

from llmarchive.archive import (ArchivePaths, LogState, RecordFileError, jobs as job_table, log_disagreement,
                                measured_trials, parse_time, read_json, record_logs as records, store, utc_today)
from llmarchive.budget import ladder_state, load_budget
from llmarchive.instrument import day_verdict, latched_alarm
from llmarchive.protocols import read_admissions
from llmarchive.schedule import lease, outbox, webhook
from llmarchive.schedule.bridge import open_bridges
from llmarchive.schedule.coverage import compute, gather
from llmarchive.succession import reviews
from measure import jsonl
from measure.errors import ArchiveError
from panels.build import all_protocol_ids


def _guarded(part: Callable[[], Any]) -> Any:
    try:
        return part()
    except (ArchiveError, OSError, ValueError) as exc:  # one unreadable part must not hide the others
        return {"error": f"{type(exc).__name__}: {exc}"}


def instrument_part(paths: ArchivePaths, today: str) -> dict:
    verdict = day_verdict(paths, today)
    part: dict[str, Any] = {"date": today, "passing": verdict.passing, "reasons": list(verdict.reasons)}
    for job in job_table.shown():     # each daily check the job table shows, under its record kind
        part[job.record.kind] = shown_today(paths, job, today)
    part["latched_alarm"] = latched_alarm(paths)
    return part


def shown_today(paths: ArchivePaths, job: job_table.JobSpec, today: str) -> Any:
    """What status shows of ``job``'s last record of ``today``: its one field, or its fields by name; None if none.

    The fields are the job table's (:class:`llmarchive.archive.jobs.Shown`), so a
    new daily check shows up here by its row alone.
    """
    found = records.dated(paths, job.record.kind, today)
    if not found:
        return None
    fields = job.shown.fields
    return found[-1].get(fields[0]) if len(fields) == 1 else {name: found[-1].get(name) for name in fields}


def bridges_part(paths: ArchivePaths) -> list[dict]:
    return [{k: b.get(k) for k in ("date", "model_family", "old_model_id", "new_model_id", "status", "protocol_ids")}
            for b in open_bridges(paths)]


def reviews_part(paths: ArchivePaths) -> list[dict]:
    """Pending ``needs_review`` decisions (:mod:`llmarchive.succession.review`)."""
    return [r.to_json() for r in reviews(paths) if r.state == "pending"]


def budget_part(paths: ArchivePaths, month: str) -> Optional[dict]:
    budget = load_budget(paths)
    if budget is None:
        return None
    state = ladder_state(paths, budget, month).to_json()
    return {"month": month, "monthly_ceiling_eur": budget.monthly_ceiling_eur, **state}


def month_days(month: str, through: str) -> list[str]:
    first = Date.fromisoformat(f"{month}-01")
    last = Date.fromisoformat(through)
    out = []
    day = first
    while day <= last and day.strftime("%Y-%m") == month:
        out.append(day.isoformat())
        day += timedelta(days=1)
    return out


class StatusError(ArchiveError):
    """A part of the morning check that cannot be read without writing."""


def _protocols_without_building(paths: ArchivePaths) -> Optional[list[dict]]:
    """The sweep's protocols for coverage, or None to let coverage read them — never by building files.

    Reading the registry builds any missing protocol file (from the development
    seed when no secret one is set up), which a check that writes nothing may
    not do.  With every file present that read writes nothing; with no
    admission at all there is no sweep protocol to read; a missing file of an
    admitted protocol is this part's error.
    """
    if all(paths.protocol_file(pid).exists() for pid in all_protocol_ids()):
        return None
    if not read_admissions(paths):
        return []
    raise StatusError(f"protocol files are missing under {paths.protocols}: `llmarchive panels build` rebuilds them")


def coverage_part(paths: ArchivePaths, today: str) -> dict:
    """The running month's coverage: gaps with their cause, and periods with no cause yet.

    Only the running month is judged, from facts gathered for it (its look-back beside them): the work does
    not grow with the archive's age.
    """
    month = today[:7]
    protocols = _protocols_without_building(paths)
    facts = gather(paths, protocols=protocols, since=f"{month}-01") if protocols is not None else None
    result = compute(paths, today, periods=[month, *month_days(month, today)], facts=facts)
    gaps = [{k: r.get(k) for k in ("period", "job", "protocol_id", "cause", "detail")}
            for r in result.rows if r["status"] == "gap"]
    return {
        "month": month,
        "archive_start": result.start,
        "ran": sum(1 for r in result.rows if r["status"] == "ran"),
        "gaps": gaps,
        "unexplained": [{"job": j, "period": p, "protocol_id": pid} for j, p, pid in result.unexplained],
        "pending": [{"job": j, "period": p, "protocol_id": pid} for j, p, pid in result.pending],
        # Run folders the store cannot read that no period claims (those a period claims are gaps above).
        **({"unreadable_runs": [{"run_id": u.run_id, "problem": u.problem} for u in result.unreadable]}
           if result.unreadable else {}),
    }


def runs_part(paths: ArchivePaths, found: Optional[store.RunScan] = None) -> dict:
    """Run folders publication would refuse: unreadable ones, and complete runs whose trial log is not the one
    their record and measurement describe (:mod:`llmarchive.archive.log_agreement`), each named with why.

    What each trial log and measurement hold comes from the run index (method §10.5): the scan has just
    signed every folder's files and read again any whose signature changed, so no trial log is read whole
    here; publication verifies every log's chain itself.  ``found``: that scan, when the caller made it."""
    found = store.archive_scan(paths) if found is None else found
    problems = [{"run_id": bad.run_id, "problem": bad.problem} for bad in found.unreadable]
    for run in found.complete:
        row = run.indexed
        if row is None or row.measurement_problem:
            try:
                measurement = read_json(store.measurement_file(run.folder))
            except RecordFileError as exc:
                problems.append({"run_id": run.run_id, "problem": str(exc)})
                continue
            why = log_disagreement(run.folder, run.record, measured_trials(measurement))
        else:
            state = LogState(row.trials_count or 0, row.trials_last, row.trials_torn)
            why = log_disagreement(run.folder, run.record, row.counted, state)
        if why:
            problems.append({"run_id": run.run_id, "problem": why})
    return {"complete": len(found.complete), "open": len(found.open),
            "refused": sorted(problems, key=lambda p: p["run_id"])}


def _last_line_time(log: Path) -> Optional[str]:
    """``recorded_at`` of the last complete line of a JSONL log (read from its end)."""
    try:
        with open(log, "rb") as fh:
            last = jsonl.last_record(fh)
    except OSError:
        return None
    return None if last is None else last.get("recorded_at")


def newest_input(paths: ArchivePaths, found: Optional[store.RunScan] = None) -> Optional[dict]:
    """The newest thing a publication would read: a record appended or a run finished, with when (``found``:
    the archive's scan, when the caller made it)."""
    newest: Optional[tuple] = None
    candidates: list[tuple[Optional[str], str]] = []
    if paths.records.is_dir():
        for log in sorted(paths.records.glob("*.jsonl")):
            candidates.append((_last_line_time(log), f"record log {log.stem}"))
    # An unreadable run folder has no time to offer; coverage_part names it (store policy: never skipped).
    found = store.archive_scan(paths) if found is None else found
    for run in sorted([*found.complete, *found.open], key=lambda r: r.run_id):
        candidates.append((run.record.get("finished_at"), f"run {run.run_id}"))
    for stamp, what in candidates:
        when = parse_time(stamp)
        if when is not None and (newest is None or when > newest[0]):
            newest = (when, stamp, what)
    return None if newest is None else {"at": newest[1], "what": newest[2]}


def publication_part(paths: ArchivePaths, inputs_current: Optional[Callable[[ArchivePaths], bool]] = None,
                     found: Optional[store.RunScan] = None) -> dict:
    status_file = paths.public / "status.json"
    newest = newest_input(paths, found)
    if not status_file.exists():
        return {"published": False, "build_time": None, "current": False, "newest_input": newest}
    status = read_json(status_file)
    build_time = status.get("build_time")
    built = parse_time(build_time)
    if inputs_current is not None:
        current, how = bool(inputs_current(paths)), "inputs_sha256 of render_manifest.json"
    else:
        newer = newest is not None and built is not None and parse_time(newest["at"]) > built
        current, how = built is not None and not newer, "build_time against the newest record or run"
    latest = {series: (counts or {}).get("latest_run_date")
              for series, counts in (status.get("measurements") or {}).items()}
    return {"published": True, "build_time": build_time, "current": current, "checked_by": how,
            "newest_input": newest, "latest_run_date": latest,
            "instrument_alarm_published": status.get("instrument_alarm")}


def lifeline_part(paths: ArchivePaths, url: Optional[str]) -> dict:
    """Is the owner reachable: the lease (the dead-man) and the outbox (pages owed, the last one delivered).

    The webhook's URL is never shown (it may carry a token): only whether
    one is set and whether it can be posted to.
    """
    state = lease.check(paths)
    found = outbox.summary(paths)
    broken = outbox.overdue(paths, url, found=found)
    setting = "not set" if not url else ("unusable" if webhook.url_problem(url) else "set")
    return {"lease": {"state": state.state, "deadman": state.deadman, "last_cycle_at": state.last_cycle_at,
                      "hours_since_cycle": state.hours_since_cycle, "reasons": list(state.reasons)},
            "webhook": setting, "owed": len(found.owed), "oldest_owed": found.owed[:5],
            "last_delivered": found.last_delivered, "retry": found.webhook,
            "broken": None if broken is None else broken[1]}


def morning_status(paths: ArchivePaths, today: Optional[str] = None,
                   inputs_current: Optional[Callable[[ArchivePaths], bool]] = None,
                   webhook_url: Optional[str] = None) -> dict:
    """Every part of the morning check as one JSON-ready dict (each part may instead carry ``error``)."""
    today = today or utc_today()
    scans: list[store.RunScan] = []

    def scan() -> store.RunScan:
        """The archive's runs signed and listed once for both parts that list them (each a few stats a run)."""
        if not scans:
            scans.append(store.archive_scan(paths))
        return scans[0]
    return {
        "date": today,
        "home": str(paths.home),
        "instrument": _guarded(lambda: instrument_part(paths, today)),
        "lifeline": _guarded(lambda: lifeline_part(paths, webhook_url)),
        "pending_bridges": _guarded(lambda: bridges_part(paths)),
        "needs_review": _guarded(lambda: reviews_part(paths)),
        "budget": _guarded(lambda: budget_part(paths, today[:7])),
        "coverage": _guarded(lambda: coverage_part(paths, today)),
        "runs": _guarded(lambda: runs_part(paths, scan())),
        "publication": _guarded(lambda: publication_part(paths, inputs_current, scan())),
    }
