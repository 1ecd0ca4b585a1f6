"""Coverage: every scheduled job and period either ran or has exactly one named cause.

method §10: a gap is never left unexplained; it carries exactly one cause from
the closed list (:data:`measure.schema.GAP_CAUSES`), assigned by code from
what was observed, never written by hand afterwards.

The mapping
-----------
:func:`~llmarchive.skips.cause_for` (in :mod:`llmarchive.skips`, below both the
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

The rows
--------
:func:`compute` walks every scheduled job (:data:`JOBS`) and period from the
archive's start through a date: ``full_sweep`` per admitted protocol per
calendar month (its ``30d`` cadence is the month the budget is counted in),
and the daily jobs per day.  A period with output is ``ran``; one without
output gets the cause of the conditions observed in it; a period that has
ended with neither is **unexplained**, and :func:`record_coverage` raises
:class:`UnexplainedGap` naming each one (after writing every explained row:
nothing already known is lost).  A period still running (today, this month)
with no output and no condition is pending and gets no row yet.
"""
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date as Date, datetime, timedelta, timezone
from typing import Collection, Iterable, Optional, Sequence

from llmarchive import budget as budget_mod
from llmarchive import jobs as job_table
from llmarchive import records
from llmarchive.cadence import Cadence, CadenceError, load_cadence
from llmarchive.jsonio import RecordFileError, read_json
from llmarchive.paths import ArchivePaths
from llmarchive.skips import CONDITIONS, PRECEDENCE, UnexplainedGap, cause_for, skip_condition

# Known only once the period is over (see the table): alone, they leave a running period pending.
AFTER_THE_FACT = frozenset({"run_left_interrupted", "storage_write_failed", "run_abandoned", "no_daily_cycle",
                            "cycle_step_missing", "paid_job_not_started"})
# A stop of the sweep for one of these stops it for every protocol not yet run that month.
SWEEP_STOPPING = ("provider_unreachable", "provider_refused_request")
# An instrument job → (its log, the field that says ``unavailable`` when it could not run).
INSTRUMENT_LOGS = {job_table.RUNTIME_FINGERPRINT: ("runtime_fingerprint", "status"),
                   job_table.GUARD_MARGIN_ROTATION: ("guard_rotation", "verdict")}
# method §10's record type of a coverage row that is a gap.
GAP_RECORD_TYPE = "coverage_gap"


# --------------------------------------------------------------------------
# jobs and periods
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """A scheduled job coverage accounts for, by its one name (:mod:`llmarchive.jobs`: its cadence key)."""

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


JOBS = (
    Job(job_table.FULL_SWEEP, "commercial", per_protocol=True, needs_provider=True, commercial=True),
    Job(job_table.SUBJECT_FINGERPRINT, "commercial", needs_provider=True, commercial=True),
    Job(job_table.RUNTIME_FINGERPRINT, "open_weights"),
    Job(job_table.GUARD_MARGIN_ROTATION, "open_weights"),
    Job(job_table.REVALIDATION_DAILY, None),
)
JOB_NAMES = tuple(j.name for j in JOBS)


def period_kind(cadence: Cadence, job: Job) -> str:
    """``day`` or ``month``: a 1d cadence is a calendar day, the 30d sweep a calendar month."""
    if job.cadence_key == "revalidation_daily":
        return "day"   # a count per day: daily by its name
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
    spend: list[dict] = field(default_factory=list)

    def by_date(self, kind: str) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for r in self.logs.get(kind, []):
            out.setdefault(str(r.get("date")), []).append(r)
        return out


LOG_KINDS = ("runtime_fingerprint", "guard_rotation", "subject_fingerprint", "revalidation", "skip",
             "generation_bridge", "series_closed", "subject_model", "model_observed", "lease")


def _run_records(paths: ArchivePaths, measured: bool) -> list[dict]:
    """``run.json`` of every dated run folder that has (``measured``) or lacks a measurement."""
    out = []
    if not paths.experiments.is_dir():
        return out
    for folder in sorted(p for p in paths.experiments.iterdir() if p.is_dir()):
        if (folder / "measurement.json").exists() != measured or not (folder / "run.json").exists():
            continue
        try:
            run = read_json(folder / "run.json")
        except RecordFileError:
            continue
        if isinstance(run, dict) and run.get("run_date"):
            out.append(run)
    return out


