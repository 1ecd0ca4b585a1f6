"""A harness log read within bounds (method §4.2): refused in one line before any large read, whatever it holds.

A log comes from outside like a submission and is held to the same kind of
bounds (:mod:`llmarchive.comparison.submission`: the file, one line, the records,
the text of one answer), checked before the harness's own reader is given
the file, so its peak memory is bounded by the bounds and not by the file:

* :data:`LOG_BYTES` — a log read whole (an Inspect ``.eval`` or ``.json``
  log, an lm-eval results file, the top level read to tell a log's kind),
  and everything an ``.eval`` holds once decompressed, 64 MiB.  A real log
  of the largest panel (480 samples) is about 10 MB decompressed — Inspect
  keeps each answer several times over (the messages, the model event, the
  raw response, the summaries) — so the cap leaves six times that;
* :data:`LOG_VALUES` — the JSON values a log may hold, 2,000,000 (about
  430,000 in a real log of the largest panel).  Bytes alone do not bound
  memory: 16 MiB of ``{},`` parses into 5.6 million objects (about 400 MB);
  the count is taken from the raw bytes (every value but the first follows
  a ``[``, ``,`` or ``:``, so their number bounds the values from above);
* an ``.eval`` (a zip): at most :data:`MAX_MEMBERS` members and
  :data:`MAX_SAMPLES` sample members (the submission's
  :data:`~llmarchive.comparison.submission.MAX_RECORDS`), each sample member at
  most :data:`SAMPLE_BYTES` decompressed (four submission lines: the prompt,
  the answer at its cap and the copies Inspect keeps; a real one is
  12 kB).  The sizes are read from the zip's central directory first (the
  directory itself bounded from its end record, before anything parses it),
  then every member is decompressed through a stream that stops at the cap
  and counts what it yields, so a directory that understates a member is
  refused too, as is a compression Inspect does not write or a member whose
  bytes do not match its checksum.

Over a bound is :class:`LogTooLarge`: one line naming the log, the part at
fault and the bound, exit 2, nothing written.  The text of one answer is
bounded where each importer reads its answers
(:func:`llmarchive.comparison.log_submission.answer_reasons`).  A log just
under every bound (64 MiB, 2,000,000 values) is imported in about 350 MB
at its peak — about 2.3 bytes per byte of text and 75 per value, on the
90 MB that importing Inspect takes — within the 512 MB its test allows.
"""
import io
import json
import os
import stat
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from llmarchive.archive import terminal
from llmarchive.comparison.submission import MAX_LINE_BYTES, MAX_RECORDS
from measure.errors import ArchiveError

LOG_BYTES = 64 * 1024 * 1024
LOG_VALUES = 2_000_000
MAX_SAMPLES = MAX_RECORDS
MAX_MEMBERS = 2 * MAX_RECORDS
SAMPLE_BYTES = 4 * MAX_LINE_BYTES
SAMPLES_DIR = "samples/"
CHUNK = 64 * 1024
ZSTD = 93
"""Zstandard's zip method number (what Inspect writes; deflate and stored are read too)."""
ZSTD_WINDOW = 8 * 1024 * 1024
"""The largest zstd window a member may ask the decoder to hold (Inspect's writer uses 2 MiB at most)."""
_END = struct.Struct("<4s4H2LH")          # end of central directory
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCAL = struct.Struct("<4s2B4HL2L2H")    # a member's local header
CENTRAL_ENTRY_BYTES = 46 + 512
"""The most bytes one member's central-directory entry may take (its fixed part and a name with extras)."""


class LogTooLarge(ArchiveError, ValueError):
    """A log over a bound (or not readable within one): one line naming the log, what is over and the bound."""

    def __init__(self, file: Path, what: str) -> None:
        self.file = Path(file)
        super().__init__(f"{terminal(str(file))}: import refused before reading the log, nothing written: {what}")


def separators(chunk: bytes) -> int:
    """The ``[``, ``,`` and ``:`` bytes of ``chunk``: with one for the first value, a bound on its JSON values."""
    return chunk.count(b"[") + chunk.count(b",") + chunk.count(b":")


def _values_refusal(count: int, where: str) -> str:
    return (f"{where} holds up to {count:,} JSON values; a log may hold at most {LOG_VALUES:,} (a real log of the "
            "largest panel holds about 430,000)")


