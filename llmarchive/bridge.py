"""The generation bridge (SPEC §4.3): old and new model, same week, one protocol per type.

When a new model id appears in the tracked family, the model watch records a
``generation_bridge`` with status ``pending`` and raises its alarm daily.  The
bridge itself costs money, so it is started by hand: ``llmarchive bridge
run``.  It runs :func:`bridge_protocols` — one protocol of each rewording
type, chosen by the budget's disclosed selection rule
(:func:`llmarchive.budget.select_protocols`) — on the old model first (the
one that can disappear), then on the new one, each protocol at its own
frozen ``n_per_scenario``.  For v0 that is ``4 protocols × 120 calls × 2
models = 960 calls``.

Money.  The whole bridge must fit in what is left of the month's bridge
reserve (``bridge_reserve_eur`` in ``budget.json``) before the first call,
and every run is authorised with the ``bridge`` job, which draws on that
reserve and on nothing else.  A bridge that does not fit is refused and
recorded as a ``skip`` (condition ``budget_refused``).

Same week.  A bridge's runs must fall within seven days of its first run; a
resume later than that is refused (the comparison would no longer be "the
same week").

The month's sweep.  A bridge raised in a month takes that month's sweep:
``llmarchive sweep`` skips every protocol with condition
``bridge_preempts_sweep`` (coverage cause ``generation_bridge``).

When the old model leaves first.  If the old model is no longer listed by
the provider before its runs are complete, the bridge cannot finish: a
``bridge_incomplete`` record marks a permanent, disclosed discontinuity.

Completion.  When both models' runs exist for every bridge protocol, a
``generation_bridge`` record with status ``complete`` closes the bridge and
the daily alarm stops.
"""
import re
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any, Callable, Optional

from llmarchive import budget as budget_mod
from llmarchive import records
from llmarchive.coverage import record_skip, sweep_protocols
from llmarchive.jsonio import RecordFileError, read_json
from llmarchive.paths import ArchivePaths
from llmarchive.subject_models import SubjectModels

TYPES = ("wording", "anchoring", "order", "default")
SAME_WEEK_DAYS = 7


class BridgeError(RuntimeError):
    """A bridge that cannot be run as asked; the message says why and what to do."""


def bridge_protocols(paths: ArchivePaths, config: SubjectModels, count: int = 4) -> list[str]:
    """One admitted protocol per rewording type of the configured series (the budget's selection rule)."""
    headers = sweep_protocols(paths, config.protocol_series)
    chosen = budget_mod.select_protocols(headers, count, None)
    by_id = {h["protocol_id"]: h for h in headers}
    types = {by_id[p]["rewording_type"] for p in chosen}
    if len(chosen) < count or types != set(TYPES[:count]):
        missing = sorted(set(TYPES[:count]) - types)
        raise BridgeError(f"a bridge needs one admitted protocol of each rewording type in series "
                          f"{config.protocol_series}; none admitted for: {', '.join(missing) or '(too few)'}")
    return chosen


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "model"


def run_id_for(old: str, new: str, protocol_id: str, role: str) -> str:
    return f"bridge_{_slug(old)}_to_{_slug(new)}_{protocol_id}_{role}"


def bridge_key(record: dict) -> tuple[str, str, str]:
    return (record.get("model_family"), record.get("old_model_id"), record.get("new_model_id"))


def bridges(paths: ArchivePaths) -> dict[tuple, dict]:
    """Every bridge by (family, old, new): its first record, latest status, and whether it closed."""
    out: dict[tuple, dict] = {}
    for r in records.read(paths, "generation_bridge"):
        entry = out.setdefault(bridge_key(r), {"raised": r, "status": r.get("status"), "closed": False})
        entry["status"] = r.get("status")
        if r.get("status") in ("complete", "incomplete"):
            entry["closed"] = True
    for r in records.read(paths, "bridge_incomplete"):
        entry = out.get(bridge_key(r))
        if entry is not None:
            entry["status"], entry["closed"] = "incomplete", True
    return out


def open_bridges(paths: ArchivePaths, family: Optional[str] = None) -> list[dict]:
    """The ``generation_bridge`` records of bridges still waiting for their runs."""
    return [b["raised"] for key, b in bridges(paths).items()
            if not b["closed"] and (family is None or key[0] == family)]


