"""Coverage: every scheduled job and period either ran or has exactly one named cause.

method §10: a gap is never left unexplained; it carries exactly one cause from
the closed list (:data:`measure.schema.GAP_CAUSES`), assigned by code from
what was observed, never written by hand afterwards.

The mapping
-----------
:func:`~llmarchive.archive.skips.cause_for` (in :mod:`llmarchive.archive.skips`, below both the
jobs that record skips and this module) is the one pure function from
observed conditions to a cause.  Code that notices something (the budget ladder, the pre-registration
guard, the model watch, the lease, a run folder left open) records or leaves
the *condition* it saw; this function decides the cause.  When several
conditions hold at once, the first in this table wins — archive-wide states
before decisions, decisions before failures, failures before absence — so
every gap has exactly one cause:

================================  ========================  ======================================
condition                         cause                     observed when
================================  ========================  ======================================
period_before_archive_start       before_archive_start      the period ended before the archive began
archive_dormant                   dormant                   ``dormant_after`` (180 d) without a run
series_closed_without_successor   generation_retired_early  the active model left with no declared successor
bridge_preempts_sweep             generation_bridge         a generation bridge took that month's sweep
budget_refused                    budget_halted             the ladder or a pool refused the work
budget_cut                        budget_halted             a dated ``budget_cut`` decision in force (12 → 8 → 6
                                                            protocols, monthly → quarterly, tier) left it out
not_preregistered                 protocol_confounded       the protocol's hashes are not in a stamped manifest
provider_unreachable              provider_outage           no usable answer from the provider after retries
run_left_interrupted              provider_outage           the period ended with slots still open in a run
                                                            that stopped ``interrupted`` by calls that never got
                                                            an answer, or after such a stop in the same sweep
provider_refused_request          human_absent              the provider refused the request (a key it rejects,
                                                            a model id it does not know): only a person can fix
                                                            it; it stops the whole sweep.  A key that is missing
                                                            or a malformed URL is refused before anything is
                                                            recorded: that month is ``paid_job_not_started``
storage_write_failed              provider_outage           a run stopped because the archive could not write
                                                            what it received (a full disk, a failed write):
                                                            its own period, and the rest of the sweep it stopped
run_record_unreadable             provider_outage           a sweep run folder of the period whose run record the
                                                            store cannot read (torn, not a JSON object, missing
                                                            beside its trials): the archive did not keep what it
                                                            received (see :mod:`llmarchive.archive.store`)
instrument_unavailable            provider_outage           an instrument job ran but could not do its work (the
                                                            reference model would not load or answer): its
                                                            record says ``unavailable``, which is not a result
run_abandoned                     human_absent              a run left ``running`` (its process died) or
                                                            stopped for another reason (Ctrl-C) and nobody
                                                            resumed it in the period
no_daily_cycle                    human_absent              the day had no daily cycle at all (for a month:
                                                            none for ``deadman_alert``, 36 h)
cycle_step_missing                human_absent              the day's cycle ran but this step left no record
                                                            (it failed or was not run) and nobody re-ran it
paid_job_not_started              human_absent              a paid job, manual by rule (its schedule is created
                                                            stopped), was not started in the period: nothing of
                                                            it is there — no run folder of the sweep's for the
                                                            protocol, no spend for the day's subject fingerprint
================================  ========================  ======================================

The last five (and a failed write) are only known once the period is over:
while it runs, a period with nothing but these is pending, not a gap.

**What counts as having run.**  Only output of the job itself: for
``full_sweep`` a complete run the sweep made (:func:`is_sweep_run`: job
``full_sweep``, commercial, not exploratory, on a model declared for the
family) — a manual, exploratory or undeclared-model run of the same
protocol is not the month's sweep; for the instrument jobs a record that is
not ``unavailable`` (a fingerprint or rotation that could not run is
``instrument_unavailable``, never ``ran``).

**A gap that can stay unexplained.**  ``paid_job_not_started`` is observed
only when nothing shows the job was started.  When it was — a sweep run
folder of the protocol in the month, spend of the subject fingerprint for
the day — and it left neither output nor a condition, the period is
unexplained and :func:`record_coverage` says so, for a paid job as for any
other.

**Pre-registration.**  A protocol skipped because it is not pre-registered
(``not_preregistered``) is ``protocol_confounded``: as it stands, a result
could not be told apart from one adjusted after it was seen, because nothing
outside our control fixes when its content was decided.  The cause belongs
to the protocol, not to the budget, the provider or a person, and it lasts
until the protocol's hashes are stamped.

**Budget cuts.**  A cut of method §9's order is a dated ``budget_cut`` record
(:func:`llmarchive.budget.budget_cuts`), in force from its date until the
next.  A sweep period the level in force leaves out — no sweep due that
month (quarterly, tier drop), or a protocol outside the ones the budget's
selection rule keeps — is ``budget_halted`` with the decision's reason,
whether or not the sweep ran that month to record skips.

**Runs left open.**  ``run.json`` says why a run stopped (``status`` and,
for ``interrupted``, ``interruption.condition``); once the period is over
with slots still open that becomes the period's condition, and a stop that
ends the sweep (an outage, the budget, a refused request) is also the
condition of every protocol the sweep had not reached.

**Public words.**  A row's ``detail`` is published as it is (``coverage.csv``,
``archive.db``), so it is composed from public facts only — the condition's
name, dates, ids, counts, the budget's rung or pool by name — never copied
from a private record's reason (:mod:`llmarchive.schedule.coverage_wording`).  Each
row also carries the winning ``condition`` (None for a row that ran); a row
written before that field existed is published with words recomposed from
its structured fields.

The rows
--------
:func:`compute` walks every scheduled job (:data:`JOBS`) and period from the
archive's start (or ``since``) through a date: ``full_sweep`` per admitted protocol per
calendar month (its ``30d`` cadence is the month the budget is counted in),
and the daily jobs per day.  A period with output is ``ran``; one without
output gets the cause of the conditions observed in it; a period that has
ended with neither is **unexplained**, and :func:`record_coverage` raises
:class:`UnexplainedGap` naming each one (after writing every explained row:
nothing already known is lost).  A period still running (today, this month)
with no output and no condition is pending and gets no row yet.

**The open window.**  A month judged after its last day with every period
ran or one cause is *sealed* (:func:`seal_months`); from then on its rows
are read back from the coverage log, not judged again
(:mod:`llmarchive.schedule.coverage_summary` says which bytes hold them).
Only the months not sealed are judged, from facts gathered for them
(:mod:`llmarchive.schedule.coverage_window`), so a month's coverage costs
the same in the archive's tenth year as in its first.

**When a period is over.**  Coverage is judged on a day, and a period is
over once its last day is before that day (:func:`period_ended`, the one
rule).  ``llmarchive coverage --date D`` lists and judges on D; the
coverage asset lists a month's periods and judges them on the day it runs
(:func:`record_month`), so the partition of the month just ended,
materialised on the 1st, writes that month's last day and its monthly rows
as ran or one cause the same day the CLI would — not a month later.

The job table, the facts and the observation of each condition are in
:mod:`llmarchive.schedule.coverage_conditions`; the runs come from the store
(:mod:`llmarchive.archive.store`), which lists a run folder it cannot read instead
of leaving it out.
"""
from dataclasses import dataclass, field
from datetime import date as Date, datetime, timezone
from typing import Any, Iterable, Optional, Sequence

