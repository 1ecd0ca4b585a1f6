"""Starting a paid run: one function for every entry point that spends money on scenario calls.

(A free subject — the reference model — goes through the same function: it
skips the money, is never refused for want of a pre-registration, and is
marked, held and flagged by the same rules.)

``llmarchive run``, the monthly sweep (and so the Dagster commercial
partitions, which call the sweep) and the generation bridge all start a run
of one protocol on a billed subject through :func:`start_paid_run`, so the
rules below are decided in one place and in one order:

1. **Which pool may pay.**  A scenario run is a ``manual``, ``full_sweep`` or
   ``bridge`` job.  Only a generation bridge may spend the bridge reserve
   (``job="bridge"`` must name the bridge it belongs to), and no scenario run
   ever draws on the heartbeat reserve, which only ``subject_fingerprint``
   may reach.
2. **Pre-registration.**  The protocol's hashes are looked up in the stamped
   manifests (:func:`llmarchive.protocols.prereg.is_preregistered`).  What an unlisted
   protocol means depends on the job, never on the caller
   (:data:`UNREGISTERED`): the unattended sweep refuses it and records a
   ``skip`` (condition ``not_preregistered``, cause ``protocol_confounded``)
   before anything is spent; a hand-started run goes ahead marked
   ``exploratory``, so it is on no curve; a bridge notes the answer in
   ``run.json``.
3. **Budget.**  The ladder and the pool are asked once, for the calls the
   run still has to make (:func:`llmarchive.budget.earmark_run`, which
   records a ``budget_halted`` skip when it refuses), and what they cost is
   *earmarked* for as long as the run lives, so a run started beside it is
   judged as if this one had already spent it (method §9.4); a run already
   being worked on elsewhere is refused (``RunBusy``).  The permission is of
   the month of the decision day, and every call of the run is charged to
   that month (a run dated November and resumed in December: November).
   The ledger read for that decision is the run's meter's too: a start
   reads it once.  An explicitly
   unbudgeted run (``--unbudgeted``: a server nobody pays for) is charged
   to no pool, whether or not a ``budget.json`` exists; without one, no
   other run may go ahead.
4. **Hold.**  A model id nobody declared the family's model (an open
   ``needs_review``, or a new id of the tracked family with no declaration,
   :func:`llmarchive.succession.review.hold_reason`) is kept off the curves: its run is
   marked ``exploratory`` with the reason — unless the caller already
   writes it under the held folders (the bridge, :class:`llmarchive.succession.review.ReviewPaths`).
5. **Instrument.**  A run is ``instrument_suspect`` when the day it is dated
   has no passing runtime fingerprint, an alarm is latched, or — for a
   resumed run — the day its calls are made has no passing fingerprint.
6. **The run** itself (:func:`llmarchive.run.runner.run_protocol`): resumable,
   reserving each attempt's worst case before it leaves.

A refusal is :class:`PaidRunRefused` (its ``condition`` is a coverage
condition and the skip is already recorded); a request that cannot be
served as asked is :class:`PaidRunError`.
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths, cause_for, jobs as job_table, record_skip, utc_today
from llmarchive.budget import Earmark
from llmarchive.instrument import suspect_value
from llmarchive.run import (Progress, RunHalted, RunInterrupted, RunResult, RunSettings, preregistration,
                            protocol_header, recorded_trials, run_protocol, schedule)
from llmarchive.succession import ReviewPaths, mark_held
from measure.errors import ArchiveError

# The scenario jobs a paid run may be, and the pool each must be paid from.
PAID_RUN_POOLS = {job_table.MANUAL: "general", job_table.FULL_SWEEP: "general", job_table.BRIDGE: "bridge"}
# What a protocol missing from every stamped manifest means, per job.
UNREGISTERED = {job_table.FULL_SWEEP: "refuse", job_table.MANUAL: "exploratory", job_table.BRIDGE: "note"}
BRIDGE_ONLY = ("the bridge reserve is spent only by a pending generation bridge, run with "
               "`llmarchive bridge run` (see `llmarchive bridge status`)")


class PaidRunError(ArchiveError):
    """A paid run that cannot be started as asked (wrong job, no budget); nothing was spent."""


class PaidRunRefused(ArchiveError):
    """A run the rules do not allow today; the ``skip`` naming ``condition`` is already recorded."""

    def __init__(self, protocol_id: str, condition: str, reason: str) -> None:
        super().__init__(reason if reason.startswith(protocol_id) else f"{protocol_id} may not run: {reason}")
        self.protocol_id = protocol_id
        self.condition = condition          # a coverage condition: not_preregistered | budget_refused
        self.reason = reason

    @property
    def cause(self) -> str:
        """The coverage cause the recorded skip carries (``protocol_confounded``, ``budget_halted``)."""
        return cause_for([self.condition])


def paid_job(job: str) -> str:
    """The job's one name (:mod:`llmarchive.archive.jobs`; an older name such as ``sweep`` is accepted)."""
    try:
        return job_table.canonical(job)
    except job_table.UnknownJob:
        return job   # check_job refuses it, naming the jobs a paid run may be


