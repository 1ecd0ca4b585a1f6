"""What coverage observes: the scheduled jobs, their periods, the archive's facts and the conditions found.

:mod:`llmarchive.schedule.coverage` holds the table of conditions and causes and the
computation of the rows; this module gathers nothing and writes nothing: it
says, for one job and period, which conditions (:data:`llmarchive.archive.skips.CONDITIONS`)
the facts show, each with its reason in words.  Those words become the
published ``detail`` of a gap, so they are composed from public facts only
(:mod:`llmarchive.schedule.coverage_wording`): dates, ids, counts, condition names —
never a private record's free text (a skip's reason, a run's interruption
detail, an instrument record's reason, a budget cut's reason).
"""
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import date as Date, datetime, timedelta, timezone
from typing import Any, Collection, Optional

from llmarchive import budget as budget_mod
from llmarchive.archive import (Cadence, CadenceError, UNREADABLE_CONDITION, Unreadable, is_sweep_of, is_sweep_run,
                                jobs as job_table, skip_condition)
from llmarchive.schedule.coverage_wording import code_word, day_of, pool_name, skip_words, slots as slot_words

AFTER_THE_FACT = frozenset({"run_left_interrupted", "storage_write_failed", "run_abandoned", "no_daily_cycle",
                            "cycle_step_missing", "paid_job_not_started"})
# A stop of the sweep for one of these stops it for every protocol not yet run that month.
SWEEP_STOPPING = ("provider_unreachable", "provider_refused_request")


def instrument_logs() -> dict[str, tuple[str, str]]:
    """An instrument job → (its log, the field that says ``unavailable`` when it could not run): the job table's."""
    return {job.name: (job.record.kind, job.covered.unavailable) for job in job_table.covered()
            if job.record and job.covered.unavailable}


# method §10's record type of a coverage row that is a gap.
GAP_RECORD_TYPE = "coverage_gap"


# --------------------------------------------------------------------------
# jobs and periods
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """A scheduled job coverage accounts for, by its one name (:mod:`llmarchive.archive.jobs`: its cadence key).

    ``series`` is the method §4 track the job's rows belong to, or None for
    the archive's checks on itself: the runtime fingerprint and the guard
    rotation run on the reference model, but they are the instrument, not
    the open-weights control series, and revalidation recomputes any series.
    """

    name: str
    series: Optional[str]
    per_protocol: bool = False
    needs_provider: bool = False
    commercial: bool = False

    @property
    def cadence_key(self) -> str:
        return self.name

    @property
    def skip_jobs(self) -> tuple[str, ...]:
        """The job names a skip of this job may carry (older records used older names)."""
        return job_table.stored_names(self.name)


def coverage_jobs() -> tuple[Job, ...]:
    """The jobs coverage accounts for, as the job table (:func:`llmarchive.archive.jobs.covered`) has them now."""
    return tuple(Job(job.name, job.covered.series, per_protocol=job.covered.per_protocol,
                     needs_provider=job.covered.needs_provider, commercial=job.covered.commercial)
                 for job in job_table.covered())


def __getattr__(name: str) -> Any:
    """``JOBS``, ``JOB_NAMES``, ``INSTRUMENT_LOGS`` and ``LOG_KINDS``: the job table's views as it is now."""
    if name == "JOBS":
        return coverage_jobs()
    if name == "JOB_NAMES":
        return tuple(job.name for job in coverage_jobs())
    if name == "INSTRUMENT_LOGS":
        return instrument_logs()
    if name == "LOG_KINDS":
        return log_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def job_series(name: str, recorded: Optional[str] = None) -> Optional[str]:
    """The series a coverage row of job ``name`` belongs to (the table's, whatever an older row recorded).

    Rows written before the instrument's jobs lost the ``open_weights``
    label still carry it; a job the table does not know keeps ``recorded``.
    """
    try:
        return {j.name: j.series for j in coverage_jobs()}.get(job_table.canonical(name), recorded)
    except job_table.UnknownJob:
        return recorded


def period_kind(cadence: Cadence, job: Job) -> str:
    """``day`` or ``month``: a 1d cadence is a calendar day, the 30d sweep a calendar month."""
    fixed = job_table.spec(job.name).covered.period
    if fixed:
        return fixed   # a count per day (revalidation): daily by the table, not by a schedule
    every = cadence.every(job.cadence_key)
    if every == timedelta(days=1):
        return "day"
    if every == timedelta(days=30):
        return "month"
    raise CadenceError(f"{job.cadence_key}: no coverage period for a cadence of {every}")


