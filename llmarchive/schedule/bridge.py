"""The generation bridge (method §4.3): old and new model, same week, one protocol per type.

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

Same week.  Every run of a bridge carries the bridge's start date (the
``run_date`` of its first run) as its own ``run_date``, whichever day of the
week it is started or resumed on, so an interrupted bridge resumes the next
day under the same date.  A resume seven or more days after the start is
refused (the comparison would no longer be "the same week").

An undeclared new model.  When the new id came with no provider declaration
(a ``needs_review`` is open, :mod:`llmarchive.succession.review`), the new model's runs
are held under ``private/review/runs/`` and filed as ``comparison_point``
records, never as measurements of the family, until a person resolves the
review; resolved as successor, they move onto the curve.

The month's sweep.  A bridge raised in a month takes that month's sweep:
``llmarchive sweep`` skips every protocol with condition
``bridge_preempts_sweep`` (coverage cause ``generation_bridge``).

When the old model leaves first.  If the old model is no longer listed by
the provider before its half of the bridge is complete, the bridge cannot
finish: a ``bridge_incomplete`` record marks a permanent, disclosed
discontinuity.  Once the old model's runs are all complete its leaving
changes nothing: the new model's half can still be run.

Completion.  When both models' runs exist for every bridge protocol, a
``generation_bridge`` record with status ``complete`` closes the bridge and
the daily alarm stops.
"""
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional

from measure.errors import ArchiveError
from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths, bridge_run_id, record_logs as records, record_skip, store
from llmarchive.protocols import registry
from llmarchive.run import recorded_trials, schedule
from llmarchive.schedule.paid_run import Ended, PaidRun, Turn, start_each
from llmarchive.subjects import SubjectError
from llmarchive.succession import SubjectModels, held_paths, holds, review

TYPES = ("wording", "anchoring", "order", "default")
SAME_WEEK_DAYS = 7


class BridgeError(ArchiveError, RuntimeError):
    """A bridge that cannot be run as asked; the message says why and what to do."""


def bridge_protocols(paths: ArchivePaths, config: SubjectModels, count: int = 4) -> list[str]:
    """One admitted protocol per rewording type of the configured series (the budget's selection rule)."""
    headers = registry.sweep_protocols(paths, config.protocol_series)
    chosen = budget_mod.select_protocols(headers, count, None)
    by_id = {h["protocol_id"]: h for h in headers}
    types = {by_id[p]["rewording_type"] for p in chosen}
    if len(chosen) < count or types != set(TYPES[:count]):
        missing = sorted(set(TYPES[:count]) - types)
        raise BridgeError(f"a bridge needs one admitted protocol of each rewording type in series "
                          f"{config.protocol_series}; none admitted for: {', '.join(missing) or '(too few)'}")
    return chosen


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


def run_folder(paths: ArchivePaths, bridge: dict, protocol_id: str, role: str) -> Path:
    """Where a bridge run lives: on the curve (``experiments/``), held for review, or where it will go.

    An existing folder is found wherever it is (a held run resumes where it
    was started); a new one goes to the held folders when its model is an
    undeclared new id (:func:`llmarchive.succession.review.holds`).
    """
    run_id = bridge_run_id(bridge["old_model_id"], bridge["new_model_id"], protocol_id, role)
    curve, held = paths.run_dir(run_id), held_paths(paths).run_dir(run_id)
    if curve.exists():
        return curve
    if held.exists():
        return held
    if role == "new" and holds(paths, bridge["model_family"], bridge["new_model_id"]):
        return held
    return curve


def bridge_runs(paths: ArchivePaths, bridge: dict) -> dict[tuple[str, str], dict]:
    """The run records of a bridge, by (protocol_id, role), complete or not."""
    out = {}
    for pid in bridge.get("protocol_ids") or []:
        for role in ("old", "new"):
            record = store.read_run_if_any(run_folder(paths, bridge, pid, role))
            if record is not None:
                out[(pid, role)] = record
    return out


def run_complete(paths: ArchivePaths, bridge: dict, protocol_id: str, role: str) -> bool:
    """Is this bridge run complete (``status: complete`` and its measurement written)?"""
    folder = run_folder(paths, bridge, protocol_id, role)
    if not store.is_complete(folder):
        return False
    return (store.read_run_if_any(folder) or {}).get("status") == "complete"


