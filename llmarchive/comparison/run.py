"""A comparison run from the public files alone (method §4.2): the outsider's side of a comparison point.

An outsider holds one published open-panel file (``public/panels/<protocol_id>.json``,
read by :mod:`llmarchive.protocols.open_panels`) and a model behind an OpenAI-compatible
server or the Anthropic API.  :func:`run_comparison` turns that into a
submission :func:`llmarchive.comparison.intake.submit` accepts unchanged:

1. **The panel file is verified first.**  Its ``panel_sha256`` and
   ``protocol_sha256`` must recompute from the file itself; a file that was
   edited is refused before any call, so nobody spends a run on a panel the
   intake would refuse.
2. **The same runner as the archive's** (:func:`llmarchive.run.runner.run_protocol`):
   each prompt sent exactly as the file holds it, one fresh call each, with
   the panel's frozen ``generation`` (only ``max_tokens`` besides the prompt;
   what the client set is the subject's ``explicitly_set``, recorded in
   ``run.json`` and in the submission header, and nothing else is sent).  A
   call that got no answer is not a trial; the run stops ``interrupted`` and
   the slot stays open.
3. **State lives in the home, under the store's layout**: the run folder
   ``private/experiments/<run_id>/`` (``run.json``, the hash-chained
   ``trials.jsonl``), with a default ``run_id`` made by
   :func:`llmarchive.archive.run_ids.comparison_run_id` — no date in it — so running the same command again, on any day, resumes
   that folder and sends only the missing slots.  The run is marked
   ``exploratory`` (a comparison run is never on anyone's curve).
4. **The submission** (``--out``) is written only for a complete run, at a
   path the one rule for a file a command writes allows
   (:class:`llmarchive.archive.outputs.OutputFile`: never the panel file,
   never a file of the archive home, an existing file only when asked) —
   checked before any call and again before the write: one
   header line (:data:`llmarchive.comparison.intake.HEADER_TYPE`) naming the model,
   the run date, the protocol, both panel hashes, ``grammar_version``, ``n``
   and ``explicitly_set``, then the trial log exactly as the runner wrote it
   (chain hashes included, so the intake can verify the chain).

Keys come from the environment only (``OPENAI_API_KEY``, optional for a local
server; ``ANTHROPIC_API_KEY`` for ``--api anthropic``); no key is ever written.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union

from llmarchive.archive import ArchivePaths, OutputFile, comparison_run_id, store
from llmarchive.budget import unbudgeted
from llmarchive.comparison.intake import HEADER_TYPE, is_exact_model_id
from llmarchive.comparison.check import model_id_problems, run_id_problems
from llmarchive.comparison.submission import SUBMITTED_BY_MAX
from llmarchive.protocols import load_panel_file, protocol_from_panel_file
from llmarchive.subjects import make_subject, registry
from llmarchive.run import Progress, RunResult, RunSettings, run_protocol
from measure.canonical import canonical_json
from measure.errors import ArchiveError

EXPLORATORY_NOTE = "comparison run: an outside run of a published open panel; never on a curve"


class ComparisonRunError(ArchiveError):
    """A comparison run that cannot start as asked (a bad panel file, a bad option); nothing was sent."""


@dataclass
class ComparisonRun:
    """What one invocation did: the runner's result, and the submission file when the run is complete."""

    result: RunResult
    protocol: dict
    out: Optional[Path]
    header: Optional[dict]

    @property
    def complete(self) -> bool:
        return self.result.complete


def load_panel(file: Path) -> dict:
    """The published panel ``file`` as a runnable protocol, after its hashes recompute (else refused)."""
    return protocol_from_panel_file(load_panel_file(Path(file)))


def make_comparison_subject(api: str, model: str, base_url: Optional[str], max_tokens: int, *,
                            max_attempts: int = 6, timeout_s: float = 120.0, sleep: Any = None) -> Any:
    """The archive's own API subject for ``api`` (the same request body, retries and secrets rules).

    ``api`` is a provider the provider table offers to comparison runs (:func:`registry.comparison_names`).
    """
    if api not in registry.comparison_names():
        raise ComparisonRunError(f"--api must be one of {', '.join(registry.comparison_names())}, got {api!r}")
    return make_subject(api, max_tokens=max_tokens, model=model, base_url=base_url, max_attempts=max_attempts,
                        timeout_s=timeout_s, sleep=sleep)


def submission_header(protocol: Mapping, result: RunResult, requested_model: str,
                      submitted_by: Optional[str] = None) -> dict:
    """The submission's first line: the model (as the server named it), the date, the panel and its hashes."""
    run = result.run
    returned = sorted({t["returned_model_id"] for t in result.trials if t.get("returned_model_id")})
    # The model that answered, as it named itself; the id asked for when the server names none (or several:
    # then the intake refuses the file, naming them).
    model_id = returned[0] if len(returned) == 1 else requested_model
    header = {
        "record_type": HEADER_TYPE,
        "protocol_id": protocol["protocol_id"],
        "panel_sha256": protocol["panel_sha256"],
        "protocol_sha256": protocol["protocol_sha256"],
        "grammar_version": protocol["grammar_version"],
        "n": protocol["n"],
        "model_id": model_id,
        "requested_model_id": requested_model,
        "run_date": run["run_date"],
        "explicitly_set": run.get("explicitly_set"),
    }
    if submitted_by:
        header["submitted_by"] = submitted_by
    return header


