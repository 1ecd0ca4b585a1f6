"""The monthly budget, the spend ledger and the degradation ladder (SPEC §9).

Everything here is private (``private/budget.json``, ``private/spend.jsonl``):
the mechanism is ordinary, the euro figures are the owner's.

``budget.json`` — recalibratable data, never code::

    {
      "monthly_ceiling_eur": 25.0,          the hard monthly ceiling
      "bridge_reserve_eur": 6.5,            carved out for a generation bridge
      "heartbeat_reserve_eur": 1.0,         carved out so the archive is never silent
      "rates_eur_per_call": {"scenario": 0.0094, "fingerprint": 0.0011},
      "ladder": [{"at_pct": 60, "max_protocols": 6, "lanes": null},
                 {"at_pct": 80, "max_protocols": 4, "lanes": ["guard"]},
                 {"at_pct": 95, "max_protocols": 0, "lanes": []}]
    }

Three pools, never mixed:

* **general** = ceiling − bridge reserve − heartbeat reserve.  Scenario work
  (the sweep, a manual run) is charged here and may never run past it, so
  the two reserves are never consumed by the daily cycle.  "Spend used" on
  the ladder is general spend ÷ general pool.
* **bridge** — a generation bridge draws on ``bridge_reserve_eur`` and on
  nothing else, and its spend never counts against the general pool.
* **heartbeat** — ``subject_fingerprint`` is never gated: it is charged to
  the general pool while that has room, then to the heartbeat reserve.

Scenario calls and fingerprint calls have separate per-call rates (a
fingerprint item is a fraction of a scenario's length); the two are never
averaged.  A call costs its category's rate when the provider answered it
and nothing when it never did (an error is not billed).  The reference
model is free and never gated: it never reaches this module.

The ladder, evaluated at the start of every run on the current month's
spend: from 60 % the sweep drops to 6 protocols, from 80 % only 4 guard
protocols run, from 95 % only ``subject_fingerprint``.  ``n`` and the checks
are never reduced — a protocol runs whole or not at all — and every
protocol left out is recorded as a ``skip`` with cause ``budget_halted``.

Which protocols survive a cut is decided by one disclosed rule
(:func:`select_protocols`): first one protocol of each rewording type (in
the order wording, anchoring, order, default), then the rest; within each
step ``open`` protocols first, then the guard twins of open protocols
(the contamination check needs both halves of a pair), then the others, by
``protocol_id``.  At 6 that keeps both open protocols, both twins and one
``order`` and one ``default`` protocol; at 4 guard protocols, one per type.
"""
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from llmarchive import records
from llmarchive.jsonio import ChainedLog, RecordFileError, read_json, read_jsonl, write_json
from llmarchive.locks import file_lock
from llmarchive.paths import ArchivePaths
from measure.schema import SCHEMA_VERSION
from llmarchive.records import utc_today

CATEGORIES = ("scenario", "fingerprint")
POOLS = ("general", "bridge", "heartbeat")
TYPE_ORDER = ("wording", "anchoring", "order", "default")
# job → (category, pool); "subject_fingerprint" switches to heartbeat when general is spent.
JOBS = {
    "sweep": ("scenario", "general"),
    "manual": ("scenario", "general"),
    "bridge": ("scenario", "bridge"),
    "subject_fingerprint": ("fingerprint", "general"),
}
EPSILON_EUR = 1e-9


class BudgetError(ValueError):
    """A budget file or ledger that cannot be used; the message names file and field."""


class BudgetHalted(RuntimeError):
    """A run the ladder or a pool does not allow; recorded as a ``budget_halted`` skip."""


@dataclass(frozen=True)
class Rung:
    """From ``at_pct`` of the general pool used: at most ``max_protocols``, from ``lanes`` (None = any)."""

    at_pct: float
    max_protocols: int
    lanes: Optional[tuple[str, ...]]

    def describe(self) -> str:
        if self.max_protocols == 0:
            return f"from {self.at_pct:g} % used: only subject_fingerprint"
        lanes = "" if self.lanes is None else " " + "/".join(self.lanes)
        return f"from {self.at_pct:g} % used: at most {self.max_protocols}{lanes} protocols"


DEFAULT_LADDER = (Rung(60, 6, None), Rung(80, 4, ("guard",)), Rung(95, 0, ()))


