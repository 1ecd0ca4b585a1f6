"""Durable JSON files and hash-chained JSONL logs.

Writes go to a temporary file that is fsynced and renamed into place, so a
crash leaves either the old file or the new one, never half of either.
Appends to a chained log are flushed and fsynced before returning: a record
that was reported written survives a SIGKILL.
"""
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from llmarchive.archive.dates import utc_now
from llmarchive.archive.locks import file_lock
from measure import chain, jsonl
from measure.canonical import canonical_json
from measure.errors import ArchiveError


class RecordFileError(ArchiveError, ValueError):
    """A record file that cannot be read; the message names file and line."""


def write_json(path: Path, value: Any, pretty: bool = True) -> None:
    """Atomically write ``value`` as JSON (pretty, or canonical with ``pretty=False``)."""
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n" if pretty else canonical_json(value)
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``: a reader sees the old file or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_digested(path: Path, value: Any) -> None:
    """Atomically write ``value`` as one JSON document after a line holding its SHA-256.

    For the small files that summarise a log (a checkpoint, an index): a
    reader trusts one only when the digest matches (:func:`read_digested`), so
    a torn or hand-edited summary is read as no summary, and its log is read
    instead.
    """
    body = json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")
    write_bytes(path, hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def read_digested(path: Path) -> Optional[dict]:
    """What :func:`write_digested` wrote, when the file is whole and its digest matches; None otherwise."""
    try:
        digest, _, body = path.read_bytes().partition(b"\n")
        if hashlib.sha256(body).hexdigest().encode() != digest:
            return None
        value = json.loads(body)      # one JSON document: the summary after its digest line
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: a folder that cannot be opened is left as it is)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _decode(path: Path, raw: bytes) -> str:
    """``raw`` as UTF-8 text; bytes that are not are one error naming the file, the line and the byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise RecordFileError(f"{path}: not UTF-8 text (line {line}, byte {exc.start})") from None


def read_json(path: Path) -> Any:
    """Read one JSON file, naming the file in any error (missing, not UTF-8, not JSON, nested too deep)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RecordFileError(f"{path}: no such file") from None
    try:
        return json.loads(_decode(path, raw))      # one JSON document: the archive's reader of a .json file
    except json.JSONDecodeError as exc:
        raise RecordFileError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise RecordFileError(f"{path}: not a readable JSON document (nested too deeply)") from None


def read_jsonl(path: Path, tolerate_torn_tail: bool = True) -> list[dict]:
    """Read a JSONL log (:data:`measure.jsonl.STRICT`: the first line that cannot be read is an error naming it).

    A last line without its newline is what a process killed mid-write
    leaves; with ``tolerate_torn_tail`` it is ignored (the record was never
    reported written), even when the kill cut a character in half.
    """
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return []
    reader = jsonl.JsonlReader(jsonl.STRICT, str(path), torn_tail=jsonl.DROP if tolerate_torn_tail else jsonl.READ)
    with fh:
        try:
            return reader.read(fh)
        except jsonl.JsonlError as exc:
            raise RecordFileError(str(exc)) from None


def cut_torn_tail(path: Path) -> None:
    """Cut a torn last line off ``path`` (a killed writer's), as opening a :class:`ChainedLog` does."""
    if path.exists():
        with open(path, "r+b", buffering=0) as fh:
            _cut_torn_tail(fh)


def _cut_torn_tail(fh) -> int:
    """Truncate a torn last line (no newline: its writer died); return the file's size after.

    A record without its newline was never reported written, so cutting it
    loses nothing that was promised, and the next append starts on a clean
    line instead of gluing a record onto half of another.
    """
    size = fh.seek(0, os.SEEK_END)
    keep = jsonl.complete_size(fh)
    if keep != size:
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return keep


def tail_hash(path: Path) -> str:
    """The hash the next record of a chained log must link to, read from its last line only.

    The last record's own hash is checked (an edited last line is refused),
    so reading the tail costs the same on a log of ten records and of ten
    years.  The whole chain is verified on open (:class:`ChainedLog`) or on
    demand (:func:`verify_log`), not on every append.  A torn last line is
    ignored here and cut by the next append.
    """
    if not path.exists():
        return chain.GENESIS
    with open(path, "rb") as fh:
        return _hash_of_tail(path, fh, jsonl.complete_size(fh))