from llmarchive import budget as budget_mod
from llmarchive.archive import (ArchivePaths, Cadence, PRECEDENCE, UNREADABLE_CONDITION, UnexplainedGap, Unreadable,
                                cause_for, jobs as job_table, load_cadence, record_logs as records, store)
from llmarchive.schedule import coverage_conditions, coverage_summary, coverage_window
from llmarchive.schedule.coverage_summary import row_key, write_rows  # noqa: F401  (named here too)
from llmarchive.schedule.coverage_conditions import (  # noqa: F401  (the job table and conditions, named here too)
    AFTER_THE_FACT, GAP_RECORD_TYPE, Facts, Job, _day, _days, _months, _Observer, coverage_jobs, instrument_logs,
    log_kinds, month_bounds, period_ended, period_kind, sweep_runs_between)
from llmarchive.instrument import rotation_order, scheduled_protocol
from llmarchive.protocols import sweep_protocols
from llmarchive.succession import SubjectModelsError, load_subject_models, review
from measure.errors import ArchiveError


def declared_models(paths: ArchivePaths, config=None) -> Optional[set]:
    """The models the tracked family's curve may hold (:func:`llmarchive.succession.review.declared_models`), or None.

    None when no family configuration can be read: then the model is not checked.
    """
    if config is None:
        try:
            config = load_subject_models()
        except SubjectModelsError:
            return None
    return review.declared_models(paths, config)