@dataclass(frozen=True)
class Budget:
    monthly_ceiling_eur: float
    bridge_reserve_eur: float
    heartbeat_reserve_eur: float
    rates_eur_per_call: Mapping[str, float]
    ladder: tuple[Rung, ...] = DEFAULT_LADDER

    @property
    def general_pool_eur(self) -> float:
        return self.monthly_ceiling_eur - self.bridge_reserve_eur - self.heartbeat_reserve_eur

    def rate(self, category: str) -> float:
        return float(self.rates_eur_per_call[category])

    def to_json(self) -> dict:
        return {
            "monthly_ceiling_eur": self.monthly_ceiling_eur,
            "bridge_reserve_eur": self.bridge_reserve_eur,
            "heartbeat_reserve_eur": self.heartbeat_reserve_eur,
            "rates_eur_per_call": dict(self.rates_eur_per_call),
            "ladder": [{"at_pct": r.at_pct, "max_protocols": r.max_protocols,
                        "lanes": None if r.lanes is None else list(r.lanes)} for r in self.ladder],
        }


# --------------------------------------------------------------------------
# budget.json
# --------------------------------------------------------------------------

def _number(data: Mapping, key: str, where: str, minimum: float = 0.0) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < minimum:
        raise BudgetError(f"{where}: {key!r} must be a number ≥ {minimum:g}, got {value!r}")
    return float(value)