def half_complete(paths: ArchivePaths, bridge: dict, role: str) -> bool:
    """Are all of one model's runs of the bridge complete (``role`` is ``old`` or ``new``)?"""
    pids = bridge.get("protocol_ids") or []
    return bool(pids) and all(run_complete(paths, bridge, pid, role) for pid in pids)


def runs_complete(paths: ArchivePaths, bridge: dict) -> bool:
    """Do complete runs of both models exist for every bridge protocol?"""
    return half_complete(paths, bridge, "old") and half_complete(paths, bridge, "new")


def start_date(paths: ArchivePaths, bridge: dict) -> Optional[str]:
    """The bridge's start date: the ``run_date`` of its first run (None before any run)."""
    dates = sorted(str(r.get("run_date")) for r in bridge_runs(paths, bridge).values() if r.get("run_date"))
    return dates[0] if dates else None


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
        "run_ids": sorted(bridge_run_id(bridge["old_model_id"], bridge["new_model_id"], p, r)
                          for p in bridge["protocol_ids"] for r in ("old", "new"))})


def record_incomplete(paths: ArchivePaths, bridge: dict, day: str, reason: str) -> dict:
    """Close a bridge whose old model left before its half was complete (a permanent discontinuity)."""
    return records.append(paths, "bridge_incomplete", {
        "date": day, "model_family": bridge["model_family"], "old_model_id": bridge["old_model_id"],
        "new_model_id": bridge["new_model_id"], "reason": reason,
        "protocol_ids": bridge.get("protocol_ids"),
        "runs_recorded": sorted(f"{p}/{r}" for p in bridge.get("protocol_ids") or [] for r in ("old", "new")
                                if run_complete(paths, bridge, p, r))})


def old_model_left(paths: ArchivePaths, bridge: dict, listed: Optional[set]) -> bool:
    """Has the old model left the provider's list before its half of the bridge was complete?"""
    return (listed is not None and bridge["old_model_id"] not in listed
            and not half_complete(paths, bridge, "old"))


def bridge_in_month(paths: ArchivePaths, month: str) -> Optional[dict]:
    """A bridge raised in ``month`` (YYYY-MM): it takes that month's sweep."""
    for r in records.read(paths, "generation_bridge"):
        if r.get("status") == "pending" and str(r.get("date", ""))[:7] == month:
            return r
    return None


def listed_now(listed: Optional[Callable[[], list[str]]]) -> Optional[set]:
    """The ids the provider lists now, or None when unknown (no lister, or the list cannot be read).

    A models list that cannot be read proves nothing about the old model:
    the bridge goes on (its calls will say whether the provider answers).
    """
    if listed is None:
        return None
    try:
        return set(listed())
    except SubjectError:
        return None


@dataclass
class BridgeOutcome:
    bridge: dict
    status: str                       # complete | incomplete | running
    run_ids: list[str] = field(default_factory=list)
    calls: int = 0
    message: str = ""
    held: list[str] = field(default_factory=list)              # runs kept off the curve for review
    comparison_points: list[dict] = field(default_factory=list)


def _root(paths: ArchivePaths, folder: Path) -> ArchivePaths:
    """The archive view whose ``run_dir`` is ``folder`` (the held one for a run kept for review)."""
    held = held_paths(paths)
    return held if folder.parent == held.experiments else paths


def bridge_calls(paths: ArchivePaths, protocol_ids: list[str]) -> int:
    """Calls the whole bridge makes: both models, every protocol at its own n (4 versions × n each)."""
    headers = {h["protocol_id"]: h for h in registry.list_protocols(paths)}
    return 2 * sum(budget_mod.protocol_calls(headers[p]) for p in protocol_ids)


def choose_bridge(paths: ArchivePaths, family: str, old: Optional[str] = None,
                  new: Optional[str] = None) -> dict:
    """The one pending bridge of ``family`` (``old``/``new`` pick among several); refused when none or several."""
    candidates = [b for b in open_bridges(paths, family)
                  if (old is None or b["old_model_id"] == old) and (new is None or b["new_model_id"] == new)]
    if not candidates:
        raise BridgeError("no bridge is pending (the model watch raises one when a new model id appears in the "
                          "family); give --old and --new to pick one")
    if len(candidates) > 1:
        names = ", ".join(f"{b['old_model_id']} → {b['new_model_id']}" for b in candidates)
        raise BridgeError(f"{len(candidates)} bridges are pending ({names}); choose one with --old and --new")
    return candidates[0]