def gather(paths: ArchivePaths, protocols: Optional[list[dict]] = None, series: str = "v0",
           cadence: Optional[Cadence] = None, since: Optional[str] = None, sealed: Iterable[str] = ()) -> Facts:
    """What :func:`compute` reads, kept for the open window only: from ``since`` (the archive's start when None),
    past every month in ``sealed`` at its head (their rows are read back, not judged again).

    The look-back a window needs is kept beside it (:class:`Facts`): the archive's start, every complete run's
    day (for dormancy and revalidation's first run), the last heartbeat before the window, and the whole of the
    small logs read up to a period's end (closures, model switches, budget cuts).  Fingerprint spend comes from
    the ledger's tally (:func:`llmarchive.budget.read_ledger`: its checkpoint and the entries after it), not
    from the whole ledger.
    """
    small = {kind: records.read(paths, kind) for kind in log_kinds() if kind not in job_table.record_kinds()}
    if protocols is None:
        protocols = sweep_protocols(paths, series)
    return coverage_window.window(paths, small, since, set(sealed), protocols=protocols,
                                  guard_order=rotation_order(protocols, series), cadence=cadence or load_cadence(),
                                  budget_cuts=budget_mod.budget_cuts(paths), declared_models=declared_models(paths),
                                  fingerprint_days=budget_mod.read_ledger(paths).tally.fingerprint_days)


def archive_start(facts: Facts) -> Optional[Date]:
    """The first day anything happened: a run, an instrument record, a skip, a model configuration."""
    if facts.window_from is not None:
        return _day(facts.start) if facts.start else None    # found over the whole history by :func:`gather`
    dates = [str(r["run_date"]) for r in facts.runs]
    opening = tuple(job.record.kind for job in job_table.covered() if job.record and job.covered.opens_archive)
    for kind in opening + ("skip", "subject_model"):
        dates += [str(r.get("date")) for r in facts.logs.get(kind, []) if r.get("date")]
    valid = []
    for d in dates:
        try:
            valid.append(_day(d[:10]))
        except ValueError:
            continue
    return min(valid) if valid else None


# --------------------------------------------------------------------------
# the computation
# --------------------------------------------------------------------------

@dataclass
class Coverage:
    rows: list[dict]
    unexplained: list[tuple[str, str, Optional[str]]]
    pending: list[tuple[str, str, Optional[str]]]
    start: Optional[str]
    through: str
    unreadable: list[Unreadable] = field(default_factory=list)   # unreadable run folders no period could claim
    read_back: list[str] = field(default_factory=list)   # sealed months whose rows were read back, not judged
    since: Optional[str] = None                          # the first day listed

    def judged_rows(self) -> list[dict]:
        """The rows judged by this computation (a sealed month's, read back, are in the log already)."""
        return [row for row in self.rows if str(row["period"])[:7] not in self.read_back]


def _output(facts: Facts, job: Job, first: Date, last: Date, protocol_id: Optional[str],
            by_date: dict[str, dict[str, list[dict]]], observer: _Observer) -> Optional[tuple[Optional[str], str]]:
    """``(run_id, detail)`` when the job produced output in the period, else None."""
    if job.name == job_table.FULL_SWEEP:
        found = sweep_runs_between(observer.sweep_runs, protocol_id, first.isoformat(), last.isoformat())
        if not found:
            return None
        when, _, run = min(found, key=lambda r: r[1])     # the first such run of the store's listing
        return run["run_id"], f"run {run['run_id']} on {run.get('subject_model_id')} ({when})"
    table = job_table.spec(job.name)
    found = by_date[table.record.kind].get(first.isoformat(), [])
    if table.covered.unavailable:
        # A record that says the job could not run is no output (instrument_unavailable explains the day).
        found = [r for r in found if r.get(table.covered.unavailable) != "unavailable"]
    if not found:
        return None
    return ran_detail(table.covered, found)


