"""An open panel as an lm-evaluation-harness task: ``panels/<protocol_id>.lm_eval.yaml`` and its documents.

The people who evaluate models often already run EleutherAI's
lm-evaluation-harness (``lm_eval``); publishing each open panel as one of
its tasks lets them add a comparison point (method §4.2) from the harness
they use.  Publication writes, beside ``panels/<protocol_id>.json``:

* ``<protocol_id>.lm_eval.jsonl`` — the task's documents, one per scenario
  and version in panel order (versions in :data:`measure.schema.VERSIONS`
  order): ``item_id``, ``version``, ``prompt_sha256`` and ``text``, the
  prompt exactly as the panel file holds it.  A task YAML cannot carry
  documents inline, so the harness reads them with its ``json`` loader.
* ``<protocol_id>.lm_eval.yaml`` — the task.  Each choice is there because
  the harness would otherwise change what is sent:

  - ``doc_to_text: text`` names the document's field, so the prompt is the
    field's value as it stands (a template would be rendered by Jinja);
    ``num_fewshot: 0``, no ``description``: nothing is added before it;
  - ``output_type: generate_until`` and ``repeats: n_per_scenario``: each
    document is sent ``n_per_scenario`` times, each time a call of its own,
    and the log keeps every repeat (``resps``);
  - ``generation_kwargs``: ``max_gen_toks`` is the panel's ``max_tokens``;
    ``until: []``, because without ``until`` the harness stops generation
    at its few-shot delimiter ``"\\n\\n"`` and would cut every answer at
    its first blank line; ``seed: null`` and ``stop: null``, because the
    harness's OpenAI-compatible clients otherwise send ``seed: 1234`` and a
    ``stop`` list, and a null is what such a server reads as "not set";
  - ``temperature`` cannot be nulled here: the harness turns a task's
    temperature into a float, and its API clients send ``temperature: 0``
    unless told otherwise.  The command therefore carries
    ``--gen_kwargs temperature=None`` (the import refuses a log whose
    request set a temperature, naming this fix);
  - ``metric_list``: ``bypass`` — the task scores nothing; the archive
    re-reads every response with its own grammar when the log is imported;
  - ``metadata``: the protocol id and both hashes, which the harness copies
    into its results file, so an import can tell which panel file the run
    used.

The files are rendered by hand from fixed templates (no YAML library), so
their bytes depend on the panel document alone.  They are read relative to
the folder ``lm_eval`` runs in: the recipe in the YAML's opening comment
runs it inside the folder that holds them.
"""
import json
from pathlib import Path
from typing import Iterable, Mapping

from llmarchive.protocols import OpenPanelFileError, read_panel_file, verify_panel_file
from measure.schema import VERSIONS
from publish.errors import PublishError

TASK_SUFFIX = ".lm_eval.yaml"
DOCS_SUFFIX = ".lm_eval.jsonl"
TASK_PREFIX = "llmarchive_"
FORMAT_VERSION = 1
MODEL_TYPE = "local-chat-completions"
"""The harness's OpenAI-compatible chat client: one user message per call, the request the archive sends."""


def task_name(protocol_id: str) -> str:
    """The harness task's name (``--tasks``); it is also in the log's file name ``samples_<task>_<date>.jsonl``."""
    return f"{TASK_PREFIX}{protocol_id}"


def task_file_name(protocol_id: str) -> str:
    return f"{protocol_id}{TASK_SUFFIX}"


def docs_file_name(protocol_id: str) -> str:
    return f"{protocol_id}{DOCS_SUFFIX}"


def docs_text(doc: Mapping) -> str:
    """The documents file: one JSON object per scenario and version, sorted keys, UTF-8 as itself."""
    lines = []
    for item in doc["panel"]:
        for version in VERSIONS:
            record = {"item_id": item["item_id"], "version": version,
                      "prompt_sha256": doc["prompt_sha256"][item["item_id"]][version],
                      "text": item["versions"][version]}
            lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's): a hash of digits stays a string."""
    return json.dumps(text, ensure_ascii=False)


