"""The monthly budget, the spend ledger and the degradation ladder (method §9).

Everything here is private (``private/budget.json``, ``private/spend.jsonl``):
the mechanism is ordinary, the euro figures are the owner's.

``budget.json`` — recalibratable data, never code::

    {
      "monthly_ceiling_eur": 25.0,          the hard monthly ceiling
      "bridge_reserve_eur": 6.5,            carved out for a generation bridge
      "heartbeat_reserve_eur": 1.0,         carved out so the archive is never silent
      "rates_eur_per_call": {"scenario": 0.0094, "fingerprint": 0.0011},
      "prices_eur_per_mtok": {"input": 2.8, "output": 14.0},
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
* **heartbeat** — ``subject_fingerprint`` is never gated by the ladder: it is
  charged to the general pool while that has room, then to the heartbeat
  reserve, and stops (``budget_halted``) when both are spent — the ceiling is
  hard for it too.  No other job reaches the heartbeat reserve.

Two kinds of figure, never confused.  ``rates_eur_per_call`` (scenario and
fingerprint separately, never averaged) are the *planning* figures: what a
run is expected to cost before it starts, used by the ladder to decide
what may run.  ``prices_eur_per_mtok`` (euros per million input and output
tokens, the provider's price list) are what the ledger *charges*:

* an answered call is charged from the usage the provider reported
  (input tokens × input price + output tokens × output price);
* before each attempt leaves, a **reservation** at the attempt's worst case
  is made durable (worst-case input tokens — the prompt's UTF-8 bytes plus
  a framing allowance, never fewer than the provider can count — plus
  ``max_tokens`` output tokens).  The charge written when the call is over
  settles the reservations of its attempts; a reservation never settled
  (the process was killed during the call, or between the answer and its
  record) stays charged at its worst case, for good;
* an attempt whose answer never arrived intact (a read timeout, a connection
  cut after sending, a malformed 200) may have been billed and is charged
  at its worst case; an attempt answered with an HTTP error is not billed.

"Spend" — for the ladder, the pools and the ceiling — is always
*charged + open worst case*, so the ledger can only overstate what the
provider bills, never understate it.  A ``budget.json`` written before
prices existed stays readable: without ``prices_eur_per_mtok`` every call
is charged its category's flat per-call rate (``basis: "flat_rate"`` on the
entry) and ``llmarchive budget show`` says so.  The reference model is free
and never reaches this module.

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

Degradation (method §9's order of cuts).  The ladder reacts to one month's
spend; when the *measured* cost of a call makes the planned programme
unaffordable month after month, :func:`review_degradation` cuts the
programme itself, one step at a time and always in this order: 12 → 8 → 6
protocols, then monthly → quarterly, then the tier (a Haiku-class model,
a disclosed series discontinuity that only a person can carry out).  Each
step is a dated ``budget_cut`` record in its own hash-chained log
(``private/records/budget_cut.jsonl``), read back by :func:`budget_cuts`;
the sweep applies the latest one and records every protocol it leaves out
as a ``budget_halted`` skip naming the decision.  ``n``, the checks and the
extraction are never cut.

Which protocols a cut keeps is part of the decision: the record carries
them (``kept_protocols``, chosen by :func:`select_protocols` from the whole
month's programme when the cut is made), and everything after — a sweep
resumed later that month, the next months, coverage — reads that list back
(:func:`kept_protocols`) instead of choosing again from whatever is left to
run.  Choosing again would let a sweep interrupted after some of the kept
protocols pick *other* protocols for the rest, and so run more than the cut
allows.
"""
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from llmarchive import jobs as job_table
from llmarchive import records
from llmarchive.jsonio import ChainedLog, RecordFileError, append_record, read_json, read_jsonl, write_json
from llmarchive.locks import file_lock
from llmarchive.paths import ArchivePaths
from measure.errors import ArchiveError
from measure.schema import SCHEMA_VERSION
from llmarchive.records import utc_today

CATEGORIES = ("scenario", "fingerprint")
POOLS = ("general", "bridge", "heartbeat")
TYPE_ORDER = ("wording", "anchoring", "order", "default")
# job → (category, pool), for every paid job of the one jobs table (llmarchive.jobs), under its one name;
# "subject_fingerprint" switches to heartbeat when general is spent.  An older name ("sweep") is read through
# job_name(), so ledgers and calls that use it keep working.
JOBS = {job.name: (job.category, job.pool) for job in job_table.JOBS if job.category is not None}
EPSILON_EUR = 1e-9
# Tokens a provider may count on top of the prompt's text (role markers, message framing).
PROMPT_FRAMING_TOKENS = 32
PRICE_KEYS = ("input", "output")