def complete_runs(paths: ArchivePaths) -> list[dict]:
    """The ``experiment_run`` record of every complete run folder (a measurement exists)."""
    return _run_records(paths, measured=True)


def open_runs(paths: ArchivePaths) -> list[dict]:
    """The ``run.json`` of every run folder without a measurement: slots still open, with the run's status."""
    return _run_records(paths, measured=False)


def is_sweep_run(run: dict, declared_models: Optional[Collection[str]] = None) -> bool:
    """Whether ``run`` (a ``run.json``) is the sweep's own run: the only kind that is a month's ``full_sweep``.

    Job ``full_sweep`` (or its older name), the commercial series, not
    exploratory (a manual run of an unlisted protocol, a model nobody
    declared, an override), and — when the family's declared models are
    known — on one of them.  A manual run of the same protocol measures
    something, but it is not the programme's sweep.
    """
    job = run.get("job")
    if job is None:   # a run recorded before runs named their job: the sweep's run ids say whose it is
        job = job_table.FULL_SWEEP if str(run.get("run_id", "")).startswith("sweep_") else None
    return (run.get("series") == "commercial" and job in job_table.stored_names(job_table.FULL_SWEEP)
            and not run.get("exploratory")
            and (declared_models is None or run.get("subject_model_id") in declared_models))


def declared_models(paths: ArchivePaths, config=None) -> Optional[set]:
    """The models the tracked family's curve may hold (:func:`llmarchive.review.declared_models`), or None.

    None when no family configuration can be read: then the model is not checked.
    """
    from llmarchive import review
    from llmarchive.subject_models import SubjectModelsError, load_subject_models

    if config is None:
        try:
            config = load_subject_models()
        except SubjectModelsError:
            return None
    return review.declared_models(paths, config)


def sweep_protocols(paths: ArchivePaths, series: str = "v0") -> list[dict]:
    """Headers of the protocols a sweep runs: admitted, not sealed, of the protocol series; with admission date."""
    from llmarchive import lanes, registry

    admitted_on: dict[str, str] = {}
    for row in lanes.read_admissions(paths):
        when = str(row.get("reviewed_at") or "")[:10]
        if row.get("protocol_id") and when:
            admitted_on.setdefault(row["protocol_id"], when)
    out = []
    for h in registry.list_protocols(paths):
        if h.get("status") == "admitted" and h.get("lane") in ("open", "guard") and h.get("series") == series:
            out.append({**h, "admitted_on": admitted_on.get(h["protocol_id"])})
    return sorted(out, key=lambda h: h["protocol_id"])


def gather(paths: ArchivePaths, protocols: Optional[list[dict]] = None, series: str = "v0",
           cadence: Optional[Cadence] = None) -> Facts:
    from llmarchive.instrument.rotation import rotation_order

    logs = {kind: records.read(paths, kind) for kind in LOG_KINDS}
    if protocols is None:
        protocols = sweep_protocols(paths, series)
    heartbeats = sorted(t for t in (records.parse_time(r.get("recorded_at")) for r in logs["runtime_fingerprint"]) if t)
    return Facts(complete_runs(paths), logs, protocols, rotation_order(protocols, series),
                 cadence or load_cadence(), heartbeats, open_runs(paths),
                 budget_mod.budget_cuts(paths), declared_models(paths),
                 [e for e in budget_mod.ledger_entries(paths) if e.get("job") == job_table.SUBJECT_FINGERPRINT])


def archive_start(facts: Facts) -> Optional[Date]:
    """The first day anything happened: a run, an instrument record, a skip, a model configuration."""
    dates = [str(r["run_date"]) for r in facts.runs]
    for kind in ("runtime_fingerprint", "guard_rotation", "subject_fingerprint", "skip", "subject_model"):
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


