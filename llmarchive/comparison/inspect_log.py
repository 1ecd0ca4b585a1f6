"""An Inspect AI eval log as a comparison submission (method §4.2): ``llmarchive comparison import LOG``.

An outsider who ran a published open panel with its Inspect task
(``panels/<protocol_id>.py``, :mod:`publish.tasks.inspect_task`) holds an eval log.
:func:`submission_from_inspect_log` reads it with Inspect's own reader
(:func:`inspect_ai.log.read_eval_log`, attachments resolved; never by
unpacking the file by hand) and makes the submission ``comparison submit``
checks like any other — or refuses the log, listing every reason at once
and writing nothing.  First of all the file is held to a log's bounds
(:mod:`llmarchive.comparison.log_bounds`: its size, an ``.eval``'s members
and what each decompresses to, the JSON values it holds), checked on the
handle Inspect then reads, and refused in one line before any large read.
Then:

* **the panel, prompt by prompt**: every sample names a scenario and version
  of the panel (its metadata, or its id ``<item_id>.<version>``), its input
  is one user message whose text hashes to the panel's ``prompt_sha256`` for
  that slot, and the one model call the sample made sent exactly that
  message (no system message, nothing added);
* **one answer per slot** (scenario × version × epoch, epochs counted from
  1 as Inspect counts them): every one of the panel's ``4 × n`` slots, none
  twice, no epoch beyond ``n_per_scenario``; a sample that errored (or that
  a limit halted) is not a trial, so a log with one is incomplete, naming
  the slots — run ``inspect eval-retry`` and import the new log; so is a
  response replayed from Inspect's cache (not a fresh call);
* **the model as the server reported it**: ``output.model`` of every
  sample, exact (no alias), one id for the whole run;
* **nothing set but ``max_tokens``**: every value the log's generation
  config sets (the plan's, the model's and each call's) is listed in the
  header's ``explicitly_set``; ``max_tokens`` must be the panel's, the
  client's own settings (:data:`CLIENT_SETTINGS`: retries, timeouts,
  connections) are allowed, and anything else — a sampling parameter,
  a system message, a cache — is refused;
* **the text of one answer** at most the intake's bound, 64 characters per
  token of the panel's ``max_tokens``;
* **the run date** is the day (UTC) the log says the eval was created;
* **every value as a submission's**: a number that is not finite (``NaN``
  or ``Infinity``) in a generation config or a call's time is refused
  first, naming its field path (``plan.config.temperature``;
  :func:`llmarchive.comparison.log_submission.value_reasons`), and nothing
  else is judged.

Each answered call becomes a trial exactly as the runner writes one (its
outcome from the archive's outcome table, the provider's raw stop reason
when the log kept the raw response), chained, under the run id
``inspect-<eval_id>``.  Inspect is imported only here, when a log is read:
without it the command says ``pip install inspect-ai`` in one line.
"""
from pathlib import Path
from typing import Any, Mapping, Optional

from llmarchive.archive import inspect_run_id
from llmarchive.comparison.log_bounds import LogTooLarge, check_eval_file, check_json_file, is_zip
from llmarchive.comparison.check import is_exact_model_id, model_id_problems, run_id_problems
from llmarchive.protocols import prompt_sha256
from llmarchive.comparison.log_submission import (Call, ImportedRun, LogImportRefused, answer_reasons, few, header,
                                                  slot_name, slot_reasons, timestamp, trials_from_calls, utc_date,
                                                  value_reasons)
from measure.canonical import canonical_json
from measure.errors import ArchiveError
from measure.schema import VERSIONS

KIND = "inspect"
CLIENT_SETTINGS = ("max_retries", "timeout", "attempt_timeout", "stream_idle_timeout", "max_connections",
                   "adaptive_connections", "batch", "extra_headers", "fail_on_refusal")
"""Generation-config fields that govern the client (retries, timeouts, connections), not what the model is sent."""
INSPECT_STOP_WORDS = {"stop": "stop", "max_tokens": "length", "model_length": "length",
                      "content_filter": "content_filter", "tool_calls": "tool_calls"}
"""Inspect's normalised stop reasons in OpenAI's words, for a log that kept no raw response."""
RETRY_CAUSE = "retried by Inspect (cause not logged)"


class InspectLogError(ArchiveError, ValueError):
    """An Inspect log that cannot be read at all, or Inspect AI not installed: one line, nothing written."""


