"""Earmarks: the money a running paid run still needs, kept back from its neighbours (method §9.4).

The ladder authorises a run when the whole of its remaining cost fits what
the pool has left, and the meter charges the run call by call.  Between the
two, the money is the run's only by intent: a second run authorised while
the first is still calling — Dagster's queue releasing the month's next
partition, a partition launched by hand beside the schedule's, a failed run
re-executed — would be judged against money the first still needs, and both
could be left part-paid.  An *earmark* closes that gap.  When a run is
authorised (under the ledger's lock, so two authorisations never interleave)
its whole remaining cost is earmarked; every later authorisation and every
reservation of another run counts what the holder has not yet spent of its
earmark as spent.  The holder's own charges and reservations draw the earmark
down, so nothing is counted twice.

An earmark lives exactly as long as the process that took it: it is a file
under ``private/earmarks/`` guarded by an OS lock (``flock``) its holder keeps
open.  A holder that ends releases it; one that is killed releases its lock
with its life, and the next reader finds the file unguarded and discards
it — a stale earmark can never freeze a month's pool.  An earmark is private
bookkeeping like the ledger: it is never published and never part of the
ledger's hash chain.

The same lock answers a second question: is this run already being worked
on?  A second authorisation of a run whose earmark is live is refused
(:class:`RunBusy`) before anything is recorded or spent — the double click,
or the schedule's tick beside a manual launch of the same partition.  Every
paid job of the jobs table takes one: a protocol run (the sweep, a manual
run, a bridge) under its run id, the subject fingerprint under its day and
model, so a day is asked of a model once however it is launched.
"""
import fcntl
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional

from llmarchive.archive import ArchivePaths, read_json, write_json
from llmarchive.budget.spend_ledger import CHARGE, RESERVATION
from measure.errors import ArchiveError

# How long taking a earmark waits for a reader that is only looking (a reader earmarks the lock for microseconds).
TAKE_WAIT_S = 1.0

Committed = Callable[[str, str, str], float]
"""``committed(run_id, month, pool)``: what a run has charged plus its open worst case in that month and pool."""


class RunBusy(ArchiveError):
    """The run is being worked on by another process: a second launch of it is refused; nothing was spent."""

    refusal = "run_busy"     # the kind of refusal Dagster reports (assets/refusals.py)


@dataclass(frozen=True)
class EarmarkRecord:
    """What one live earmark keeps back: ``amount_eur`` for ``run_id`` in ``month``'s ``pool``.

    ``base_eur`` is what the run had already committed in that month and
    pool when the earmark was taken (a resumed run); only what it commits
    beyond that draws the earmark down.  ``ledger_run`` is the ledger run
    whose entries do, when it is not ``run_id`` itself: the subject
    fingerprint's earmark is named by its day and model (what a second
    launch collides on) and drawn down by that day's attempt.
    """

    run_id: str
    protocol_id: str
    job: str
    pool: str
    month: str
    calls: int
    amount_eur: float
    base_eur: float
    taken_at: str
    ledger_run: str = ""

    @property
    def charged_as(self) -> str:
        """The ledger run whose charges and reservations draw this earmark down."""
        return self.ledger_run or self.run_id

    def left_eur(self, committed: Committed) -> float:
        """What the holder has not spent of its earmark yet (never below zero)."""
        drawn = committed(self.charged_as, self.month, self.pool) - self.base_eur
        return max(self.amount_eur - drawn, 0.0)


def earmarks_dir(paths: ArchivePaths) -> Path:
    return paths.private / "earmarks"


def _files(paths: ArchivePaths, run_id: str) -> tuple[Path, Path]:
    base = earmarks_dir(paths) / run_id
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".lock")


class Earmark:
    """A earmark this process took: released by :meth:`release` (or on exit from a ``with`` block)."""

    def __init__(self, paths: ArchivePaths, record: EarmarkRecord, handle) -> None:
        self.paths = paths
        self.record = record
        self._handle = handle

    def release(self) -> None:
        """Give the money back: the file first, then the lock (a reader never sees a live lock without its file)."""
        if self._handle is None:
            return
        _files(self.paths, self.record.run_id)[0].unlink(missing_ok=True)
        try:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        finally:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> "Earmark":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def take(paths: ArchivePaths, record: EarmarkRecord) -> Earmark:
    """Take the earmark ``record`` describes, or raise :class:`RunBusy` when the run's earmark is live elsewhere.

    The caller earmarks the ledger's lock, so the pool it judged cannot move
    before the earmark is written.  The lock files are never deleted (deleting
    a lock file another process may have just opened would let two holders
    in); only the record beside it comes and goes.
    """
    data, lock = _files(paths, record.run_id)
    lock.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock, "a")
    deadline = time.monotonic() + TAKE_WAIT_S
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.close()
                held = _read(data)
                since = f" since {held.taken_at}" if held else ""
                raise RunBusy(f"run {record.run_id} is being worked on by another process{since}: a second launch "
                              "of it is refused. Nothing was spent.") from None
            time.sleep(0.02)
    try:
        write_json(data, asdict(record))
    except BaseException:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()
        raise
    return Earmark(paths, record, handle)


def _read(path: Path) -> Optional[EarmarkRecord]:
    try:
        return EarmarkRecord(**read_json(path))
    except (OSError, ValueError, TypeError):
        return None


def live(paths: ArchivePaths) -> list[EarmarkRecord]:
    """Every earmark whose holder is still alive; the record of a holder that died is discarded here."""
    folder = earmarks_dir(paths)
    if not folder.is_dir():
        return []
    out: list[EarmarkRecord] = []
    for data in sorted(folder.glob("*.json")):
        lock = data.with_suffix(".lock")
        try:
            handle = open(lock, "a")
        except OSError:
            continue
        with handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                record = _read(data)
                if record is not None:
                    out.append(record)
                continue
            try:
                data.unlink(missing_ok=True)     # nobody earmarks it: its holder ended without releasing
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return out


def commitments(entries: Iterable[Mapping]) -> Committed:
    """``committed(run_id, month, pool)`` over ledger ``entries``: charges plus reservations no charge settled."""
    settled = {rid for e in entries if e.get("record_type", CHARGE) == CHARGE for rid in e.get("settles") or ()}
    totals: dict[tuple, float] = {}
    for e in entries:
        key = (e.get("run_id"), e.get("month"), e.get("pool", "general"))
        if e.get("record_type", CHARGE) == CHARGE:
            amount = e.get("cost_eur")
        elif e.get("record_type") == RESERVATION and e.get("reservation_id") not in settled:
            amount = e.get("worst_case_eur")
        else:
            continue
        if isinstance(amount, (int, float)):
            totals[key] = totals.get(key, 0.0) + amount
    return lambda run_id, month, pool: totals.get((run_id, month, pool), 0.0)


def earmarked_eur(earmarks: Iterable[EarmarkRecord], committed: Committed, month: str,
             exclude_run: Optional[str] = None) -> dict[str, float]:
    """Per pool, what the live ``earmarks`` of ``month`` still keep back (less ``exclude_run``'s own)."""
    out: dict[str, float] = {}
    for earmark in earmarks:
        if earmark.month == month and earmark.charged_as != exclude_run:
            out[earmark.pool] = out.get(earmark.pool, 0.0) + earmark.left_eur(committed)
    return out


def busy_protocols(paths: ArchivePaths, month: str, job: str) -> set[str]:
    """The protocols whose ``job`` run of ``month`` another process is working on now (a live earmark)."""
    return {h.protocol_id for h in live(paths) if h.month == month and h.job == job}