def parse_budget(data: Any, where: str = "budget.json") -> Budget:
    """Validate a budget document; every error names the field."""
    if not isinstance(data, dict):
        raise BudgetError(f"{where}: must be a JSON object")
    known = {"monthly_ceiling_eur", "bridge_reserve_eur", "heartbeat_reserve_eur", "rates_eur_per_call",
             "ladder", "note"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise BudgetError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    ceiling = _number(data, "monthly_ceiling_eur", where)
    bridge = _number(data, "bridge_reserve_eur", where)
    heartbeat = _number(data, "heartbeat_reserve_eur", where)
    if bridge + heartbeat >= ceiling:
        raise BudgetError(f"{where}: bridge_reserve_eur + heartbeat_reserve_eur ({bridge + heartbeat:g}) must be "
                          f"below monthly_ceiling_eur ({ceiling:g}), or nothing is left for the sweep")
    rates = data.get("rates_eur_per_call")
    if not isinstance(rates, dict):
        raise BudgetError(f"{where}: 'rates_eur_per_call' must be an object with {', '.join(CATEGORIES)}")
    for category in CATEGORIES:
        _number(rates, category, f"{where}: rates_eur_per_call")
    ladder_data = data.get("ladder")
    if ladder_data is None:
        ladder = DEFAULT_LADDER
    else:
        if not isinstance(ladder_data, list) or not ladder_data:
            raise BudgetError(f"{where}: 'ladder' must be a non-empty list of rungs")
        rungs = []
        for i, rung in enumerate(ladder_data):
            at = f"{where}: ladder[{i}]"
            if not isinstance(rung, dict):
                raise BudgetError(f"{at} must be an object")
            at_pct = _number(rung, "at_pct", at)
            limit = rung.get("max_protocols")
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
                raise BudgetError(f"{at}: 'max_protocols' must be a non-negative integer, got {limit!r}")
            lanes = rung.get("lanes")
            if lanes is not None and (not isinstance(lanes, list) or not all(isinstance(x, str) for x in lanes)):
                raise BudgetError(f"{at}: 'lanes' must be null or a list of lane names")
            rungs.append(Rung(at_pct, limit, None if lanes is None else tuple(lanes)))
        if [r.at_pct for r in rungs] != sorted(r.at_pct for r in rungs):
            raise BudgetError(f"{where}: ladder rungs must be in increasing at_pct order")
        ladder = tuple(rungs)
    return Budget(ceiling, bridge, heartbeat, {c: float(rates[c]) for c in CATEGORIES}, ladder)


def load_budget(paths: ArchivePaths) -> Optional[Budget]:
    """The archive's budget, or ``None`` when it has no ``budget.json``."""
    if not paths.budget_file.exists():
        return None
    try:
        return parse_budget(read_json(paths.budget_file), str(paths.budget_file))
    except RecordFileError as exc:
        raise BudgetError(str(exc)) from None


def write_budget(paths: ArchivePaths, budget: Budget) -> None:
    write_json(paths.budget_file, budget.to_json())


# --------------------------------------------------------------------------
# the spend ledger
# --------------------------------------------------------------------------

def current_month() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m")


def ledger(paths: ArchivePaths) -> list[dict]:
    """Every spend entry, oldest first."""
    try:
        return read_jsonl(paths.spend_ledger)
    except RecordFileError as exc:
        raise BudgetError(str(exc)) from None


def month_spend(paths: ArchivePaths, month: str, entries: Optional[list[dict]] = None) -> dict[str, float]:
    """Euros spent in ``month`` (``YYYY-MM``) per pool."""
    spent = {pool: 0.0 for pool in POOLS}
    for entry in ledger(paths) if entries is None else entries:
        if entry.get("month") == month and isinstance(entry.get("cost_eur"), (int, float)):
            spent[entry.get("pool", "general")] = spent.get(entry.get("pool", "general"), 0.0) + entry["cost_eur"]
    return spent


@dataclass(frozen=True)
class LadderState:
    """Where the month stands: spend per pool, the used share, the rung in force."""

    month: str
    general_pool_eur: float
    spent_eur: Mapping[str, float]
    used_pct: float
    rung: Optional[Rung]
    bridge_left_eur: float
    heartbeat_left_eur: float

    @property
    def general_left_eur(self) -> float:
        return self.general_pool_eur - self.spent_eur["general"]

    def describe(self) -> str:
        return "no cut: every protocol may run" if self.rung is None else self.rung.describe()

    def to_json(self) -> dict:
        out = asdict(self)
        out["rung"] = None if self.rung is None else self.describe()
        out["general_left_eur"] = self.general_left_eur
        return out


def ladder_state(paths: ArchivePaths, budget: Budget, month: Optional[str] = None) -> LadderState:
    month = month or current_month()
    spent = month_spend(paths, month)
    used = 100.0 * spent["general"] / budget.general_pool_eur
    rung = None
    for candidate in budget.ladder:
        if used >= candidate.at_pct:
            rung = candidate
    return LadderState(month, budget.general_pool_eur, spent, used, rung,
                       budget.bridge_reserve_eur - spent["bridge"], budget.heartbeat_reserve_eur - spent["heartbeat"])


# --------------------------------------------------------------------------
# which protocols may run
# --------------------------------------------------------------------------

def _open_twins(protocols: Sequence[Mapping]) -> set[str]:
    return {p.get("twin_id") for p in protocols if p.get("lane") == "open" and p.get("twin_id")}


def select_protocols(protocols: Sequence[Mapping], limit: int, lanes: Optional[Iterable[str]] = None) -> list[str]:
    """The ``limit`` protocols a cut keeps (the rule in the module docstring)."""
    lane_set = None if lanes is None else set(lanes)
    twins = _open_twins(protocols)
    pool = [p for p in protocols if lane_set is None or p.get("lane") in lane_set]

    def rank(p: Mapping) -> tuple:
        lane_rank = 0 if p.get("lane") == "open" else 1 if p.get("protocol_id") in twins else 2
        return (lane_rank, p.get("protocol_id"))

    chosen: list[str] = []
    for kind in TYPE_ORDER:
        of_type = sorted((p for p in pool if p.get("rewording_type") == kind), key=rank)
        if of_type and len(chosen) < limit:
            chosen.append(of_type[0]["protocol_id"])
    for p in sorted(pool, key=rank):
        if len(chosen) >= limit:
            break
        if p["protocol_id"] not in chosen:
            chosen.append(p["protocol_id"])
    return chosen


def protocol_calls(header: Mapping) -> int:
    """Calls one run of a protocol makes: four versions × ``n``."""
    n = header.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BudgetError(f"protocol {header.get('protocol_id')!r} has no usable 'n' ({n!r})")
    return 4 * n


@dataclass
class Plan:
    """What the ladder lets run this month, and what it leaves out (with why)."""

    job: str
    state: LadderState
    allowed: list[str]
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"job": self.job, "state": self.state.to_json(), "allowed": list(self.allowed),
                "skipped": [{"protocol_id": p, "reason": r} for p, r in self.skipped]}


