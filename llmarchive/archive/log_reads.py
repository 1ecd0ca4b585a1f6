"""Reading a chained log from its end, and from a verified offset on: never its whole history for its latest part.

A log that grows for a decade is asked mostly about its end — today's
record, the latest, the newest time — and a summary kept beside it (a
checkpoint, a set of values seen) needs only what was appended since it was
written.  Both read only those bytes, and both check what they read: each
record against its own ``record_sha256`` and its link to its neighbour, and
the seam where the read starts against the hash the caller holds.  What they
do not read is verified whole by the deep verification
(:mod:`llmarchive.archive.log_checkpoints`).
"""
import io
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Optional

from llmarchive.archive.jsonio import RecordFileError, seam_holds
from measure import chain, jsonl

BACK_BLOCK = 1 << 16


def _lines_back(fh, end: int) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of the first ``end`` bytes (ending with a newline), newest first, each with where it ends.

    Read backwards a block at a time, so the cost is what is read, not the log.
    """
    buf, pos = b"", end            # buf: bytes [pos, pos + len(buf)) not yet given out; it ends with a newline
    while pos > 0:
        start = max(0, pos - BACK_BLOCK)
        fh.seek(start)
        buf, pos = fh.read(pos - start) + buf, start
        hi = len(buf)
        while True:
            cut = buf.rfind(b"\n", 0, hi - 1)
            if cut < 0:
                break              # the first line of the block may begin before it: kept for the next block
            raw = buf[cut + 1:hi - 1]
            if raw.strip():
                yield pos + hi, raw
            hi = cut + 1
        buf = buf[:hi]
    if buf[:-1].strip():
        yield len(buf), buf[:-1]


def read_back(path: Path) -> Iterator[dict]:
    """The records of a chained log newest first, read lazily from its end (a torn last line passed over).

    Why: "today's record", "the latest", "the newest time" are near the end
    of a log that grows for years; reading it from the start costs its whole
    history.  Each record read is checked against its own ``record_sha256``
    and linked to the one after it (its ``record_sha256`` is that one's
    ``prev_sha256``), so what a caller stops at is a piece of one chain; the
    bytes it did not read are the deep verification's
    (:mod:`llmarchive.archive.log_checkpoints`).
    """
    newer: Optional[dict] = None
    for end, record in _checked(path, lambda fh: _lines_back(fh, jsonl.complete_size(fh))):
        if newer is not None and newer.get("prev_sha256") != record["record_sha256"]:
            raise RecordFileError(f"{path}: the record after byte {end} does not link to the one before it "
                                  "(the log was edited)")
        newer = record
        yield record


def _lines_forward(fh) -> Iterator[tuple[int, bytes]]:
    """The lines of a log up to its last newline, oldest first, each with where it ends."""
    size = jsonl.complete_size(fh)
    fh.seek(0)
    while fh.tell() < size:
        raw = fh.readline()
        yield fh.tell(), raw


def _checked(path: Path, lines: Callable[[BinaryIO], Iterator[tuple[int, bytes]]]) -> Iterator[tuple[int, dict]]:
    """Each record of ``lines`` of the log at ``path`` (none when it does not exist), with where its line ends,
    checked against its own ``record_sha256``."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    reader = jsonl.JsonlReader(jsonl.STRICT, str(path), torn_tail=jsonl.READ)
    with fh:
        for end, raw in lines(fh):
            try:
                record = reader.parse(raw)
            except jsonl.JsonlError as exc:
                raise RecordFileError(f"{path}: the line ending at byte {end} cannot be read ({exc})") from None
            if record is None:
                continue
            if record.get("record_sha256") != chain.record_hash(record):
                raise RecordFileError(f"{path}: the record ending at byte {end} does not match its record_sha256 "
                                      "(the log was edited)")
            yield end, record


def read_forward(path: Path) -> Iterator[dict]:
    """The records of a chained log oldest first, read lazily from its start, each checked against its own hash
    and its link to the one before (from :data:`measure.chain.GENESIS`).

    Why: "the earliest day a log is about" is near its start; a caller stops as soon as it knows (a torn last
    line is passed over, as by an append).
    """
    before = chain.GENESIS
    for end, record in _checked(path, _lines_forward):
        if record.get("prev_sha256") != before:
            raise RecordFileError(f"{path}: the record ending at byte {end} does not link to the one before it "
                                  "(the log was edited)")
        before = record["record_sha256"]
        yield record


def records_after(path: Path, offset: int, last: str) -> Optional[tuple[list[dict], int, str]]:
    """The records after byte ``offset`` of a chained log, verified to chain onto ``last`` (the hash of the record
    ending there), with the log's size and last hash; None when the seam does not hold (the caller starts again
    from byte 0 with :data:`measure.chain.GENESIS`).

    Why: a summary of a log kept beside it (a checkpoint, a tally) is
    brought up to date by reading only what was appended since.  A broken
    chain after the seam is an error, as for an append.
    """
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return ([], 0, chain.GENESIS) if (offset, last) == (0, chain.GENESIS) else None
    with fh:
        size = jsonl.complete_size(fh)
        if offset > size or not seam_holds(path, fh, offset, last):
            return None
        fh.seek(offset)
        try:
            found = jsonl.JsonlReader(jsonl.STRICT, str(path)).read(io.BytesIO(fh.read(size - offset)))
        except jsonl.JsonlError as exc:
            raise RecordFileError(f"{path}: cannot be read ({exc})") from None
    end = last
    for index, record in enumerate(found):
        if record.get("prev_sha256") != end or record.get("record_sha256") != chain.record_hash(record):
            raise RecordFileError(f"{path}: hash chain broken at the {index + 1}th record after byte {offset} "
                                  "(the log was edited)")
        end = record["record_sha256"]
    return found, size, end