def read_inspect_log(path: Path) -> Any:
    """The eval log with its attachments resolved, read by Inspect itself (imported only now) — once the file is
    within a log's bounds (:mod:`llmarchive.comparison.log_bounds`: refused in one line before any large read).

    The file is opened once: the bounds are checked on that handle and Inspect reads the same handle, so the
    bytes checked are the bytes read."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InspectLogError("reading an Inspect AI log needs Inspect AI, which is not installed: "
                              "pip install inspect-ai") from None
    if not Path(path).is_file():
        raise InspectLogError(f"{path}: no such Inspect log file")
    try:
        with open(path, "rb") as fh:
            zipped = is_zip(fh)
            (check_eval_file if zipped else check_json_file)(Path(path), fh)
            return read_eval_log(fh, resolve_attachments=True, format="eval" if zipped else "json")
    except LogTooLarge:
        raise
    except Exception as exc:  # whatever Inspect's reader raises for a file that is not its log
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise InspectLogError(f"{path}: cannot be read as an Inspect eval log ({type(exc).__name__}: {first})") from None


def _text(message: Any) -> Optional[str]:
    text = getattr(message, "text", None)
    return text if isinstance(text, str) else None


def _slot(sample: Any, doc: Mapping) -> Optional[tuple[str, str]]:
    """The (scenario, version) a sample is, from its metadata or its id ``<item_id>.<version>``."""
    meta = sample.metadata if isinstance(sample.metadata, dict) else {}
    item_id, version = meta.get("item_id"), meta.get("version")
    if not (isinstance(item_id, str) and isinstance(version, str)) and isinstance(sample.id, str) and "." in sample.id:
        item_id, version = sample.id.rsplit(".", 1)
    if item_id in doc["prompt_sha256"] and version in VERSIONS:
        return item_id, version
    return None


def _model_events(sample: Any) -> list:
    return [e for e in (sample.events or []) if getattr(e, "event", None) == "model"]


def _sample_problems(sample: Any, slot: tuple[str, str], doc: Mapping) -> list[str]:
    """Why one sample is not the panel's prompt sent alone, once (empty when it is)."""
    want = doc["prompt_sha256"][slot[0]][slot[1]]
    where = f"sample {sample.id} epoch {sample.epoch}"
    problems = []
    messages = [sample.input] if isinstance(sample.input, str) else list(sample.input or [])
    texts = [m if isinstance(m, str) else _text(m) for m in messages]
    roles = ["user" if isinstance(m, str) else getattr(m, "role", None) for m in messages]
    if roles != ["user"] or texts[0] is None:
        problems.append(f"{where}: the input is {len(messages)} message(s) with the roles {', '.join(map(str, roles))}; "
                        "the panel's prompt is sent alone, as one user message")
    elif prompt_sha256(texts[0]) != want:
        problems.append(f"{where}: the input does not hash to the panel's prompt_sha256 for {slot[0]} {slot[1]} "
                        f"({prompt_sha256(texts[0])[:12]}…, the panel's {want[:12]}…): the prompt was edited")
    events = _model_events(sample)
    if len(events) != 1:
        problems.append(f"{where}: {len(events)} model calls; the panel is one call per prompt")
        return problems
    sent = list(events[0].input or [])
    if [getattr(m, "role", None) for m in sent] != ["user"] or \
            prompt_sha256(_text(sent[0]) or "") != want:
        problems.append(f"{where}: the call sent {len(sent)} message(s) (roles "
                        f"{', '.join(str(getattr(m, 'role', None)) for m in sent)}) that are not the panel's prompt "
                        "alone (no system message, nothing added)")
    if getattr(events[0], "cache", None) == "read":
        problems.append(f"{where}: the response was replayed from Inspect's cache, not a fresh call; run without "
                        "--cache")
    return problems


def _raw_stop(raw: Any) -> tuple[Optional[str], Optional[str], bool, Optional[str]]:
    """(provider, stop reason, refused, system_fingerprint) from the raw response the log kept, if any."""
    if not isinstance(raw, dict):
        return None, None, False, None
    fingerprint = raw.get("system_fingerprint") if isinstance(raw.get("system_fingerprint"), str) else None
    choices = raw.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
        return "openai", choices[0].get("finish_reason"), bool(message.get("refusal")), fingerprint
    if "stop_reason" in raw:
        return "anthropic", raw.get("stop_reason"), False, fingerprint
    return None, None, False, fingerprint


def _non_text(output: Any) -> bool:
    message = output.choices[0].message if output.choices else None
    if message is None:
        return False
    if getattr(message, "tool_calls", None):
        return True
    content = message.content
    return isinstance(content, list) and any(getattr(c, "type", "text") not in ("text", "reasoning") for c in content)