def write_submission(out: Union[OutputFile, Path], header: Mapping, folder: Path) -> None:
    """``out`` = the header line + the trial log exactly as written (atomic: never half a file; ``out`` under the
    rule of :class:`llmarchive.archive.outputs.OutputFile`, a bare path as :meth:`OutputFile.of` takes it)."""
    data = canonical_json(dict(header)).encode("utf-8") + b"\n" + store.trial_log(folder).read_bytes()
    OutputFile.of(out).write(data)


def run_comparison(paths: ArchivePaths, panel_file: Path, *, base_url: Optional[str], model: str,
                   api: Optional[str] = None, out: Union[OutputFile, Path], run_id: Optional[str] = None,
                   run_date: Optional[str] = None, concurrency: int = 4, submitted_by: Optional[str] = None,
                   max_attempts: int = 6, timeout_s: float = 120.0, progress: Optional[Progress] = None,
                   sleep: Optional[Callable] = None) -> ComparisonRun:
    """Run (or resume) the published panel ``panel_file`` on ``model``; write ``out`` once complete.

    Raises :class:`ComparisonRunError` before any call for a panel file whose
    hashes do not recompute, :class:`llmarchive.archive.outputs.OutputRefused`
    before any call for an ``out`` the rule refuses, and whatever the runner
    raises after (:class:`llmarchive.run.runner.RunInterrupted` when a call
    got no answer: run the same command again to resume).  ``api`` defaults
    to the provider table's comparison default (the OpenAI-compatible route).
    """
    api = api or registry.comparison_default()
    target = OutputFile.of(out).reading(("the --panel file", panel_file))
    target.check()
    protocol = load_panel(panel_file)
    problems = model_id_problems(model, "--model")
    if run_id is not None:
        problems += [f"--run-id: {p}" for p in run_id_problems(run_id)]
    if submitted_by is not None and len(submitted_by) > SUBMITTED_BY_MAX:
        problems.append(f"--submitted-by is {len(submitted_by)} characters long; at most {SUBMITTED_BY_MAX} are "
                        "accepted")
    if problems:
        # The intake would refuse the submission for each of these: refused before anything is spent.
        raise ComparisonRunError("; ".join(problems))
    if not is_exact_model_id(model):
        # The intake refuses an alias (its model can change under the run); refuse it before anything is spent.
        raise ComparisonRunError(f"--model {model!r} is not an exact model id (an alias such as …-latest, a pattern "
                                 "or blank); give the exact id your server serves — the archive refuses a "
                                 "submission made on an alias")
    max_tokens = protocol["generation"]["max_tokens"]
    subject = make_comparison_subject(api, model, base_url, max_tokens, max_attempts=max_attempts,
                                      timeout_s=timeout_s, sleep=sleep)
    settings = RunSettings(run_id=run_id or comparison_run_id(protocol["protocol_id"], model, api), run_date=run_date,
                           concurrency=concurrency, exploratory=EXPLORATORY_NOTE,
                           extra={"comparison_run": {"panel_file": Path(panel_file).name, "api": api}})
    paths.ensure()
    # An outsider's own server or account: charged to no pool of this archive (costs logged as unknown).
    result = run_protocol(paths, protocol, subject, settings, authorization=unbudgeted("manual"),
                          progress=progress)
    if not result.complete:
        return ComparisonRun(result, protocol, None, None)
    header = submission_header(protocol, result, model, submitted_by)
    write_submission(target, header, result.run_dir)
    return ComparisonRun(result, protocol, target.path, header)


def recipe(protocol_id: str, archive_url: str = "$ARCHIVE_URL") -> list[tuple[str, str]]:
    """The outsider's recipe as (step, shell command) pairs, for the README and the site's Data page alike.

    ``archive_url`` is where the published files are served (the site's own
    address on the Data page; a shell variable in the README).
    """
    file = f"{protocol_id}.json"
    return [
        ("install (in a clone of this repository)",
         "python3 -m venv .venv && . .venv/bin/activate && pip install ."),
        ("fetch the panel file and check its hashes",
         f'curl -fO "{archive_url}/panels/{file}" && llmarchive panels verify {file}'),
        ("start your server (llama.cpp shown; vLLM, Ollama, LM Studio, TGI work the same)",
         "llama-server -m your-model.gguf --port 8080"),
        ("run the panel: one fresh call per prompt, the panel's max_tokens and nothing else; run again to resume",
         f"llmarchive comparison run --panel {file} --base-url http://127.0.0.1:8080 --model your-exact-model-id "
         f"--out submission.jsonl --submitted-by \"Your Name or Lab\""),
        ("submit: the archive recomputes it with its own estimator and files it beside the what-nobody-may-conclude "
         "sentence", "llmarchive comparison submit submission.jsonl"),
    ]
