"""The deep verification: every chained log read whole, a slice a day, so an edited old byte is found within a week.

The hot path trusts checkpoints (method §10.1.1): the first append of a
process checks the seam at a log's checkpoint and verifies only what came
after it (:func:`llmarchive.archive.jsonio.append_records`), a run start
reads the spend ledger's tally (:mod:`llmarchive.budget.checkpoint`), a read
from the end stops where its question is answered
(:mod:`llmarchive.archive.log_reads`).  None of them reads a byte written
long ago, so an edit there that keeps every offset — a digit changed in a
closed month — passes them all.  This module is what reads those bytes:

* :func:`rotate` verifies each day the logs whose last deep verification is
  oldest, enough of them that every log is verified again within
  :data:`PERIOD_DAYS` (a log never verified, or overdue, is always taken);
* :func:`verify_all` (``llmarchive verify --deep``) verifies every log now.

Verifying a log reads every byte.  The first time, it parses every record
and checks the whole chain; it then keeps, in ``private/deep_verify.state``
(digested), the size verified, the hash of the record ending there and the
SHA-256 of those raw bytes.  The next time, the bytes up to that size are
hashed again (disk speed; no parsing, no re-chaining) and must give the same
digest — the same bytes that were verified whole — and only the records
after them are parsed and chained on.  A digest that differs is a change to
verified history: the whole log is verified again to name the first broken
record, and when the chain still holds (history rewritten and re-chained)
the change is reported all the same.  A broken log keeps its last good
entry, so it is found again each day under the same words, and the owner's
page for it (keyed by them) is recorded once.
"""
import hashlib
import io
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Iterable, Optional

from llmarchive.archive.dates import parse_date, parse_time
from llmarchive.archive.jsonio import RecordFileError, read_digested, write_digested
from llmarchive.archive import store
from llmarchive.archive.paths import ArchivePaths
from measure import chain, jsonl
from measure.errors import ArchiveError

FORMAT = 1
PERIOD_DAYS = 7
"""Every chained log is verified whole again within this many days by the daily rotation."""
CHUNK = 1 << 20
MOVABLE = "private/experiments/"
"""Logs under here may move with their run folder; any other chained log is never removed."""


class LogChanged(ArchiveError, ValueError):
    """A chained log's verified bytes are not what they were, or its chain does not hold."""


@dataclass
class DeepOutcome:
    """What one pass verified (log names relative to the archive's home) and what it found broken."""

    verified: list[str] = field(default_factory=list)
    broken: list[tuple[str, str]] = field(default_factory=list)     # (log, the problem in one line)
    total: int = 0


def state_file(paths: ArchivePaths) -> Path:
    """When each log was last verified whole, and what: private, never published, never part of a chain."""
    return paths.private / "deep_verify.state"


def chained_logs(paths: ArchivePaths, extra: Iterable[Path] = ()) -> list[Path]:
    """Every hash-chained log of the archive that exists: the record logs, the spend ledger, the admissions,
    each run's trial log, and ``extra`` (the outbox's log, which a lower floor does not know)."""
    logs = sorted(paths.records.glob("*.jsonl")) + [paths.spend_ledger, paths.admissions, *extra]
    logs += [store.trial_log(folder) for folder in store.run_folders(paths.experiments)]
    return [log for log in logs if log.is_file()]


def _name(paths: ArchivePaths, log: Path) -> str:
    try:
        return log.relative_to(paths.home).as_posix()
    except ValueError:
        return str(log)


def _chain_lines(log: Path, fh, start: int, end: int, prev: str, digest) -> tuple[str, int]:
    """Parse and chain the records of bytes ``[start, end)`` onto ``prev``, hashing their raw bytes into
    ``digest``; return the last hash and the number of records."""
    fh.seek(start)
    reader = jsonl.JsonlReader(jsonl.STRICT, str(log), torn_tail=jsonl.READ)
    pos, count = start, 0
    while pos < end:
        raw = fh.readline()
        if not raw:
            break
        digest.update(raw)
        where = pos
        pos += len(raw)
        if not raw.strip():
            continue
        try:
            record = reader.parse(raw.rstrip(b"\n"), count + 1, where)
        except jsonl.JsonlError as exc:
            raise LogChanged(f"the line at byte {where} cannot be read ({exc})") from None
        if record.get("prev_sha256") != prev or record.get("record_sha256") != chain.record_hash(record):
            raise LogChanged(f"hash chain broken at the record starting at byte {where}")
        prev, count = record["record_sha256"], count + 1
    return prev, count


def _hash_prefix(fh, size: int):
    digest, pos = hashlib.sha256(), 0
    fh.seek(0)
    while pos < size:
        block = fh.read(min(CHUNK, size - pos))
        if not block:
            break
        digest.update(block)
        pos += len(block)
    return digest


