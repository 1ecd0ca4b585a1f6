"""The one JSONL reader: line by line, numbered, with a named policy for a line that cannot be read.

Every JSONL file of the archive is read here: the chained logs of the
store, an outsider's comparison submission, and what publication and an
outside verifier read.  What differs between them is not how a line is
read but what a line that cannot be read means, so that is a
:class:`Policy`, one of three:

* :data:`STRICT` — a chained log: the first line that cannot be read stops
  the reading (:class:`JsonlError`), and a torn last line (no newline: its
  writer was killed mid-write, so it was never reported written) is passed
  over;
* :data:`COLLECT` — the intake of an outsider's file: every problem is kept
  and the reading goes on, so the sender hears them all at once; only a
  file that is not UTF-8 text, or one over a cap, stops it;
* :data:`REFUSE` — publication and the outside verifier: the first problem
  refuses the file, naming it; a published file is never torn, so a last
  line without its newline is refused too.

The reader never holds more than the line it is reading: it takes a binary
stream (the caller opens the file; this package opens none), counts the
bytes it reads, and optionally caps the file, each line and the number of
records (:class:`JsonlReader`).  A line is checked in one order whatever the
policy: the caps, the torn tail, UTF-8, blank (skipped), nesting depth
(when a limit is set, before the parser can run out of stack), JSON, a
JSON object.

Two lines are also read on their own: the last complete line of a log
(:func:`last_line`, :func:`last_record`: read from its end, so the cost
does not grow with the log), and a line already read and verified, parsed
again where a caller needs one of its fields (:func:`record_of`).
"""
import json
import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator, Mapping, NamedTuple, Optional

from measure.errors import ArchiveError

# The kinds of problem a line can have.
NOT_UTF8 = "not_utf8"        # the line's bytes are not UTF-8 text (the reading stops under every policy)
NOT_JSON = "not_json"        # not valid JSON
CUT_OFF = "cut_off"          # not valid JSON, and the file ends inside it (no newline): truncated
TOO_DEEP = "too_deep"        # the JSON parser ran out of stack
OVER_DEPTH = "over_depth"    # nested deeper than the reader's ``max_depth`` (found before parsing)
NOT_OBJECT = "not_object"    # valid JSON, but not an object
TORN = "torn"                # valid JSON without its newline, where a torn tail is refused
TOO_LONG = "too_long"        # one line over ``max_line_bytes`` (read past, not kept)
TOO_BIG = "too_big"          # the file passed ``max_bytes`` (the reading stops)
TOO_MANY = "too_many"        # more than ``max_records`` records (the reading stops)

STOPS = (NOT_UTF8, TOO_BIG, TOO_MANY)
"""Problems after which nothing more of the file is read, whatever the policy."""

# What a torn last line (no final newline) is: passed over, read like any line, or refused.
DROP, READ, REFUSED = "drop", "read", "refuse"

_SKIP_CHUNK = 1024 * 1024
_TAIL_CHUNK = 64 * 1024


@dataclass(frozen=True)
class LineProblem:
    """Why line ``number`` (1-based) cannot be kept; the other fields say what the words need."""

    number: int
    kind: str
    detail: str = ""       # the parser's message, or for NOT_UTF8 the offending byte
    offset: int = 0        # NOT_UTF8: the offending byte's offset in the file
    size: int = 0          # TOO_LONG: the line's length in bytes
    limit: int = 0         # the cap or depth that was passed
    key: str = ""          # OVER_DEPTH: the top-level key under which the nesting goes too deep ("" at the top)

    def fields(self, source: str) -> dict[str, Any]:
        where = f"line {self.number}" + (f".{self.key}" if self.key else "")
        return {"source": source, "number": self.number, "detail": self.detail, "offset": self.offset,
                "size": self.size, "limit": self.limit, "where": where}