def check_job(job: str, bridge: Optional[Mapping] = None) -> str:
    """The pool ``job`` is paid from; refuse a job no paid run may be (rule 1 of the module docstring)."""
    job = paid_job(job)
    if job not in PAID_RUN_POOLS:
        raise PaidRunError(f"a paid run is one of the jobs {', '.join(PAID_RUN_POOLS)}, not {job!r} "
                           "(the heartbeat reserve pays subject_fingerprint only)")
    if job == "bridge" and not bridge:
        raise PaidRunError(f"job bridge is refused here: {BRIDGE_ONLY}")
    return PAID_RUN_POOLS[job]


def preregistration_guard(paths: ArchivePaths, protocol: Mapping, job: str, day: str, *,
                          record: bool = True, known: Optional[Mapping] = None) -> dict:
    """``{"listed", "reason"}`` for ``protocol``; for a job that refuses unlisted protocols, refuse.

    The refusal records its ``skip`` first (``record=False`` leaves it
    unrecorded, for a sweep pass that is not responsible for that protocol).
    ``known`` is the answer already worked out for this protocol's hashes
    (the month's sweep plan, :mod:`llmarchive.schedule.month_plan`); then
    ``protocol`` need only carry its ``protocol_id``.
    """
    job = paid_job(job)
    prereg = dict(known) if known is not None else preregistration(paths, protocol)
    if not prereg["listed"] and UNREGISTERED[job] == "refuse":
        reason = f"not_preregistered: {prereg['reason']}"
        if record:
            record_skip(paths, day, job, protocol["protocol_id"], "not_preregistered", reason)
        raise PaidRunRefused(protocol["protocol_id"], "not_preregistered", reason)
    return prereg


def authorize(paths: ArchivePaths, protocol: Mapping, job: str, run_id: str, day: str, *,
              budget: Optional[budget_mod.Budget], unbudgeted: bool = False,
              all_headers: Optional[Sequence[Mapping]] = None,
              run_paths: Optional[ArchivePaths] = None,
              ) -> tuple[budget_mod.Authorization, Optional[Earmark], Optional[budget_mod.LedgerView]]:
    """The budget's permission for the calls this run still has to make (rule 3), its earmark, or a refusal.

    The caller releases the earmark when the run ends (None: nothing is earmarked —
    an unbudgeted run, or one with no call left to make), and gives the run's
    meter the ledger as the permission read it (None: not read), so a start
    reads the ledger once.  The permission names the month of ``day``: the
    month every entry of the run is charged to (method §9.4).
    """
    job = paid_job(job)
    if job not in PAID_RUN_POOLS:
        check_job(job)
    pool = PAID_RUN_POOLS[job]
    if unbudgeted:
        # Asked for by name (a server the owner pays nothing for): charged to no pool whether or not a
        # budget.json exists, and run.json says budgeted: false.  The unattended sweep never asks for it.
        if job == job_table.FULL_SWEEP:
            raise PaidRunError("the monthly sweep is always budgeted: --unbudgeted applies to a manual run or a "
                               "bridge on a server you pay nothing for")
        return budget_mod.unbudgeted(job, date=day), None, None
    if budget is None:
        raise PaidRunError(f"{paths.budget_file} does not exist: paid calls need a budget "
                           "(`llmarchive budget init …`), or pass --unbudgeted for a server you pay nothing for")
    remaining = len(schedule(protocol)) - recorded_trials(run_paths or paths, run_id)
    try:
        authorization, earmark, ledger = budget_mod.earmark_run(paths, budget, protocol_header(protocol), job,
                                                                max(remaining, 0), all_headers, date=day,
                                                                run_id=run_id)
    except budget_mod.BudgetHalted as exc:
        raise PaidRunRefused(protocol["protocol_id"], "budget_refused", str(exc)) from None
    if authorization.pool != pool:   # the reserves are never reached by the daily cycle
        if earmark is not None:
            earmark.release()
        raise PaidRunError(f"job {job} would be paid from the {authorization.pool} pool; it may use {pool} only")
    return authorization, earmark, ledger