def allowed_protocols(paths: ArchivePaths, protocols: Sequence[Mapping], job: str = "sweep",
                      month: Optional[str] = None, date: Optional[str] = None,
                      record_skips: bool = True, budget: Optional[Budget] = None) -> Plan:
    """Decide which of ``protocols`` (headers: id, type, lane, twin, n) may run this month.

    This is the entry point of the sweep and of Dagster.  The ladder's rung
    limits how many and which lanes; then protocols are admitted in rank
    order while their whole cost (``4 × n`` calls at the scenario rate) fits
    in what is left of the general pool.  For ``job="bridge"`` the bridge
    reserve is the only limit.  Every protocol left out gets a ``skip``
    record with cause ``budget_halted`` unless ``record_skips`` is false.
    """
    budget = budget or load_budget(paths)
    if budget is None:
        raise BudgetError(f"{paths.budget_file} does not exist: paid work needs a budget "
                          "(create one with `llmarchive budget init`)")
    if job not in JOBS or job == "subject_fingerprint":
        scenario_jobs = ", ".join(j for j in JOBS if j != "subject_fingerprint")
        raise BudgetError(f"allowed_protocols plans scenario jobs ({scenario_jobs}); got {job!r}")
    state = ladder_state(paths, budget, month)
    rate = budget.rate("scenario")
    ids = [p["protocol_id"] for p in protocols]
    if job == "bridge":
        ranked, left, why_rung = ids, state.bridge_left_eur, None
    else:
        rung = state.rung
        if rung is None:
            ranked = [p["protocol_id"] for p in sorted(protocols, key=lambda p: p["protocol_id"])]
        else:
            ranked = select_protocols(protocols, rung.max_protocols, rung.lanes)
        left, why_rung = state.general_left_eur, (None if rung is None else
                                                  f"{state.used_pct:.1f} % of the general pool used; {rung.describe()}")
    by_id = {p["protocol_id"]: p for p in protocols}
    allowed: list[str] = []
    skipped: list[tuple[str, str]] = []
    for pid in ranked:
        cost = protocol_calls(by_id[pid]) * rate
        if cost <= left + EPSILON_EUR:
            allowed.append(pid)
            left -= cost
        else:
            pool = "bridge reserve" if job == "bridge" else "general pool"
            skipped.append((pid, f"a run costs about €{cost:.2f}; €{max(left, 0):.2f} left in the {pool} "
                                 f"for {state.month}"))
    for pid in ids:
        if pid not in allowed and all(pid != s for s, _ in skipped):
            skipped.append((pid, why_rung or "not selected"))
    plan = Plan(job, state, allowed, sorted(skipped))
    if record_skips:
        record_plan_skips(paths, plan, date)
    return plan


def record_plan_skips(paths: ArchivePaths, plan: Plan, date: Optional[str] = None) -> None:
    day = date or utc_today()
    for pid, reason in plan.skipped:
        records.append(paths, "skip", {"date": day, "job": plan.job, "protocol_id": pid, "reason": reason,
                                       "cause": "budget_halted"})


# --------------------------------------------------------------------------
# one run: authorisation and metering
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Authorization:
    """Permission for one run: which pool pays, at which per-call rate."""

    job: str
    category: str
    pool: str
    rate_eur_per_call: Optional[float]
    budgeted: bool = True

    def to_json(self) -> dict:
        return asdict(self)


def unbudgeted(job: str = "manual") -> Authorization:
    """For a paid subject explicitly run without a budget (costs unknown, logged as null)."""
    category, pool = JOBS.get(job, ("scenario", "general"))
    return Authorization(job, category, pool, None, budgeted=False)


def authorize_run(paths: ArchivePaths, budget: Budget, header: Mapping, job: str, calls: int,
                  all_protocols: Optional[Sequence[Mapping]] = None, month: Optional[str] = None,
                  date: Optional[str] = None) -> Authorization:
    """Allow one run of ``header`` making ``calls`` paid calls, or raise :class:`BudgetHalted`.

    A refusal is recorded as a ``skip`` with cause ``budget_halted`` before
    it is raised.  ``all_protocols`` (headers of every protocol the sweep
    knows) lets the ladder's selection rule be applied exactly as the sweep
    would; without it the protocol is judged on its own.
    """
    if job not in JOBS:
        raise BudgetError(f"unknown job {job!r}; known jobs: {', '.join(JOBS)}")
    category, pool = JOBS[job]
    if job == "subject_fingerprint":
        return Authorization(job, category, pool, budget.rate(category))
    protocol_id = header["protocol_id"]
    series = header.get("series")
    pool_list = [p for p in all_protocols or [] if series is None or p.get("series") == series]
    if not any(p.get("protocol_id") == protocol_id for p in pool_list):
        pool_list.append(header)
    state = ladder_state(paths, budget, month)
    cost = calls * budget.rate(category)
    reason = None
    if job == "bridge":
        left, pool_name = state.bridge_left_eur, "the bridge reserve"
    else:
        left, pool_name = state.general_left_eur, "the general pool"
        rung = state.rung
        if rung is not None and protocol_id not in select_protocols(pool_list, rung.max_protocols, rung.lanes):
            reason = f"{state.used_pct:.1f} % of the general pool used; {rung.describe()}"
    if reason is None and cost > left + EPSILON_EUR:
        reason = f"{calls} calls cost about €{cost:.2f}; €{max(left, 0):.2f} left in {pool_name} for {state.month}"
    if reason:
        day = date or utc_today()
        records.append(paths, "skip", {"date": day, "job": job, "protocol_id": protocol_id, "reason": reason,
                                       "cause": "budget_halted"})
        raise BudgetHalted(f"{protocol_id} may not run ({job}): {reason}")
    return Authorization(job, category, pool, budget.rate(category))