class _Observer:
    """Conditions observed for one job and period (each with its reason)."""

    def __init__(self, facts: Facts, start: Date, through: Date, now: datetime) -> None:
        self.facts = facts
        self.start = start
        self.through = through
        self.now = now
        self.deadman = facts.cadence.every("deadman_alert")
        self.dormant_after = facts.cadence.every("dormant_after")
        self.run_dates = sorted(_day(str(r["run_date"])[:10]) for r in facts.runs)
        self.skips = facts.logs.get("skip", [])
        self.closures = sorted((str(r.get("date")), r) for r in facts.logs.get("series_closed", []))
        self.switches = sorted(str(r.get("date")) for r in facts.logs.get("subject_model", []))
        self.bridges = [b for b in facts.logs.get("generation_bridge", []) if b.get("status") == "pending"]
        self.beat_days = {t.date() for t in facts.heartbeats}
        self.sweep_open = [r for r in facts.open_runs if is_sweep_run(r, facts.declared_models)]
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
                return f"series closed on {when}: {record.get('reason')}"
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
        why = f"budget cut of {cut['date'][:10]} to {level.describe()}: {cut.get('reason') or cut.get('step')}"
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
            slots = f"{run.get('n_trials_recorded')}/{run.get('n_trials_planned')} trials"
            own = run.get("protocol_id") == protocol_id
            stop = run.get("interruption") if isinstance(run.get("interruption"), dict) else {}
            rest = "" if own else "; the sweep stopped there"
            if status == "interrupted" and stop.get("condition") == "provider_unreachable":
                # A call that never got an answer stops the run and the sweep: the rest of it is the same outage.
                found.setdefault("run_left_interrupted",
                                 f"run {run.get('run_id')} stopped interrupted with {slots} ({stop.get('detail')}) "
                                 f"and the period ended with its slots open" + rest)
            elif status == "interrupted" and (stop.get("condition") == "storage_write_failed"
                                              or stop.get("cause") == "write_failed"):
                # The archive could not keep what it received: the run and the sweep stopped there.
                found.setdefault("storage_write_failed",
                                 f"run {run.get('run_id')} stopped with {slots}: a write failed "
                                 f"({stop.get('detail')}) and the period ended with its slots open" + rest)
            elif status == "interrupted" and stop.get("condition") == "budget_refused":
                found.setdefault("budget_refused", f"run {run.get('run_id')} stopped with {slots}: the next call's "
                                                   f"worst case did not fit the pool ({stop.get('detail')})" + rest)
            elif status in ("interrupted", "running") and own:
                what = (f"stopped ({stop.get('cause')}: {stop.get('detail')})" if stop
                        else "was interrupted" if status == "interrupted" else "was left running (its process died)")
                found.setdefault("run_abandoned", f"run {run.get('run_id')} {what} with {slots} and nobody resumed "
                                                  "it in the period")
            elif status == "halted" and own:
                found.setdefault("provider_refused_request",
                                 f"run {run.get('run_id')} halted with {slots}: the provider refused it")
        return found

    def instrument_unavailable(self, job: Job, day: Date) -> Optional[str]:
        """The instrument job's record of ``day`` says it could not run (``unavailable``)."""
        kind, field_name = INSTRUMENT_LOGS[job.name]
        for r in self.facts.logs.get(kind, []):
            if str(r.get("date")) == day.isoformat() and r.get(field_name) == "unavailable":
                return f"{job.name} on {day} could not run: {r.get('reason')}"
        return None

    def started(self, job: Job, first: Date, last: Date, protocol_id: Optional[str]) -> bool:
        """Whether anything shows the paid job was started for this period (then "nobody started it" is false).

        For the sweep: a run folder of the sweep's for the protocol dated in
        the period, complete or not.  For the subject fingerprint: spend
        reserved or charged for one of the day's items.
        """
        lo, hi = first.isoformat(), last.isoformat()
        if job.name == job_table.FULL_SWEEP:
            return any(run.get("protocol_id") == protocol_id and lo <= str(run.get("run_date"))[:10] <= hi
                       for run in [*self.facts.runs, *self.facts.open_runs]
                       if is_sweep_run(run, self.facts.declared_models))
        if job.name == job_table.SUBJECT_FINGERPRINT:
            prefix = f"{job_table.SUBJECT_FINGERPRINT}/{lo}/"
            return any(str(e.get("call_key", "")).startswith(prefix) for e in self.facts.spend)
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
        reason = self.dormant(min(last, self.through))
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
        lo, hi = first.isoformat(), last.isoformat()
        for skip in self.skips:
            when = str(skip.get("date"))[:10]
            if not lo <= when <= hi:
                continue
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
                found.setdefault(condition, f"{skip.get('job')} on {when}: {skip.get('reason')}"
                                 + ("" if mine or provider_wide else "; the sweep stopped there"))
        days = _days(first, min(last, self.through))
        if kind == "day":
            absent = [r for r in (self.no_cycle_on(d) for d in days) if r]
        else:
            absent = [r for r in (self.deadman_around(d) for d in days) if r]
        if kind == "day" and job.name in INSTRUMENT_LOGS:
            reason = self.instrument_unavailable(job, first)
            if reason:
                found["instrument_unavailable"] = reason
        if absent:
            found["no_daily_cycle"] = absent[0]
        elif (kind == "day" and not job.commercial and last < self.through
              and "instrument_unavailable" not in found):
            found["cycle_step_missing"] = (f"the daily cycle ran on {first} but {job.name} recorded nothing: its "
                                           "step failed or was not run, and nobody re-ran it that day")
        if job.commercial and not self.started(job, first, last, protocol_id):
            schedule = "monthly_sweep_schedule" if job.name == job_table.FULL_SWEEP else "daily_subject_fingerprint_schedule"
            found["paid_job_not_started"] = (f"{job.name} is paid and manual: nobody started it for "
                                             f"{first if kind == 'day' else f'{first:%Y-%m}'} ({schedule} is "
                                             "created stopped; the owner starts it)")
        return found


