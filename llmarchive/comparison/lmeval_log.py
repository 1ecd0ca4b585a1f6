"""An lm-evaluation-harness log as a comparison submission (method §4.2): ``llmarchive comparison import LOG``.

An outsider who ran a published open panel with its lm-evaluation-harness
task (``panels/<protocol_id>.lm_eval.yaml``, :mod:`publish.tasks.lmeval_task`)
with ``--log_samples`` holds two files the harness wrote side by side:
``samples_<task>_<date>.jsonl`` (one line per document: the document, the
arguments of its request, every repeat's response) and
``results_<date>.json`` (the run's configuration: the model type and its
arguments, the generation settings, the task as it ran, the date).
:func:`submission_from_lm_eval` reads both — the samples through the
archive's one JSONL reader under its collecting policy, within caps — and
makes the submission ``comparison submit`` checks like any other, or
refuses the log, listing every reason at once and writing nothing:

* **the panel, prompt by prompt**: every line names a scenario and version
  of the panel (its document's ``item_id`` and ``version``), and what was
  sent is one user message whose text hashes to the panel's
  ``prompt_sha256`` for that slot (no system message, nothing added);
* **one answer per slot** (scenario × version × repeat, repeats counted
  from 1): every one of the panel's ``4 × n`` slots, none twice, no repeat
  beyond ``n_per_scenario``; a missing document (a ``--limit`` run, a cut
  file) or a repeat without a text response is not a trial and is named;
* **the model**: lm-eval does not keep the model id the server returned
  (its API client reads only the answer's text), so the model id is the
  one the run asked for, ``model_args``' ``model`` in the results file —
  exact (no alias), one for the whole run — and the note says so;
* **nothing set but ``max_tokens``**: the request body is not in the log,
  so it is rebuilt from what the log records, by the rule lm-eval 0.4's
  ``local-chat-completions`` client follows (:func:`request_settings`):
  ``max_tokens`` from the task's ``max_gen_toks``; ``temperature`` (0
  unless given), ``seed`` (``model_args``' seed, 1234 unless given) and
  ``stop`` (the task's ``until``) always sent, and every other generation
  argument as it stands.  A value sent as null (or an empty stop list) sets
  nothing — an OpenAI-compatible server reads it as "not set".  Everything
  set is listed in the header's ``explicitly_set``; ``max_tokens`` must be
  the panel's and anything else is refused, naming the fix
  (``--gen_kwargs temperature=None``: a task file cannot null lm-eval's
  temperature);
* **fresh calls, the prompt alone**: a run with ``--use_cache`` (answers
  may be replayed from lm-eval's cache), a system instruction or few-shot
  examples is refused;
* **the run date** is the day (UTC) the results file says the run started;
* **every value as a submission's**: a number that is not finite (``NaN``
  or ``Infinity``, which lm-eval writes for ``--gen_kwargs
  temperature=nan``) in a line of the samples file, in the results file or
  in its ``model_args`` text is refused first, naming the field path
  (:func:`llmarchive.comparison.log_submission.value_reasons`), and nothing
  else is judged.

lm-eval keeps neither the stop reason nor the timing of a call, so a trial
made here carries no ``stop_reason`` (an answer cut at ``max_tokens`` is
read by the grammar, not marked ``truncated``) and leaves out the fields
the schema gives a call's timing and attempts: the intake judges the
fields a trial carries, and invents none.  Each repeat becomes a trial
(its outcome from the archive's outcome table), chained, under the run id
``lm-eval-<start>-<protocol>-<model>``.  lm-eval itself is not needed to
import: its log is JSON.
"""
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional

from llmarchive.archive import lm_eval_run_id
from llmarchive.comparison.check import is_exact_model_id, model_id_problems, run_id_problems
from llmarchive.comparison.log_bounds import LogTooLarge, check_json_file, read_json_log
from llmarchive.comparison.log_submission import (ImportedRun, LogImportRefused, answer_reasons, chained, few, header,
                                                  slot_name, slot_reasons, trial_record, utc_date, value_reasons)