def _call(sample: Any, slot: tuple[str, str]) -> Call:
    """The one answered call of a sample, in the archive's words."""
    event = _model_events(sample)[0]
    # the sample's output (what Inspect reports the sample answered; the one call's own output when it has none)
    output = sample.output if sample.output is not None and sample.output.choices else event.output
    call = getattr(event, "call", None)
    provider, raw_stop, refused, fingerprint = _raw_stop(getattr(call, "response", None))
    inspect_stop = str(output.stop_reason) if output.stop_reason is not None else None
    started = timestamp(event.timestamp) or timestamp(sample.started_at) or ""
    finished = timestamp(event.completed) or timestamp(sample.completed_at) or started
    if event.completed is not None and event.timestamp is not None:
        latency = (event.completed - event.timestamp).total_seconds()
    else:
        latency = output.time or 0.0
    usage = output.usage
    retries = int(getattr(event, "retries", None) or 0)
    return Call(item_id=slot[0], version=slot[1], replicate_index=int(sample.epoch) - 1, text=output.completion,
                provider=provider or "openai",
                stop_reason=raw_stop if provider else INSPECT_STOP_WORDS.get(inspect_stop or ""),
                recorded_stop_reason=raw_stop if provider else inspect_stop,
                returned_model_id=output.model or None, started_at=started, finished_at=finished,
                latency_ms=max(0, round(latency * 1000)),
                input_tokens=usage.input_tokens if usage else None,
                output_tokens=usage.output_tokens if usage else None,
                attempts=1 + retries, retry_causes=(RETRY_CAUSE,) * retries, refused=refused,
                non_text=_non_text(output), system_fingerprint=fingerprint,
                order=(started, int(sample.epoch)))


def _configs(log: Any) -> list[tuple[str, dict]]:
    """Every generation config the log records (plan, model, each call) as ``(field path, the values it sets)``."""
    found = [("plan.config", log.plan.config), ("eval.model_generate_config", log.eval.model_generate_config)]
    found += [(f"samples[{i}].events[{j}].config", e.config) for i, s in enumerate(log.samples or [])
              for j, e in enumerate(s.events or []) if getattr(e, "event", None) == "model" and e.config is not None]
    return [(path, config.model_dump(mode="json", exclude_none=True)) for path, config in found if config is not None]


def _times(log: Any) -> list[tuple[str, Any]]:
    """Every call's time the log records (read as a call's latency when its timestamps are missing)."""
    found = []
    for i, sample in enumerate(log.samples or []):
        if sample.output is not None:
            found.append((f"samples[{i}].output.time", sample.output.time))
        found += [(f"samples[{i}].events[{j}].output.time", e.output.time) for j, e in enumerate(sample.events or [])
                  if getattr(e, "event", None) == "model" and e.output is not None]
    return found


def _unkept(log: Any) -> list[str]:
    """Why values the import reads cannot be kept (a number that is not finite), naming each field path."""
    return value_reasons([("", path, value) for path, value in _configs(log) + _times(log)])


def _generation(log: Any) -> dict:
    """Every generation setting the log records (plan, model, each call): ``{field: value or [values]}``."""
    values: dict[str, dict[str, Any]] = {}
    for _, config in _configs(log):
        for key, value in config.items():
            values.setdefault(key, {})[canonical_json(value)] = value
    return {k: (list(v.values())[0] if len(v) == 1 else [v[c] for c in sorted(v)]) for k, v in values.items()}


def _config_reasons(log: Any, doc: Mapping) -> tuple[dict, list[str]]:
    """``explicitly_set`` (the request's model id and every generation setting), and why it is refused."""
    explicitly_set = _generation(log)
    reasons = []
    want = doc["generation"]["max_tokens"]
    if explicitly_set.get("max_tokens") != want:
        reasons.append(f"the generation config sets max_tokens {explicitly_set.get('max_tokens')!r}; the panel's "
                       f"is {want} (run the published task as it is)")
    refused = sorted(k for k in explicitly_set if k != "max_tokens" and k not in CLIENT_SETTINGS)
    if refused:
        shown = ", ".join(f"{k}={canonical_json(explicitly_set[k])}" for k in refused)
        reasons.append(f"the generation config sets {shown}: the panel sets nothing but max_tokens (no sampling "
                       "parameter, no system message, no cache); run the task again without them")
    requested = sorted({e.call.request.get("model") for s in (log.samples or []) for e in _model_events(s)
                        if getattr(e, "call", None) is not None and isinstance(e.call.request, dict)
                        and isinstance(e.call.request.get("model"), str)})
    if len(requested) == 1:
        explicitly_set = {"model": requested[0], **explicitly_set}
    epochs = getattr(log.eval.config, "epochs", None)
    if epochs is not None and epochs != doc["n_per_scenario"]:
        reasons.append(f"the eval ran {epochs} epoch(s); the panel asks for n_per_scenario = "
                       f"{doc['n_per_scenario']} (run the published task as it is)")
    return explicitly_set, reasons