def _output(facts: Facts, job: Job, first: Date, last: Date, protocol_id: Optional[str],
            by_date: dict[str, dict[str, list[dict]]]) -> Optional[tuple[Optional[str], str]]:
    """``(run_id, detail)`` when the job produced output in the period, else None."""
    if job.name == job_table.FULL_SWEEP:
        for run in facts.runs:
            when = str(run["run_date"])[:10]
            if (run.get("protocol_id") == protocol_id and is_sweep_run(run, facts.declared_models)
                    and first.isoformat() <= when <= last.isoformat()):
                return run["run_id"], f"run {run['run_id']} on {run.get('subject_model_id')} ({when})"
        return None
    kind = {"subject_fingerprint": "subject_fingerprint", "runtime_fingerprint": "runtime_fingerprint",
            "guard_margin_rotation": "guard_rotation", "revalidation_daily": "revalidation"}[job.name]
    found = by_date[kind].get(first.isoformat(), [])
    if job.name in INSTRUMENT_LOGS:
        # A record that says the job could not run is no output (instrument_unavailable explains the day).
        status_field = INSTRUMENT_LOGS[job.name][1]
        found = [r for r in found if r.get(status_field) != "unavailable"]
    if not found:
        return None
    r = found[-1]
    if kind == "runtime_fingerprint":
        return None, f"status {r.get('status')}"
    if kind == "guard_rotation":
        return r.get("run_id"), f"{r.get('protocol_id')}: {r.get('verdict')}"
    if kind == "subject_fingerprint":
        return None, f"{r.get('subject_model_id')}: {r.get('correct')}/{r.get('total')} correct"
    statuses = sorted({str(x.get("status")) for x in found})
    return None, f"{len(found)} measurement(s) recomputed: {', '.join(statuses)}"