def check_json_file(path: Path, fh: BinaryIO, what: str = "the log") -> None:
    """Refuse a JSON file over :data:`LOG_BYTES` (by its size, before any read) or :data:`LOG_VALUES`
    (counted in chunks; nothing kept).  ``fh`` is left at its start."""
    info = os.fstat(fh.fileno())
    if stat.S_ISREG(info.st_mode) and info.st_size > LOG_BYTES:
        raise LogTooLarge(path, f"{what} is {info.st_size:,} bytes; a log read whole may be at most {LOG_BYTES:,} "
                                "bytes (a real log of the largest panel is about 10 MB)")
    size, count = 0, 1
    while chunk := fh.read(CHUNK):
        size += len(chunk)
        count += separators(chunk)
        if size > LOG_BYTES:
            raise LogTooLarge(path, f"{what} is more than {LOG_BYTES:,} bytes; a log read whole may be at most "
                                    f"{LOG_BYTES:,} bytes")
    if count > LOG_VALUES:
        raise LogTooLarge(path, _values_refusal(count, what))
    fh.seek(0)


def read_json_log(path: Path, what: str = "the log") -> Any:
    """A JSON log read whole, once :func:`check_json_file` has found it within a log's bounds.

    Why: a harness's JSON file (an Inspect log, lm-eval's results) is one
    JSON document, not JSON lines, and must be bounded before it is parsed;
    the importers share this one reading.  Raises :class:`LogTooLarge`, an
    ``OSError``, or (not UTF-8, not JSON, nested too deeply) a ``ValueError``
    or ``RecursionError``, for the caller to word.
    """
    with open(path, "rb") as fh:
        check_json_file(path, fh, what)
        return json.loads(fh.read().decode("utf-8"))      # one JSON document: a log read whole, bounded


def is_zip(fh: BinaryIO) -> bool:
    """Whether the file starts as a zip does (an ``.eval`` log); ``fh`` is left at its start."""
    head = fh.read(4)
    fh.seek(0)
    return head in (b"PK\x03\x04", b"PK\x05\x06")


def _directory(path: Path, fh: BinaryIO, size: int) -> tuple[int, int]:
    """(members, central directory bytes) from the zip's end record, before anything parses the directory."""
    tail_start = max(0, size - (_END.size + 0xFFFF))
    fh.seek(tail_start)
    tail = fh.read()
    # found as zipfile finds it: the last 22 bytes when they are an end record with no comment, else the last one
    at = len(tail) - _END.size if tail[-_END.size:-_END.size + 4] == b"PK\x05\x06" else tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        raise LogTooLarge(path, "not a zip file (no end of central directory): an .eval log is one")
    _, _, _, _, members, directory, _, _ = _END.unpack_from(tail, at)
    locator = at - _END64_LOCATOR.size
    if locator >= 0 and tail[locator:locator + 4] == b"PK\x06\x07":   # zipfile then reads the zip64 record
        fh.seek(_END64_LOCATOR.unpack_from(tail, locator)[2])
        record = fh.read(_END64.size)
        if len(record) < _END64.size or record[:4] != b"PK\x06\x06":
            raise LogTooLarge(path, "a zip64 end record that is not where its locator says: the zip is damaged")
        members, directory = _END64.unpack(record)[7:9]
    return members, directory


def _members_refusal(infos: list[zipfile.ZipInfo]) -> str:
    """Why the directory's members are over a bound (empty when they are not): count, samples, sizes, methods."""
    samples = [i for i in infos if i.filename.startswith(SAMPLES_DIR)]
    if len(samples) > MAX_SAMPLES:
        return (f"{len(samples):,} sample members; a log may hold at most {MAX_SAMPLES:,} samples (a panel's run is "
                "4 × n: 480 for the largest)")
    for info in infos:
        name = terminal(info.filename[:200])
        if info.flag_bits & 0x1:
            return f"the member {name} is encrypted; an Inspect log is not"
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, ZSTD):
            return f"the member {name} is compressed by method {info.compress_type}, which Inspect does not write"
        if info.filename.startswith(SAMPLES_DIR) and info.file_size > SAMPLE_BYTES:
            return _sample_refusal(name, f"{info.file_size:,} bytes by the zip's directory")
    total = sum(i.file_size for i in infos)
    if total > LOG_BYTES:
        return _total_refusal(f"{total:,} bytes by the zip's directory")
    return ""


def _sample_refusal(name: str, size: str) -> str:
    return (f"the sample member {name} decompresses to {size}; one sample may be at most {SAMPLE_BYTES:,} bytes "
            "(a real one is about 12 kB)")