def _hash_of_tail(path: Path, fh, size: int) -> str:
    line = jsonl.last_line(fh, size)
    if not line:
        return chain.GENESIS
    try:
        last = jsonl.JsonlReader(jsonl.STRICT, str(path), torn_tail=jsonl.READ).parse(line)
    except jsonl.JsonlError as exc:
        raise RecordFileError(f"{path}: the last record cannot be read ({exc})") from None
    if last.get("record_sha256") != chain.record_hash(last):
        raise RecordFileError(f"{path}: the last record's record_sha256 does not match its content; "
                              "the log was edited, refusing to chain onto it")
    return last["record_sha256"]


# What this process has verified of each chained log it appended to: (path, device, inode) →
# (verified bytes, the hash at their end, the file's size and mtime after our last write).
_verified: dict[tuple[str, int, int], tuple[int, str, int, int]] = {}


def _chain_from(path: Path, fh, start: int, prev: str, size: int) -> str:
    """Verify the records in bytes ``[start, size)`` as chained onto ``prev``; return the last hash."""
    fh.seek(start)
    try:
        found = jsonl.JsonlReader(jsonl.STRICT, str(path)).read(io.BytesIO(fh.read(size - start)))
    except jsonl.JsonlError as exc:
        raise RecordFileError(f"{path}: cannot be read ({exc}); refusing to chain onto it") from None
    for index, record in enumerate(found):
        expected = chain.record_hash(record)
        if record.get("prev_sha256") != prev or record.get("record_sha256") != expected:
            where = f"record #{index}" if start == 0 else f"the {index + 1}th record after byte {start}"
            raise RecordFileError(f"{path}: hash chain broken at {where} (the log was edited); refusing to "
                                  "append to it — `llmarchive verify` and publication refuse it too")
        prev = expected
    return prev


def _verified_tail(path: Path, fh, size: int) -> str:
    """The hash the next record links to, with the log verified as far as this process has not yet seen.

    The first append of a process starts from the log's checkpoint
    (:func:`read_checkpoint`): when the record whose line ends at its offset
    still carries the hash it names and matches its own content, only the
    bytes after it are verified; without a checkpoint it can trust, the
    whole chain is verified and a checkpoint written.  So an edit anywhere
    the hot path reads (the seam, the tail) is refused instead of silently
    appended to.  After that, an append reads nothing when the file is as
    this process left it, and otherwise checks that the record where its
    verification ended is still there and verifies only what other writers
    appended since: the cost of an append does not grow with the log.  An
    edit before the checkpoint that keeps every byte offset is not read
    here: the deep verification (:mod:`llmarchive.archive.log_checkpoints`,
    a rotation covering every log within a week, and ``llmarchive verify
    --deep``) reads every byte and pages the owner.
    """
    st = os.fstat(fh.fileno())
    known = _verified.get((str(path), st.st_dev, st.st_ino))
    if known is not None:
        offset, last, seen_size, seen_mtime = known
        if (size, st.st_mtime_ns) == (seen_size, seen_mtime) and offset == size:
            return last
        if size < offset:
            raise RecordFileError(f"{path}: is {offset - size} bytes shorter than when this process last appended "
                                  "to it: complete records were removed; refusing to append to it")
        if 0 < offset <= size and _tail_record_hash(path, fh, offset) == last:
            return _chain_from(path, fh, offset, last, size)
    saved = read_checkpoint(path)
    if saved is not None and saved[0] <= size and seam_holds(path, fh, *saved):
        offset, last = saved
        end = _chain_from(path, fh, offset, last, size)
        if size - offset >= CHECKPOINT_EVERY:
            write_checkpoint(path, size, end)
        return end
    end = _chain_from(path, fh, 0, chain.GENESIS, size)
    if size > 0:
        write_checkpoint(path, size, end)
    return end