def bridge_runs(paths: ArchivePaths, bridge: dict) -> dict[tuple[str, str], dict]:
    """The run records of a bridge, by (protocol_id, role), complete or not."""
    out = {}
    old, new = bridge["old_model_id"], bridge["new_model_id"]
    for pid in bridge.get("protocol_ids") or []:
        for role in ("old", "new"):
            run_file = paths.run_dir(run_id_for(old, new, pid, role)) / "run.json"
            if run_file.exists():
                try:
                    out[(pid, role)] = read_json(run_file)
                except RecordFileError:
                    continue
    return out


def runs_complete(paths: ArchivePaths, bridge: dict) -> bool:
    """Do complete runs of both models exist for every bridge protocol?"""
    pids = bridge.get("protocol_ids") or []
    found = bridge_runs(paths, bridge)
    return bool(pids) and all(
        (found.get((pid, role)) or {}).get("status") == "complete"
        and (paths.run_dir(run_id_for(bridge["old_model_id"], bridge["new_model_id"], pid, role))
             / "measurement.json").exists()
        for pid in pids for role in ("old", "new"))


def close_if_complete(paths: ArchivePaths, bridge: dict, day: str) -> Optional[dict]:
    """Record ``status: complete`` for a bridge whose runs all exist (once)."""
    if not runs_complete(paths, bridge):
        return None
    state = bridges(paths).get(bridge_key(bridge))
    if state and state["closed"]:
        return None
    return records.append(paths, "generation_bridge", {
        "date": day, "model_family": bridge["model_family"], "old_model_id": bridge["old_model_id"],
        "new_model_id": bridge["new_model_id"], "protocol_ids": bridge["protocol_ids"], "status": "complete",
        "run_ids": sorted(run_id_for(bridge["old_model_id"], bridge["new_model_id"], p, r)
                          for p in bridge["protocol_ids"] for r in ("old", "new"))})


def record_incomplete(paths: ArchivePaths, bridge: dict, day: str, reason: str) -> dict:
    return records.append(paths, "bridge_incomplete", {
        "date": day, "model_family": bridge["model_family"], "old_model_id": bridge["old_model_id"],
        "new_model_id": bridge["new_model_id"], "reason": reason,
        "protocol_ids": bridge.get("protocol_ids"),
        "runs_recorded": sorted(f"{p}/{r}" for (p, r), run in bridge_runs(paths, bridge).items()
                                if run.get("status") == "complete")})


def bridge_in_month(paths: ArchivePaths, month: str) -> Optional[dict]:
    """A bridge raised in ``month`` (YYYY-MM): it takes that month's sweep."""
    for r in records.read(paths, "generation_bridge"):
        if r.get("status") == "pending" and str(r.get("date", ""))[:7] == month:
            return r
    return None


@dataclass
class BridgeOutcome:
    bridge: dict
    status: str                       # complete | incomplete | running
    run_ids: list[str] = field(default_factory=list)
    calls: int = 0
    message: str = ""


def bridge_calls(paths: ArchivePaths, protocol_ids: list[str]) -> int:
    """Calls the whole bridge makes: both models, every protocol at its own n (4 versions × n each)."""
    from panels import registry

    headers = {h["protocol_id"]: h for h in registry.list_protocols(paths)}
    return 2 * sum(budget_mod.protocol_calls(headers[p]) for p in protocol_ids)


