"""A harness's log made into a submission (method §4.2): what every importer shares.

Outsiders run evaluations in harnesses (Inspect AI, lm-evaluation-harness);
their logs become comparison points through an importer per harness
(:mod:`llmarchive.comparison.inspect_log`; the dispatch by kind of file is
:mod:`llmarchive.comparison.harness_import`).  An importer reads its log
with the harness's own reader and turns each answered call into a
:class:`Call`; this module turns the calls into the trial log a
``comparison run`` writes — every trial in :data:`measure.schema.TRIAL_FIELDS`
order, its outcome decided by the archive's own outcome table
(:func:`llmarchive.subjects.base.classify`), hash-chained — and writes the
submission ``llmarchive comparison submit`` accepts unchanged: one header
line, then the trials.

A log is refused (:class:`LogImportRefused`) with every reason at once, one
line each, and nothing is written: the intake would refuse what cannot be a
complete run of the panel, and an importer says so first, in the words of
the harness (which slots are missing, which sample errored, which setting
was set).  A value read from a log is held to the rule a submission's values
are held to (:func:`value_reasons`, by
:func:`llmarchive.comparison.submission.value_problems`): a number that is not
finite — a NaN temperature, which no JSON the archive writes can carry — is
refused naming where in the log it stands, before anything is made of it.
"""
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from llmarchive.archive import OutputFile, parse_time, terminal, utc_millis
from llmarchive.comparison.submission import HEADER_TYPE, READABLE_DEPTH, RESPONSE_CHARS_PER_TOKEN, value_problems
from llmarchive.subjects import CallResult, classify
from measure import chain
from measure.canonical import canonical_json
from measure.errors import ArchiveError
from measure.schema import SCHEMA_VERSION, TRIAL_WRITTEN_FIELDS, VERSIONS, check_trial

MAX_NAMED = 8
"""Slots or samples named in one reason before the rest are counted ("and 12 more")."""
MAX_REASONS = 20
"""Reasons a refusal shows, one line each, before the rest are counted (a log of 2,000,000 empty lines has
thousands; the first are enough to act on)."""


class LogImportRefused(ArchiveError, ValueError):
    """A harness log that cannot become a submission; ``reasons`` lists every one, and nothing was written.

    The message names the log and the number of reasons on its first line,
    then one line per reason (``LOG: reason``), escaped for a terminal: the
    first :data:`MAX_REASONS`, and how many more there are (``reasons``
    keeps them all).
    """

    def __init__(self, reasons: Sequence[str], file: Path) -> None:
        self.reasons = [" ".join(terminal(r).split()) for r in reasons]
        self.file = Path(file)
        where = terminal(str(file))
        count = len(self.reasons)
        shown = self.reasons[:MAX_REASONS]
        more = [f"and {count - len(shown):,} more reason(s), not shown"] if count > len(shown) else []
        super().__init__(f"{where}: import refused, nothing written ({count:,} reason{'s' if count != 1 else ''}):\n"
                         + "\n".join(f"{where}: {reason}" for reason in shown + more))


@dataclass
class Call:
    """One answered call of a harness log, in the archive's words (what a trial is made from)."""

    item_id: str
    version: str
    replicate_index: int
    text: Optional[str]
    provider: str                       # whose stop reasons: a key of llmarchive.subjects.base.STOP_REASONS
    stop_reason: Optional[str]          # the stop reason the outcome table reads, in that provider's words
    recorded_stop_reason: Optional[str]  # the stop reason as the log holds it (kept on the trial)
    returned_model_id: Optional[str]
    started_at: str
    finished_at: str
    latency_ms: int
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    attempts: int = 1
    retry_causes: Sequence[str] = field(default_factory=tuple)
    refused: bool = False
    blocked: bool = False
    non_text: bool = False
    system_fingerprint: Optional[str] = None
    order: tuple = ()                   # when the call was made, for the trials' order (trial_index)


@dataclass
class ImportedRun:
    """A submission made from a log: its header and its chained trials, written only when nothing was refused."""

    header: dict
    trials: list[dict]