def verify_log_deep(log: Path, known: Optional[dict], day: str, data: Optional[bytes] = None) -> dict:
    """Verify ``log`` whole (from its last deep verification ``known``, when its bytes are unchanged); return its
    new entry.  Raises :class:`LogChanged` naming what does not hold.  ``data``: the log's bytes as the caller
    read them (then exactly those bytes are verified, not the file as it is a moment later)."""
    with (io.BytesIO(data) if data is not None else open(log, "rb")) as fh:
        size = jsonl.complete_size(fh)
        if known is not None and known.get("offset", 0) > size:
            raise LogChanged(f"is {known['offset'] - size} bytes shorter than when it was verified on "
                             f"{known.get('verified_on')}: complete records were removed")
        if known is not None and 0 < known.get("offset", -1) <= size:
            digest = _hash_prefix(fh, known["offset"])
            if digest.hexdigest() == known.get("bytes_sha256"):
                last, count = _chain_lines(log, fh, known["offset"], size, known["last_sha256"], digest)
                return _entry(size, digest, last, known.get("records", 0) + count, day)
            digest = hashlib.sha256()
            _chain_lines(log, fh, 0, size, chain.GENESIS, digest)   # names the first broken record, if any
            raise LogChanged(f"its first {known['offset']} bytes changed since they were verified on "
                             f"{known.get('verified_on')} (the chain was rewritten to match)")
        digest = hashlib.sha256()
        last, count = _chain_lines(log, fh, 0, size, chain.GENESIS, digest)
        return _entry(size, digest, last, count, day)


def _entry(size: int, digest, last: str, count: int, day: str) -> dict:
    return {"offset": size, "bytes_sha256": digest.hexdigest(), "last_sha256": last, "records": count,
            "verified_on": day}


def _load(paths: ArchivePaths) -> dict[str, dict]:
    data = read_digested(state_file(paths))
    if data is None or data.get("format") != FORMAT or not isinstance(data.get("logs"), dict):
        return {}
    return data["logs"]


def _save(paths: ArchivePaths, logs: dict[str, dict]) -> None:
    write_digested(state_file(paths), {"format": FORMAT, "logs": logs})


def due(paths: ArchivePaths, day: str, extra: Iterable[Path] = (), period: int = PERIOD_DAYS) -> list[Path]:
    """The logs :func:`rotate` verifies on ``day``: the ``1/period`` whose verification is oldest (never first),
    and every one verified ``period - 1`` or more days ago."""
    logs = chained_logs(paths, extra)
    state = _load(paths)
    start = parse_time(f"{parse_date(day, 'the day')}T00:00:00Z")
    overdue = (start - timedelta(days=period - 1)).strftime("%Y-%m-%d")
    ages = sorted(logs, key=lambda log: (str(state.get(_name(paths, log), {}).get("verified_on", "")),
                                         _name(paths, log)))
    share = -(-len(logs) // period)
    return [log for n, log in enumerate(ages)
            if n < share or str(state.get(_name(paths, log), {}).get("verified_on", "")) <= overdue]


def rotate(paths: ArchivePaths, day: str, extra: Iterable[Path] = (), period: int = PERIOD_DAYS) -> DeepOutcome:
    """Day ``day``'s slice of the deep verification (:func:`due`)."""
    return _verify(paths, due(paths, day, extra, period), day, extra)


def verify_all(paths: ArchivePaths, day: str, extra: Iterable[Path] = (), whole: bool = True) -> DeepOutcome:
    """Every chained log now; ``whole`` parses and chains every record again instead of trusting unchanged bytes."""
    logs = chained_logs(paths, extra)
    return _verify(paths, logs, day, extra, forget=whole)


def _verify(paths: ArchivePaths, logs: list[Path], day: str, extra: Iterable[Path],
            forget: bool = False) -> DeepOutcome:
    state = _load(paths)
    present = {_name(paths, log) for log in chained_logs(paths, extra)}
    out = DeepOutcome(total=len(present))
    for name in sorted(set(state) - present):
        if name.startswith(MOVABLE):
            del state[name]        # a run folder moved (a review's decision): its log is verified where it is now
        else:
            out.broken.append((name, f"{name}: verified whole on {state[name].get('verified_on')}, and now missing"))
    for log in logs:
        name = _name(paths, log)
        known = state.get(name)
        try:
            fresh = verify_log_deep(log, None if forget else known, day)
            if forget and known is not None:
                _same_prefix(log, known, fresh["offset"])
        except (LogChanged, RecordFileError, OSError) as exc:
            out.broken.append((name, f"{name}: {exc}"))
            continue
        state[name] = fresh
        out.verified.append(name)
    try:
        _save(paths, state)
    except OSError:
        pass     # the next pass verifies these logs again: only time is lost
    return out


def _same_prefix(log: Path, known: dict, size: int) -> None:
    """A log verified whole again must still hold the bytes last verified (a rewritten, re-chained or shortened
    log must not pass by being verified from scratch)."""
    if known.get("offset", 0) > size:
        raise LogChanged(f"is {known['offset'] - size} bytes shorter than when it was verified on "
                         f"{known.get('verified_on')}: complete records were removed")
    with open(log, "rb") as fh:
        if _hash_prefix(fh, known["offset"]).hexdigest() != known.get("bytes_sha256"):
            raise LogChanged(f"its first {known['offset']} bytes changed since they were verified on "
                             f"{known.get('verified_on')} (the chain was rewritten to match)")