def run_bridge(paths: ArchivePaths, day: str, config: SubjectModels, *, old: Optional[str] = None,
               new: Optional[str] = None, subject_factory: Optional[Callable[[str, int], Any]] = None,
               listed: Optional[Callable[[], list[str]]] = None, concurrency: int = 4,
               unbudgeted: bool = False, progress=None) -> BridgeOutcome:
    """Run (or resume) the pending bridge; see the module docstring for every rule.

    ``subject_factory(model_id, max_tokens)`` builds the paid subject;
    ``listed()`` returns the model ids the provider lists now (to tell a
    retired old model from a passing error).  The steps, in order:

    1. the pending bridge (:func:`choose_bridge`) and its date — the start
       date of its first run, within the week (:func:`_bridge_date`);
    2. review decisions taken since the last session, settled;
    3. an old model already gone before its half was done → ``bridge_incomplete``;
    4. the whole rest of the bridge within the bridge reserve (:func:`_check_reserve`);
    5. each run not yet complete started, old model first, and how each
       stopped recorded (:func:`_run_halves`);
    6. the bridge closed once both models' runs are complete (:func:`_close`).
    """
    bridge = choose_bridge(paths, config.model_family, old, new)
    first_day = _bridge_date(paths, bridge, day)
    review.settle(paths, day, config.model_family)   # decisions taken since the last session
    if old_model_left(paths, bridge, listed_now(listed)):
        reason = (f"{bridge['old_model_id']} is no longer listed by the provider on {day} and its half of the bridge "
                  "is not complete; the bridge cannot be completed")
        record_incomplete(paths, bridge, day, reason)
        return BridgeOutcome(bridge, "incomplete", message=reason)
    budget = budget_mod.load_budget(paths)
    protocols = {pid: registry.load_protocol(paths, pid) for pid in bridge["protocol_ids"]}
    _check_reserve(paths, bridge, protocols, budget, day, unbudgeted)
    outcome = BridgeOutcome(bridge, "running")
    turns = _turns(paths, bridge, protocols, day, first_day, config.model_family, concurrency, unbudgeted)
    ended = start_each(paths, turns, subject_factory, budget=budget, config=config, progress=progress)
    if _run_halves(paths, bridge, ended, day, first_day, config, listed, outcome):
        _close(paths, bridge, day, config, outcome)
    return outcome


def _bridge_date(paths: ArchivePaths, bridge: dict, day: str) -> str:
    """Step 1: the date every run of the bridge carries — its first run's, or ``day`` for a bridge not started.

    A resume seven or more days after the start is no longer the same week,
    and a bridge is never run as of a day before it started: both refused.
    """
    first_day = start_date(paths, bridge)
    if first_day and (Date.fromisoformat(day) - Date.fromisoformat(first_day)).days >= SAME_WEEK_DAYS:
        raise BridgeError(f"this bridge started on {first_day}; runs on {day} would not be the same week. "
                          "Decide by hand whether to record it as incomplete or start it again")
    if first_day and day < first_day:
        raise BridgeError(f"this bridge started on {first_day}; it cannot be run as of an earlier day ({day})")
    return first_day or day


def _check_reserve(paths: ArchivePaths, bridge: dict, protocols: Mapping[str, dict],
                   budget: Optional[budget_mod.Budget], day: str, unbudgeted: bool) -> None:
    """Step 4: the calls the bridge still has to make must fit what is left of the month's bridge reserve."""
    folders = {(pid, role): run_folder(paths, bridge, pid, role) for pid in protocols for role in ("old", "new")}
    calls_left = sum(max(len(schedule(protocols[pid])) - recorded_trials(_root(paths, folder), folder.name), 0)
                     for (pid, _), folder in folders.items())
    if budget is None and not unbudgeted:
        raise BridgeError(f"{paths.budget_file} does not exist: the bridge is paid from the bridge reserve "
                          "(`llmarchive budget init …`)")
    if budget is None:
        return
    state = budget_mod.ladder_state(paths, budget, date=day)
    cost = calls_left * budget.rate("scenario")
    if cost > state.bridge_left_eur + budget_mod.EPSILON_EUR:
        reason = (f"the bridge needs {calls_left} more calls (about {budget_mod.eur(cost)}) but "
                  f"{budget_mod.eur(max(state.bridge_left_eur, 0))} "
                  f"is left in the bridge reserve for {state.month}")
        record_skip(paths, day, "bridge", None, "budget_refused", reason)
        raise BridgeError(reason)


