"""The ledger's verified-prefix checkpoint: what a paid run's start needs, without reading years of entries (method §9.5).

Every paid run starts by asking the spend ledger three things: what the
month has charged and still holds open at worst case per pool (the ladder
and the pools), what each run has committed (earmarks), and which run ids
exist (the subject fingerprint's session).  Reading and verifying the whole
hash-chained ledger for that made a run's start cost in proportion to every
call the archive ever made (the two-year drill's months kept growing).

The answer is folded once into a :class:`LedgerTally` and kept beside the
ledger in ``private/spend.checkpoint``: the byte offset the tally covers, the
hash of the record that ends there, and the running totals.  A run start
reads the checkpoint, checks it against the ledger, and reads, parses and
chain-verifies only the entries appended after it.  The checkpoint is
trusted only when

* it is whole (its own SHA-256 matches its body) and of this format;
* the ledger is at least ``offset`` bytes long and the record whose line
  ends exactly at ``offset`` carries the hash the checkpoint names, and
  that hash matches the record's own content;
* every entry after ``offset`` chains onto that hash.

Anything else — a missing or damaged checkpoint, a ledger cut short,
rewritten, re-chained or edited at the seam, a broken tail — reads and
verifies the whole ledger again (a broken chain is refused as it always
was) and writes a fresh checkpoint.  A new month is no reason: closed
months were verified and folded once, and are not read again at each
month's first start (that re-reading made the first paid start of a month
cost in proportion to the archive's age).  What the cheap check cannot see
is an edit of an older record that keeps every byte offset and leaves the
chain broken inside the prefix; the run start never reads those bytes — its
figures are the checkpoint's, folded when they were verified — and the deep
verification (:mod:`llmarchive.archive.log_checkpoints`: the ledger is one
of the logs its daily rotation verifies whole within a week, and
``llmarchive verify --deep``) finds the change and pages the owner.
"""
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Optional

from llmarchive.archive import ArchivePaths, RecordFileError, jobs as job_table, jsonio, utc_now
from llmarchive.budget.config import POOLS
from llmarchive.budget.spend_ledger import CHARGE, RESERVATION, MonthTotals
from measure import chain, jsonl

FORMAT = 1


def checkpoint_file(paths: ArchivePaths) -> Path:
    """Beside the ledger, private like it; never published and never part of the chain."""
    return paths.spend_ledger.with_name("spend.checkpoint")