def few(items: Sequence[str], limit: int = MAX_NAMED) -> str:
    """The first ``limit`` items joined, and how many more."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def value_reasons(found: Iterable[tuple[str, str, Any]]) -> list[str]:
    """Why values read from a log cannot be kept, by the rule a submission's values are held to
    (:func:`llmarchive.comparison.submission.value_problems`: a number that is not finite, nesting past the readers'
    bound), naming where in the log each stands.

    ``found`` holds ``(place, path, value)``: the place in the log (``"line 3"``, a file's name, or ``""`` for
    the log as a whole), the field path of ``value`` there (``"plan.config"``; ``""`` for the place itself).
    The same problem at many places is one reason naming the first few (a temperature set on every line).
    """
    places: dict[str, list[str]] = {}
    for place, path, value in found:
        for problem in value_problems(value, path, max_depth=READABLE_DEPTH):
            places.setdefault(problem, [])
            if place and place not in places[problem]:
                places[problem].append(place)
    return [f"{few(where)}: {problem}" if where else problem for problem, where in places.items()]


def answer_reasons(answers: Iterable[tuple[str, Optional[str]]], doc: Mapping) -> list[str]:
    """Why answers are longer than a submission's may be (the intake's bound: at most
    :data:`~llmarchive.comparison.submission.RESPONSE_CHARS_PER_TOKEN` characters per token of the panel's
    ``max_tokens``); ``answers`` holds ``(where, text)``."""
    limit = RESPONSE_CHARS_PER_TOKEN * int(doc["generation"]["max_tokens"])
    over = [f"{where} ({len(text):,})" for where, text in answers if isinstance(text, str) and len(text) > limit]
    if not over:
        return []
    return [f"{len(over)} answer(s) are longer than {limit:,} characters ({RESPONSE_CHARS_PER_TOKEN} per token of "
            f"the panel's max_tokens, a submission's bound): {few(over)}"]


def slot_name(item_id: str, version: str, replicate_index: int) -> str:
    """A slot as a person reads it: scenario/version/replicate (the replicate counted from 1, as epochs are)."""
    return f"{item_id}/{version}/{replicate_index + 1}"


def slot_reasons(found: Iterable[tuple[str, str, int]], doc: Mapping, replicates: str = "epoch") -> list[str]:
    """Every slot (scenario × version × replicate) the panel asks for that is missing, doubled or extra."""
    seen: dict[tuple[str, str, int], int] = {}
    for slot in found:
        seen[slot] = seen.get(slot, 0) + 1
    per = int(doc["n_per_scenario"])
    wanted = [(item["item_id"], v, r) for r in range(per) for item in doc["panel"] for v in VERSIONS]
    reasons = []
    missing = [slot_name(*s) for s in wanted if s not in seen]
    if missing:
        reasons.append(f"incomplete: {len(missing)} of {len(wanted)} slots (scenario/version/{replicates}) have no "
                       f"answer: {few(missing)}; the panel needs {len(wanted)} answers, one per slot")
    doubled = [slot_name(*s) for s, count in sorted(seen.items()) if count > 1]
    if doubled:
        reasons.append(f"{len(doubled)} slot(s) answered more than once: {few(doubled)}; one answer per slot")
    extra = sorted({s[2] + 1 for s in seen if s[2] >= per or s[2] < 0})
    if extra:
        reasons.append(f"{replicates}(s) {', '.join(map(str, extra))} beyond the panel's n_per_scenario ({per}); run "
                       f"exactly {per} {replicates}s")
    return reasons


def timestamp(value: Any) -> Optional[str]:
    """A time as the runner writes one (UTC, milliseconds, ``Z``), from a datetime or an ISO 8601 text."""
    if isinstance(value, str):
        value = parse_time(value)
    return utc_millis(value) if isinstance(value, datetime) else None


def utc_date(value: Any) -> Optional[str]:
    """The UTC calendar day of a datetime or ISO 8601 text (the run date a log records)."""
    stamp = timestamp(value)
    return stamp[:10] if stamp else None


def trial_record(doc: Mapping, run_id: str, session: str, index: int, slot: tuple[str, str, int],
                 result: CallResult, logged: Mapping) -> dict:
    """One trial exactly as the runner writes it: the slot, the outcome the archive's outcome table gives
    ``result`` (:func:`llmarchive.subjects.base.classify`), and the fields the harness's log holds
    (``logged``: stop reason, model id, tokens, timings… — a field the log does not hold is left out, not
    invented).  Every harness importer makes its trials here."""
    item_id, version, replicate_index = slot
    decided = classify(result, doc["options"], doc["grammar_version"])
    values = {
        "record_type": "trial", "schema_version": SCHEMA_VERSION, "run_id": run_id,
        "protocol_id": doc["protocol_id"], "item_id": item_id, "n_items": doc["n_items"],
        "version": version, "replicate_index": replicate_index, "trial_index": index,
        "prompt_sha256": doc["prompt_sha256"][item_id][version],
        "outcome": decided.outcome, "token": decided.token, "reason": decided.reason,
        "response_text": result.text, "answered": True, "session": session, **logged,
    }
    # The schema's trial, in its order (a field this schema does not have yet is left out).
    trial = {name: values[name] for name in TRIAL_WRITTEN_FIELDS if name in values}
    check_trial(trial, f"run {run_id}, slot {slot_name(item_id, version, replicate_index)}",
                needs=list(trial), closed=True)
    return trial


def chained(trials: Iterable[dict]) -> list[dict]:
    """The trials as one hash chain from the genesis, in the order given."""
    out, prev = [], chain.GENESIS
    for trial in trials:
        linked = chain.link(trial, prev)
        prev = linked["record_sha256"]
        out.append(linked)
    return out


def _trial(call: Call, index: int, doc: Mapping, run_id: str, session: str) -> dict:
    result = CallResult(provider=call.provider, text=call.text, stop_reason=call.stop_reason,
                        returned_model_id=call.returned_model_id, input_tokens=call.input_tokens,
                        output_tokens=call.output_tokens, latency_ms=call.latency_ms, attempts=call.attempts,
                        explicitly_set={}, started_at=call.started_at, finished_at=call.finished_at,
                        blocked=call.blocked, refused=call.refused, non_text=call.non_text)
    return trial_record(doc, run_id, session, index, (call.item_id, call.version, call.replicate_index), result, {
        "stop_reason": call.recorded_stop_reason, "returned_model_id": call.returned_model_id,
        "input_tokens": call.input_tokens, "output_tokens": call.output_tokens, "latency_ms": call.latency_ms,
        "attempts": call.attempts, "retry_causes": list(call.retry_causes),
        "unknown_attempts": len(call.retry_causes), "started_at": call.started_at,
        "finished_at": call.finished_at, "system_fingerprint": call.system_fingerprint})


def trials_from_calls(calls: Iterable[Call], doc: Mapping, run_id: str, session: str) -> list[dict]:
    """The run's trial log: one chained trial per call, in the order the calls were made."""
    ordered = sorted(calls, key=lambda c: (c.order, c.item_id, c.version, c.replicate_index))
    return chained(_trial(call, index, doc, run_id, session) for index, call in enumerate(ordered))