class BudgetError(ArchiveError, ValueError):
    """A budget file or ledger that cannot be used; the message names file and field."""


class BudgetHalted(ArchiveError, RuntimeError):
    """A run the ladder or a pool does not allow; recorded as a ``budget_halted`` skip."""


def job_name(job: str) -> str:
    """The paid job's one name (an older name is accepted); an unknown or unpaid job is refused."""
    try:
        name = job_table.canonical(job)
    except job_table.UnknownJob:
        name = None
    if name not in JOBS:
        raise BudgetError(f"unknown job {job!r}; known jobs: {', '.join(JOBS)}")
    return name


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
    prices_eur_per_mtok: Optional[Mapping[str, float]] = None   # {"input", "output"}; None: flat rates

    @property
    def general_pool_eur(self) -> float:
        return self.monthly_ceiling_eur - self.bridge_reserve_eur - self.heartbeat_reserve_eur

    def rate(self, category: str) -> float:
        return float(self.rates_eur_per_call[category])

    @property
    def priced(self) -> bool:
        return self.prices_eur_per_mtok is not None

    def usage_cost(self, input_tokens: int, output_tokens: int) -> float:
        """Euros for one answered attempt from the usage the provider reported."""
        prices = self.prices_eur_per_mtok or {}
        return (input_tokens * float(prices["input"]) + output_tokens * float(prices["output"])) / 1e6

    def attempt_worst_case(self, prompt_bytes: int, max_tokens: int) -> float:
        """The most one attempt can cost: every prompt byte a token, plus framing, plus ``max_tokens`` out."""
        return self.usage_cost(prompt_bytes + PROMPT_FRAMING_TOKENS, max_tokens)

    def to_json(self) -> dict:
        return {
            "monthly_ceiling_eur": self.monthly_ceiling_eur,
            "bridge_reserve_eur": self.bridge_reserve_eur,
            "heartbeat_reserve_eur": self.heartbeat_reserve_eur,
            "rates_eur_per_call": dict(self.rates_eur_per_call),
            "ladder": [{"at_pct": r.at_pct, "max_protocols": r.max_protocols,
                        "lanes": None if r.lanes is None else list(r.lanes)} for r in self.ladder],
            **({} if self.prices_eur_per_mtok is None else
               {"prices_eur_per_mtok": {k: float(self.prices_eur_per_mtok[k]) for k in PRICE_KEYS}}),
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
             "prices_eur_per_mtok", "ladder", "note"}
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
    prices = data.get("prices_eur_per_mtok")
    if prices is not None:
        if not isinstance(prices, dict) or sorted(prices) != sorted(PRICE_KEYS):
            raise BudgetError(f"{where}: 'prices_eur_per_mtok' must be an object with exactly "
                              f"{' and '.join(PRICE_KEYS)} (euros per million tokens), got {prices!r}")
        prices = {k: _number(prices, k, f"{where}: prices_eur_per_mtok") for k in PRICE_KEYS}
    return Budget(ceiling, bridge, heartbeat, {c: float(rates[c]) for c in CATEGORIES}, ladder, prices)


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


CHARGE = "spend"                    # a charge: what a call cost (record_type of the ledger's charges)
RESERVATION = "spend_reservation"   # an attempt about to leave, at its worst case


def ledger_entries(paths: ArchivePaths) -> list[dict]:
    """Every ledger entry (charges and reservations), oldest first."""
    try:
        return read_jsonl(paths.spend_ledger)
    except RecordFileError as exc:
        raise BudgetError(str(exc)) from None


def ledger(paths: ArchivePaths) -> list[dict]:
    """Every charge, oldest first (reservations are in :func:`ledger_entries`)."""
    return [e for e in ledger_entries(paths) if e.get("record_type", CHARGE) == CHARGE]


def open_reservations(entries: Sequence[Mapping]) -> list[Mapping]:
    """Reservations no charge has settled: attempts whose cost is unknown, counted at their worst case."""
    settled = {rid for e in entries if e.get("record_type", CHARGE) == CHARGE for rid in e.get("settles") or ()}
    return [e for e in entries if e.get("record_type") == RESERVATION and e.get("reservation_id") not in settled]