from llmarchive.protocols import prompt_sha256
from llmarchive.subjects import CallResult
from measure import jsonl
from measure.canonical import canonical_json
from measure.errors import ArchiveError
from measure.schema import VERSIONS

KIND = "lm-eval"
MODEL_TYPE = "local-chat-completions"
"""The one lm-eval model type whose request is the archive's: the prompt as one chat message, ``max_tokens``."""
VERSION_SERIES = "0.4."
"""The lm-eval versions whose request rule :func:`request_settings` knows."""
DEFAULT_TEMPERATURE = 0
DEFAULT_SEED = 1234
DEFAULT_MAX_GEN_TOKS = 256
CLIENT_ARGS = ("do_sample",)
"""Generation arguments lm-eval's API client reads and never sends."""

SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
MAX_LOG_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
MAX_RECORDS = 2000
READABLE_DEPTH = 64
"""The caps of the samples file: a line holds one document with every repeat's answer (about 3 kB with
``n_per_scenario`` answers of at most ``max_tokens`` tokens each), a log one line per document (60 for a
15-scenario panel); each cap leaves an order of magnitude of room, like the intake's (read.py).  The results
file, read whole, and the values of both files are held to the bounds of any log
(:mod:`llmarchive.comparison.log_bounds`)."""

READING = jsonl.COLLECT.worded(**{
    jsonl.TOO_LONG: "line {number} is {size:,} bytes; one line (one document and its repeats) may be at most "
                    "{limit:,} bytes",
    jsonl.TOO_BIG: "the samples file is more than {limit:,} bytes; a 15-scenario panel's log is about 200 kB",
    jsonl.TOO_MANY: "the samples file holds more than {limit:,} lines; a panel's log is one line per document "
                    "(4 per scenario)",
})


class LmEvalLogError(ArchiveError, ValueError):
    """An lm-eval log that is not there or cannot be told apart as one: one line, nothing written."""


@dataclass(frozen=True)
class Answer:
    """One repeat of one document: the slot it fills and the text the server answered."""

    item_id: str
    version: str
    replicate_index: int
    text: str
    order: tuple


def is_lm_eval_log(path: Path) -> bool:
    """Whether ``path`` is named as lm-eval names a ``--log_samples`` file (``samples_<task>_<date>.jsonl``)."""
    return SAMPLES_NAME.match(Path(path).name) is not None


def results_file(log_path: Path) -> Optional[Path]:
    """The results file the same run wrote beside the samples file (``results_<date>.json``), if it is there."""
    log_path = Path(log_path)
    match = SAMPLES_NAME.match(log_path.name)
    if match is None:
        return None
    stamp = match.group("stamp")
    preferred = log_path.parent / f"results_{stamp}.json"
    if preferred.is_file():
        return preferred
    found = sorted(p for p in log_path.parent.glob(f"*_{stamp}.json") if p.is_file())
    return found[0] if len(found) == 1 else None


def read_samples(log_path: Path) -> tuple[list[tuple[int, dict]], list[str]]:
    """Every line of the samples file with its number, and every problem met (read within the caps)."""
    reader = jsonl.JsonlReader(READING, str(log_path), max_bytes=MAX_LOG_BYTES, max_line_bytes=MAX_LINE_BYTES,
                               max_records=MAX_RECORDS, max_depth=READABLE_DEPTH, digest=hashlib.sha256())
    numbered, problems = [], []
    try:
        with open(log_path, "rb") as fh:
            for line in reader.lines(fh):
                if line.problem is None:
                    numbered.append((line.number, line.record))
                else:
                    problems.append(f"samples file: {reader.message(line.problem)}")
    except OSError as exc:
        raise LmEvalLogError(f"{log_path}: cannot be read ({exc.strerror or exc})") from None
    if not numbered and not problems:
        problems.append("the samples file holds no line (was the run made with --log_samples?)")
    return numbered, problems