def _total_refusal(size: str) -> str:
    return (f"the members decompress to {size}; a log may hold at most {LOG_BYTES:,} bytes (a real log of the "
            "largest panel is about 10 MB)")


def _compressed(fh: BinaryIO, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's compressed bytes, in chunks, from just after its local header (sizes from the directory)."""
    fh.seek(info.header_offset)
    local = fh.read(_LOCAL.size)
    if len(local) < _LOCAL.size or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"the member {info.filename[:200]!r} has no local header where the directory says")
    fields = _LOCAL.unpack(local)
    fh.seek(fields[10] + fields[11], io.SEEK_CUR)
    left = info.compress_size
    while left > 0:
        chunk = fh.read(min(CHUNK, left))
        if not chunk:
            raise zipfile.BadZipFile(f"the member {info.filename[:200]!r} is cut short")
        left -= len(chunk)
        yield chunk


def _inflated(fh: BinaryIO, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member decompressed, at most :data:`CHUNK` bytes at a time whatever the compression ratio."""
    if info.compress_type == zipfile.ZIP_STORED:
        yield from _compressed(fh, info)
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        inflate = zlib.decompressobj(-15)
        for data in _compressed(fh, info):
            while data:
                yield inflate.decompress(data, CHUNK)
                data = inflate.unconsumed_tail
        yield inflate.flush()
    else:
        import zstandard    # what Inspect's own zip reading uses (installed with inspect-ai)

        source = _Chunks(_compressed(fh, info))
        decoder = zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW)
        with decoder.stream_reader(source, read_across_frames=True, closefd=False) as reader:
            while chunk := reader.read(CHUNK):
                yield chunk


class _Chunks(io.RawIOBase):
    """An iterator of byte chunks as a readable stream (what zstandard's stream reader reads from)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._left = chunks, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self._left:
            self._left = next(self._chunks, b"")
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def check_eval_file(path: Path, fh: BinaryIO) -> None:
    """Refuse an ``.eval`` log over any bound of the module docstring, reading ``fh`` within them (each member
    decompressed and counted, never kept).  ``fh`` is left at its start for the harness's reader."""
    size = os.fstat(fh.fileno()).st_size
    if size > LOG_BYTES:
        raise LogTooLarge(path, f"the log is {size:,} bytes; a log may be at most {LOG_BYTES:,} bytes (a real .eval "
                                "of the largest panel is about 2 MB)")
    members, directory = _directory(path, fh, size)
    if members > MAX_MEMBERS or directory > MAX_MEMBERS * CENTRAL_ENTRY_BYTES:
        raise LogTooLarge(path, f"the zip holds {members:,} members in {directory:,} bytes of directory; a log may "
                                f"hold at most {MAX_MEMBERS:,} (its samples, their summaries and its header)")
    fh.seek(0)
    try:
        infos = zipfile.ZipFile(fh).infolist()
        if len(infos) > MAX_MEMBERS:
            raise LogTooLarge(path, f"the zip's directory lists {len(infos):,} members; a log may hold at most "
                                    f"{MAX_MEMBERS:,}")
        refusal = _members_refusal(infos)
        if refusal:
            raise LogTooLarge(path, refusal)
        total, values = 0, 0
        for info in infos:
            got, crc, name = 0, 0, terminal(info.filename[:200])
            for chunk in _inflated(fh, info):
                got += len(chunk)
                total += len(chunk)
                values += separators(chunk)
                crc = zlib.crc32(chunk, crc)
                if info.filename.startswith(SAMPLES_DIR) and got > SAMPLE_BYTES:
                    raise LogTooLarge(path, _sample_refusal(name, f"more than {SAMPLE_BYTES:,} bytes (the zip's "
                                                                  f"directory says {info.file_size:,})"))
                if total > LOG_BYTES:
                    raise LogTooLarge(path, _total_refusal(f"more than {LOG_BYTES:,} bytes"))
                if values + len(infos) > LOG_VALUES:
                    raise LogTooLarge(path, _values_refusal(values + len(infos), "the log"))
            if got != info.file_size or crc != info.CRC:
                raise LogTooLarge(path, f"the member {name} decompresses to {got:,} bytes "
                                        f"that do not match the zip's directory ({info.file_size:,} bytes and its "
                                        "checksum): the log is damaged or altered")
    except LogTooLarge:
        raise
    except Exception as exc:  # whatever zipfile or a decoder raises for bytes that are not a sound zip
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise LogTooLarge(path, f"not readable as a zip ({type(exc).__name__}: {terminal(first)})") from None
    fh.seek(0)