@dataclass(frozen=True)
class MonthTotals:
    """Euros per pool in one month: charged from usage, and open worst case."""

    charged_eur: Mapping[str, float]
    worst_case_eur: Mapping[str, float]

    @property
    def spent_eur(self) -> dict[str, float]:
        """What the ladder, the pools and the ceiling count: charged + open worst case."""
        return {pool: self.charged_eur[pool] + self.worst_case_eur[pool] for pool in POOLS}


def month_totals(paths: ArchivePaths, month: str, entries: Optional[Sequence[Mapping]] = None) -> MonthTotals:
    entries = ledger_entries(paths) if entries is None else entries
    charged = {pool: 0.0 for pool in POOLS}
    worst = {pool: 0.0 for pool in POOLS}
    for entry in entries:
        if entry.get("month") != month or entry.get("record_type", CHARGE) != CHARGE:
            continue
        if isinstance(entry.get("cost_eur"), (int, float)):
            pool = entry.get("pool", "general")
            charged[pool] = charged.get(pool, 0.0) + entry["cost_eur"]
    for entry in open_reservations(entries):
        if entry.get("month") == month and isinstance(entry.get("worst_case_eur"), (int, float)):
            pool = entry.get("pool", "general")
            worst[pool] = worst.get(pool, 0.0) + entry["worst_case_eur"]
    return MonthTotals(charged, worst)


def month_spend(paths: ArchivePaths, month: str, entries: Optional[Sequence[Mapping]] = None) -> dict[str, float]:
    """Euros committed in ``month`` (``YYYY-MM``) per pool: charged + open worst case."""
    return month_totals(paths, month, entries).spent_eur


@dataclass(frozen=True)
class LadderState:
    """Where the month stands: spend per pool (charged + worst case), the used share, the rung in force."""

    month: str
    general_pool_eur: float
    spent_eur: Mapping[str, float]
    used_pct: float
    rung: Optional[Rung]
    bridge_left_eur: float
    heartbeat_left_eur: float
    charged_eur: Mapping[str, float] = field(default_factory=dict)
    worst_case_eur: Mapping[str, float] = field(default_factory=dict)
    priced: bool = False

    @property
    def general_left_eur(self) -> float:
        return self.general_pool_eur - self.spent_eur["general"]

    def describe(self) -> str:
        return "no cut: every protocol may run" if self.rung is None else self.rung.describe()

    def to_json(self) -> dict:
        out = asdict(self)
        out["rung"] = None if self.rung is None else self.describe()
        out["general_left_eur"] = self.general_left_eur
        out["charging"] = "usage" if self.priced else "flat_rate"
        return out


def ladder_state(paths: ArchivePaths, budget: Budget, month: Optional[str] = None) -> LadderState:
    month = month or current_month()
    totals = month_totals(paths, month)
    spent = totals.spent_eur
    used = 100.0 * spent["general"] / budget.general_pool_eur
    rung = None
    for candidate in budget.ladder:
        if used >= candidate.at_pct:
            rung = candidate
    return LadderState(month, budget.general_pool_eur, spent, used, rung,
                       budget.bridge_reserve_eur - spent["bridge"], budget.heartbeat_reserve_eur - spent["heartbeat"],
                       dict(totals.charged_eur), dict(totals.worst_case_eur), budget.priced)


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


def rung_selection(state: LadderState, protocols: Sequence[Mapping]) -> tuple[list[str], Optional[str]]:
    """The ladder rule, in one place: which of ``protocols`` the rung in force keeps, best first, and why not the rest.

    No rung (below the first ``at_pct``): every protocol, by id, and no
    reason.  A rung: :func:`select_protocols` with its limit and lanes, and
    the reason the others are left out.  Both the month's plan
    (:func:`allowed_protocols`) and each run's permission
    (:func:`authorize_run`) ask this, so they can never disagree.
    """
    rung = state.rung
    if rung is None:
        return [p["protocol_id"] for p in sorted(protocols, key=lambda p: p["protocol_id"])], None
    return (select_protocols(protocols, rung.max_protocols, rung.lanes),
            f"{state.used_pct:.1f} % of the general pool used; {rung.describe()}")