@dataclass(frozen=True)
class Policy:
    """What a reader does with a line it cannot read: stop (raise) or collect, and the words it says.

    ``torn_tail`` is what a last line without its newline is by default
    (:data:`DROP`, :data:`READ` or :data:`REFUSED`); a reader may be given
    another.  ``words`` are ``str.format`` templates, one per problem kind,
    over :meth:`LineProblem.fields`.
    """

    name: str
    stop: bool
    torn_tail: str
    words: Mapping[str, str] = field(default_factory=dict)

    def message(self, problem: LineProblem, source: str = "") -> str:
        return self.words[problem.kind].format(**problem.fields(source))

    def worded(self, **words: str) -> "Policy":
        """This policy with some problems said in a caller's own words (keyed by kind)."""
        return Policy(self.name, self.stop, self.torn_tail, {**self.words, **words})


_COMMON = {
    TOO_LONG: "{source}, line {number} is {size:,} bytes; a line may be at most {limit:,} bytes",
    TOO_BIG: "{source}: more than {limit:,} bytes",
    TOO_MANY: "{source}: more than {limit:,} records",
    OVER_DEPTH: "{source}, {where} is nested more than {limit} levels deep",
}

STRICT = Policy("strict", stop=True, torn_tail=DROP, words={
    **_COMMON,
    NOT_UTF8: "{source}: not UTF-8 text (line {number}, byte {offset})",
    NOT_JSON: "{source}, line {number}: not valid JSON ({detail})",
    CUT_OFF: "{source}, line {number}: not valid JSON ({detail})",
    TOO_DEEP: "{source}, line {number}: a record is nested too deeply to read",
    NOT_OBJECT: "{source}, line {number}: a record must be a JSON object",
    TORN: "{source}, line {number}: the last line has no newline (truncated?)",
})
"""A chained log: stop at the first problem; a torn last line was never reported written."""

COLLECT = Policy("collect", stop=False, torn_tail=READ, words={
    **_COMMON,
    NOT_UTF8: "the file is not UTF-8 text (byte {offset}, line {number})",
    NOT_JSON: "line {number} is not JSON ({detail})",
    CUT_OFF: "line {number} is cut off: the file ends in the middle of a record ({detail}); send the complete file",
    TOO_DEEP: "line {number} is nested too deeply to read",
    OVER_DEPTH: "{where} is nested more than {limit} levels deep (not read further)",
    NOT_OBJECT: "line {number} is not a JSON object",
    TORN: "line {number} has no newline",
    TOO_LONG: "line {number} is {size:,} bytes; one line may be at most {limit:,} bytes",
    TOO_BIG: "the file is more than {limit:,} bytes",
    TOO_MANY: "the file holds more than {limit:,} records",
})
"""An outsider's file: every problem kept (the file is named by whoever reports them), the reading goes on."""

REFUSE = Policy("refuse", stop=True, torn_tail=REFUSED, words={
    **_COMMON,
    NOT_UTF8: "{source}: not UTF-8 text (byte {offset} is {detail})",
    NOT_JSON: "{source}, line {number}: not valid JSON ({detail})",
    CUT_OFF: "{source}, line {number}: not valid JSON ({detail}) - the file ends in the middle of this line "
             "(truncated?)",
    TOO_DEEP: "{source}, line {number}: JSON nested too deeply",
    NOT_OBJECT: "{source}, line {number}: not a JSON object",
    TORN: "{source}, line {number}: the last line has no newline (truncated?)",
})
"""A file to publish or to verify: the first problem refuses the file, naming it and the line."""


class JsonlError(ArchiveError, ValueError):
    """A line a stopping policy cannot read; the message names the file and the line."""

    def __init__(self, message: str, problem: LineProblem) -> None:
        super().__init__(message)
        self.problem = problem


class Line(NamedTuple):
    """One line read: its number, the record (None for a problem), its bytes as read, and its problem."""

    number: int
    record: Optional[dict]
    raw: bytes
    problem: Optional[LineProblem] = None


def too_deep_at(text: str, max_depth: int) -> Optional[str]:
    """The top-level key under which ``text`` nests over ``max_depth`` levels ("" at the top), else None.

    Only a line with that many brackets at all is scanned, character by
    character, so ordinary lines cost one ``count`` each.
    """
    if text.count("{") + text.count("[") <= max_depth:
        return None
    depth, in_string, escaped, key, last_string, start = 0, False, False, "", "", 0
    for index, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                last_string = text[start:index]
        elif ch == '"':
            in_string, start = True, index + 1
        elif ch == ":" and depth == 1:
            key = last_string
        elif ch in "{[":
            depth += 1
            if depth > max_depth:
                return key
        elif ch in "}]":
            depth -= 1
    return None


