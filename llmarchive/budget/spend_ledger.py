"""The spend ledger (``private/spend.jsonl``): its two kinds of entry and what a month has spent (method §9).

The ledger holds *charges* (``record_type`` ``spend``: what a call cost)
and *reservations* (``spend_reservation``: an attempt about to leave, at
its worst case); :mod:`llmarchive.budget.meter` writes both.  A
reservation no charge has settled stays counted at its worst case, so
"spend" — for the ladder, the pools and the ceiling — is always
*charged + open worst case*, and the ledger can only overstate what the
provider bills, never understate it.  This module reads the ledger; it
never writes it.
"""
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from llmarchive.budget.config import POOLS, BudgetError
from llmarchive.archive import ArchivePaths, RecordFileError, read_jsonl


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