CHECKPOINT_EVERY = 1 << 16
"""Bytes of tail a first append may verify before it moves the log's checkpoint forward (one small fsynced write
now and then, never one per append)."""
CHECKPOINT_FORMAT = 1


def checkpoint_file(path: Path) -> Path:
    """Beside the log, named after it (``coverage.jsonl.checkpoint``): never a ``*.jsonl`` a reader of logs lists."""
    return path.with_name(path.name + ".checkpoint")


def read_checkpoint(path: Path) -> Optional[tuple[int, str]]:
    """(offset, hash of the record ending there) of the log's checkpoint when it is whole and of this format."""
    data = read_digested(checkpoint_file(path))
    if data is None or data.get("format") != CHECKPOINT_FORMAT or data.get("log") != path.name:
        return None
    offset, last = data.get("offset"), data.get("last_sha256")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or not isinstance(last, str):
        return None
    return offset, last


def write_checkpoint(path: Path, offset: int, last: str) -> None:
    """Record that the log's first ``offset`` bytes were verified and end with the record hashed ``last``.

    Written under the log's lock by its appender; a checkpoint that cannot
    be written is only a shortcut lost (the next first append verifies more).
    """
    try:
        write_digested(checkpoint_file(path), {"format": CHECKPOINT_FORMAT, "log": path.name, "offset": offset,
                                               "last_sha256": last, "verified_at": utc_now()})
    except OSError:
        pass


def seam_holds(path: Path, fh, offset: int, last: str) -> bool:
    """The record whose line ends at ``offset`` is whole, matches its own hash, and is the one ``last`` names."""
    if offset == 0:
        return last == chain.GENESIS
    return _tail_record_hash(path, fh, offset) == last


def _tail_record_hash(path: Path, fh, size: int) -> Optional[str]:
    """The verified hash of the record whose line ends at byte ``size`` (None when there is none)."""
    fh.seek(size - 1)
    if fh.read(1) != b"\n":
        return None
    try:
        return _hash_of_tail(path, fh, size)
    except RecordFileError:
        return None


def record_hash_ending_at(path: Path, fh, size: int) -> Optional[str]:
    """The verified hash of the record whose line ends exactly at byte ``size`` of an open log, else None.

    What a checkpoint of a log (:mod:`llmarchive.budget.checkpoint`) checks
    to know the bytes before ``size`` still end where it verified them.
    """
    return _tail_record_hash(path, fh, size)


def _remember(path: Path, fh, size: int, last: str) -> None:
    st = os.fstat(fh.fileno())
    _verified[(str(path), st.st_dev, st.st_ino)] = (size, last, st.st_size, st.st_mtime_ns)


def _write_all(fh, data: bytes, size: int) -> None:
    """Write ``data`` at the end and fsync; on failure cut the file back to ``size``.

    A write that fails half-way (a full disk, an interrupted process that
    survives) must not leave half a record behind for the next append to
    glue onto: the log is restored to exactly what it was.  The bytes go
    straight to the file descriptor, so no buffer can write them later.
    """
    fd = fh.fileno()
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        except OSError:
            pass  # the torn tail is then cut by the next append or open
        raise