def read_results(path: Optional[Path], log_path: Path) -> tuple[dict, list[str]]:
    """The results file as a JSON object (``{}`` when it cannot be read), and why it cannot."""
    if path is None:
        return {}, [f"no results file beside the samples file (results_<date>.json with the date of "
                    f"{Path(log_path).name}): lm-eval writes the model, its arguments and the run's date there, "
                    "and the samples file alone does not say them; import from the folder lm-eval wrote"]
    try:
        value = read_json_log(path, "the results file")      # within a log's bounds before it is parsed
    except LogTooLarge:
        raise
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return {}, [f"{path.name}: cannot be read as lm-eval's results JSON ({type(exc).__name__})"]
    if not isinstance(value, dict) or not isinstance(value.get("config"), dict):
        return {}, [f"{path.name}: not lm-eval's results file (no 'config' object)"]
    return value, []


def _literal(text: str) -> Any:
    """A value of a ``key=value`` argument string as lm-eval reads one (None, booleans, numbers, else text)."""
    lowered = text.strip().lower()
    if lowered in ("none", "null"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text.strip())
        except ValueError:
            pass
    return text.strip()


def model_args(config: Mapping) -> dict:
    """The model's arguments as the results file records them: an object, or (older) ``k=v,k=v`` text."""
    value = config.get("model_args")
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str):
        pairs = [part.split("=", 1) for part in value.split(",") if "=" in part]
        return {key.strip(): _literal(raw) for key, raw in pairs}
    return {}


def request_settings(gen_kwargs: Mapping, args: Mapping) -> dict:
    """What lm-eval 0.4's ``local-chat-completions`` client sends besides ``model`` and ``messages``.

    Its rule (``LocalChatCompletion._create_payload``): ``do_sample`` is
    dropped; ``max_tokens`` is the generation's ``max_tokens`` if given,
    else its ``max_gen_toks``, else the model's; ``temperature`` is always
    sent (0 unless given); ``stop`` is ``until`` (with the model's
    ``eos_string`` when one is given and the calls are not concurrent),
    first four; ``seed`` is the model's (1234 unless given); every other
    generation argument is sent as it stands and overrides those.
    """
    gen = {k: v for k, v in gen_kwargs.items() if k not in CLIENT_ARGS}
    if "max_tokens" in gen:
        max_tokens = gen.pop("max_tokens")
    else:
        max_tokens = gen.pop("max_gen_toks", args.get("max_gen_toks", DEFAULT_MAX_GEN_TOKS))
    temperature = gen.pop("temperature", DEFAULT_TEMPERATURE)
    until = gen.pop("until", None)
    stop = [until] if isinstance(until, str) else list(until or [])
    eos = args.get("eos_string")
    concurrent = args.get("num_concurrent", 1)
    if eos and (not isinstance(concurrent, int) or concurrent <= 1) and eos not in stop:
        stop.append(eos)
    seed = args.get("seed", DEFAULT_SEED)
    return {"max_tokens": max_tokens, "temperature": temperature, "stop": stop[:4], "seed": seed, **gen}


def sets_something(value: Any) -> bool:
    """Whether a sent value sets anything: null and an empty list are a server's "not set"."""
    return value is not None and value != []


def _merged(bodies: list[dict]) -> dict:
    """Every setting the requests set: ``{key: value}``, or ``{key: [values]}`` when the requests differ."""
    values: dict[str, dict[str, Any]] = {}
    for body in bodies:
        for key, value in body.items():
            if sets_something(value):
                values.setdefault(key, {})[canonical_json(value)] = value
    return {k: (list(v.values())[0] if len(v) == 1 else [v[c] for c in sorted(v)]) for k, v in values.items()}


FIXES = {"temperature": "lm-eval sends temperature 0 unless told: add --gen_kwargs temperature=None",
         "seed": "the published task sends seed as null: run it as published (or --gen_kwargs seed=None)",
         "stop": "the published task sends stop as null and until as []: run it as published"}