@dataclass
class LedgerTally:
    """Running totals of the ledger's entries, folded in file order (the figures a run start asks for).

    ``open`` holds each reservation no charge has settled yet, so a charge
    appended later can settle one that the checkpoint covers.
    """

    charged: dict[tuple[str, str], float] = field(default_factory=dict)          # (month, pool) -> euros
    open: dict[str, tuple[str, str, float, str]] = field(default_factory=dict)   # id -> (month, pool, worst, run)
    by_run: dict[tuple[str, str, str], float] = field(default_factory=dict)      # (run, month, pool) -> euros
    first_offset: dict[str, int] = field(default_factory=dict)                   # run -> byte of its first entry
    count: int = 0
    fingerprint_days: dict[str, int] = field(default_factory=dict)               # day -> subject fingerprint entries
    usage: dict[tuple[str, str], list] = field(default_factory=dict)             # (month, category) -> [euros, calls]

    def add(self, entry: Mapping, offset: int) -> None:
        """Fold one entry whose line starts at byte ``offset``."""
        self.count += 1
        run = entry.get("run_id")
        if isinstance(run, str):
            self.first_offset.setdefault(run, offset)
        day = fingerprint_day(entry)
        if day is not None:
            self.fingerprint_days[day] = self.fingerprint_days.get(day, 0) + 1
        key = (entry.get("month"), entry.get("pool", "general"))
        if entry.get("record_type", CHARGE) == CHARGE:
            if isinstance(entry.get("cost_eur"), (int, float)):
                self.charged[key] = self.charged.get(key, 0.0) + entry["cost_eur"]
                self._count(run, key, entry["cost_eur"])
                if is_measured_call(entry):
                    euros_calls = self.usage.setdefault((entry["month"], entry["category"]), [0.0, 0])
                    euros_calls[0] += entry["cost_eur"]
                    euros_calls[1] += 1
            for rid in entry.get("settles") or ():
                self.settle(rid)
        elif entry.get("record_type") == RESERVATION:
            self.reserve(entry, run, key)

    def reserve(self, entry: Mapping, run: object, key: tuple) -> None:
        """An attempt's worst case counts until a charge settles it (an unpriced one counts nothing)."""
        if not isinstance(entry.get("worst_case_eur"), (int, float)):
            return
        self.open[entry["reservation_id"]] = (*key, entry["worst_case_eur"], run)
        self._count(run, key, entry["worst_case_eur"])

    def settle(self, reservation_id: str) -> None:
        """A reservation settled (or withdrawn before it was written) stops counting at its worst case."""
        opened = self.open.pop(reservation_id, None)
        if opened is not None:
            month, pool, worst, run = opened
            self._count(run, (month, pool), -worst)

    def _count(self, run: object, key: tuple, amount: float) -> None:
        self.by_run[(run, *key)] = self.by_run.get((run, *key), 0.0) + amount

    def committed(self, run_id: str, month: str, pool: str) -> float:
        """What ``run_id`` has charged plus its open worst case in ``month``'s ``pool`` (earmarks.Committed)."""
        return self.by_run.get((run_id, month, pool), 0.0)

    def month_totals(self, month: str) -> MonthTotals:
        """:func:`llmarchive.budget.spend_ledger.month_totals` from the tally, summed in the same order."""
        charged = {pool: 0.0 for pool in POOLS}
        worst = {pool: 0.0 for pool in POOLS}
        for (m, pool), eur in self.charged.items():
            if m == month:
                charged[pool] = charged.get(pool, 0.0) + eur
        for m, pool, eur, _ in self.open.values():
            if m == month:
                worst[pool] = worst.get(pool, 0.0) + eur
        return MonthTotals(charged, worst)

    def pool_totals(self) -> dict[str, dict[str, list[float]]]:
        """month -> pool -> [charged, open worst case] for every month the ledger names: the figures the
        publication's value check keeps out of ``public/`` (:func:`publish.boundary.values.budget_figures`),
        the same sums the ladder reads, from the tally instead of a second reading of the whole ledger."""
        out: dict[str, dict[str, list[float]]] = {}
        for (month, pool), eur in self.charged.items():
            if isinstance(month, str):
                out.setdefault(month, {}).setdefault(str(pool), [0.0, 0.0])[0] += eur
        for month, pool, eur, _ in self.open.values():
            if isinstance(month, str):
                out.setdefault(month, {}).setdefault(str(pool), [0.0, 0.0])[1] += eur
        return out

    def open_eur(self, month: str, pool: str, without: Iterable[str] = ()) -> float:
        skip = set(without)
        return sum(w for rid, (m, p, w, _) in self.open.items() if (m, p) == (month, pool) and rid not in skip)

    @property
    def run_ids(self) -> list[str]:
        return list(self.first_offset)

    def to_json(self) -> dict:
        return {"count": self.count, "charged": [[*k, v] for k, v in self.charged.items()],
                "open": [[rid, *v] for rid, v in self.open.items()],
                "by_run": [[*k, v] for k, v in self.by_run.items()], "first_offset": self.first_offset,
                "fingerprint_days": self.fingerprint_days, "usage": [[*k, *v] for k, v in self.usage.items()]}

    @classmethod
    def from_json(cls, data: Mapping) -> "LedgerTally":
        return cls({(m, p): v for m, p, v in data["charged"]}, {rid: (m, p, w, r) for rid, m, p, w, r in data["open"]},
                   {(r, m, p): v for r, m, p, v in data["by_run"]}, dict(data["first_offset"]), int(data["count"]),
                   # A checkpoint written before the days were tallied lacks them: KeyError, so it is not trusted.
                   {str(d): int(n) for d, n in data["fingerprint_days"].items()},
                   {(m, c): [float(e), int(n)] for m, c, e, n in data["usage"]})

    def measured(self, category: str, months: Iterable[str]) -> tuple[float, int]:
        """(euros, calls) of ``category``'s usage-charged answered trials in ``months`` (the degradation's rate)."""
        euros, calls = 0.0, 0
        for month in sorted(months):
            month_euros, month_calls = self.usage.get((month, category), (0.0, 0))
            euros, calls = euros + month_euros, calls + month_calls
        return euros, calls