def _joined(*values: Union[bool, str]) -> Union[bool, str]:
    parts: list[str] = []
    for value in values:
        if isinstance(value, str) and value and value not in parts:
            parts.append(value)
    return "; ".join(parts) if parts else False


def suspect(paths: ArchivePaths, day: str, run_id: str, run_paths: Optional[ArchivePaths] = None) -> Union[bool, str]:
    """``instrument_suspect`` for a run started or resumed on ``day`` (rule 5)."""
    dated = suspect_value(run_paths or paths, day, run_id)   # the run's own date (stored when resuming) + latch
    return _joined(dated, suspect_value(paths, day))          # and the day the calls are made


@dataclass
class PaidRun:
    """What the caller decides about one paid run; the rules decide the rest."""

    job: str
    run_id: str
    day: Optional[str] = None                 # the decision day (skips, ladder, instrument); default today
    run_date: Optional[str] = None            # for RunSettings (None: stored on resume, else ``day``)
    series: Optional[str] = None
    model_family: Optional[str] = None
    concurrency: int = 1
    unbudgeted: bool = False
    allow_generation_override: bool = False
    bridge: Optional[Mapping[str, Any]] = None    # job "bridge": the bridge's ids, role and first run date
    extra: Mapping[str, Any] = field(default_factory=dict)


def start_paid_run(paths: ArchivePaths, protocol: Mapping, subject: Any, request: PaidRun, *,
                   budget: Optional[budget_mod.Budget] = None, all_headers: Optional[Sequence[Mapping]] = None,
                   run_paths: Optional[ArchivePaths] = None, config: Any = None,
                   progress: Optional[Progress] = None, say: Optional[Callable[[str], None]] = None,
                   record_refusal: bool = True, preregistered: Optional[Mapping] = None) -> RunResult:
    """Start (or resume) one paid run under every rule of the module docstring, in its order.

    ``budget`` is the loaded ``budget.json`` (None: read it here);
    ``all_headers`` lets the ladder rank the protocol among every protocol
    it would rank (the sweep's pool); ``run_paths`` is where the run folder
    lives when not under ``paths`` (the bridge's held folders); ``config``
    is the tracked family (default: ``subject_models.yaml``); ``preregistered`` the
    pre-registration answer the caller already has for this protocol (the
    month's sweep plan; None: asked here).  Raises
    :class:`PaidRunRefused` (skip recorded) or :class:`PaidRunError` before
    any call, and whatever :func:`llmarchive.run.runner.run_protocol` raises after.
    """
    job, run_id = paid_job(request.job), request.run_id
    day = request.day or request.run_date or utc_today()
    check_job(job, request.bridge)
    billed = bool(subject.billed)
    # A free subject spends nothing: it is never refused, only marked (the rules for "manual").
    rule = UNREGISTERED[job] if billed else UNREGISTERED["manual"]
    prereg = preregistration_guard(paths, protocol, job if billed else "manual", day, record=record_refusal,
                                   known=preregistered)
    authorization, earmark, ledger = None, None, None
    if billed:
        if budget is None:
            budget = budget_mod.load_budget(paths)
        authorization, earmark, ledger = authorize(paths, protocol, job, run_id, day, budget=budget,
                                                   unbudgeted=request.unbudgeted, all_headers=all_headers,
                                                   run_paths=run_paths)
    try:
        return _start(paths, protocol, subject, request, prereg, rule, (authorization, ledger), budget, run_paths,
                      config, progress, say)
    finally:
        if earmark is not None:
            earmark.release()