def recipe_lines(protocol_id: str) -> list[str]:
    """The commands that run the task and import its log, as the YAML's opening comment shows them."""
    task = task_name(protocol_id)
    return [
        "pip install 'lm-eval[api]==0.4.13'",
        f"cd <the folder holding {protocol_id}.json and its two .lm_eval files>",
        f"lm_eval --model {MODEL_TYPE} --apply_chat_template \\",
        "    --model_args model=YOUR-EXACT-MODEL-ID,base_url=http://127.0.0.1:8080/v1/chat/completions \\",
        f"    --include_path . --tasks {task} --gen_kwargs temperature=None \\",
        "    --log_samples --output_path lm_eval_out",
        f"llmarchive comparison import lm_eval_out/<model>/samples_{task}_<date>.jsonl "
        f"--panel {protocol_id}.json --out submission.jsonl",
    ]


def task_text(doc: Mapping) -> str:
    """The task YAML for the panel document ``doc`` (see the module docstring for why each key is set)."""
    pid = doc["protocol_id"]
    comment = [
        f"LLM-Archive open panel {pid}",
        f"as an lm-evaluation-harness task, generated from {pid}.json.",
        "The archive refuses a run whose prompts are not the panel's: edit nothing. Every document is",
        "sent as one user message, exactly as published, n_per_scenario times; max_gen_toks is the",
        "panel's max_tokens and nothing else is set. The task scores nothing: the archive reads each",
        "response with its own grammar when the log is imported. Run it inside the folder that holds",
        "the files:",
        *(f"  {line}" for line in recipe_lines(pid)),
    ]
    body = [
        f"task: {_q(task_name(pid))}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {_q(docs_file_name(pid))}",
        "test_split: test",
        "output_type: generate_until",
        "doc_to_text: text",
        'doc_to_target: ""',
        "num_fewshot: 0",
        f"repeats: {int(doc['n_per_scenario'])}",
        "generation_kwargs:",
        "  until: []",
        f"  max_gen_toks: {int(doc['generation']['max_tokens'])}",
        "  seed: null",
        "  stop: null",
        "metric_list:",
        "  - metric: bypass",
        "    aggregation: bypass",
        "    higher_is_better: true",
        "metadata:",
        f"  version: {FORMAT_VERSION}",
        f"  protocol_id: {_q(pid)}",
        f"  panel_sha256: {_q(doc['panel_sha256'])}",
        f"  protocol_sha256: {_q(doc['protocol_sha256'])}",
    ]
    return "".join(f"# {line}\n" for line in comment) + "".join(f"{line}\n" for line in body)


def task_files(doc: Mapping) -> dict[str, str]:
    """``{file name: text}`` of the lm-evaluation-harness task for one published open-panel document.

    The names are bare file names, to be published in the same folder as
    the panel file.  A document that does not verify is refused: a task
    is never published for a panel whose hashes do not hold.
    """
    problems = verify_panel_file(doc)
    if problems:
        raise PublishError(f"panel {doc.get('protocol_id')}: no lm-evaluation-harness task for a panel file that "
                           f"does not verify: {'; '.join(problems)}")
    pid = doc["protocol_id"]
    return {task_file_name(pid): task_text(doc), docs_file_name(pid): docs_text(doc)}


def published_problems(folder: Path, wanted: Iterable[str]) -> list[str]:
    """What is wrong with the lm-eval files in the published ``panels/`` ``folder`` (empty when nothing is).

    Each file is generated from its panel file alone, so it must be byte for
    byte what :func:`task_files` makes of the panel beside it; a file for a
    protocol that is not in ``wanted`` (the open protocols), or one missing
    beside an open panel, is a problem too.
    """
    wanted = set(wanted)
    present = {}
    if folder.is_dir():
        for suffix in (TASK_SUFFIX, DOCS_SUFFIX):
            present.update({f.name: f for f in sorted(folder.glob(f"*{suffix}"))})
    problems = []
    for name, file in sorted(present.items()):
        pid = name[:-len(TASK_SUFFIX)] if name.endswith(TASK_SUFFIX) else name[:-len(DOCS_SUFFIX)]
        if pid not in wanted:
            problems.append(f"panels/{name}: protocol {pid} is not in the open lane; only open panels have a task")
    for pid in sorted(wanted):
        try:
            expected = task_files(read_panel_file(folder / f"{pid}.json"))
        except (OpenPanelFileError, PublishError) as exc:
            problems.append(f"panels/{task_file_name(pid)}: its panel file cannot be rendered ({exc})")
            continue
        for name, text in expected.items():
            if name not in present:
                problems.append(f"panels/{name}: missing; protocol {pid} is in the open lane")
            elif present[name].read_bytes() != text.encode("utf-8"):
                problems.append(f"panels/{name}: not what its panel file renders (publish.lmeval_task); "
                                "publish again")
    return problems