def is_measured_call(entry: Mapping) -> bool:
    """A charge that measures what a call costs (method §9.2): usage-priced, answered, a trial, with its euros."""
    return (entry.get("record_type", CHARGE) == CHARGE and isinstance(entry.get("cost_eur"), (int, float))
            and entry.get("basis") == "usage" and bool(entry.get("answered")) and entry.get("trial", True)
            and isinstance(entry.get("month"), str) and isinstance(entry.get("category"), str))


def fingerprint_day(entry: Mapping) -> Optional[str]:
    """The day whose subject fingerprint an entry reserved or charged for (its ``call_key`` is
    ``subject_fingerprint/<day>/...``), else None: what shows coverage that the paid job was started."""
    if entry.get("job") != job_table.SUBJECT_FINGERPRINT:
        return None
    parts = str(entry.get("call_key", "")).split("/", 2)
    return parts[1] if len(parts) == 3 and parts[0] == job_table.SUBJECT_FINGERPRINT else None


@dataclass
class LedgerView:
    """The ledger as one run start read it: the tally of every whole entry, and where the reading ended.

    ``tail`` is what this reading parsed (everything, when it verified the
    whole ledger), starting at byte ``tail_start``, where the chain's hash was
    ``prefix_hash``.
    """

    tally: LedgerTally
    offset: int
    last_hash: str
    tail: list[dict]
    tail_start: int
    prefix_hash: str
    whole: bool


def _parse(path: Path, fh, start: int, end: int) -> list[tuple[int, dict]]:
    """The entries of bytes ``[start, end)`` (whole lines), each with the offset its line starts at."""
    fh.seek(start)
    data = fh.read(end - start)
    reader = jsonl.JsonlReader(jsonl.STRICT, str(path))
    found: list[tuple[int, dict]] = []
    try:
        for line in reader.lines(io.BytesIO(data)):
            found.append((start + reader.size - len(line.raw), line.record))
    except jsonl.JsonlError as exc:
        raise RecordFileError(str(exc)) from None
    return found


def _chains_onto(entries: Iterable[tuple[int, dict]], prev: str) -> Optional[str]:
    """The last hash when every entry links to the one before, starting at ``prev`` (None: a broken link)."""
    for _, record in entries:
        if record.get("prev_sha256") != prev or record.get("record_sha256") != chain.record_hash(record):
            return None
        prev = record["record_sha256"]
    return prev


def _load(paths: ArchivePaths) -> Optional[dict]:
    """The checkpoint when it is whole and of this format; None otherwise (then the ledger is read whole)."""
    data = jsonio.read_digested(checkpoint_file(paths))
    if data is None or data.get("format") != FORMAT or data.get("ledger") != paths.spend_ledger.name:
        return None
    try:
        data["tally"] = LedgerTally.from_json(data["tally"])
    except (KeyError, TypeError, ValueError):
        return None
    return data


def _save(paths: ArchivePaths, view: LedgerView, verified_month: str) -> None:
    try:
        jsonio.write_digested(checkpoint_file(paths), {
            "format": FORMAT, "ledger": paths.spend_ledger.name, "offset": view.offset, "count": view.tally.count,
            "last_sha256": view.last_hash, "verified_month": verified_month, "tally": view.tally.to_json()})
    except OSError:
        pass   # a checkpoint is only a shortcut: without it the next run start verifies the whole ledger


