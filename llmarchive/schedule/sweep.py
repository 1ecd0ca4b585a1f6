"""The monthly sweep: the paid, unattended path (method §8 ``full_sweep``, §9).

:func:`sweep` runs every admitted protocol of the configured series on the
family's active model, once per calendar month, and decides — before any
paid call — what may not run and why, recording each decision:

1. the family's series is closed (active model gone, no declared successor)
   → every protocol skipped, condition ``series_closed_without_successor``;
2. a generation bridge was raised this month → it takes the month's sweep:
   every protocol skipped, condition ``bridge_preempts_sweep``;
3. the provider cannot be reached (the free models list fails) → every
   protocol skipped, ``provider_unreachable``;
4. a protocol that is not pre-registered → skipped as ``not_preregistered``
   (cause ``protocol_confounded``), spending nothing — the guard of every
   paid ``full_sweep`` run (:func:`llmarchive.schedule.paid_run.preregistration_guard`),
   asked here before the ladder ranks the month;
5. the programme's degradation level (:func:`llmarchive.budget.review_degradation`,
   method §9's order of cuts: 12 → 8 → 6 protocols, then quarterly, then the
   tier) → the protocols and months it cuts are skipped as ``budget_refused``
   (cause ``budget_halted``), the reason naming the dated ``budget_cut``; the
   protocols a cut keeps are the ones its record lists, read back on every
   pass (a sweep resumed after an interruption never chooses again);
6. the budget ladder (:func:`llmarchive.budget.allowed_protocols`) → the
   protocols it leaves out are recorded by the budget module (``budget_halted``);
7. a protocol the sweep already measured this month is not run again (a
   manual or exploratory run of it is not the sweep's, :func:`llmarchive.archive.store.is_sweep_run`),
   and one whose run another process is calling now (its money earmarked,
   :mod:`llmarchive.budget.earmarks`) is left to that process: it is ranked
   like a run already done, so the ladder judges the rest exactly as the
   sequential sweep would once that run had finished.  A pass asked to run
   that very protocol (one Dagster partition launched twice) is refused
   (:class:`llmarchive.budget.RunBusy`) before anything is recorded.

Everything allowed then starts through :func:`llmarchive.schedule.paid_run.start_paid_run`,
the one path of every paid run (resumable: a sweep killed mid-way continues
the same run folders): each run is authorised separately, so the ladder is
re-read as money is spent, and marked ``instrument_suspect`` when the day has
no passing runtime fingerprint or an alarm is latched.  When a run stops — the
provider gave no answer (:class:`llmarchive.run.runner.RunInterrupted`, the run
left ``interrupted`` with its slots open), the pool's cap, or a request the
provider refuses — the sweep stops too, and that protocol and every one it
did not reach get a ``skip`` naming the condition (``provider_unreachable``,
``budget_refused``, ``provider_refused_request``), so a month that ends
with slots open has its cause.  The next sweep that month resumes.  The
month's ``full_sweep`` coverage rows are the auditor's, written after a
whole-month pass by :func:`llmarchive.schedule.month_sweep.sweep_month`: a producer of
runs never imports coverage.
"""
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Optional

from llmarchive import budget as budget_mod
from llmarchive.archive import (ArchivePaths, has_run, jobs as job_table, month_sweep_runs, record_skip, series_closure,
                                sweep_run_folder, sweep_run_id)
from llmarchive.protocols import registry
from llmarchive.schedule.bridge import bridge_in_month
from llmarchive.schedule.month_plan import MonthPlan, month_plan
from llmarchive.schedule.paid_run import Ended, PaidRun, PaidRunRefused, Turn, preregistration_guard, start_each
from llmarchive.subjects import SubjectError
from llmarchive.succession import SubjectModels, active_model


@dataclass
class SweepOutcome:
    date: str
    model_id: str
    ran: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)   # (protocol_id, condition, reason)
    halted: Optional[str] = None
    coverage_rows: list[dict] = field(default_factory=list)   # filled by llmarchive.schedule.month_sweep.sweep_month
    # The month's sweep run of each protocol of the pass that has one (run this pass, resumed, or done before):
    # what a caller reads back, instead of making the id again.
    runs: dict[str, str] = field(default_factory=dict)
    protocols: dict[str, dict] = field(default_factory=dict)   # every protocol the pass loaded, by id (loaded once)
    busy: list[str] = field(default_factory=list)   # protocols whose run another process is calling now