def _model_reasons(calls: list[Call]) -> tuple[Optional[str], list[str]]:
    """The one exact model id the server reported (``output.model`` of every answered sample), and why there is none."""
    named = sorted({c.returned_model_id for c in calls if c.returned_model_id})
    unnamed = sorted(slot_name(c.item_id, c.version, c.replicate_index) for c in calls if not c.returned_model_id)
    reasons = []
    if unnamed:
        reasons.append(f"{len(unnamed)} sample(s) carry no model id as the server reported it (output.model): "
                       f"{few(unnamed)}")
    if len(named) > 1:
        reasons.append(f"the server reported {len(named)} model ids ({few(named)}); a run is one exact model id")
    model_id = named[0] if len(named) == 1 else None
    if model_id is not None:
        reasons += [f"output.model: {p}" for p in model_id_problems(model_id, "model id")]
        if not is_exact_model_id(model_id):
            reasons.append(f"output.model {model_id!r} is not an exact model id (an alias or pattern)")
    return model_id, reasons


def _samples_reasons(log: Any, doc: Mapping) -> tuple[list[Call], list[str]]:
    """The answered calls of the log's samples, and every reason a sample is not a trial of the panel."""
    calls, slots, reasons, errored, unknown = [], [], [], [], []
    for sample in log.samples or []:
        slot = _slot(sample, doc)
        if slot is None:
            unknown.append(str(sample.id))
            continue
        slots.append((slot[0], slot[1], int(sample.epoch) - 1))
        if sample.error is not None or getattr(sample, "limit", None) is not None:
            errored.append(slot_name(slot[0], slot[1], int(sample.epoch) - 1))
            continue
        problems = _sample_problems(sample, slot, doc)
        reasons += problems
        if not problems:
            calls.append(_call(sample, slot))
    if unknown:
        reasons.append(f"{len(unknown)} sample(s) name no scenario and version of this panel: {few(sorted(unknown))}")
    if errored:
        reasons.append(f"incomplete: {len(errored)} sample(s) errored or were halted, so they are not trials: "
                       f"{few(sorted(errored))}; run `inspect eval-retry` on this log and import the new one")
    reasons += slot_reasons(slots, doc)
    return calls, reasons


def submission_from_inspect_log(log_path: Path, panel_doc: Mapping, *, submitted_by: Optional[str] = None
                                ) -> ImportedRun:
    """The submission an Inspect log of ``panel_doc`` (a verified open-panel document) makes; or every reason not."""
    log = read_inspect_log(Path(log_path))
    unkept = _unkept(log)
    if unkept:       # nothing is judged on values no JSON the archive writes can carry
        raise LogImportRefused(unkept, Path(log_path))
    reasons = []
    if log.status != "success":
        reasons.append(f"the eval's status is {log.status!r}, not 'success': the run did not finish")
    if not log.samples:
        reasons.append("the log holds no samples (was it written with --no-log-samples?)")
    meta = log.eval.metadata if isinstance(log.eval.metadata, dict) else {}
    for key in ("protocol_id", "panel_sha256", "protocol_sha256"):
        if key in meta and meta[key] != panel_doc[key]:
            reasons.append(f"the task's metadata names {key} {meta[key]!r}, the panel file's is {panel_doc[key]!r}: "
                           "the log is of another panel")
    calls, found = _samples_reasons(log, panel_doc)
    explicitly_set, config = _config_reasons(log, panel_doc)
    model_id, models = _model_reasons(calls)
    run_date = utc_date(log.eval.created)
    reasons += found + config + models
    reasons += answer_reasons([(slot_name(c.item_id, c.version, c.replicate_index), c.text) for c in calls], panel_doc)
    if run_date is None:
        reasons.append(f"the log's creation time {log.eval.created!r} is not a date")
    run_id = inspect_run_id(log.eval.eval_id or log.eval.run_id)
    reasons += [f"the eval id: {p}" for p in run_id_problems(run_id)]
    if reasons:
        raise LogImportRefused(reasons, Path(log_path))
    note = (f"imported from an Inspect AI eval log: task {log.eval.task}, model {log.eval.model}, eval_id "
            f"{log.eval.eval_id}, inspect_ai {log.eval.packages.get('inspect_ai', 'unknown')}")
    head = header(panel_doc, model_id, run_date, explicitly_set, requested_model_id=explicitly_set.get("model"),
                  submitted_by=submitted_by, note=note[:2000])
    return ImportedRun(head, trials_from_calls(calls, panel_doc, run_id, f"inspect:{log.eval.run_id}"))
