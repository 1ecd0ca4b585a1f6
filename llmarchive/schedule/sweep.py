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
   manual or exploratory run of it is not the sweep's, :func:`llmarchive.archive.store.is_sweep_run`).

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
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Optional

from llmarchive import budget as budget_mod
from llmarchive.schedule.bridge import bridge_in_month
from llmarchive.archive import jobs as job_table
from llmarchive.archive.store import complete_runs, has_run, is_sweep_run
from llmarchive.archive.skips import record_skip
from llmarchive.archive.paths import ArchivePaths
from llmarchive.succession.subject_models import SubjectModels, active_model
from llmarchive.subjects.base import SubjectError


@dataclass
class SweepOutcome:
    date: str
    model_id: str
    ran: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)   # (protocol_id, condition, reason)
    halted: Optional[str] = None
    coverage_rows: list[dict] = field(default_factory=list)   # filled by llmarchive.schedule.month_sweep.sweep_month


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "model"


def sweep_run_id(day: str, protocol_id: str, model_id: str) -> str:
    return f"sweep_{day[:7]}_{protocol_id}_{_slug(model_id)}"


def _series_closed(paths: ArchivePaths, config: SubjectModels) -> Optional[str]:
    from llmarchive.archive import record_logs as records

    closed = [r for r in records.read(paths, "series_closed") if r.get("model_family") == config.model_family]
    if not closed:
        return None
    last = closed[-1]
    reopened = [r for r in records.read(paths, "subject_model")
                if r.get("model_family") == config.model_family and str(r.get("recorded_at")) > str(last.get("recorded_at"))]
    return None if reopened else f"series closed on {last.get('date')}: {last.get('reason')}"


def sweep(paths: ArchivePaths, day: str, config: SubjectModels, *,
          subject_factory: Callable[[str, int], Any], provider_check: Optional[Callable[[], None]] = None,
          concurrency: int = 4, budget: Optional[budget_mod.Budget] = None, progress=None,
          only: Optional[Collection[str]] = None) -> SweepOutcome:
    """One sweep pass for the month of ``day``; see the module docstring.

    ``only`` restricts the pass to some protocols (one Dagster partition is
    one protocol of one month): the budget ladder still ranks the whole
    month's candidates, so which protocols a rung keeps does not depend on
    the order partitions run in, but only the chosen protocols are run and
    have their skips recorded.  The month's coverage rows are then left to
    the coverage job, which sees every protocol at once.
    """
    from llmarchive.protocols import registry
    from llmarchive.schedule.paid_run import PaidRun, PaidRunRefused, preregistration_guard, start_paid_run
    from llmarchive.run.runner import RunHalted, RunInterrupted

    model = active_model(paths, config)
    # Pre-flight: building the subject reads the key and the base URL; a missing key or a malformed URL is our
    # mistake, not the provider's outage, and raises (SubjectSettingsError) before anything below is recorded.
    subject_factory(model, 1)
    out = SweepOutcome(day, model)
    month = day[:7]
    headers = registry.sweep_protocols(paths, config.protocol_series)
    # Only the sweep's own runs are the month's sweep (a manual or exploratory run of a protocol is not).
    done_this_month = {r["protocol_id"]: r["run_id"] for r in complete_runs(paths)
                       if is_sweep_run(r) and str(r.get("run_date"))[:7] == month
                       and r.get("subject_model_id") == model}

    def mine(pid: str) -> bool:
        return only is None or pid in only

    def skip_all(condition: str, reason: str) -> None:
        for h in headers:
            if h["protocol_id"] in done_this_month or not mine(h["protocol_id"]):
                continue
            record_skip(paths, day, job_table.FULL_SWEEP, h["protocol_id"], condition, reason)
            out.skipped.append((h["protocol_id"], condition, reason))

    def finish() -> SweepOutcome:
        return out

    closed = _series_closed(paths, config)
    if closed:
        skip_all("series_closed_without_successor", closed)
        return finish()
    bridge = bridge_in_month(paths, month)
    if bridge is not None:
        skip_all("bridge_preempts_sweep", f"the bridge {bridge['old_model_id']} → {bridge['new_model_id']} raised on "
                                          f"{bridge['date']} takes the {month} sweep")
        return finish()
    if provider_check is not None:
        try:
            provider_check()
        except SubjectError as exc:   # only a failed models list; a bug in this code is no provider gap
            skip_all("provider_unreachable", f"{config.provider} could not be reached: {exc}")
            return finish()

    budget = budget or budget_mod.load_budget(paths)
    if budget is None:
        raise budget_mod.BudgetError(f"{paths.budget_file} does not exist: the sweep is paid work "
                                     "(`llmarchive budget init …`)")
    candidates = []
    for h in headers:
        pid = h["protocol_id"]
        if pid in done_this_month:
            if mine(pid):
                out.already.append(pid)
            continue
        # The guard of every paid run, asked before the ladder ranks anything: an unlisted protocol
        # takes no place a listed one could have.
        try:
            preregistration_guard(paths, registry.load_protocol(paths, pid), job_table.FULL_SWEEP, day, record=mine(pid))
        except PaidRunRefused as refused:
            if mine(pid):
                out.skipped.append((pid, refused.condition, refused.reason))
            continue
        candidates.append(h)
    done_headers = [h for h in headers if h["protocol_id"] in done_this_month]
    candidates = _apply_degradation(paths, budget, day, candidates, out, mine, done_headers)
    plan = (budget_mod.allowed_protocols(paths, candidates, job=job_table.FULL_SWEEP, date=day, budget=budget, record_skips=False)
            if candidates else None)
    if plan is not None:
        plan = dataclasses.replace(plan, allowed=[p for p in plan.allowed if mine(p)],
                                   skipped=[(p, r) for p, r in plan.skipped if mine(p)])
        budget_mod.record_plan_skips(paths, plan, day)
        out.skipped += [(pid, "budget_refused", reason) for pid, reason in plan.skipped]

    all_headers = [h for h in registry.list_protocols(paths) if h.get("n")]
    queue = list(plan.allowed if plan else [])
    for position, pid in enumerate(queue):
        protocol = registry.load_protocol(paths, pid)
        run_id = sweep_run_id(day, pid, model)
        resuming = has_run(paths.run_dir(run_id))
        request = PaidRun(job=job_table.FULL_SWEEP, run_id=run_id, day=day, run_date=None if resuming else day,
                          series="commercial", model_family=config.model_family, concurrency=concurrency)
        try:
            result = start_paid_run(paths, protocol, subject_factory(model, protocol["generation"]["max_tokens"]),
                                    request, budget=budget, all_headers=all_headers, config=config,
                                    progress=progress)
        except PaidRunRefused as refused:     # the ladder, asked again as money is spent; the skip is recorded
            out.skipped.append((pid, refused.condition, refused.reason))
            continue
        except RunInterrupted as exc:
            condition = exc.interruption.get("condition")
            out.halted = str(exc)
            if condition:
                _skip_rest(paths, day, out, queue[position:], condition,
                           f"the sweep stopped at {pid}: {exc.interruption['detail']} "
                           f"({exc.interruption['cause']}, {exc.interruption['at']}); the open slots resume "
                           "with the next sweep this month")
            break
        except RunHalted as exc:
            out.halted = str(exc)
            _skip_rest(paths, day, out, queue[position:], "provider_refused_request", f"the run stopped: {exc}")
            break
        if result.complete:
            out.ran.append(pid)
    return finish()


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