def settings_reasons(bodies: list[dict], doc: Mapping, model_id: Optional[str]) -> tuple[dict, list[str]]:
    """``explicitly_set`` (the model asked for and every setting sent), and why the settings are refused."""
    explicitly_set = _merged(bodies)
    reasons = []
    want = doc["generation"]["max_tokens"]
    if explicitly_set.get("max_tokens") != want:
        reasons.append(f"the requests set max_tokens {explicitly_set.get('max_tokens')!r}; the panel's is {want} "
                       "(run the published task as it is)")
    refused = sorted(k for k in explicitly_set if k != "max_tokens")
    if refused:
        shown = ", ".join(f"{k}={canonical_json(explicitly_set[k])}" for k in refused)
        fixes = "; ".join(FIXES[k] for k in refused if k in FIXES)
        reasons.append(f"the requests set {shown}: the panel sets nothing but max_tokens (no sampling parameter)"
                       + (f"; {fixes}" if fixes else "; run the task again without them"))
    if model_id:
        explicitly_set = {"model": model_id, **explicitly_set}
    return explicitly_set, reasons


def _start(results: Mapping) -> Optional[datetime]:
    """When the run started (UTC), from the results file's ``date`` (seconds since the epoch)."""
    value = results.get("date")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(float(value), timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _model_reasons(results: Mapping, args: Mapping) -> tuple[Optional[str], list[str]]:
    """The one exact model id the run asked for (the server's own is not logged), and why there is none."""
    config = results.get("config") or {}
    reasons = []
    if config.get("model") != MODEL_TYPE:
        reasons.append(f"the run used lm-eval's model type {config.get('model')!r}; the panel is sent as one chat "
                       f"message by --model {MODEL_TYPE} with --apply_chat_template")
    model_id = args.get("model", args.get("pretrained"))
    if not isinstance(model_id, str) or not model_id.strip():
        return None, reasons + ["the results file names no model (model_args has no model=)"]
    reasons += [f"model_args model: {p}" for p in model_id_problems(model_id, "model id")]
    if not is_exact_model_id(model_id):
        reasons.append(f"model_args model {model_id!r} is not an exact model id (an alias or pattern)")
    named = results.get("model_name")
    if isinstance(named, str) and named and named != model_id:
        reasons.append(f"the results file names two models ({named!r} and {model_id!r}); a run is one model id")
    return model_id, reasons


def _task_reasons(results: Mapping, task: str, doc: Mapping) -> list[str]:
    """The task as it ran (its config in the results file) is the published one for this panel."""
    reasons = []
    version = results.get("lm_eval_version")
    if not (isinstance(version, str) and version.startswith(VERSION_SERIES)):
        reasons.append(f"the log was written by lm-eval {version!r}; the importer knows how lm-eval "
                       f"{VERSION_SERIES}x builds its requests (install that series)")
    if results.get("system_instruction"):
        reasons.append("the run added a system instruction (--system_instruction); the panel's prompt is sent alone")
    if (results.get("config") or {}).get("use_cache"):
        reasons.append("the run used --use_cache: an answer may be replayed from lm-eval's cache, not a fresh call; "
                       "run without --use_cache")
    configs = results.get("configs") if isinstance(results.get("configs"), dict) else {}
    config = configs.get(task)
    if not isinstance(config, dict):
        return reasons + [f"the results file does not describe the task {task!r} the samples file is of"]
    meta = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    for key in ("protocol_id", "panel_sha256", "protocol_sha256"):
        if key in meta and meta[key] != doc[key]:
            reasons.append(f"the task's metadata names {key} {meta[key]!r}, the panel file's is {doc[key]!r}: the "
                           "log is of another panel")
    if config.get("repeats") != doc["n_per_scenario"]:
        reasons.append(f"the task ran {config.get('repeats')!r} repeat(s); the panel asks for n_per_scenario = "
                       f"{doc['n_per_scenario']} (run the published task as it is)")
    if config.get("num_fewshot") not in (None, 0):
        reasons.append(f"the task ran with {config.get('num_fewshot')} few-shot example(s); the panel's prompt is "
                       "sent alone")
    return reasons


def _sent_text(sample: Mapping) -> tuple[Optional[dict], Optional[str], str]:
    """(the request's generation arguments, the one user message's text, why there is none — empty when there is).

    lm-eval logs a chat request's messages as the JSON text it sends (a
    one-element list in the log); a bare string is a prompt that was not
    sent as a chat message.
    """
    arguments = sample.get("arguments")
    first = arguments.get("gen_args_0") if isinstance(arguments, dict) else None
    if not isinstance(first, dict) or len(arguments) != 1:
        return None, None, "its arguments are not one generation request (arguments.gen_args_0)"
    gen = first.get("arg_1") if isinstance(first.get("arg_1"), dict) else {}
    prompt = first.get("arg_0")
    if not (isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str)):
        return gen, None, ("its prompt was sent as bare text, not as a chat message (run with --model "
                           f"{MODEL_TYPE} --apply_chat_template)")
    try:
        messages = json.loads(prompt[0])        # one JSON document: the chat request lm-eval sends as text
    except (ValueError, RecursionError):
        return gen, None, "its chat request is not the JSON list of messages lm-eval sends"
    if not (isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], dict)
            and messages[0].get("role") == "user" and isinstance(messages[0].get("content"), str)):
        roles = [m.get("role") if isinstance(m, dict) else None for m in messages] if isinstance(messages, list) else []
        return gen, None, (f"it sent {len(roles)} message(s) with the roles {', '.join(map(str, roles))}; the "
                           "panel's prompt is sent alone, as one user message")
    return gen, messages[0]["content"], ""


