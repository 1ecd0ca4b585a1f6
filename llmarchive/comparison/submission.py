"""Reading a comparison submission (method §4.2): streamed, capped, every value checked before it is judged.

A submission comes from outside, so the file is read as data that may be
hostile, by the one JSONL reader under its collecting policy
(:mod:`measure.jsonl`, :data:`INTAKE`): one line at a time with a running
byte count (never the whole file at once, never a second copy of it), each
line capped, and every value of
every line checked for depth and finite numbers, and every header value
for type and size, before :mod:`llmarchive.comparison.check` judges anything
or :mod:`llmarchive.comparison.intake` writes anything.

The caps follow from what a real submission is.  The largest panel (``v1``)
has ``n`` = 120, so a complete run is 4 × 120 = 480 trials; a panel asks for
at most ``max_tokens`` = 256 tokens per response, about 1,000 characters at
~4 characters a token; a trial line as the runner writes it is about 1–3 kB.
A real v1 submission is therefore about 1 MB, and the caps leave an order of
magnitude and more of room:

* :data:`MAX_SUBMISSION_BYTES` — the whole file, 16 MiB;
* :data:`MAX_LINE_BYTES` — one line (one trial), 256 KiB;
* :data:`MAX_RECORDS` — 2,000 lines holding a record (4 × the largest run);
* :data:`RESPONSE_CHARS_PER_TOKEN` — one response may hold at most 64
  characters per token of the panel's ``max_tokens`` (16,384 for 256),
  checked once the protocol is known (:mod:`llmarchive.comparison.check`);
* :data:`MAX_DEPTH` — values nested at most 6 deep in a line (a trial's
  ``retry_causes`` is 2), and the header's ``explicitly_set`` at most
  :data:`EXPLICITLY_SET_BYTES` of canonical JSON.
"""
import hashlib
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from llmarchive.archive import MODEL_ID_MAX, id_problems
from measure import jsonl
from measure.canonical import canonical_json
from measure.jsonl import short_key as _key
from measure.schema import expected_words, json_type_words, trial_problems

HEADER_TYPE = "comparison_submission"
HEADER_FIELDS = ("protocol_id", "panel_sha256", "protocol_sha256", "grammar_version", "n", "model_id",
                 "requested_model_id", "model_family", "run_date", "submitted_by", "note", "explicitly_set")
HEADER_TYPES: dict[str, tuple[type, ...]] = {
    "protocol_id": (str,), "panel_sha256": (str,), "protocol_sha256": (str,), "grammar_version": (int,),
    "n": (int,), "model_id": (str,), "requested_model_id": (str,), "model_family": (str,), "run_date": (str,),
    "submitted_by": (str,), "note": (str,), "explicitly_set": (dict,),
}
_TYPE_NAMES = {str: "a string", int: "an integer", dict: "an object"}

MAX_SUBMISSION_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 256 * 1024
MAX_RECORDS = 2000
RESPONSE_CHARS_PER_TOKEN = 64
MAX_DEPTH = 6
EXPLICITLY_SET_BYTES = 4096
# The longest text each header string may hold (characters); ids also follow textsafe.id_problems.
HEADER_LENGTHS = {"protocol_id": 200, "panel_sha256": 64, "protocol_sha256": 64, "model_id": MODEL_ID_MAX,
                  "requested_model_id": MODEL_ID_MAX, "model_family": 100, "run_date": 10,
                  "submitted_by": 200, "note": 2000}
HEADER_IDS = ("protocol_id", "panel_sha256", "protocol_sha256", "model_id", "requested_model_id", "model_family",
              "run_date")
SUBMITTED_BY_MAX = HEADER_LENGTHS["submitted_by"]
MAX_INT = 10 ** 9
MAX_LINE_PROBLEMS = 3
READABLE_DEPTH = 64
"""Nesting beyond this is refused before JSON parsing (whose own limit depends on the caller's stack)."""

INTAKE = jsonl.COLLECT.worded(**{
    jsonl.TOO_LONG: "line {number} is {size:,} bytes; one line (one trial) may be at most {limit:,} bytes (a response "
                    f"at most {RESPONSE_CHARS_PER_TOKEN} characters per token of the panel's max_tokens)",
    jsonl.TOO_BIG: "the file is more than {limit:,} bytes; a submission may be at most {limit:,} bytes (a complete "
                   "run of the largest panel is about 1 MB)",
    jsonl.TOO_MANY: "the file holds more than {limit:,} records; a submission is one run (4 × n trials: 480 for the "
                    "largest panel) and its header",
})
"""The reader's collecting policy (:data:`measure.jsonl.COLLECT`) in the words an outside submitter reads."""
# Which of the reader's problems go where in the refusal: the kind of reason, or a list folded to a few lines.
_SIZE = (jsonl.TOO_BIG, jsonl.TOO_MANY)
_UNREADABLE = (jsonl.NOT_JSON, jsonl.TOO_DEEP)