def append_many(log: ChainedLog, entries: Sequence[Mapping]) -> list[dict]:
    """Group commit of several records (see :meth:`ChainedLog.extend`)."""
    return log.extend(entries)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


class SpendMeter:
    """Writes one ledger entry per recorded paid call, and never two for the same call.

    Entries are keyed by ``(run_id, call_key)``.  :meth:`reconcile` adds the
    entries a killed run recorded trials for but never got to write, so the
    ledger always matches the trial log: every recorded call once.
    """

    def __init__(self, paths: ArchivePaths, authorization: Authorization, run_id: str, subject: str,
                 model_id: str, budget: Optional[Budget] = None) -> None:
        self.paths = paths
        self.auth = authorization
        self.run_id = run_id
        self.subject = subject
        self.model_id = model_id
        self.budget = budget
        with file_lock(paths.spend_ledger):
            self._reload()

    def _reload(self) -> None:
        self.log = ChainedLog(self.paths.spend_ledger)
        self.keys = {e.get("call_key") for e in self.log.records if e.get("run_id") == self.run_id}
        self._size = _size(self.paths.spend_ledger)

    def _pool_for(self, cost: float, month: str, pending: Sequence[Mapping]) -> str:
        if self.auth.job != "subject_fingerprint" or self.budget is None:
            return self.auth.pool
        spent = month_spend(self.paths, month, list(self.log.records) + list(pending))
        return "general" if spent["general"] + cost <= self.budget.general_pool_eur + EPSILON_EUR else "heartbeat"

    def record(self, call_key: str, trial: Mapping) -> Optional[dict]:
        """Charge one recorded call (``None`` when it is already in the ledger)."""
        written = self.record_many([(call_key, trial)])
        return written[0] if written else None

    def record_many(self, calls: Sequence[tuple[str, Mapping]]) -> list[dict]:
        """Charge several recorded calls with one fsync, skipping any already charged."""
        with file_lock(self.paths.spend_ledger):
            if _size(self.paths.spend_ledger) != self._size:
                self._reload()  # another process appended: re-read before chaining on
            entries: list[dict] = []
            for call_key, trial in calls:
                if call_key in self.keys or any(e["call_key"] == call_key for e in entries):
                    continue
                entries.append(self._entry(call_key, trial, entries))
            written = append_many(self.log, entries)
            self.keys.update(e["call_key"] for e in written)
            self._size = _size(self.paths.spend_ledger)
            return written

    def _entry(self, call_key: str, trial: Mapping, pending: Sequence[Mapping] = ()) -> dict:
        now = records.utc_now()
        month = now[:7]
        answered = bool(trial.get("answered", True))
        if self.auth.rate_eur_per_call is None:
            cost = None
        else:
            cost = self.auth.rate_eur_per_call if answered else 0.0
        return {
            "record_type": "spend", "schema_version": SCHEMA_VERSION, "recorded_at": now, "month": month,
            "job": self.auth.job, "category": self.auth.category,
            "pool": self._pool_for(cost or 0.0, month, pending), "run_id": self.run_id, "call_key": call_key,
            "subject": self.subject, "model_id": self.model_id, "answered": answered,
            "input_tokens": trial.get("input_tokens"), "output_tokens": trial.get("output_tokens"),
            "attempts": trial.get("attempts"), "cost_eur": cost,
        }

    def reconcile(self, trials: Iterable[Mapping], key_of) -> int:
        """Charge every recorded trial the ledger is missing; return how many."""
        return len(self.record_many([(key_of(trial), trial) for trial in trials]))

    def run_cost(self) -> Optional[float]:
        costs = [e.get("cost_eur") for e in self.log.records if e.get("run_id") == self.run_id]
        if any(c is None for c in costs):
            return None
        return round(sum(costs), 6)