def header(doc: Mapping, model_id: str, run_date: str, explicitly_set: Mapping, *,
           requested_model_id: Optional[str] = None, submitted_by: Optional[str] = None,
           note: Optional[str] = None) -> dict:
    """The submission's first line, as ``comparison run`` writes it (the model as the server named it)."""
    out = {"record_type": HEADER_TYPE, "protocol_id": doc["protocol_id"], "panel_sha256": doc["panel_sha256"],
           "protocol_sha256": doc["protocol_sha256"], "grammar_version": doc["grammar_version"], "n": doc["n"],
           "model_id": model_id, "run_date": run_date, "explicitly_set": dict(explicitly_set)}
    if requested_model_id:
        out["requested_model_id"] = requested_model_id
    if submitted_by:
        out["submitted_by"] = submitted_by
    if note:
        out["note"] = note
    return out


def write_submission(out: Union[OutputFile, Path], run: ImportedRun) -> None:
    """``out`` = the header line + the trials, one canonical line each (atomic: never half a file; ``out`` under
    the rule of :class:`llmarchive.archive.outputs.OutputFile`, a bare path as :meth:`OutputFile.of` takes it)."""
    data = canonical_json(run.header) + "\n" + "".join(chain.to_line(t) for t in run.trials)
    OutputFile.of(out).write(data.encode("utf-8"))