def short_key(key: object) -> str:
    """A key as a problem names it: at most 40 characters."""
    text = str(key)
    return text if len(text) <= 40 else text[:37] + "..."


class JsonlReader:
    """One pass over a JSONL stream under a :class:`Policy`.

    ``max_bytes``, ``max_line_bytes`` and ``max_records`` cap the file, one
    line and the lines that hold a JSON value; ``max_depth`` refuses deeper
    nesting before parsing.  ``digest`` (a ``hashlib`` object) sees every
    byte read, skipped ones included.  After the pass, ``size`` is the bytes
    read, ``problems`` what was found (under :data:`COLLECT`) and
    ``stopped`` the problem that ended the reading early, if one did.
    """

    def __init__(self, policy: Policy, source: str = "", *, torn_tail: Optional[str] = None,
                 max_bytes: Optional[int] = None, max_line_bytes: Optional[int] = None,
                 max_records: Optional[int] = None, max_depth: Optional[int] = None, digest: Any = None) -> None:
        self.policy = policy
        self.source = source
        self.torn_tail = torn_tail or policy.torn_tail
        self.max_bytes, self.max_line_bytes = max_bytes, max_line_bytes
        self.max_records, self.max_depth = max_records, max_depth
        self.digest = digest
        self.size = 0
        self.records = 0
        self.problems: list[LineProblem] = []
        self.stopped: Optional[LineProblem] = None

    def message(self, problem: LineProblem) -> str:
        return self.policy.message(problem, self.source)

    def read(self, stream: BinaryIO) -> list[dict]:
        """Every record of ``stream`` (problems raised or kept, by the policy)."""
        return [line.record for line in self.lines(stream) if line.problem is None]

    def lines(self, stream: BinaryIO) -> Iterator[Line]:
        """Each line holding a record, or (under a collecting policy) a problem, in file order."""
        number = 0
        while True:
            raw = stream.readline(self.max_line_bytes + 1) if self.max_line_bytes is not None else stream.readline()
            if not raw:
                return
            number += 1
            self._take(raw)
            if self.max_bytes is not None and self.size > self.max_bytes:
                yield self._stop(LineProblem(number, TOO_BIG, limit=self.max_bytes), raw)
                return
            if self.max_line_bytes is not None and len(raw) > self.max_line_bytes and not raw.endswith(b"\n"):
                size = self._skip_rest(stream, len(raw))
                if self.max_bytes is not None and self.size > self.max_bytes:
                    yield self._stop(LineProblem(number, TOO_BIG, limit=self.max_bytes), b"")
                    return
                yield self._problem(LineProblem(number, TOO_LONG, size=size, limit=self.max_line_bytes), b"")
                continue
            if self.max_records is not None and self.records >= self.max_records and raw.strip():
                yield self._stop(LineProblem(number, TOO_MANY, limit=self.max_records), raw)
                return
            found = self._parse(raw, number, self.size - len(raw))
            if found is None:
                continue
            if isinstance(found, LineProblem):
                if found.kind in STOPS:
                    yield self._stop(found, raw)
                    return
                yield self._problem(found, raw)
                continue
            yield Line(number, found, raw)

    def parse(self, raw: bytes, number: int = 1, start: int = 0) -> Optional[dict]:
        """One line on its own (``start``: its offset in the file): its record, or None when it is blank or a
        dropped torn tail; a problem is raised or kept, by the policy."""
        found = self._parse(raw, number, start)
        if isinstance(found, LineProblem):
            self._problem(found, raw)
            return None
        return found

    # -- one line ---------------------------------------------------------

    def _parse(self, raw: bytes, number: int, start: int) -> Optional[dict | LineProblem]:
        torn = not raw.endswith(b"\n")
        if torn and self.torn_tail == DROP:
            return None          # the last line of a killed writer: never reported written
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return LineProblem(number, NOT_UTF8, detail=repr(raw[exc.start:exc.start + 1]), offset=start + exc.start)
        if not text.strip():
            return None
        if self.max_depth is not None:
            deep = too_deep_at(text, self.max_depth)
            if deep is not None:
                return LineProblem(number, OVER_DEPTH, limit=self.max_depth, key=short_key(deep) if deep else "")
        try:
            value = json.loads(text)
        except RecursionError:
            return LineProblem(number, TOO_DEEP)
        except json.JSONDecodeError as exc:
            return LineProblem(number, CUT_OFF if torn else NOT_JSON, detail=exc.msg)
        except ValueError as exc:          # e.g. an integer of thousands of digits
            return LineProblem(number, NOT_JSON, detail=" ".join(str(exc).split())[:80])
        self.records += 1
        if torn and self.torn_tail == REFUSED:
            return LineProblem(number, TORN)
        if not isinstance(value, dict):
            return LineProblem(number, NOT_OBJECT)
        return value

    def _take(self, data: bytes) -> None:
        self.size += len(data)
        if self.digest is not None:
            self.digest.update(data)

    def _skip_rest(self, stream: BinaryIO, size: int) -> int:
        """Read past the rest of an over-long line without keeping it; return its whole length."""
        chunk = b""
        while not chunk.endswith(b"\n"):
            chunk = stream.readline(_SKIP_CHUNK)
            if not chunk:
                break
            self._take(chunk)
            size += len(chunk)
            if self.max_bytes is not None and self.size > self.max_bytes:
                break
        return size

    def _problem(self, problem: LineProblem, raw: bytes) -> Line:
        if self.policy.stop:
            raise JsonlError(self.message(problem), problem)
        self.problems.append(problem)
        return Line(problem.number, None, raw, problem)

    def _stop(self, problem: LineProblem, raw: bytes) -> Line:
        self.stopped = problem
        return self._problem(problem, raw)