def compute(paths: ArchivePaths, through: str, since: Optional[str] = None, *, facts: Optional[Facts] = None,
            jobs: Sequence[str] = JOB_NAMES, periods: Optional[Sequence[str]] = None,
            now: Optional[datetime] = None) -> Coverage:
    """Coverage rows for every scheduled job and period from the archive's start through ``through``.

    ``since`` (YYYY-MM-DD) reaches back before the archive's start (those
    periods are ``before_archive_start``); ``periods`` limits the rows to
    those period labels (a day or a month).
    """
    facts = facts or gather(paths)
    end = _day(through)
    now = now or datetime.now(timezone.utc)
    start = archive_start(facts)
    rows: list[dict] = []
    unexplained: list[tuple] = []
    pending: list[tuple] = []
    if start is None:
        return Coverage(rows, unexplained, pending, None, through)
    begin = min(start, _day(since)) if since else start
    observer = _Observer(facts, start, end, now)
    by_date = {kind: facts.by_date(kind) for kind in ("subject_fingerprint", "runtime_fingerprint",
                                                     "guard_rotation", "revalidation")}
    first_run = observer.run_dates[0] if observer.run_dates else None
    for job in (j for j in JOBS if j.name in jobs):
        kind = period_kind(facts.cadence, job)
        if kind == "month":
            slots = [(m, *month_bounds(m)) for m in _months(begin, end)]
        else:
            slots = [(d.isoformat(), d, d) for d in _days(begin, end)]
        for label, first, last in slots:
            if periods is not None and label not in periods:
                continue
            ended = last < end
            targets: list[Optional[str]]
            if job.per_protocol:
                targets = [p["protocol_id"] for p in facts.protocols
                           if not p.get("admitted_on") or p["admitted_on"] <= last.isoformat()
                           or last < start]
            elif job.name == "guard_margin_rotation":
                from llmarchive.instrument.rotation import scheduled_protocol
                due = scheduled_protocol(facts.guard_order, first.isoformat())
                admitted_on = next((p.get("admitted_on") for p in facts.protocols if p["protocol_id"] == due), None)
                if due is None or (admitted_on and admitted_on > last.isoformat() and last >= start):
                    continue   # no guard protocol was admitted yet: nothing was scheduled
                targets = [due]
            else:
                targets = [None]
            if job.name == "revalidation_daily" and (first_run is None or first <= first_run) and last >= start:
                continue   # nothing historical to recompute yet: not scheduled
            for pid in targets:
                out = _output(facts, job, first, last, pid, by_date) if last >= start else None
                base = {"period": label, "job": job.name, "series": job.series, "protocol_id": pid}
                if out is not None:
                    rows.append({**base, "status": "ran", "cause": None, "run_id": out[0], "detail": out[1]})
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
                             "run_id": None, "detail": f"{winner}: {found[winner]}"})
    return Coverage(rows, unexplained, pending, start.isoformat(), through)


def _latest(paths: ArchivePaths) -> dict[tuple, dict]:
    latest: dict[tuple, dict] = {}
    for r in records.read(paths, "coverage"):
        latest[(r.get("period"), r.get("job"), r.get("series"), r.get("protocol_id"))] = r
    return latest


def write_rows(paths: ArchivePaths, rows: Iterable[dict]) -> list[dict]:
    """Append every row whose status, cause or run differs from the latest recorded for its key, as one batch.

    One locked, fsynced write for the whole set: a month's coverage is in the
    log entirely or not at all, and costs about as much as one row.  A gap
    row is written under SPEC's record type ``coverage_gap``.
    """
    latest = _latest(paths)
    changed = []
    for row in rows:
        key = (row["period"], row["job"], row["series"], row["protocol_id"])
        old = latest.get(key)
        if old is not None and all(old.get(k) == row[k] for k in ("status", "cause", "run_id")):
            continue
        latest[key] = row
        changed.append(row)
    return records.append_many(paths, "coverage", changed) if changed else []


def record_coverage(paths: ArchivePaths, through: str, since: Optional[str] = None, **kwargs) -> Coverage:
    """Compute, write the explained rows, then raise :class:`UnexplainedGap` if any period has no cause."""
    result = compute(paths, through, since, **kwargs)
    write_rows(paths, result.rows)
    if result.unexplained:
        shown = "; ".join(f"{job} {period}{' ' + pid if pid else ''}" for job, period, pid in result.unexplained[:20])
        more = len(result.unexplained) - 20
        raise UnexplainedGap(
            f"{len(result.unexplained)} scheduled period(s) have no output and no observed condition: {shown}"
            + (f" and {more} more" if more > 0 else "")
            + ". Every gap needs exactly one cause; find why the job neither ran nor recorded a skip.",
            result.unexplained)
    return result
