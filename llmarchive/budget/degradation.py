"""Degradation: method §9's order of cuts, each a dated, recorded decision.

The ladder (:mod:`llmarchive.budget.ladder`) reacts to one month's spend;
when the *measured* cost of a call makes the planned programme
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
them (``kept_protocols``, chosen by
:func:`~llmarchive.budget.ladder.select_protocols` from the whole month's
programme when the cut is made), and everything after — a sweep resumed
later that month, the next months, coverage — reads that list back
(:func:`kept_protocols`) instead of choosing again from whatever is left to
run.  Choosing again would let a sweep interrupted after some of the kept
protocols pick *other* protocols for the rest, and so run more than the cut
allows.
"""
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from llmarchive.archive import ArchivePaths, RecordFileError, record_logs as records
from llmarchive.budget.config import EPSILON_EUR, Budget, BudgetError, eur
from llmarchive.budget.ladder import select_protocols
from llmarchive.budget.checkpoint import LedgerView, read_ledger


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
        return records.read(paths, CUT_KIND)
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
                  view: Optional[LedgerView] = None) -> Optional[tuple[float, int]]:
    """(mean euros per answered call, calls) over the last three months' usage-charged trials, if enough.

    Read from the ledger's tally (:mod:`llmarchive.budget.checkpoint`), which folds each such charge as it is
    read: every partition of a month asks, and re-reading the whole ledger for it grew with the archive's age.
    """
    euros, calls = (view or read_ledger(paths)).tally.measured(category, _months_back(month, MEASURED_MONTHS))
    if calls < MIN_MEASURED_CALLS:
        return None
    return euros / calls, calls


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
    view = read_ledger(paths)
    measured = measured_rate(paths, "scenario", month, view)
    if measured is None:
        return []
    scenario_eur, calls = measured
    fingerprint = measured_rate(paths, "fingerprint", month, view)
    fingerprint_eur = fingerprint[0] if fingerprint else budget.rate("fingerprint")
    level = current_level(paths)
    written: list[dict] = []
    while not level.tier_drop:
        projected = projected_month_eur(level, calls_per_protocol, scenario_eur, fingerprint_eur)
        if projected <= budget.general_pool_eur + EPSILON_EUR:
            break
        nxt = LEVELS[level.level + 1]
        record = {
            "date": day, "month": month, "from_level": level.level, "to_level": nxt.level, "step": nxt.step,
            "protocols": nxt.protocols, "frequency": nxt.frequency, "tier_drop": nxt.tier_drop,
            "measured_eur_per_call": round(scenario_eur, 8), "calls_measured": calls,
            "fingerprint_eur_per_call": round(fingerprint_eur, 8),
            "projected_month_eur": round(projected, 4), "general_pool_eur": budget.general_pool_eur,
            "reason": (f"at the measured {eur(scenario_eur, 5)} a call ({calls} calls), {level.describe()} costs about "
                       f"{eur(projected)} a month against a general pool of {eur(budget.general_pool_eur)}; "
                       f"cut to {nxt.describe()}"),
        }
        if programme is not None:
            record["kept_protocols"] = select_protocols(programme, nxt.protocols, None)
        written.append(records.append(paths, CUT_KIND, record))
        level = nxt
    return written


def sweep_due(level: Level, month: str) -> bool:
    """Whether the sweep runs in ``month`` at ``level`` (quarterly: the first month of each calendar quarter)."""
    if level.tier_drop:
        return False
    return level.frequency == "monthly" or int(month[5:7]) in QUARTER_START_MONTHS