def _turns(paths: ArchivePaths, bridge: dict, protocols: Mapping[str, dict], day: str, first_day: str,
           family: str, concurrency: int, unbudgeted: bool) -> Iterator[Turn]:
    """The bridge's runs still to make, old model first; each folder decided when its turn comes.

    Decided again per run: a review resolved during the session changes
    where the next run goes.  A complete run is passed over (no subject, no
    authorization).
    """
    old_id, new_id = bridge["old_model_id"], bridge["new_model_id"]
    for role, model in (("old", old_id), ("new", new_id)):
        for pid in bridge["protocol_ids"]:
            if run_complete(paths, bridge, pid, role):
                continue
            folder = run_folder(paths, bridge, pid, role)
            request = PaidRun(job="bridge", run_id=folder.name, day=day, run_date=first_day, series="commercial",
                              model_family=family, concurrency=concurrency, unbudgeted=unbudgeted,
                              bridge={"old_model_id": old_id, "new_model_id": new_id, "role": role,
                                      "first_run_date": first_day})
            yield Turn(protocols[pid], model, request, _root(paths, folder))


def _run_halves(paths: ArchivePaths, bridge: dict, ended: Iterator[Ended], day: str, first_day: str,
                config: SubjectModels, listed: Optional[Callable[[], list[str]]], outcome: BridgeOutcome) -> bool:
    """Step 5: record how each run ended; True when every run ended complete (the bridge may close).

    A refusal is the bridge's refusal.  A run that stopped: when the old
    model left the provider's list meanwhile, the bridge is recorded
    incomplete; when the provider gave no answer, the slots stay open for a
    resume within the week; any other stop is raised.
    """
    for one in ended:
        run_id = one.turn.request.run_id
        if one.refused is not None:
            raise BridgeError(str(one.refused)) from None
        if one.stopped is not None:
            if one.turn.request.bridge["role"] == "old" and old_model_left(paths, bridge, listed_now(listed)):
                reason = f"{bridge['old_model_id']} left the provider's list during the bridge ({one.stopped})"
                record_incomplete(paths, bridge, day, reason)
                outcome.status, outcome.message = "incomplete", reason
                return False
            if one.interrupted:
                # No answer from the provider: not a configuration error, the slots stay open.
                outcome.message = (f"interrupted: {one.stopped}; run `llmarchive bridge run` again (within the week "
                                   f"from {first_day}) to resume")
                return False
            raise one.stopped
        outcome.run_ids.append(run_id)
        outcome.calls += one.result.called
        if one.turn.run_paths is not paths:
            outcome.held.append(run_id)
        if not one.result.complete:
            outcome.message = f"run {run_id} is not complete; run `llmarchive bridge run` again to resume"
            return False
        outcome.comparison_points += review.settle(paths, day, config.model_family)
    return True


def _close(paths: ArchivePaths, bridge: dict, day: str, config: SubjectModels, outcome: BridgeOutcome) -> None:
    """Step 6: close the bridge whose runs are all complete, and say what became of the new model's runs."""
    if close_if_complete(paths, bridge, day) is None and not runs_complete(paths, bridge):
        return
    old_id, new_id = bridge["old_model_id"], bridge["new_model_id"]
    outcome.status = "complete"
    outcome.message = f"bridge {old_id} → {new_id} complete: {len(outcome.run_ids)} runs this session"
    if holds(paths, config.model_family, new_id):
        outcome.message += (f"; {new_id} has no successor declaration: its runs are comparison points, off "
                            "every curve, until `llmarchive review resolve` decides")