def append_records(path: Path, records: Iterable[Mapping]) -> list[dict]:
    """Chain and append a batch of records as one locked, fsynced write; return them as written.

    Chained logs are shared by processes (Dagster runs each step in its
    own), so the tail hash is read and the batch written under the log's
    lock.  The first append of a process verifies the log from its
    checkpoint on (:func:`_verified_tail`); after that only what other
    writers added since is read, never the whole log, so the cost of an
    append does not grow with the log.  A log whose chain is broken is
    refused, never appended to.  A batch is all-or-nothing on failure, and
    a torn tail left by a killed writer is cut first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        with open(path, "a+b", buffering=0) as fh:
            size = _cut_torn_tail(fh)
            prev = _verified_tail(path, fh, size)
            linked, data = _chained(records, prev)
            if linked:
                _write_all(fh, data, size)
            _remember(path, fh, size + len(data), chain.last_hash(linked) if linked else prev)
    return linked


def _chained(records: Iterable[Mapping], prev: str) -> tuple[list[dict], bytes]:
    """``records`` chained after ``prev``, and the bytes of their lines (each serialised once)."""
    linked: list[dict] = []
    lines: list[str] = []
    for record in records:
        entry, line = chain.linked_line(record, prev)
        prev = entry["record_sha256"]
        linked.append(entry)
        lines.append(line)
    return linked, "".join(lines).encode("utf-8")


def verify_log(path: Path) -> int:
    """Read a chained log and verify its whole chain; return the number of records.

    Raises :class:`RecordFileError` for an unreadable line and
    :class:`measure.chain.ChainError` naming the first broken record.
    """
    return chain.verify(read_jsonl(path))


class ChainedLog:
    """An append-only, hash-chained JSONL file held open by one writer.

    Opening it reads the existing records and verifies the whole chain; a
    torn last line (from a killed writer) is cut off.  Each append writes
    after the records it holds; a failed write is rolled back so the file
    never keeps half a record in the middle.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._base = chain.GENESIS
        self.records = read_jsonl(path)
        chain.verify(self.records)
        self._repair_torn_tail()

    @classmethod
    def resume(cls, path: Path, last_hash: str) -> "ChainedLog":
        """The log with its records up to ``last_hash`` verified elsewhere (a checkpoint): none are held.

        Why: opening a log reads and verifies all of it, a cost that grows with
        every record ever written; a writer whose caller has already verified
        the log (:func:`llmarchive.budget.checkpoint.read_ledger`) only needs the
        hash the next record links to.  The caller cuts a torn tail first.
        """
        log = cls.__new__(cls)
        log.path, log._base, log.records = path, last_hash, []
        return log

    def catch_up(self, offset: int) -> Optional[list[dict]]:
        """The records another writer appended after byte ``offset`` (where this copy of the log ended),
        checked to chain onto it, and added to it; None when the file did not simply grow by whole chained
        records (shorter, a torn or unreadable tail, a broken link) — the caller then opens the log afresh,
        which repairs or refuses it.

        Why: a ledger several writers append to (overlapping paid runs) would otherwise be read and verified
        whole before each of their calls — a cost that grows with every entry the archive ever made.
        """
        try:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                tail = fh.read()
        except OSError:
            return None
        if len(tail) == 0 or not tail.endswith(b"\n"):
            return [] if len(tail) == 0 else None
        reader = jsonl.JsonlReader(jsonl.STRICT, str(self.path), torn_tail=jsonl.READ)
        try:
            new = reader.read(io.BytesIO(tail))
        except jsonl.JsonlError:
            return None
        prev = self.last_hash
        for record in new:
            if record.get("prev_sha256") != prev or record.get("record_sha256") != chain.record_hash(record):
                return None
            prev = record["record_sha256"]
        self.records.extend(new)
        return new

    def _repair_torn_tail(self) -> None:
        cut_torn_tail(self.path)

    @property
    def last_hash(self) -> str:
        return self.records[-1]["record_sha256"] if self.records else self._base

    def append(self, record: Mapping) -> dict:
        """Chain, write, flush and fsync one record; return it as written."""
        return self.extend([record])[0]

    def extend(self, records: Iterable[Mapping]) -> list[dict]:
        """Chain and append several records with one write, flush and fsync.

        Group commit: records that are ready together (concurrent calls
        finishing at once) become durable together, at the cost of one
        fsync.  A write that fails is cut back out of the file; a crash
        mid-write leaves a torn last line, which the next open or append cuts
        off.
        """
        linked, data = _chained(records, self.last_hash)
        if not linked:
            return linked
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b", buffering=0) as fh:
            size = _cut_torn_tail(fh)
            _write_all(fh, data, size)
        self.records.extend(linked)
        return linked


def append_record(path: Path, record: Mapping) -> dict:
    """Append one record to a chained log under the log's lock (see :func:`append_records`)."""
    return append_records(path, [record])[0]
