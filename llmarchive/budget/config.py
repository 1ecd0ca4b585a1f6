"""The budget's configuration: ``private/budget.json``, its pools, rates and prices (method §9).

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

Two kinds of figure, never confused.  ``rates_eur_per_call`` (scenario and
fingerprint separately, never averaged) are the *planning* figures: what a
run is expected to cost before it starts, used by the ladder
(:mod:`llmarchive.budget.ladder`) to decide what may run.
``prices_eur_per_mtok`` (euros per million input and output tokens, the
provider's price list) are what the ledger *charges*
(:mod:`llmarchive.budget.meter`).  A ``budget.json`` written before prices
existed stays readable: without ``prices_eur_per_mtok`` every call is
charged its category's flat per-call rate (``basis: "flat_rate"`` on the
entry) and ``llmarchive budget show`` says so.

This module is the bottom of the package: the errors, the paid jobs and
their pools, and the parsed :class:`Budget` every other module of it reads.
"""
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from llmarchive.archive import ArchivePaths, RecordFileError, jobs as job_table, read_json, write_json
from measure.errors import ArchiveError

CATEGORIES = ("scenario", "fingerprint")
POOLS = ("general", "bridge", "heartbeat")
# Each pool by name, as a refusal may publish it (never with an amount).
POOL_NAMES = {"general": "general pool", "bridge": "bridge reserve", "heartbeat": "heartbeat reserve"}
# job → (category, pool), for every paid job of the one jobs table (llmarchive.archive.jobs), under its one name;
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

    skip: Optional[dict] = None     # the skip recorded for this refusal, when the refusing code recorded one


def eur(amount: float, places: int = 2) -> str:
    """An amount of euros as a person reads it: ``€12.34`` (``places`` decimals; a call's cost wants 4 or 5).

    Why one function: every message, reason and report that names money
    (the refusals, the ladder's cuts, ``budget show``, ``status``) writes it
    the same way, so the owner meets one form and the value check,
    which looks for amounts near a euro sign, has one form to look for.
    """
    return f"€{amount:.{places}f}"


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
        """The owner's words: from which share of the pool, and what the rung keeps."""
        return f"from {self.at_pct:g} % used: {self.effect()}"

    def effect(self) -> str:
        """The rung by name — what it keeps, no share of the pool: the words a published gap may use."""
        if self.max_protocols == 0:
            return "only subject_fingerprint"
        lanes = "" if self.lanes is None else " " + "/".join(self.lanes)
        return f"at most {self.max_protocols}{lanes} protocols"


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