def _sample(number: int, sample: Any, doc: Mapping) -> tuple[Optional[tuple[str, str]], Optional[dict], list, str]:
    """(slot, generation arguments, responses, problem) of one line; the problem's words are empty when none."""
    record = sample.get("doc") if isinstance(sample.get("doc"), dict) else {}
    item_id, version = record.get("item_id"), record.get("version")
    if not (isinstance(item_id, str) and item_id in doc["prompt_sha256"] and version in VERSIONS):
        return None, None, [], f"line {number}: its document names no scenario and version of this panel"
    where = f"line {number} ({item_id} {version})"
    gen, text, problem = _sent_text(sample)
    resps = sample.get("resps")
    if not (isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list)):
        return (item_id, version), gen, [], f"{where}: resps is not one list of the repeats' responses"
    if text is None:
        return (item_id, version), gen, resps[0], f"{where}: {problem}"
    want = doc["prompt_sha256"][item_id][version]
    if prompt_sha256(text) != want:
        return (item_id, version), gen, resps[0], (
            f"{where}: the message sent does not hash to the panel's prompt_sha256 for {item_id} {version} "
            f"({prompt_sha256(text)[:12]}…, the panel's {want[:12]}…): the prompt was edited")
    return (item_id, version), gen, resps[0], ""


def samples_reasons(numbered: list[tuple[int, dict]], doc: Mapping) -> tuple[list[Answer], list[dict], list[str]]:
    """Every answered repeat, the generation arguments of every request, and why a line is not the panel's."""
    answers, gens, slots, reasons, unanswered = [], [], [], [], []
    for number, sample in numbered:
        slot, gen, responses, problem = _sample(number, sample, doc)
        if problem:
            reasons.append(problem)
        if slot is None:
            continue
        if gen is not None:
            gens.append(gen)
        for index, text in enumerate(responses):
            slots.append((slot[0], slot[1], index))
            if not isinstance(text, str):
                unanswered.append(slot_name(slot[0], slot[1], index))
            elif not problem:
                answers.append(Answer(slot[0], slot[1], index, text, (number, index)))
    if unanswered:
        reasons.append(f"incomplete: {len(unanswered)} repeat(s) hold no text response, so they are not trials: "
                       f"{few(sorted(unanswered))}; run the task again")
    reasons += slot_reasons(slots, doc, replicates="repeat")
    return answers, gens, reasons


def run_id_of(start: datetime, protocol_id: str, model_id: str) -> str:
    """``lm-eval-<start, UTC>-<protocol>-<model>``: one id per run of a panel (lm-eval's log names no run)."""
    return lm_eval_run_id(start.strftime('%Y%m%dT%H%M%S'), protocol_id, model_id)