def run_bridge(paths: ArchivePaths, day: str, config: SubjectModels, *, old: Optional[str] = None,
               new: Optional[str] = None, subject_factory: Optional[Callable[[str, int], Any]] = None,
               listed: Optional[Callable[[], list[str]]] = None, concurrency: int = 4,
               unbudgeted: bool = False, progress=None) -> BridgeOutcome:
    """Run (or resume) the pending bridge; see the module docstring for every rule.

    ``subject_factory(model_id, max_tokens)`` builds the paid subject;
    ``listed()`` returns the model ids the provider lists now (to tell a
    retired old model from a passing error).
    """
    from llmarchive.instrument.verdict import day_verdict
    from llmarchive.runner import RunHalted, RunSettings, protocol_header, recorded_trials, run_protocol, schedule
    from panels import registry

    candidates = [b for b in open_bridges(paths, config.model_family)
                  if (old is None or b["old_model_id"] == old) and (new is None or b["new_model_id"] == new)]
    if not candidates:
        raise BridgeError("no bridge is pending (the model watch raises one when a new model id appears in the "
                          "family); give --old and --new to pick one")
    if len(candidates) > 1:
        names = ", ".join(f"{b['old_model_id']} → {b['new_model_id']}" for b in candidates)
        raise BridgeError(f"{len(candidates)} bridges are pending ({names}); choose one with --old and --new")
    bridge = candidates[0]
    old_id, new_id, pids = bridge["old_model_id"], bridge["new_model_id"], list(bridge["protocol_ids"])

    existing = bridge_runs(paths, bridge)
    dates = sorted(str(r.get("run_date")) for r in existing.values() if r.get("run_date"))
    if dates and (Date.fromisoformat(day) - Date.fromisoformat(dates[0])).days >= SAME_WEEK_DAYS:
        raise BridgeError(f"this bridge's first run was on {dates[0]}; runs on {day} would not be the same week. "
                          "Decide by hand whether to record it as incomplete or start it again")
    first_day = dates[0] if dates else day

    if listed is not None and old_id not in listed():
        reason = f"{old_id} is no longer listed by the provider on {day}; the bridge cannot be completed"
        record_incomplete(paths, bridge, day, reason)
        return BridgeOutcome(bridge, "incomplete", message=reason)

    budget = budget_mod.load_budget(paths)
    protocols = {pid: registry.load_protocol(paths, pid) for pid in pids}
    remaining = {(pid, role): len(schedule(protocols[pid])) - recorded_trials(paths, run_id_for(old_id, new_id, pid, role))
                 for pid in pids for role in ("old", "new")}
    calls_left = sum(max(v, 0) for v in remaining.values())
    if budget is None and not unbudgeted:
        raise BridgeError(f"{paths.budget_file} does not exist: the bridge is paid from the bridge reserve "
                          "(`llmarchive budget init …`)")
    if budget is not None:
        state = budget_mod.ladder_state(paths, budget)
        cost = calls_left * budget.rate("scenario")
        if cost > state.bridge_left_eur + budget_mod.EPSILON_EUR:
            reason = (f"the bridge needs {calls_left} more calls (about €{cost:.2f}) but €{max(state.bridge_left_eur, 0):.2f} "
                      f"is left in the bridge reserve for {state.month}")
            record_skip(paths, day, "bridge", None, "budget_refused", reason)
            raise BridgeError(reason)

    verdict = day_verdict(paths, day).instrument_suspect()
    outcome = BridgeOutcome(bridge, "running")
    for role, model in (("old", old_id), ("new", new_id)):
        for pid in pids:
            protocol = protocols[pid]
            run_id = run_id_for(old_id, new_id, pid, role)
            subject = subject_factory(model, protocol["generation"]["max_tokens"])
            if budget is None:
                authorization = budget_mod.unbudgeted("bridge")
            else:
                try:
                    authorization = budget_mod.authorize_run(paths, budget, protocol_header(protocol), "bridge",
                                                             max(remaining[(pid, role)], 0), date=day)
                except budget_mod.BudgetHalted as exc:
                    raise BridgeError(str(exc)) from None
            settings = RunSettings(run_id=run_id, run_date=day, series="commercial",
                                   model_family=config.model_family, concurrency=concurrency,
                                   instrument_suspect=verdict,
                                   extra={"job": "bridge", "bridge": {"old_model_id": old_id, "new_model_id": new_id,
                                                                      "role": role, "first_run_date": first_day}})
            try:
                result = run_protocol(paths, protocol, subject, settings, authorization=authorization,
                                      budget=budget, progress=progress)
            except RunHalted as exc:
                if role == "old" and listed is not None and old_id not in listed():
                    reason = f"{old_id} left the provider's list during the bridge ({exc})"
                    record_incomplete(paths, bridge, day, reason)
                    outcome.status, outcome.message = "incomplete", reason
                    return outcome
                raise
            outcome.run_ids.append(run_id)
            outcome.calls += result.called
            if not result.complete:
                outcome.message = f"run {run_id} is not complete; run `llmarchive bridge run` again to resume"
                return outcome
    if close_if_complete(paths, bridge, day) is not None or runs_complete(paths, bridge):
        outcome.status = "complete"
        outcome.message = f"bridge {old_id} → {new_id} complete: {len(outcome.run_ids)} runs"
    return outcome