class _Fields(dict):
    """A record's fields for a detail's words: a field it lacks reads ``None``, as ``record.get`` would."""

    def __missing__(self, key: str) -> None:
        return None


def ran_detail(covered: job_table.Covered, found: list[dict]) -> tuple[Optional[str], str]:
    """``(run_id, detail)`` of a day that ran, in the words the job table gives the job (its ``detail``)."""
    last = found[-1]
    statuses = ", ".join(sorted({str(x.get("status")) for x in found}))
    words = (covered.detail or "{count} record(s): {statuses}").format_map(
        _Fields(last, count=len(found), statuses=statuses))
    return (last.get(covered.run_id) if covered.run_id else None), words


def judgement_day(through: str, today: Optional[str]) -> Date:
    """The day the periods through ``through`` are judged on: ``today``, else ``through`` itself.

    A caller that computes "through today" (the CLI, publication, status)
    judges on that day: it and its month are not over.  The coverage asset
    lists a past month's periods and judges them on the day it runs
    (:func:`record_month`).  Judging on a day before the last one listed
    would judge periods that have not started: refused.
    """
    day = _day(today) if today else _day(through)
    if day < _day(through):
        raise ValueError(f"coverage through {through} cannot be judged on {day}, an earlier day")
    return day


def _first_day(label: str) -> Optional[Date]:
    try:
        return _day(f"{label}-01" if len(label) == 7 else label)
    except (TypeError, ValueError):
        return None


def compute(paths: ArchivePaths, through: str, since: Optional[str] = None, *, facts: Optional[Facts] = None,
            jobs: Optional[Sequence[str]] = None, periods: Optional[Sequence[str]] = None,
            now: Optional[datetime] = None, today: Optional[str] = None, read_back: bool = True,
            open_window: bool = False) -> Coverage:
    """Coverage rows for every scheduled job and period from ``since`` (else the archive's start) through ``through``.

    ``since`` (YYYY-MM-DD) may reach back before the archive's start (those
    periods are ``before_archive_start``); ``periods`` limits the rows to
    those period labels (a day or a month), and the work to their months.
    ``open_window`` starts at the first month not sealed instead (before
    ``since`` if need be: :func:`record_month`).  ``today`` is the day of the
    judgement (:func:`judgement_day`): a period is over, and so ran or has
    one cause, when :func:`period_ended` says so on that day.  A sealed
    month's rows are read back from the log (:mod:`llmarchive.schedule.coverage_summary`),
    not judged again; ``read_back=False`` judges every period afresh.
    """
    since_day = _day(since) if since else None
    floor = None
    if periods:
        firsts = [_first_day(str(p)) for p in periods]
        floor = min(firsts) if firsts and all(firsts) else None
    hint = max(d for d in (since_day, floor) if d) if since_day or floor else None
    summary = coverage_summary.current(paths) if read_back else coverage_summary.Summary()
    sealed = set(summary.sealed)
    while True:
        gathered = facts or gather(paths, since=None if open_window or hint is None else hint.isoformat(),
                                   sealed=sealed)
        try:
            return _compute(paths, through, gathered, (since_day, floor), summary, sealed, jobs, periods, now, today,
                            open_window)
        except coverage_window._Reopen as reopened:
            sealed -= reopened.months


def _targets(facts: Facts, job: Job, first: Date, last: Date, start: Date,
             first_run: Optional[Date]) -> list[Optional[str]]:
    """What ``job`` was scheduled for in the period: each admitted protocol, the guard protocol due, or the job
    itself (``[None]``); none when nothing was scheduled."""
    if job.name == "revalidation_daily" and (first_run is None or first <= first_run) and last >= start:
        return []   # nothing historical to recompute yet: not scheduled
    if job.per_protocol:
        return [p["protocol_id"] for p in facts.protocols
                if not p.get("admitted_on") or p["admitted_on"] <= last.isoformat() or last < start]
    if job.name == "guard_margin_rotation":
        due = scheduled_protocol(facts.guard_order, first.isoformat())
        admitted_on = next((p.get("admitted_on") for p in facts.protocols if p["protocol_id"] == due), None)
        if due is None or (admitted_on and admitted_on > last.isoformat() and last >= start):
            return []   # no guard protocol was admitted yet: nothing was scheduled
        return [due]
    return [None]