# -- one line on its own -----------------------------------------------------

def record_of(raw: bytes | str) -> Optional[dict]:
    """The record one line holds; None when it holds none (blank, not JSON, nested too deeply, not an object).

    Why: publication keeps a log's trial lines byte for byte as a reader
    verified them (:func:`publish.data.sources.open_run_read`) and parses them again
    where a page, a table or a guard needs a field, and the tail of a log is
    read for one field of its last record; a line that is not a record is
    then one to pass over, never one to report (the reader has reported it).
    """
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):      # UnicodeDecodeError is a ValueError too
        return None
    return value if isinstance(value, dict) else None


def complete_size(stream: BinaryIO) -> int:
    """Bytes of a seekable stream up to and including its last newline: the log without a torn last line.

    Why: a last line without its newline was never reported written
    (:data:`DROP`), so whoever cuts it off or reads the log's end starts here.
    """
    size = stream.seek(0, os.SEEK_END)
    if size == 0:
        return 0
    stream.seek(size - 1)
    if stream.read(1) == b"\n":
        return size
    pos = size
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        stream.seek(start)
        newline = stream.read(pos - start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        pos = start
    return 0


def _line_ending_at(stream: BinaryIO, size: int) -> bytes:
    """The last line of the first ``size`` bytes, which end with a newline (the newline dropped)."""
    pos = size - 1
    pieces: list[bytes] = []
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        stream.seek(start)
        block = stream.read(pos - start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            pieces.append(block[newline + 1:])
            break
        pieces.append(block)
        pos = start
    return b"".join(reversed(pieces))


def last_line(stream: BinaryIO, end: Optional[int] = None) -> bytes:
    """The last non-blank line of the first ``end`` bytes of a seekable stream, without its newline (b"" if none).

    ``end`` must fall just after a newline; by default it is
    :func:`complete_size` (a torn last line is passed over, as a reader does).
    Why: the hash the next record of a chained log links to, the time of a
    log's last record and a run's last trial all need only the last line;
    read backwards in chunks, it costs the same on a log of ten lines and of
    ten years.
    """
    size = complete_size(stream) if end is None else end
    while size > 0:
        line = _line_ending_at(stream, size)
        if line.strip():
            return line
        size -= len(line) + 1            # a blank line, which the reader skips too
    return b""


def last_record(stream: BinaryIO) -> Optional[dict]:
    """The record on the last complete, non-blank line of a log (:func:`last_line`); None when it holds none."""
    return record_of(last_line(stream))