@dataclass
class _Pass:
    """One sweep pass: the month, the model, its protocols and what was decided for them so far."""

    paths: ArchivePaths
    day: str
    config: SubjectModels
    out: SweepOutcome
    headers: list[dict]
    done: dict[str, str]                 # protocol_id → run_id of the month's complete sweep runs
    only: Optional[Collection[str]]
    plan: MonthPlan                      # the month's plan (llmarchive.schedule.month_plan): made once a month
    busy: Collection[str] = ()           # protocols whose run another process is calling (an earmark is live)

    def mine(self, pid: str) -> bool:
        """Is ``pid`` this pass's to run and to record skips for (``only``: one Dagster partition)?"""
        return self.only is None or pid in self.only

    def skip(self, pid: str, condition: str, reason: str) -> None:
        record_skip(self.paths, self.day, job_table.FULL_SWEEP, pid, condition, reason)
        self.out.skipped.append((pid, condition, reason))

    def skip_all(self, condition: str, reason: str) -> None:
        for h in self.headers:
            if h["protocol_id"] not in self.done and self.mine(h["protocol_id"]):
                self.skip(h["protocol_id"], condition, reason)

    def protocol(self, pid: str) -> dict:
        """The protocol, loaded (and its hashes checked) once per pass."""
        if pid not in self.out.protocols:
            planned = self.plan.protocols.get(pid)     # read while planning, when this pass made the plan
            self.out.protocols[pid] = planned if planned is not None else registry.load_protocol(self.paths, pid)
        return self.out.protocols[pid]


def sweep(paths: ArchivePaths, day: str, config: SubjectModels, *,
          subject_factory: Callable[[str, int], Any], provider_check: Optional[Callable[[], None]] = None,
          concurrency: int = 4, budget: Optional[budget_mod.Budget] = None, progress=None,
          only: Optional[Collection[str]] = None, protocols: Optional[Mapping[str, dict]] = None) -> SweepOutcome:
    """One sweep pass for the month of ``day``: the steps of the module docstring, in its order.

    1. the model, a pre-flight of its subject and the month's plan — its
       protocols and their pre-registration, worked out by the month's first
       pass and read back by the others (:func:`_open_pass`,
       :mod:`llmarchive.schedule.month_plan`);
    2. the month taken away whole — a closed series, a bridge, an unreachable
       provider (:func:`_month_preempted`);
    3. the pre-registration guard (:func:`_preregistered`);
    4. the programme's degradation level (:func:`_apply_degradation`);
    5. the budget ladder (:func:`_ladder`);
    6. every allowed run started, and how each stopped recorded (:func:`_run_allowed`);
    7. the month's run of each protocol noted for the caller (:func:`_note_runs`).

    ``only`` restricts the pass to some protocols (one Dagster partition is
    one protocol of one month): the budget ladder still ranks the whole
    month's candidates, so which protocols a rung keeps does not depend on
    the order partitions run in, but only the chosen protocols are run and
    have their skips recorded.  The month's coverage rows are then left to
    the coverage job, which sees every protocol at once.  ``protocols`` are
    protocols the caller already loaded, by id: they are not read again.
    """
    p = _open_pass(paths, day, config, subject_factory, only, protocols)
    if not _month_preempted(p, provider_check):
        budget = budget or budget_mod.load_budget(paths)
        if budget is None:
            raise budget_mod.BudgetError(f"{paths.budget_file} does not exist: the sweep is paid work "
                                         "(`llmarchive budget init …`)")
        candidates = _preregistered(p)
        done_headers = [h for h in p.headers if h["protocol_id"] in p.done or h["protocol_id"] in p.busy]
        candidates = _apply_degradation(paths, budget, day, candidates, p.out, p.mine, done_headers)
        _run_allowed(p, _ladder(p, budget, candidates), budget, subject_factory, concurrency, progress)
    _note_runs(p)
    return p.out