def _compute(paths: ArchivePaths, through: str, facts: Facts, bounds: tuple[Optional[Date], Optional[Date]],
             summary: coverage_summary.Summary, sealed: set[str], jobs: Optional[Sequence[str]],
             periods: Optional[Sequence[str]], now: Optional[datetime], today: Optional[str],
             open_window: bool) -> Coverage:
    end = _day(through)
    judged_on = judgement_day(through, today)
    now = now or datetime.now(timezone.utc)
    start = archive_start(facts)
    rows: list[dict] = []
    unexplained: list[tuple] = []
    pending: list[tuple] = []
    if start is None:
        return Coverage(rows, unexplained, pending, None, through)
    since, floor = bounds
    begin = since or start
    if open_window and facts.window_from is not None:
        window = max(start, _day(facts.window_from))
        begin = min(since, window) if since else window
    if floor is not None:
        begin = max(begin, floor)
    in_range = {m for m in _months(begin, end) if m in sealed and month_bounds(m)[1] < judged_on}
    back = coverage_summary.latest_rows(paths, summary, in_range)
    reopen: set[str] = set()
    observer = _Observer(facts, start, judged_on, now)
    by_date = {kind: facts.by_date(kind) for kind in job_table.record_kinds()}
    first_run = observer.run_dates[0] if observer.run_dates else None
    for job in (j for j in coverage_jobs() if jobs is None or j.name in jobs):
        kind = period_kind(facts.cadence, job)
        if kind == "month":
            slots = [(m, *month_bounds(m)) for m in _months(begin, end)]
        else:
            slots = [(d.isoformat(), d, d) for d in _days(begin, end)]
        for label, first, last in slots:
            if periods is not None and label not in periods:
                continue
            ended = period_ended(last, judged_on)
            for pid in _targets(facts, job, first, last, start, first_run):
                base = {"period": label, "job": job.name, "series": job.series, "protocol_id": pid}
                if label[:7] in in_range:
                    row = coverage_window.read_back(back.get((label, job.name, pid)), base)
                    if row is None:
                        reopen.add(label[:7])
                    else:
                        rows.append(row)
                    continue
                if facts.window_from is not None and last >= start and first.isoformat() < facts.window_from:
                    raise ArchiveError(f"coverage of {label} needs facts from before {facts.window_from}, where "
                                       "the facts given begin")
                out = _output(facts, job, first, last, pid, by_date, observer) if last >= start else None
                if out is not None:
                    rows.append({**base, "status": "ran", "cause": None, "run_id": out[0], "detail": out[1],
                                 "condition": None})
                    continue
                found = observer.conditions(job, first, last, pid, kind)
                if not found:
                    (unexplained if ended else pending).append((job.name, label, pid))
                    continue
                if not ended and not (set(found) - AFTER_THE_FACT):
                    pending.append((job.name, label, pid))   # still running: it may yet run
                    continue
                cause = cause_for(found)
                winner = next(c for c in PRECEDENCE if c in found)
                rows.append({"record_type": GAP_RECORD_TYPE, **base, "status": "gap", "cause": cause,
                             "run_id": None, "detail": f"{winner}: {found[winner]}", "condition": winner})
    if reopen:
        raise coverage_window._Reopen(reopen)     # judged again, all at once, from facts that reach back to them
    unplaced = coverage_window.unplaced(paths, facts, rows, summary, sealed, whole=periods is None and jobs is None)
    return Coverage(rows, unexplained, pending, start.isoformat(), through, unplaced, sorted(in_range),
                    begin.isoformat())


def seal_months(paths: ArchivePaths, result: Coverage, judged_on: Date) -> set[str]:
    """Seal each month this whole computation listed in full, judged after its last day, with no period
    unexplained or pending: from now on its rows are read back (method §10.4).  Returns the months sealed."""
    if result.start is None or result.since is None:
        return set()
    open_months = {str(period)[:7] for _, period, _ in [*result.unexplained, *result.pending]}
    listed = {str(row["period"])[:7] for row in result.rows} - set(result.read_back) - open_months
    whole = {m for m in listed if _day(result.since) <= month_bounds(m)[0] and m >= result.start[:7]
             and month_bounds(m)[1] <= _day(result.through) and month_bounds(m)[1] < judged_on}
    return coverage_summary.seal(paths, whole)