def _start(paths: ArchivePaths, protocol: Mapping, subject: Any, request: PaidRun, prereg: dict, rule: str,
           permission: tuple[Optional[budget_mod.Authorization], Optional[budget_mod.LedgerView]],
           budget: Optional[budget_mod.Budget], run_paths: Optional[ArchivePaths], config: Any,
           progress: Optional[Progress], say: Optional[Callable[[str], None]]) -> RunResult:
    """Rules 4-6 of the module docstring for a run already authorised: hold, instrument, the run itself.

    ``permission`` is the authorisation and the ledger it was judged on (which the run's meter takes over).
    """
    authorization, ledger = permission
    job, run_id = paid_job(request.job), request.run_id
    day = request.day or request.run_date or utc_today()
    exploratory: Union[bool, str] = False
    if not prereg["listed"] and rule == "exploratory":
        exploratory = f"not pre-registered: {prereg['reason']}"
    if not isinstance(run_paths, ReviewPaths):      # a held folder already keeps the run off every curve
        exploratory = mark_held(paths, subject.subject_model_id, request.model_family, exploratory, config)
    instrument = suspect(paths, day, run_id, run_paths)
    if instrument and say is not None:
        say(f"{instrument} — this run's measurement will be flagged instrument_suspect")

    extra = {"job": job, "preregistration": prereg, **dict(request.extra)}
    if request.bridge:
        extra["bridge"] = dict(request.bridge)
    settings = RunSettings(run_id=run_id, run_date=request.run_date, series=request.series,
                           model_family=request.model_family, concurrency=request.concurrency,
                           exploratory=exploratory, allow_generation_override=request.allow_generation_override,
                           instrument_suspect=instrument, extra=extra)
    if say is not None:
        say(f"run {run_id}: {protocol['protocol_id']} on {subject.subject_model_id}")
    return run_protocol(run_paths or paths, protocol, subject, settings, authorization=authorization, budget=budget,
                        progress=progress, ledger=ledger)


# --------------------------------------------------------------------------
# a pass of runs: the sweep's month, the bridge's two halves
# --------------------------------------------------------------------------

@dataclass
class Turn:
    """One run a pass starts: its protocol (loaded once by the pass), the model, the request, where it lives."""

    protocol: Mapping
    model: str
    request: PaidRun
    run_paths: Optional[ArchivePaths] = None     # the held folders of a bridge run kept for review
    preregistered: Optional[Mapping] = None      # its pre-registration, when the pass already knows it


@dataclass
class Ended:
    """How one turn's run ended: complete or not (``result``), refused before any call, or stopped mid-way."""

    turn: Turn
    result: Optional[RunResult] = None
    refused: Optional[PaidRunRefused] = None     # the skip is recorded; the pass may go on
    stopped: Optional[RunHalted] = None          # RunInterrupted (no answer) or RunHalted (a refused request)

    @property
    def interrupted(self) -> bool:
        """No usable answer from the provider (or the pool's cap, or a failed write): the slots stay open."""
        return isinstance(self.stopped, RunInterrupted)

    @property
    def condition(self) -> Optional[str]:
        """The coverage condition of how it ended (None for a run that ended normally, or an unnamed stop)."""
        if self.refused is not None:
            return self.refused.condition
        if self.interrupted:
            return self.stopped.interruption.get("condition")
        return "provider_refused_request" if self.stopped is not None else None


def start_each(paths: ArchivePaths, turns: Iterable[Turn], subject_factory: Callable[[str, int], Any],
               **options: Any) -> Iterator[Ended]:
    """Start each turn's run in order through :func:`start_paid_run`; yield how each ended.

    The one loop of every pass of paid runs (the sweep, the bridge): each run
    is built its subject (``subject_factory(model, max_tokens)``) and started
    under every rule; ``options`` are :func:`start_paid_run`'s.  A refusal
    ends that run only (its skip is recorded; the pass goes on to the next);
    a run that stopped — the provider gave no answer, or refused the request —
    ends the pass: nothing after it is started.  ``turns`` is read one at a
    time, so a pass may decide each run's folder after the previous one ended.
    What a stop means (a skip for the rest of the month, a bridge left
    incomplete) is the caller's to record, from :attr:`Ended.condition`.
    """
    for turn in turns:
        subject = subject_factory(turn.model, turn.protocol["generation"]["max_tokens"])
        try:
            result = start_paid_run(paths, turn.protocol, subject, turn.request, run_paths=turn.run_paths,
                                    preregistered=turn.preregistered, **options)
        except PaidRunRefused as refused:
            yield Ended(turn, refused=refused)
            continue
        except RunHalted as stopped:
            yield Ended(turn, stopped=stopped)
            return
        yield Ended(turn, result=result)