def _open_pass(paths: ArchivePaths, day: str, config: SubjectModels, subject_factory: Callable[[str, int], Any],
               only: Optional[Collection[str]], protocols: Optional[Mapping[str, dict]]) -> _Pass:
    """Step 1: the family's active model, its subject built once, the month's protocols and what is done."""
    model = active_model(paths, config)
    # Pre-flight: building the subject reads the key and the base URL; a missing key or a malformed URL is our
    # mistake, not the provider's outage, and raises (SubjectSettingsError) before anything below is recorded.
    subject_factory(model, 1)
    out = SweepOutcome(day, model, protocols=dict(protocols or {}))
    plan = month_plan(paths, day[:7], config.protocol_series)
    headers = plan.headers
    # Only the sweep's own runs are the month's sweep (a manual or exploratory run of a protocol is not).
    done = month_sweep_runs(paths, day[:7], model)
    busy = budget_mod.busy_protocols(paths, day[:7], job_table.FULL_SWEEP) - set(done)
    if only is not None and busy & set(only):
        raise budget_mod.RunBusy(f"the {day[:7]} sweep run of {', '.join(sorted(busy & set(only)))} is being worked "
                                 "on by another process: a second launch of it is refused. Nothing was spent.")
    return _Pass(paths, day, config, out, headers, done, only, plan, busy)


def _month_preempted(p: _Pass, provider_check: Optional[Callable[[], None]]) -> bool:
    """Step 2: a closed series, a bridge raised this month or an unreachable provider skips every protocol."""
    month, config = p.day[:7], p.config
    closed = series_closure(p.paths, config.model_family)
    if closed is not None:
        p.skip_all("series_closed_without_successor", f"series closed on {closed.get('date')}: {closed.get('reason')}")
        return True
    bridge = bridge_in_month(p.paths, month)
    if bridge is not None:
        p.skip_all("bridge_preempts_sweep", f"the bridge {bridge['old_model_id']} → {bridge['new_model_id']} raised "
                                            f"on {bridge['date']} takes the {month} sweep")
        return True
    if provider_check is not None:
        try:
            provider_check()
        except SubjectError as exc:   # only a failed models list; a bug in this code is no provider gap
            p.skip_all("provider_unreachable", f"{config.provider} could not be reached: {exc}")
            return True
    return False


def _preregistered(p: _Pass) -> list[dict]:
    """Step 3: the month's protocols not yet done, less those the pre-registration guard refuses.

    The guard of every paid run, asked before the ladder ranks anything: an
    unlisted protocol takes no place a listed one could have.
    """
    candidates = []
    for h in p.headers:
        pid = h["protocol_id"]
        if pid in p.done:
            if p.mine(pid):
                p.out.already.append(pid)
            continue
        if pid in p.busy:
            p.out.busy.append(pid)
            continue
        try:   # the month's plan holds the answer: no protocol is read to ask it, no manifest read again
            preregistration_guard(p.paths, h, job_table.FULL_SWEEP, p.day, record=p.mine(pid),
                                  known=p.plan.preregistration.get(pid))
        except PaidRunRefused as refused:
            if p.mine(pid):
                p.out.skipped.append((pid, refused.condition, refused.reason))
            continue
        candidates.append(h)
    return candidates


def _ladder(p: _Pass, budget: budget_mod.Budget, candidates: list[dict]) -> list[str]:
    """Step 5: the protocols the budget ladder allows (its skips recorded for this pass's protocols)."""
    if not candidates:
        return []
    plan = budget_mod.allowed_protocols(p.paths, candidates, job=job_table.FULL_SWEEP, date=p.day, budget=budget,
                                        record_skips=False)
    plan = dataclasses.replace(plan, allowed=[pid for pid in plan.allowed if p.mine(pid)],
                               skipped=[(pid, r) for pid, r in plan.skipped if p.mine(pid)])
    budget_mod.record_plan_skips(p.paths, plan, p.day)
    p.out.skipped += [(pid, "budget_refused", reason) for pid, reason in plan.skipped]
    return list(plan.allowed)


def _run_allowed(p: _Pass, allowed: list[str], budget: budget_mod.Budget, subject_factory: Callable[[str, int], Any],
                 concurrency: int, progress) -> None:
    """Step 6: start each allowed run (resuming its folder); a run that stops ends the pass with its cause.

    The ladder is asked again as each run is authorised; a refusal skips that
    protocol only.  A stop — no answer from the provider, the pool's cap, a
    request the provider refuses — skips that protocol and every one not
    reached yet, naming the condition, so a month left with open slots has
    its cause; the next sweep that month resumes.
    """
    all_headers = p.plan.all_headers
    turns = (_turn(p, pid, concurrency) for pid in allowed)     # each folder looked at when its turn comes
    for position, ended in enumerate(start_each(p.paths, turns, subject_factory, budget=budget,
                                                all_headers=all_headers, config=p.config, progress=progress)):
        pid = ended.turn.protocol["protocol_id"]
        if ended.refused is not None:     # the skip is recorded
            p.out.skipped.append((pid, ended.refused.condition, ended.refused.reason))
        elif ended.stopped is not None:
            p.out.halted = str(ended.stopped)
            if ended.condition:
                _skip_rest(p.paths, p.day, p.out, allowed[position:], ended.condition, _stop_reason(ended))
        elif ended.result.complete:
            p.out.ran.append(pid)