def unexplained_gap(result: Coverage, whole: bool = True) -> Optional[UnexplainedGap]:
    """What leaves ``result`` with a hole, as one line naming each job and period (or run folder); None if nothing.

    ``whole`` is False for a computation limited to some jobs or periods:
    then a run folder no period claims may belong to one left out, and is
    not counted against it.
    """
    if result.unreadable and whole:
        # A run folder no period could claim is still never skipped: a person has to repair or remove it.
        shown = "; ".join(f"{bad.run_id} ({bad.problem})" for bad in result.unreadable[:20])
        return UnexplainedGap(f"{len(result.unreadable)} run folder(s) cannot be read and belong to no scheduled "
                              f"period by their run id: {shown}. Repair or remove them; nothing is skipped.",
                              [(UNREADABLE_CONDITION, bad.run_id, None) for bad in result.unreadable])
    if result.unexplained:
        shown = "; ".join(f"{job} {period}{' ' + pid if pid else ''}" for job, period, pid in result.unexplained[:20])
        more = len(result.unexplained) - 20
        return UnexplainedGap(
            f"{len(result.unexplained)} scheduled period(s) have no output and no observed condition: {shown}"
            + (f" and {more} more" if more > 0 else "")
            + ". Every gap needs exactly one cause; find why the job neither ran nor recorded a skip.",
            result.unexplained)
    return None


def record_coverage(paths: ArchivePaths, through: str, since: Optional[str] = None, **kwargs) -> Coverage:
    """Compute, write the explained rows, then raise :class:`UnexplainedGap` if any period has no cause.

    The explained rows are written first, whatever else is wrong: what is
    known is never lost, and a period with no cause gets no row (no cause
    is ever made up for it).
    """
    result = compute(paths, through, since, **kwargs)
    write_rows(paths, result.judged_rows())
    whole = "periods" not in kwargs and "jobs" not in kwargs
    if whole:
        seal_months(paths, result, judgement_day(through, kwargs.get("today")))
    problem = unexplained_gap(result, whole=whole)
    if problem is not None:
        raise problem
    return result


def record_month(paths: ArchivePaths, month: str, today: Date,
                 **kwargs) -> tuple[Coverage, Optional[UnexplainedGap]]:
    """The coverage of ``month`` as judged on ``today``: rows written, and what is unexplained (None if nothing).

    Every period of the open window — from the first month not sealed (the
    archive's start, before any month is) through the month's last day, or
    through today for the month that is running — is listed and judged on
    ``today`` by :func:`period_ended`, the rule ``llmarchive coverage``
    judges by: on the 1st, the month just ended — its last day and its
    monthly rows — is ran or one cause, and is sealed when nothing in it is
    left unexplained.  The explained rows are written as
    :func:`record_coverage` writes them; an unexplained period is returned,
    not raised, so the caller (the coverage asset) can report it as a
    failing check on the month beside the rows it wrote.  A month that has
    not started yet is an :class:`ArchiveError`.  ``kwargs`` go to :func:`compute` (``facts``, ``now``).
    """
    first, last = month_bounds(month)
    if first > today:
        raise ArchiveError(f"{month} has not started yet (today is {today})")
    result = compute(paths, min(last, today).isoformat(), since=first.isoformat(), today=today.isoformat(),
                     open_window=True, **kwargs)
    write_rows(paths, result.judged_rows())
    whole = "periods" not in kwargs and "jobs" not in kwargs
    if whole:
        seal_months(paths, result, today)
    return result, unexplained_gap(result, whole=whole)


def __getattr__(name: str) -> Any:
    """``JOBS``, ``JOB_NAMES``, ``INSTRUMENT_LOGS``, ``LOG_KINDS``: the job table's views as it is now."""
    if name in ("JOBS", "JOB_NAMES", "INSTRUMENT_LOGS", "LOG_KINDS"):
        return getattr(coverage_conditions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