def pool_shortfall(calls: int, rate_eur: float, left_eur: float, job: str, month: str) -> Optional[str]:
    """Why ``calls`` at ``rate_eur`` do not fit in what ``job``'s pool has left (None: they fit).

    The pool rule of both the plan and each run's permission: a protocol
    runs whole or not at all, so its whole remaining cost must fit.
    """
    cost = calls * rate_eur
    if cost <= left_eur + EPSILON_EUR:
        return None
    pool = "bridge reserve" if job == "bridge" else "general pool"
    return f"a run of {calls} calls costs about €{cost:.2f}; €{max(left_eur, 0):.2f} left in the {pool} for {month}"


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


def allowed_protocols(paths: ArchivePaths, protocols: Sequence[Mapping], job: str = job_table.FULL_SWEEP,
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
    job = job_name(job)
    if job == job_table.SUBJECT_FINGERPRINT:
        scenario_jobs = ", ".join(j for j in JOBS if j != "subject_fingerprint")
        raise BudgetError(f"allowed_protocols plans scenario jobs ({scenario_jobs}); got {job!r}")
    state = ladder_state(paths, budget, month)
    rate = budget.rate("scenario")
    ids = [p["protocol_id"] for p in protocols]
    if job == "bridge":
        ranked, left, why_rung = ids, state.bridge_left_eur, None
    else:
        ranked, why_rung = rung_selection(state, protocols)
        left = state.general_left_eur
    by_id = {p["protocol_id"]: p for p in protocols}
    allowed: list[str] = []
    skipped: list[tuple[str, str]] = []
    for pid in ranked:
        calls = protocol_calls(by_id[pid])
        short = pool_shortfall(calls, rate, left, job, state.month)
        if short is None:
            allowed.append(pid)
            left -= calls * rate
        else:
            skipped.append((pid, short))
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
# degradation: method §9's order of cuts, each a recorded decision
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Level:
    """One step of the programme: how many protocols, how often, and whether the tier must drop."""

    level: int
    protocols: int
    frequency: str          # monthly | quarterly
    tier_drop: bool = False

    @property
    def step(self) -> str:
        """Which kind of cut reaching this level is (SPEC's order: protocols, frequency, tier)."""
        return {0: "none", 1: "protocols", 2: "protocols", 3: "frequency", 4: "tier"}[self.level]

    def describe(self) -> str:
        if self.tier_drop:
            return "tier drop: the series must move to a Haiku-class model (a disclosed discontinuity)"
        return f"{self.protocols} protocols, {self.frequency}"


LEVELS = (Level(0, 12, "monthly"), Level(1, 8, "monthly"), Level(2, 6, "monthly"), Level(3, 6, "quarterly"),
          Level(4, 6, "quarterly", tier_drop=True))
CUT_KIND = "budget_cut"
# A measured per-call cost needs at least one protocol's worth of answered, usage-charged calls.
MIN_MEASURED_CALLS = 120
MEASURED_MONTHS = 3
FINGERPRINT_CALLS_PER_MONTH = 30 * 24
QUARTER_START_MONTHS = (1, 4, 7, 10)


def budget_cuts(paths: ArchivePaths) -> list[dict]:
    """Every ``budget_cut`` decision, oldest first (a hash-chained log, ``private/records/budget_cut.jsonl``)."""
    try:
        return read_jsonl(paths.record_log(CUT_KIND))
    except RecordFileError as exc:
        raise BudgetError(str(exc)) from None


def kept_protocols(cut: Mapping, programme: Sequence[Mapping]) -> list[str]:
    """The protocol ids ``cut`` keeps: the list recorded with the decision, else the rule applied to ``programme``.

    A cut recorded before the list was kept on the record has none; for it
    the rule is applied to the whole programme (every protocol of the
    series, run or not), which depends on the registry alone — never on
    which protocols happen to be left to run — so it gives the same answer
    on every pass of a month.
    """
    recorded = cut.get("kept_protocols")
    if isinstance(recorded, list):
        return [str(p) for p in recorded]
    level = LEVELS[cut["to_level"]]
    return select_protocols(programme, level.protocols, None)


def current_level(paths: ArchivePaths) -> Level:
    cuts = budget_cuts(paths)
    return LEVELS[cuts[-1]["to_level"]] if cuts else LEVELS[0]


def _months_back(month: str, count: int) -> set[str]:
    year, mon = int(month[:4]), int(month[5:7])
    out = set()
    for _ in range(count):
        out.add(f"{year:04d}-{mon:02d}")
        year, mon = (year - 1, 12) if mon == 1 else (year, mon - 1)
    return out


def measured_rate(paths: ArchivePaths, category: str, month: str,
                  entries: Optional[Sequence[Mapping]] = None) -> Optional[tuple[float, int]]:
    """(mean euros per answered call, calls) over the last three months' usage-charged trials, if enough."""
    months = _months_back(month, MEASURED_MONTHS)
    costs = [e["cost_eur"] for e in (ledger(paths) if entries is None else entries)
             if e.get("record_type", CHARGE) == CHARGE and e.get("category") == category and e.get("month") in months
             and e.get("basis") == "usage" and e.get("answered") and e.get("trial", True)
             and isinstance(e.get("cost_eur"), (int, float))]
    if len(costs) < MIN_MEASURED_CALLS:
        return None
    return sum(costs) / len(costs), len(costs)


def projected_month_eur(level: Level, calls_per_protocol: int, scenario_eur: float, fingerprint_eur: float) -> float:
    """A month's cost of the programme at ``level``: its sweep share plus a month of subject fingerprints."""
    per_month = level.protocols * calls_per_protocol * scenario_eur / (3 if level.frequency == "quarterly" else 1)
    return per_month + FINGERPRINT_CALLS_PER_MONTH * fingerprint_eur


def review_degradation(paths: ArchivePaths, budget: Budget, day: str, calls_per_protocol: int,
                       programme: Optional[Sequence[Mapping]] = None) -> list[dict]:
    """Cut the programme while its measured monthly cost exceeds the general pool; return the new decisions.

    One step at a time in SPEC's order, each written as its own dated
    ``budget_cut`` record before the next is considered.  With
    ``programme`` (the headers of every protocol the month's sweep may run,
    already run or not) each record also carries ``kept_protocols``, the
    protocols the new level keeps, so the choice is made once and read back
    (:func:`kept_protocols`).  Nothing is
    decided without a measured cost (at least :data:`MIN_MEASURED_CALLS`
    usage-charged calls in three months), and no cut is ever undone here:
    restoring the programme is a person's decision.
    """
    month = day[:7]
    entries = ledger(paths)
    measured = measured_rate(paths, "scenario", month, entries)
    if measured is None:
        return []
    scenario_eur, calls = measured
    fingerprint = measured_rate(paths, "fingerprint", month, entries)
    fingerprint_eur = fingerprint[0] if fingerprint else budget.rate("fingerprint")
    level = current_level(paths)
    written: list[dict] = []
    while not level.tier_drop:
        projected = projected_month_eur(level, calls_per_protocol, scenario_eur, fingerprint_eur)
        if projected <= budget.general_pool_eur + EPSILON_EUR:
            break
        nxt = LEVELS[level.level + 1]
        record = {
            "record_type": CUT_KIND, "schema_version": SCHEMA_VERSION, "recorded_at": records.utc_now(),
            "date": day, "month": month, "from_level": level.level, "to_level": nxt.level, "step": nxt.step,
            "protocols": nxt.protocols, "frequency": nxt.frequency, "tier_drop": nxt.tier_drop,
            "measured_eur_per_call": round(scenario_eur, 8), "calls_measured": calls,
            "fingerprint_eur_per_call": round(fingerprint_eur, 8),
            "projected_month_eur": round(projected, 4), "general_pool_eur": budget.general_pool_eur,
            "reason": (f"at the measured €{scenario_eur:.5f} a call ({calls} calls), {level.describe()} costs about "
                       f"€{projected:.2f} a month against a general pool of €{budget.general_pool_eur:.2f}; "
                       f"cut to {nxt.describe()}"),
        }
        if programme is not None:
            record["kept_protocols"] = select_protocols(programme, nxt.protocols, None)
        written.append(append_record(paths.record_log(CUT_KIND), record))
        level = nxt
    return written


def sweep_due(level: Level, month: str) -> bool:
    """Whether the sweep runs in ``month`` at ``level`` (quarterly: the first month of each calendar quarter)."""
    if level.tier_drop:
        return False
    return level.frequency == "monthly" or int(month[5:7]) in QUARTER_START_MONTHS


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
    job = job_name(job)
    category, pool = JOBS[job]
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
    job = job_name(job)
    category, pool = JOBS[job]
    if job == "subject_fingerprint":
        return Authorization(job, category, pool, budget.rate(category))
    protocol_id = header["protocol_id"]
    series = header.get("series")
    pool_list = [p for p in all_protocols or [] if series is None or p.get("series") == series]
    if not any(p.get("protocol_id") == protocol_id for p in pool_list):
        pool_list.append(header)
    state = ladder_state(paths, budget, month)
    reason = None
    if job == "bridge":
        left = state.bridge_left_eur
    else:
        left = state.general_left_eur
        kept, why_rung = rung_selection(state, pool_list)
        if protocol_id not in kept:
            reason = why_rung
    if reason is None:
        reason = pool_shortfall(calls, budget.rate(category), left, job, state.month)
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
    """The ledger of one run: reservations before each attempt, one charge per call, never two.

    :meth:`reserve` makes an attempt's worst case durable before its request
    leaves (and refuses it, :class:`BudgetHalted`, when that would take the
    pool past its cap — the ceiling is hard); :meth:`charge_trials` charges
    recorded trials from their usage and settles their reservations;
    :meth:`charge_unanswered` settles the attempts of a call that got no
    answer (an HTTP error costs nothing, an attempt of unknown fate its worst
    case).  A recorded trial is charged once, keyed by its call key, so
    :meth:`reconcile` can add what a killed run recorded but never charged.
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

    @property
    def priced(self) -> bool:
        return self.budget is not None and self.budget.priced and self.auth.budgeted

    def _reload(self) -> None:
        self.log = ChainedLog(self.paths.spend_ledger)
        mine = [e for e in self.log.records if e.get("run_id") == self.run_id]
        charges = [e for e in mine if e.get("record_type", CHARGE) == CHARGE]
        # a charge without the "trial" field predates reservations: it was a recorded trial's
        self.keys = {e.get("call_key") for e in charges if e.get("trial", True)}
        self.charge_ids = {e.get("charge_id") for e in charges if e.get("charge_id")}
        self.reserved = {e["reservation_id"]: e for e in mine if e.get("record_type") == RESERVATION}
        self._size = _size(self.paths.spend_ledger)
        # Running totals of the whole ledger, so a reservation's ceiling check does not re-read years of entries.
        self._charged: dict[tuple, float] = {}
        self._open: dict[str, tuple] = {}
        self._tally(self.log.records)

    def _tally(self, entries: Iterable[Mapping]) -> None:
        for e in entries:
            key = (e.get("month"), e.get("pool", "general"))
            if e.get("record_type", CHARGE) == CHARGE:
                if isinstance(e.get("cost_eur"), (int, float)):
                    self._charged[key] = self._charged.get(key, 0.0) + e["cost_eur"]
                for rid in e.get("settles") or ():
                    self._open.pop(rid, None)
            elif e.get("record_type") == RESERVATION and isinstance(e.get("worst_case_eur"), (int, float)):
                self._open[e["reservation_id"]] = (key, e["worst_case_eur"])

    def committed(self, month: str, pool: str, pending: Sequence[Mapping] = (), settling: Sequence[str] = ()) -> float:
        """Charged + open worst case of ``pool`` in ``month`` (with ``pending`` entries not yet written).

        A reservation that ``pending`` (or the charge about to be made, ``settling``) settles is no longer
        open: counting it beside the charge that replaces it would count one call twice.
        """
        settled = set(settling) | {rid for e in pending for rid in e.get("settles") or ()}
        total = self._charged.get((month, pool), 0.0)
        total += sum(worst for rid, (key, worst) in self._open.items() if key == (month, pool) and rid not in settled)
        return total + sum(e.get("cost_eur") or 0.0 for e in pending
                           if e.get("month") == month and e.get("pool", "general") == pool)

    def _fresh(self) -> None:
        if _size(self.paths.spend_ledger) != self._size:
            self._reload()  # another process appended: re-read before chaining on

    def _append(self, entries: Sequence[Mapping]) -> list[dict]:
        written = append_many(self.log, entries)
        self._size = _size(self.paths.spend_ledger)
        self._tally(written)
        return written

    # -- worst cases -----------------------------------------------------------
    def attempt_worst_case(self, prompt_bytes: int, max_tokens: int) -> Optional[float]:
        """Euros one attempt can cost at most (flat rate without prices; None when unbudgeted)."""
        if self.auth.rate_eur_per_call is None:
            return None
        if self.priced:
            return self.budget.attempt_worst_case(prompt_bytes, max_tokens)
        return self.auth.rate_eur_per_call

    def reservation_id(self, call_key: str, session: str, attempt: int) -> str:
        return f"{self.run_id}/{call_key}/{session}/{attempt}"

    def _pool_cap(self, pool: str) -> Optional[float]:
        if self.budget is None or not self.auth.budgeted:
            return None
        return {"general": self.budget.general_pool_eur, "bridge": self.budget.bridge_reserve_eur,
                "heartbeat": self.budget.heartbeat_reserve_eur}[pool]

    def reserve(self, call_key: str, session: str, attempt: int, prompt_bytes: int, max_tokens: int) -> dict:
        """Make one attempt's worst case durable before it is sent; refuse it past the pool's cap."""
        worst = self.attempt_worst_case(prompt_bytes, max_tokens)
        now = records.utc_now()
        month = now[:7]
        with file_lock(self.paths.spend_ledger):
            self._fresh()
            pool = self._pool_for(worst or 0.0, month, ())
            cap = self._pool_cap(pool)
            if cap is not None and worst is not None:
                committed = self.committed(month, pool)
                if committed + worst > cap + EPSILON_EUR:
                    raise BudgetHalted(f"the {pool} pool for {month} holds €{cap:.4f}; €{committed:.4f} is "
                                       f"charged or reserved and the next call may cost €{worst:.4f}: "
                                       "stopping before it is sent")
            entry = {
                "record_type": RESERVATION, "schema_version": SCHEMA_VERSION, "recorded_at": now, "month": month,
                "job": self.auth.job, "category": self.auth.category, "pool": pool, "run_id": self.run_id,
                "call_key": call_key, "reservation_id": self.reservation_id(call_key, session, attempt),
                "attempt": attempt, "subject": self.subject, "model_id": self.model_id,
                "worst_input_tokens": prompt_bytes + PROMPT_FRAMING_TOKENS, "max_tokens": max_tokens,
                "worst_case_eur": worst,
            }
            written = self._append([entry])[0]
            self.reserved[entry["reservation_id"]] = written
            return written

    # -- charges -------------------------------------------------------------------
    def _settles(self, call_key: str, session: Optional[str], attempts: Any) -> list[str]:
        if session is None or not isinstance(attempts, int):
            return []
        ids = [self.reservation_id(call_key, session, a) for a in range(1, attempts + 1)]
        return [rid for rid in ids if rid in self.reserved]

    def _cost(self, call: Mapping, answered: bool) -> tuple[Optional[float], str]:
        """(euros, basis) for one call: usage when answered, worst case for each attempt of unknown fate."""
        if self.auth.rate_eur_per_call is None:
            return None, "unbudgeted"
        unknown = int(call.get("unknown_attempts") or 0)
        worst = call.get("worst_case_eur_per_attempt")
        if worst is None and isinstance(call.get("prompt_bytes"), int) and isinstance(call.get("max_tokens"), int):
            worst = self.attempt_worst_case(call["prompt_bytes"], call["max_tokens"])
        if not self.priced:
            return self.auth.rate_eur_per_call * ((1 if answered else 0) + unknown), "flat_rate"
        if worst is None:
            worst = self.auth.rate_eur_per_call   # no prompt size known: the planning rate is all there is
        tokens_in, tokens_out = call.get("input_tokens"), call.get("output_tokens")
        basis, cost = "usage", 0.0
        if answered:
            if isinstance(tokens_in, int) and isinstance(tokens_out, int):
                cost = self.budget.usage_cost(tokens_in, tokens_out)
            else:
                cost, basis = worst, "worst_case"    # answered without a usage report: the most it can be
        return cost + unknown * worst, basis

    def _entry(self, call_key: str, call: Mapping, *, trial: bool, charge_id: str, settles: Sequence[str],
               pending: Sequence[Mapping] = ()) -> dict:
        now = records.utc_now()
        month = now[:7]
        answered = bool(call.get("answered", True))
        cost, basis = self._cost(call, answered)
        return {
            "record_type": CHARGE, "schema_version": SCHEMA_VERSION, "recorded_at": now, "month": month,
            "job": self.auth.job, "category": self.auth.category,
            "pool": self._pool_for(cost or 0.0, month, pending, settles), "run_id": self.run_id,
            "call_key": call_key,
            "charge_id": charge_id, "trial": trial, "subject": self.subject, "model_id": self.model_id,
            "answered": answered, "input_tokens": call.get("input_tokens"),
            "output_tokens": call.get("output_tokens"), "attempts": call.get("attempts"),
            "unknown_attempts": int(call.get("unknown_attempts") or 0), "basis": basis, "settles": list(settles),
            "cost_eur": cost,
        }

    def _pool_for(self, cost: float, month: str, pending: Sequence[Mapping], settling: Sequence[str] = ()) -> str:
        if self.auth.job != "subject_fingerprint" or self.budget is None:
            return self.auth.pool
        spent = self.committed(month, "general", pending, settling)
        return "general" if spent + cost <= self.budget.general_pool_eur + EPSILON_EUR else "heartbeat"

    def record(self, call_key: str, trial: Mapping) -> Optional[dict]:
        """Charge one recorded call (``None`` when it is already in the ledger)."""
        written = self.record_many([(call_key, trial)])
        return written[0] if written else None

    def record_many(self, calls: Sequence[tuple[str, Mapping]]) -> list[dict]:
        """Charge several answered-or-blocked calls (trials) with one fsync, skipping any already charged.

        Each mapping is a trial record or the like: ``answered``,
        ``input_tokens``, ``output_tokens``, ``attempts``,
        ``unknown_attempts``, and, for the worst case of unknown attempts,
        either ``worst_case_eur_per_attempt`` or ``prompt_bytes`` and
        ``max_tokens``; ``session`` names the reservations it settles.
        """
        with file_lock(self.paths.spend_ledger):
            self._fresh()
            entries: list[dict] = []
            for call_key, call in calls:
                if call_key in self.keys or any(e["call_key"] == call_key for e in entries):
                    continue
                settles = self._settles(call_key, call.get("session"), call.get("attempts"))
                entries.append(self._entry(call_key, call, trial=True, charge_id=f"{call_key}@{call.get('session')}",
                                           settles=settles, pending=entries))
            written = self._append(entries)
            self.keys.update(e["call_key"] for e in written)
            self.charge_ids.update(e["charge_id"] for e in written)
            return written

    def charge_trials(self, calls: Sequence[tuple[str, Mapping]]) -> list[dict]:
        return self.record_many(calls)

    def charge_unanswered(self, call_key: str, session: str, call: Mapping) -> Optional[dict]:
        """Settle the attempts of a call that got no answer (it is not a trial and will be called again)."""
        charge_id = f"{call_key}@{session}"
        with file_lock(self.paths.spend_ledger):
            self._fresh()
            if charge_id in self.charge_ids:
                return None
            settles = self._settles(call_key, session, call.get("attempts"))
            entry = self._entry(call_key, {**call, "answered": False}, trial=False, charge_id=charge_id,
                                settles=settles)
            written = self._append([entry])[0]
            self.charge_ids.add(charge_id)
            return written

    def reconcile(self, trials: Iterable[Mapping], key_of, extra: Optional[Any] = None) -> int:
        """Charge every recorded trial the ledger is missing; return how many.

        ``extra(trial)`` may add what the trial record does not carry (the
        prompt's size and ``max_tokens``, for the worst case of its unknown
        attempts).
        """
        return len(self.record_many([(key_of(t), {**t, **(extra(t) if extra else {})}) for t in trials]))

    def run_totals(self) -> tuple[Optional[float], float]:
        """(charged, open worst case) of this run, in euros; charged is None when a cost is unknown."""
        mine = [e for e in self.log.records if e.get("run_id") == self.run_id]
        costs = [e.get("cost_eur") for e in mine if e.get("record_type", CHARGE) == CHARGE]
        worst = sum(e.get("worst_case_eur") or 0.0 for e in open_reservations(mine))
        if any(c is None for c in costs):
            return None, round(worst, 6)
        return round(sum(costs), 6), round(worst, 6)

    def run_cost(self) -> Optional[float]:
        """This run's spend: charged + open worst case (None when a cost is unknown)."""
        charged, worst = self.run_totals()
        return None if charged is None else round(charged + worst, 6)