def _trial(answer: Answer, index: int, doc: Mapping, run_id: str, session: str) -> dict:
    """One trial of the fields the log holds (timings, attempts and stop reason are not logged, so left out)."""
    result = CallResult(provider="openai", text=answer.text, stop_reason=None, returned_model_id=None,
                        input_tokens=None, output_tokens=None, latency_ms=0, attempts=1, explicitly_set={},
                        started_at="", finished_at="")
    return trial_record(doc, run_id, session, index, (answer.item_id, answer.version, answer.replicate_index),
                        result, {"stop_reason": None, "returned_model_id": None, "input_tokens": None,
                                 "output_tokens": None})


def trials_of(answers: list[Answer], doc: Mapping, run_id: str, session: str) -> list[dict]:
    """The run's trial log: one chained trial per repeat, in the log's order (lm-eval does not log call order)."""
    return chained(_trial(answer, index, doc, run_id, session)
                   for index, answer in enumerate(sorted(answers, key=lambda a: a.order)))


def submission_from_lm_eval(log_path: Path, panel_doc: Mapping, *, submitted_by: Optional[str] = None,
                            results_path: Optional[Path] = None) -> ImportedRun:
    """The submission an lm-eval samples log of ``panel_doc`` (a verified open-panel document) makes; or every
    reason not (:class:`LogImportRefused`).  ``results_path`` defaults to the results file beside the log."""
    log_path = Path(log_path)
    match = SAMPLES_NAME.match(log_path.name)
    if not log_path.is_file():
        raise LmEvalLogError(f"{log_path}: no such lm-eval samples file")
    if match is None:
        raise LmEvalLogError(f"{log_path}: not named as lm-eval names a --log_samples file "
                             "(samples_<task>_<date>.jsonl); import the file lm-eval wrote, under its own name")
    try:
        with open(log_path, "rb") as fh:      # the values a log may hold, counted before a line is parsed
            check_json_file(log_path, fh, "the samples file")
    except OSError as exc:
        raise LmEvalLogError(f"{log_path}: cannot be read ({exc.strerror or exc})") from None
    numbered, reasons = read_samples(log_path)
    results_path = Path(results_path) if results_path else results_file(log_path)
    results, problems = read_results(results_path, log_path)
    reasons += problems
    args = model_args(results.get("config") or {})
    unkept = value_reasons([(f"line {number}", "", sample) for number, sample in numbered]
                           + ([(results_path.name, "", results), (results_path.name, "config.model_args", args)]
                              if results else []))
    if unkept:       # nothing is judged on values no JSON the archive writes can carry
        raise LogImportRefused(reasons + unkept, log_path)
    model_id, found = _model_reasons(results, args) if results else (None, [])
    reasons += found + (_task_reasons(results, match.group("task"), panel_doc) if results else [])
    answers, gens, found = samples_reasons(numbered, panel_doc)
    reasons += found + answer_reasons([(slot_name(a.item_id, a.version, a.replicate_index), a.text)
                                       for a in answers], panel_doc)
    explicitly_set, found = settings_reasons([request_settings(g, args) for g in gens], panel_doc, model_id)
    reasons += found if results and gens else []
    start = _start(results)
    if results and start is None:
        reasons.append(f"the results file's date {results.get('date')!r} is not a time (seconds since the epoch)")
    run_id = run_id_of(start, panel_doc["protocol_id"], model_id) if start and model_id else None
    reasons += [f"the run id: {p}" for p in run_id_problems(run_id)] if run_id else []
    if reasons:
        raise LogImportRefused(reasons, log_path)
    note = (f"imported from an lm-evaluation-harness {results.get('lm_eval_version')} log ({log_path.name}, model "
            f"type {MODEL_TYPE}); lm-eval keeps neither the model id the server returned nor the stop reason, so "
            "model_id is the id the run asked for and no answer is marked truncated")
    head = header(panel_doc, model_id, utc_date(start), explicitly_set, requested_model_id=model_id,
                  submitted_by=submitted_by, note=note[:2000])
    return ImportedRun(head, trials_of(answers, panel_doc, run_id, f"lm-eval:{start.strftime('%Y%m%dT%H%M%S')}"))