def _turn(p: _Pass, pid: str, concurrency: int) -> Turn:
    """The sweep's run of ``pid`` this month: a new folder dated today, or the month's folder resumed as it is."""
    run_id = sweep_run_id(p.day, pid, p.out.model_id)
    p.out.runs[pid] = run_id
    resuming = has_run(p.paths.run_dir(run_id))
    return Turn(p.protocol(pid), p.out.model_id,
                PaidRun(job=job_table.FULL_SWEEP, run_id=run_id, day=p.day, run_date=None if resuming else p.day,
                        series="commercial", model_family=p.config.model_family, concurrency=concurrency),
                preregistered=p.plan.preregistration.get(pid))


def _stop_reason(ended: Ended) -> str:
    """Why the rest of the month is skipped this pass, from how the run stopped."""
    pid = ended.turn.protocol["protocol_id"]
    if ended.interrupted:
        stop = ended.stopped.interruption
        return (f"the sweep stopped at {pid}: {stop['detail']} ({stop['cause']}, {stop['at']}); the open slots "
                "resume with the next sweep this month")
    return f"the run stopped: {ended.stopped}"


def _note_runs(p: _Pass) -> None:
    """Step 7: the month's sweep run of each of the pass's protocols that has one, for the caller to read."""
    for h in p.headers:
        pid = h["protocol_id"]
        if not p.mine(pid) or pid in p.out.runs:
            continue
        if pid in p.done:
            p.out.runs[pid] = p.done[pid]
        elif (folder := sweep_run_folder(p.paths, p.day[:7], pid, p.out.model_id)) is not None:
            p.out.runs[pid] = folder.name


def _skip_rest(paths: ArchivePaths, day: str, out: SweepOutcome, pids: list[str], condition: str,
               reason: str) -> None:
    """The protocol a run stopped at and every one after it: skipped this pass, with the condition seen."""
    for pid in pids:
        record_skip(paths, day, job_table.FULL_SWEEP, pid, condition, reason)
        out.skipped.append((pid, condition, reason))


def _apply_degradation(paths: ArchivePaths, budget: budget_mod.Budget, day: str, candidates: list[dict],
                       out: SweepOutcome, mine: Callable[[str], bool], done: Collection[dict] = ()) -> list[dict]:
    """Review the programme's level (recording any new cut) and keep what it allows this month.

    The protocols a cut keeps are read back from its record
    (:func:`llmarchive.budget.kept_protocols`), never chosen again from the
    protocols still to run: a sweep resumed after some of the kept protocols
    ran must not fill their places with protocols the cut left out.  A new
    cut chooses from the month's whole programme — what ran this month
    (``done``) and what may still run — so what already ran keeps its place.
    """
    if not candidates:
        return candidates
    calls = max(budget_mod.protocol_calls(h) for h in candidates)
    programme = sorted([*done, *candidates], key=lambda h: h["protocol_id"])
    budget_mod.review_degradation(paths, budget, day, calls, programme)
    cuts = budget_mod.budget_cuts(paths)
    if not cuts:
        return candidates
    cut = cuts[-1]
    level, decided = budget_mod.LEVELS[cut["to_level"]], cut["date"]
    why = f"budget_cut of {decided}: the programme is {level.describe()}"
    if not budget_mod.sweep_due(level, day[:7]):
        reason = (why if level.tier_drop else
                  f"{why}; {day[:7]} is not a quarter's sweep month")
        for h in candidates:
            if mine(h["protocol_id"]):
                record_skip(paths, day, job_table.FULL_SWEEP, h["protocol_id"], "budget_refused", reason)
                out.skipped.append((h["protocol_id"], "budget_refused", reason))
        return []
    kept = set(budget_mod.kept_protocols(cut, programme))
    for h in candidates:
        if h["protocol_id"] not in kept and mine(h["protocol_id"]):
            reason = f"{why}; {h['protocol_id']} is not among the {len(kept)} protocols it keeps"
            record_skip(paths, day, job_table.FULL_SWEEP, h["protocol_id"], "budget_refused", reason)
            out.skipped.append((h["protocol_id"], "budget_refused", reason))
    return [h for h in candidates if h["protocol_id"] in kept]
