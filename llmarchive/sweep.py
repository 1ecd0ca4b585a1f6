"""The monthly sweep: the paid, unattended path (SPEC §8 ``full_sweep``, §9).

:func:`sweep` runs every admitted protocol of the configured series on the
family's active model, once per calendar month, and decides — before any
paid call — what may not run and why, recording each decision:

1. the family's series is closed (active model gone, no declared successor)
   → every protocol skipped, condition ``series_closed_without_successor``;
2. a generation bridge was raised this month → it takes the month's sweep:
   every protocol skipped, condition ``bridge_preempts_sweep``;
3. the provider cannot be reached (the free models list fails) → every
   protocol skipped, ``provider_unreachable``;
4. a protocol that is not pre-registered (:func:`llmarchive.prereg.is_preregistered`)
   → skipped as ``not_preregistered`` (cause ``protocol_confounded``),
   spending nothing;
5. the budget ladder (:func:`llmarchive.budget.allowed_protocols`) → the
   protocols it leaves out are recorded by the budget module (``budget_halted``);
6. a protocol already measured this month is not run again.

Everything allowed then runs through the runner (resumable: a sweep killed
mid-way continues the same run folders), each run authorised separately
so the ladder is re-read as money is spent, and marked ``instrument_suspect``
when the day has no passing runtime fingerprint.  Finally the month's
``full_sweep`` coverage rows are written.
"""
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Optional

from llmarchive import budget as budget_mod
from llmarchive.bridge import bridge_in_month
from llmarchive.coverage import complete_runs, compute, record_skip, sweep_protocols, write_rows
from llmarchive.paths import ArchivePaths
from llmarchive.subject_models import SubjectModels, active_model


@dataclass
class SweepOutcome:
    date: str
    model_id: str
    ran: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)   # (protocol_id, condition, reason)
    halted: Optional[str] = None
    coverage_rows: list[dict] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "model"


def sweep_run_id(day: str, protocol_id: str, model_id: str) -> str:
    return f"sweep_{day[:7]}_{protocol_id}_{_slug(model_id)}"


def _series_closed(paths: ArchivePaths, config: SubjectModels) -> Optional[str]:
    from llmarchive import records

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
    from llmarchive.instrument.verdict import day_verdict
    from llmarchive.prereg import is_preregistered
    from llmarchive.runner import RunHalted, RunSettings, protocol_header, recorded_trials, run_protocol, schedule
    from panels import registry

    model = active_model(paths, config)
    out = SweepOutcome(day, model)
    month = day[:7]
    headers = sweep_protocols(paths, config.protocol_series)
    done_this_month = {r["protocol_id"]: r["run_id"] for r in complete_runs(paths)
                       if r.get("series") == "commercial" and str(r.get("run_date"))[:7] == month
                       and r.get("job") != "bridge" and r.get("subject_model_id") == model}

    def mine(pid: str) -> bool:
        return only is None or pid in only

    def skip_all(condition: str, reason: str) -> None:
        for h in headers:
            if h["protocol_id"] in done_this_month or not mine(h["protocol_id"]):
                continue
            record_skip(paths, day, "sweep", h["protocol_id"], condition, reason)
            out.skipped.append((h["protocol_id"], condition, reason))

    def finish() -> SweepOutcome:
        if only is not None:
            return out
        rows = compute(paths, day, jobs=("full_sweep",), periods=(month,)).rows
        out.coverage_rows = write_rows(paths, rows)
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
        except Exception as exc:
            skip_all("provider_unreachable", f"{config.provider} could not be reached: {exc}")
            return finish()

    budget = budget or budget_mod.load_budget(paths)
    if budget is None:
        raise budget_mod.BudgetError(f"{paths.budget_file} does not exist: the sweep is paid work "
                                     "(`llmarchive budget init …`)")
    candidates = []
    prereg_reason: dict[str, str] = {}
    for h in headers:
        pid = h["protocol_id"]
        if pid in done_this_month:
            if mine(pid):
                out.already.append(pid)
            continue
        protocol = registry.load_protocol(paths, pid)
        listed, why = is_preregistered(paths, protocol)
        if not listed:
            if mine(pid):
                reason = f"not_preregistered: {why}"
                record_skip(paths, day, "sweep", pid, "not_preregistered", reason)
                out.skipped.append((pid, "not_preregistered", reason))
            continue
        candidates.append(h)
        prereg_reason[pid] = why
    plan = (budget_mod.allowed_protocols(paths, candidates, job="sweep", date=day, budget=budget, record_skips=False)
            if candidates else None)
    if plan is not None:
        plan = dataclasses.replace(plan, allowed=[p for p in plan.allowed if mine(p)],
                                   skipped=[(p, r) for p, r in plan.skipped if mine(p)])
        budget_mod.record_plan_skips(paths, plan, day)
        out.skipped += [(pid, "budget_refused", reason) for pid, reason in plan.skipped]

    suspect = day_verdict(paths, day).instrument_suspect()
    all_headers = [h for h in registry.list_protocols(paths) if h.get("n")]
    for pid in (plan.allowed if plan else []):
        protocol = registry.load_protocol(paths, pid)
        run_id = sweep_run_id(day, pid, model)
        calls = len(schedule(protocol)) - recorded_trials(paths, run_id)
        try:
            authorization = budget_mod.authorize_run(paths, budget, protocol_header(protocol), "sweep",
                                                     max(calls, 0), all_headers, date=day)
        except budget_mod.BudgetHalted as exc:
            out.skipped.append((pid, "budget_refused", str(exc)))
            continue
        subject = subject_factory(model, protocol["generation"]["max_tokens"])
        resuming = (paths.run_dir(run_id) / "run.json").exists()
        settings = RunSettings(run_id=run_id, run_date=None if resuming else day, series="commercial",
                               model_family=config.model_family, concurrency=concurrency,
                               instrument_suspect=suspect,
                               extra={"job": "sweep",
                                      "preregistration": {"listed": True, "reason": prereg_reason[pid]}})
        try:
            result = run_protocol(paths, protocol, subject, settings, authorization=authorization, budget=budget,
                                  progress=progress)
        except RunHalted as exc:
            condition = "provider_refused_request"
            record_skip(paths, day, "sweep", pid, condition, f"the run stopped: {exc}")
            out.skipped.append((pid, condition, str(exc)))
            out.halted = str(exc)
            break
        if result.complete:
            out.ran.append(pid)
    return finish()