def _seam_holds(path: Path, fh, size: int, offset: int, last: str) -> bool:
    """The record whose line ends at ``offset`` is whole, matches its own hash, and is the one ``last`` names."""
    return offset <= size and jsonio.seam_holds(path, fh, offset, last)


def _whole(path: Path, fh, size: int) -> LedgerView:
    found = _parse(path, fh, 0, size)
    records = [record for _, record in found]
    chain.verify(records)   # raises naming the first broken record, as opening the log always did
    tally = LedgerTally()
    for offset, record in found:
        tally.add(record, offset)
    return LedgerView(tally, size, chain.last_hash(records), records, 0, chain.GENESIS, True)


def read_ledger(paths: ArchivePaths, since: Optional[LedgerView] = None) -> LedgerView:
    """The ledger's tally: the checkpoint (or ``since``, a view this process read) plus the entries after it.

    Reads the whole ledger, verifying its chain, whenever the shortcut cannot
    be trusted (the module docstring), and then writes a new checkpoint; a
    reading that found new entries moves the checkpoint forward.  Raises
    :class:`~llmarchive.archive.jsonio.RecordFileError` for an unreadable line
    and :class:`measure.chain.ChainError` for a broken chain.  ``since`` is
    taken over, not copied.
    """
    path = paths.spend_ledger
    month = utc_now()[:7]
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return LedgerView(LedgerTally(), 0, chain.GENESIS, [], 0, chain.GENESIS, True)
    with fh:
        size = jsonl.complete_size(fh)
        saved = _load(paths)
        base = since if since is not None else _view_of(saved)
        view = _after(path, fh, size, base) if base is not None else None
        if view is None:
            view = _whole(path, fh, size)
        elif not view.tail and saved is not None:
            return view                # nothing new: the checkpoint already says all of it
    verified = month if view.whole or saved is None else saved["verified_month"]
    _save(paths, view, verified)
    return view


def _view_of(saved: Optional[dict]) -> Optional[LedgerView]:
    """The checkpoint as a view ending at its offset (trusted across months: see the module docstring)."""
    if saved is None:
        return None
    return LedgerView(saved["tally"], saved["offset"], saved["last_sha256"], [], saved["offset"],
                      saved["last_sha256"], False)


def _after(path: Path, fh, size: int, base: LedgerView) -> Optional[LedgerView]:
    """``base`` with the entries after it folded in, or None when the ledger did not simply grow from it."""
    start, last = base.offset, base.last_hash
    if not _seam_holds(path, fh, size, start, last):
        return None
    try:
        found = _parse(path, fh, start, size)
    except RecordFileError:
        return None
    end = _chains_onto(found, last)
    if end is None:
        return None
    for offset, record in found:
        base.tally.add(record, offset)
    return LedgerView(base.tally, size, end, [record for _, record in found], start, last, False)


def entries_between(paths: ArchivePaths, start: int, view: LedgerView) -> list[dict]:
    """The verified entries from byte ``start`` (where a run's first entry begins) to the end of ``view``.

    A resumed run needs its own earlier entries (what it already charged and
    reserved); they are read from where its first one starts — never from the
    ledger's beginning — and must chain through to the hash at the view's seam.
    """
    if start >= view.tail_start:
        return []
    with open(paths.spend_ledger, "rb") as fh:
        found = _parse(paths.spend_ledger, fh, start, view.tail_start)
    first = found[0][1].get("prev_sha256") if found else view.prefix_hash
    if not found or _chains_onto(found, first) != view.prefix_hash:
        raise RecordFileError(f"{paths.spend_ledger}: the entries from byte {start} do not chain to the verified "
                              "checkpoint (the ledger was edited); refusing to use it")
    return [record for _, record in found]