@dataclass
class Submission:
    """A submission file as read: its size and sha256, header, numbered trials, and every problem found."""

    file: Path
    size: int = 0
    sha256: str = ""
    header: dict = field(default_factory=dict)
    numbered: list[tuple[int, dict]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    judgeable: bool = False     # every value of the right type, depth and size: the conditions may be judged

    @property
    def trials(self) -> list[dict]:
        return [t for _, t in self.numbered]


def _few(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _child(path: str, key: object, named: bool) -> str:
    """The path of a member: ``path.key`` (just ``key`` from an empty path), or ``path[index]`` in a list."""
    if not named:
        return f"{path}[{key}]"
    return f"{path}.{_key(key)}" if path else _key(key)


def value_problems(value: Any, where: str, max_depth: int = MAX_DEPTH) -> list[str]:
    """Why ``value`` (read from JSON) cannot be kept: nested over ``max_depth``, or a number that is not finite.

    Each problem names the field path from ``where`` (``line 3.explicitly_set.seed``; with ``where`` empty,
    from the value's own keys: ``arguments.gen_args_0.arg_1.temperature``).  Walked without recursion, so no
    depth of nesting can exhaust the stack.
    """
    too_deep: Optional[str] = None
    infinite: list[str] = []
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            infinite.append(path)
        elif isinstance(item, (dict, list)):
            if depth > max_depth:
                too_deep = too_deep or path
                continue
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((v, _child(path, k, isinstance(item, dict)), depth + 1) for k, v in pairs)
    problems = []
    if too_deep is not None:
        problems.append(f"{too_deep} is nested more than {max_depth} levels deep")
    if infinite:
        problems.append(f"{_few(sorted(infinite), 3)}: a number that is not finite (NaN or infinity), which JSON "
                        "cannot carry")
    return problems


def _wrong_type(value: object, allowed: tuple[type, ...]) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return bool not in allowed
    return not isinstance(value, allowed)


def header_problems(header: dict) -> list[tuple[str, str]]:
    """Every header value checked for type, size, depth and finite numbers: one reason per field at fault."""
    problems: list[tuple[str, str]] = []
    for key, allowed in HEADER_TYPES.items():
        if key not in header:
            continue
        value = header[key]
        if _wrong_type(value, allowed):
            problems.append(("format", f"the header's {key} must be {_TYPE_NAMES[allowed[0]]}, "
                                       f"got {json_type_words(value)}"))
        elif isinstance(value, str):
            limit = HEADER_LENGTHS[key]
            if key in HEADER_IDS:
                problems += [("format", f"the header's {message}")
                             for message in id_problems(value, key, limit, model=key.endswith("model_id"))
                             if not message.endswith(" is blank")]
            elif len(value) > limit:
                problems.append(("format", f"the header's {key} is {len(value)} characters long; at most {limit} "
                                           "are accepted"))
        elif isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
            problems.append(("format", f"the header's {key} is out of range ({len(str(abs(value)))} digits)"))
        elif isinstance(value, dict):
            found = value_problems(value, f"the header's {key}", max_depth=4)
            problems += [("format", message) for message in found]
            if not found and len(canonical_json(value).encode("utf-8")) > EXPLICITLY_SET_BYTES:
                problems.append(("format", f"the header's {key} is over {EXPLICITLY_SET_BYTES} bytes of JSON; it "
                                           "names what the client set, a few keys"))
    return problems


def field_types(numbered: list[tuple[int, dict]]) -> list[tuple[str, str]]:
    """One ``format`` reason per trial field that has the wrong JSON type (the schema's types)."""
    wrong: dict[str, list[str]] = {}
    for number, trial in numbered:
        for problem in trial_problems(trial):    # the schema's types; a missing field is judged by its condition
            wrong.setdefault(problem.field, []).append(f"line {number}: {json_type_words(trial[problem.field])}")
    return [("format", f"{len(where)} trial(s) carry {key} that is not {expected_words(key)} ({_few(where, 3)})")
            for key, where in wrong.items()]


class _Intake:
    """One pass of the reader (:data:`INTAKE`) over the file, its lines sorted into the submission's parts."""

    def __init__(self, out: Submission) -> None:
        self.out = out
        self.reader = jsonl.JsonlReader(INTAKE, str(out.file), max_bytes=MAX_SUBMISSION_BYTES,
                                        max_line_bytes=MAX_LINE_BYTES, max_records=MAX_RECORDS,
                                        max_depth=READABLE_DEPTH, digest=hashlib.sha256())
        self.unreadable: list[str] = []
        self.values: list[str] = []

    def read(self, fh) -> bool:
        """Read every line; False when the reading stopped early (not text, or over a cap)."""
        try:
            for line in self.reader.lines(fh):
                if line.problem is None:
                    self.record(line.number, line.record)
                elif not self.problem(line.problem):
                    return False
            return True
        finally:
            self.out.size = self.reader.size

    def problem(self, problem: jsonl.LineProblem) -> bool:
        """File one problem of the reader's; False when it ends the reading."""
        words = self.reader.message(problem)
        if problem.kind == jsonl.NOT_UTF8:
            self.out.problems = [("format", words)]
            self.out.numbered, self.out.header = [], {}
        elif problem.kind in _SIZE:
            self.out.problems.append(("size", words))
        elif problem.kind in _UNREADABLE:
            self.unreadable.append(words)
        elif problem.kind == jsonl.OVER_DEPTH:
            self.values.append(words)
        else:
            self.out.problems.append(("format", words))
        return problem.kind not in jsonl.STOPS

    def record(self, number: int, value: dict) -> None:
        """One JSON object: the header, a trial, or a record of a kind a submission does not hold."""
        kind = value.get("record_type")
        if kind != HEADER_TYPE:      # the header's values are checked field by field (header_problems)
            self.values += value_problems(value, f"line {number}")
        if kind == HEADER_TYPE:
            if self.out.numbered or self.out.header:
                self.out.problems.append(("format", f"line {number}: the {HEADER_TYPE} header may only be the "
                                                    "first line"))
            else:
                unknown = sorted(str(k) for k in set(value) - set(HEADER_FIELDS) - {"record_type"})
                if unknown:
                    self.out.problems.append(("format", f"the header has unknown field(s) {_few(unknown)}"))
                self.out.header = value
        elif kind == "trial":
            self.out.numbered.append((number, value))
        else:
            shown = kind if isinstance(kind, str) and len(kind) <= 40 else json_type_words(kind)
            self.out.problems.append(("format", f"line {number}: record_type {shown!r} is neither 'trial' nor "
                                                f"'{HEADER_TYPE}'"))

    def finish(self) -> None:
        out = self.out
        if self.unreadable:
            shown = self.unreadable[:MAX_LINE_PROBLEMS]
            more = len(self.unreadable) - len(shown)
            out.problems[:0] = [("format", m) for m in shown] + (
                [("format", f"and {more} more line(s) that are not JSON")] if more else [])
        if len(self.values) > MAX_LINE_PROBLEMS:
            self.values[MAX_LINE_PROBLEMS:] = [f"and {len(self.values) - MAX_LINE_PROBLEMS} more such value(s)"]
        out.problems += [("format", m) for m in self.values]
        if not out.numbered and not any("not UTF-8" in m for _, m in out.problems):
            out.problems.append(("format", "the file holds no trial record"))
        out.sha256 = self.reader.digest.hexdigest()


def read_submission(file: Path) -> Submission:
    """Read ``file`` line by line within the caps; every problem found is in ``problems``.

    Nothing is held but the parsed records (at most :data:`MAX_RECORDS`
    lines of at most :data:`MAX_LINE_BYTES`); a file over
    :data:`MAX_SUBMISSION_BYTES` is refused from its size alone, and one
    that grows while it is read is refused when the count passes the cap.
    """
    out = Submission(Path(file))
    try:
        fh = open(out.file, "rb")
    except OSError as exc:
        out.problems.append(("format", f"cannot be read ({exc.strerror or exc})"))
        return out
    with fh:
        info = os.fstat(fh.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_SUBMISSION_BYTES:
            out.size = info.st_size
            out.problems.append(("size", _too_big(f"{info.st_size:,} bytes")))
            return out
        intake = _Intake(out)
        if not intake.read(fh):
            return out
        intake.finish()
    typed = header_problems(out.header) + field_types(out.numbered)
    out.problems += typed
    out.judgeable = bool(out.numbered) and not typed and not intake.values
    return out


def _too_big(size: str) -> str:
    return (f"the file is {size}; a submission may be at most {MAX_SUBMISSION_BYTES:,} bytes (a complete run of "
            "the largest panel is about 1 MB)")