def _day(value: str) -> Date:
    return Date.fromisoformat(value)


def _days(start: Date, end: Date) -> list[Date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


def _months(start: Date, end: Date) -> list[str]:
    out, y, m = [], start.year, start.month
    while (y, m) <= (end.year, end.month):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def month_bounds(month: str) -> tuple[Date, Date]:
    y, m = int(month[:4]), int(month[5:7])
    first = Date(y, m, 1)
    nxt = Date(y + 1, 1, 1) if m == 12 else Date(y, m + 1, 1)
    return first, nxt - timedelta(days=1)


def period_ended(last: Date, today: Date) -> bool:
    """Whether a period whose last day is ``last`` is over on ``today`` (method §10.4): then it is judged.

    The one rule for every caller — the CLI and publication judging on
    the day they run, the coverage asset judging a month's partition on
    the day it runs.  On the 1st the whole month just ended is over: its
    last day and its monthly rows are ran or one cause that day, not a
    month later.  A period that is not over with nothing but conditions
    only known afterwards is pending.
    """
    return last < today


# --------------------------------------------------------------------------
# what the archive observed
# --------------------------------------------------------------------------

@dataclass
class Facts:
    """Everything :func:`compute` reads, gathered once."""

    runs: list[dict]
    logs: dict[str, list[dict]]
    protocols: list[dict]
    guard_order: list[str]
    cadence: Cadence
    heartbeats: list[datetime] = field(default_factory=list)
    open_runs: list[dict] = field(default_factory=list)
    budget_cuts: list[dict] = field(default_factory=list)
    declared_models: Optional[set] = None     # models declared for the family (None: not known, not checked)
    spend: list[dict] = field(default_factory=list)                # subject fingerprint ledger entries
    unreadable: list[Unreadable] = field(default_factory=list)   # run folders the store cannot read
    # Days with subject fingerprint spend (the ledger's tally); None: found from ``spend``.
    fingerprint_days: Optional[Collection[str]] = None
    # Set by :func:`window`: the facts hold the days from ``window_from`` on, with the look-back beside them.
    window_from: Optional[str] = None
    start: Optional[str] = None                 # the archive's first day, over its whole history
    run_days: Optional[list[Date]] = None       # every complete run's day, over the whole history

    def by_date(self, kind: str) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for r in self.logs.get(kind, []):
            out.setdefault(str(r.get("date")), []).append(r)
        return out


# The bookkeeping logs coverage reads beside the daily jobs' own (:func:`log_kinds`): the first two by the
# period's own days, the last two whole (a closure or a model switch holds from its date on).
_OTHER_LOGS = ("skip", "generation_bridge", "series_closed", "subject_model")
BY_DAY = ("skip", "generation_bridge")


def log_kinds() -> tuple[str, ...]:
    """Every log :func:`llmarchive.schedule.coverage.gather` reads: each daily job's record kind, then the others."""
    return job_table.record_kinds() + _OTHER_LOGS


def belongs_to(bad: Unreadable, first: Date, protocol_id: Optional[str]) -> bool:
    """Whether an unreadable run folder is, by its run id, the sweep's run of this month and protocol.

    Its record cannot say what it was, so the sweep's run id
    (:func:`llmarchive.archive.run_ids.sweep_run_id`) is all there is to place it by.
    """
    return protocol_id is not None and is_sweep_of(bad.run_id, f"{first:%Y-%m}", protocol_id)


def _by_protocol(runs: list[dict], declared_models: Optional[set]) -> dict[Optional[str], tuple[list[str], list]]:
    """The sweep's runs per protocol, sorted by date (with their order in ``runs``): (dates, [(date, order, run)])."""
    found: dict[Optional[str], list] = {}
    for order, run in enumerate(runs):
        if is_sweep_run(run, declared_models):
            found.setdefault(run.get("protocol_id"), []).append((str(run.get("run_date"))[:10], order, run))
    out = {}
    for pid, rows in found.items():
        rows.sort(key=lambda r: r[:2])
        out[pid] = ([d for d, _, _ in rows], rows)
    return out


def sweep_runs_between(index: dict, protocol_id: Optional[str], lo: str, hi: str) -> list[tuple[str, int, dict]]:
    """The sweep's runs of ``protocol_id`` dated ``lo``..``hi`` (an index made by :func:`_by_protocol`)."""
    dates, rows = index.get(protocol_id, ([], []))
    return rows[bisect_left(dates, lo):bisect_right(dates, hi)]


class _Observer:
    """Conditions observed for one job and period (each with its reason)."""

    def __init__(self, facts: Facts, start: Date, today: Date, now: datetime) -> None:
        self.facts = facts
        self.start = start
        self.today = today      # the day of the judgement (:func:`period_ended`)
        self.now = now
        self.deadman = facts.cadence.every("deadman_alert")
        self.dormant_after = facts.cadence.every("dormant_after")
        self.run_dates = (facts.run_days if facts.run_days is not None
                          else sorted(_day(str(r["run_date"])[:10]) for r in facts.runs))
        self.skips = facts.logs.get("skip", [])
        # Indexes, so a period asks about its own days and runs, not about ten years of them.
        self.skips_by_day: dict[str, list[tuple[int, dict]]] = {}
        for index, skip in enumerate(self.skips):
            self.skips_by_day.setdefault(str(skip.get("date"))[:10], []).append((index, skip))
        self.sweep_runs = _by_protocol(facts.runs, facts.declared_models)
        self.sweep_started = _by_protocol([*facts.runs, *facts.open_runs], facts.declared_models)
        self.closures = sorted((str(r.get("date")), r) for r in facts.logs.get("series_closed", []))
        self.switches = sorted(str(r.get("date")) for r in facts.logs.get("subject_model", []))
        self.bridges = [b for b in facts.logs.get("generation_bridge", []) if b.get("status") == "pending"]
        self.beat_days = {t.date() for t in facts.heartbeats}
        self.sweep_open = [r for r in facts.open_runs if is_sweep_run(r, facts.declared_models)]
        # Each instrument log's days that say ``unavailable``, and the days with fingerprint spend: indexed once,
        # so a long outage's days each ask a set instead of scanning a whole log.
        self.unavailable = {job: {str(r.get("date")) for r in facts.logs.get(kind, []) if r.get(name) == "unavailable"}
                            for job, (kind, name) in instrument_logs().items()}
        self.spend_days = (set(facts.fingerprint_days) if facts.fingerprint_days is not None
                           else {day for e in facts.spend if (day := budget_mod.fingerprint_day(e))})
        self.cuts = sorted((c for c in facts.budget_cuts if isinstance(c.get("date"), str)),
                           key=lambda c: c["date"][:10])

    # -- single conditions ---------------------------------------------------
    def dormant(self, when: Date) -> Optional[str]:
        """Dormant by ``when`` (the period's last day so far): ``dormant_after`` without a run."""
        i = bisect_left(self.run_dates, when + timedelta(days=1))
        last = self.run_dates[i - 1] if i else None
        ref = last or self.start
        if when - ref >= self.dormant_after:
            what = f"the last run was on {last}" if last else f"no run since the archive began on {self.start}"
            return (f"{(when - ref).days} days without a run by {when} ({what}); dormant after "
                    f"{self.dormant_after.days} days")
        return None

    def series_closed(self, last: Date) -> Optional[str]:
        for when, record in reversed(self.closures):
            if when[:10] <= last.isoformat():
                reopened = [s for s in self.switches if s > when and s[:10] <= last.isoformat()]
                if reopened:
                    return None
                family = code_word(record.get("model_family")) or str(record.get("model_family"))
                return (f"the {family} series closed on {day_of(when)}: {record.get('model_id')} left with no "
                        "declared successor")
        return None

    def bridge(self, first: Date, last: Date) -> Optional[str]:
        for b in self.bridges:
            when = str(b.get("date"))[:10]
            if first.isoformat() <= when <= last.isoformat():
                return (f"generation bridge {b.get('old_model_id')} → {b.get('new_model_id')} raised on {when} "
                        "takes this month's sweep")
        return None

    def budget_cut(self, first: Date, last: Date, protocol_id: Optional[str]) -> Optional[str]:
        """The budget cut in force at the period's end (:func:`llmarchive.budget.budget_cuts`), when it leaves
        this sweep period out: a tier drop stops the sweep, quarterly skips two months in three, and a
        smaller programme keeps the protocols the budget's one selection rule keeps."""
        in_force = [c for c in self.cuts if c["date"][:10] <= last.isoformat()]
        if not in_force:
            return None
        cut = in_force[-1]
        try:
            level = budget_mod.LEVELS[cut["to_level"]]
        except (KeyError, IndexError, TypeError):
            return None
        # The cut's own reason names the measured costs and the pool in euros: only its date and level are public.
        why = f"budget cut of {day_of(cut['date'])} to {level.describe()}"
        if not budget_mod.sweep_due(level, first.isoformat()[:7]):
            return f"{why} (no sweep is due in {first:%Y-%m})"
        kept = budget_mod.kept_protocols(cut, self.facts.protocols)
        if protocol_id not in kept:
            return f"{why} ({protocol_id} is not among the {level.protocols} protocols kept)"
        return None

    def open_sweep_runs(self, first: Date, last: Date, protocol_id: Optional[str]) -> dict[str, str]:
        """Conditions from sweep runs of the period left open: this protocol's own, and a stop that ends the sweep."""
        found: dict[str, str] = {}
        lo, hi = first.isoformat(), last.isoformat()
        for run in self.sweep_open:
            when = str(run.get("run_date"))[:10]
            if not lo <= when <= hi:
                continue
            status = run.get("status")
            slots = slot_words(run)
            own = run.get("protocol_id") == protocol_id
            # The stop's own ``detail`` (an error's text, amounts, a path) stays in run.json: only its code words
            # are public.
            stop = run.get("interruption") if isinstance(run.get("interruption"), dict) else {}
            rest = "" if own else "; the sweep stopped there"
            if status == "interrupted" and stop.get("condition") == "provider_unreachable":
                # A call that never got an answer stops the run and the sweep: the rest of it is the same outage.
                found.setdefault("run_left_interrupted",
                                 f"run {run.get('run_id')} stopped interrupted with {slots} (no usable answer from "
                                 "the provider) and the period ended with its slots open" + rest)
            elif status == "interrupted" and (stop.get("condition") == "storage_write_failed"
                                              or stop.get("cause") == "write_failed"):
                # The archive could not keep what it received: the run and the sweep stopped there.
                found.setdefault("storage_write_failed",
                                 f"run {run.get('run_id')} stopped with {slots}: a write failed and the period "
                                 "ended with its slots open" + rest)
            elif status == "interrupted" and stop.get("condition") == "budget_refused":
                budget = run.get("budget") if isinstance(run.get("budget"), dict) else {}
                pool = pool_name(budget.get("pool")) or "pool"
                found.setdefault("budget_refused", f"run {run.get('run_id')} stopped with {slots}: the next call's "
                                                   f"worst case did not fit the {pool}" + rest)
            elif status in ("interrupted", "running") and own:
                cause = code_word(stop.get("cause"))
                what = (f"stopped ({cause})" if cause else "stopped" if stop
                        else "was interrupted" if status == "interrupted" else "was left running (its process died)")
                found.setdefault("run_abandoned", f"run {run.get('run_id')} {what} with {slots} and nobody resumed "
                                                  "it in the period")
            elif status == "halted" and own:
                found.setdefault("provider_refused_request",
                                 f"run {run.get('run_id')} halted with {slots}: the provider refused it")
        return found

    def unreadable_run(self, first: Date, protocol_id: Optional[str]) -> Optional[str]:
        """A sweep run folder of this month and protocol (by its run id) that the store cannot read."""
        for bad in self.facts.unreadable:
            if belongs_to(bad, first, protocol_id):
                return f"run folder {bad.run_id} cannot be read: {bad.public_problem}"
        return None

    def instrument_unavailable(self, job: Job, day: Date) -> Optional[str]:
        """The instrument job's record of ``day`` says it could not run (``unavailable``)."""
        if day.isoformat() in self.unavailable.get(job.name, ()):
            # Its reason (an error's text, a model file's path) stays in the private record.
            return f"{job.name} on {day} could not run: its record says unavailable"
        return None

    def started(self, job: Job, first: Date, last: Date, protocol_id: Optional[str]) -> bool:
        """Whether anything shows the paid job was started for this period (then "nobody started it" is false).

        For the sweep: a run folder of the sweep's for the protocol dated in
        the period, complete or not.  For the subject fingerprint: spend
        reserved or charged for one of the day's items.
        """
        lo, hi = first.isoformat(), last.isoformat()
        if job.name == job_table.FULL_SWEEP:
            return bool(sweep_runs_between(self.sweep_started, protocol_id, lo, hi))
        if job.name == job_table.SUBJECT_FINGERPRINT:
            return lo in self.spend_days
        return False

    def no_cycle_on(self, day: Date) -> Optional[str]:
        """The day had no daily cycle (no heartbeat recorded on it), however short the silence around it."""
        if day in self.beat_days:
            return None
        before, after = self._beats_around(day)
        hours = (after - before).total_seconds() / 3600
        return (f"no daily cycle ran on {day} (previous {before.isoformat()}, next {after.isoformat()}: "
                f"{hours:.0f} h apart)")

    def deadman_around(self, day: Date) -> Optional[str]:
        """No daily cycle for ``deadman_alert`` (36 h) around ``day``: the absence that explains a month."""
        if day in self.beat_days:
            return None
        before, after = self._beats_around(day)
        if after - before >= self.deadman:
            hours = (after - before).total_seconds() / 3600
            return (f"no daily cycle completed between {before.isoformat()} and {after.isoformat()} "
                    f"({hours:.0f} h; dead-man alert after {self.deadman.total_seconds() / 3600:.0f} h)")
        return None

    def _beats_around(self, day: Date) -> tuple[datetime, datetime]:
        beats = self.facts.heartbeats
        day_start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        i = bisect_left(beats, day_start)
        before = beats[i - 1] if i else datetime(self.start.year, self.start.month, self.start.day,
                                                    tzinfo=timezone.utc)
        j = bisect_left(beats, day_start + timedelta(days=1))
        after = beats[j] if j < len(beats) else max(self.now, day_start + timedelta(days=1))
        return before, after

    # -- all conditions for a job and period --------------------------------
    def conditions(self, job: Job, first: Date, last: Date, protocol_id: Optional[str],
                   kind: str = "month") -> dict[str, str]:
        found: dict[str, str] = {}
        if last < self.start:
            found["period_before_archive_start"] = f"the archive began on {self.start}"
            return found
        reason = self.dormant(min(last, self.today))
        if reason:
            found["archive_dormant"] = reason
        if job.commercial:
            reason = self.series_closed(last)
            if reason:
                found["series_closed_without_successor"] = reason
        if job.name == job_table.FULL_SWEEP:
            reason = self.bridge(first, last)
            if reason:
                found["bridge_preempts_sweep"] = reason
            reason = self.budget_cut(first, last, protocol_id)
            if reason:
                found["budget_cut"] = reason
            for condition, why in self.open_sweep_runs(first, last, protocol_id).items():
                found.setdefault(condition, why)
            reason = self.unreadable_run(first, protocol_id)
            if reason:
                found.setdefault(UNREADABLE_CONDITION, reason)
        lo, hi = first.isoformat(), last.isoformat()
        in_period = sorted(found for d in _days(first, last) for found in self.skips_by_day.get(d.isoformat(), ()))
        for _, skip in in_period:
            when = str(skip.get("date"))[:10]
            condition = skip_condition(skip)
            if condition is None:
                continue
            mine = skip.get("job") in job.skip_jobs and (skip.get("protocol_id") in (None, protocol_id)
                                                          or not job.per_protocol)
            provider_wide = job.needs_provider and condition == "provider_unreachable"
            # A sweep that stopped at one protocol stopped for all it had not reached yet.
            sweep_stop = (job.name == job_table.FULL_SWEEP and skip.get("job") in job.skip_jobs
                          and condition in SWEEP_STOPPING)
            if mine or provider_wide or sweep_stop:
                # The skip's reason is the owner's (amounts, errors): the public words come from its fields.
                found.setdefault(condition, skip_words(skip, condition)
                                 + ("" if mine or provider_wide else "; the sweep stopped there"))
        days = _days(first, min(last, self.today))
        if kind == "day":
            absent = [r for r in (self.no_cycle_on(d) for d in days) if r]
        else:
            absent = [r for r in (self.deadman_around(d) for d in days) if r]
        if kind == "day" and job.name in instrument_logs():
            reason = self.instrument_unavailable(job, first)
            if reason:
                found["instrument_unavailable"] = reason
        if absent:
            found["no_daily_cycle"] = absent[0]
        elif (kind == "day" and not job.commercial and period_ended(last, self.today)
              and "instrument_unavailable" not in found):
            found["cycle_step_missing"] = (f"the daily cycle ran on {first} but {job.name} recorded nothing: its "
                                           "step failed or was not run, and nobody re-ran it that day")
        if job.commercial and not self.started(job, first, last, protocol_id):
            schedule = "monthly_sweep_schedule" if job.name == job_table.FULL_SWEEP else "daily_subject_fingerprint_schedule"
            found["paid_job_not_started"] = (f"{job.name} is paid and manual: nobody started it for "
                                             f"{first if kind == 'day' else f'{first:%Y-%m}'} ({schedule} is "
                                             "created stopped; the owner starts it)")
        return found
