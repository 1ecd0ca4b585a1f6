"""The lm-evaluation-harness route: the published task run by the real ``lm_eval``, its log imported and submitted.

The open panel file is written as publication writes it, and beside it the
task :mod:`publish.tasks.lmeval_task` renders.  The real harness (``python -m
lm_eval``, in a subprocess, run inside that folder) sends the task to the
simulated readers' OpenAI-compatible server over HTTP on 127.0.0.1, through
a recording proxy that keeps every request body; its ``--log_samples`` log
is imported (:mod:`llmarchive.comparison.lmeval_log`) and filed with
``llmarchive comparison submit``.  What must hold:

* the known answers come back — the invariant reader at the noise floor,
  the framing-sensitive reader's gap inside its interval, the reader that
  ignores the question flagged ``not_reading`` — the whole chain's positive
  control (prompts as published, HTTP, harness, import, grammar, estimator,
  intake);
* the request the importer rebuilds from the log is the request the harness
  sent, byte for byte in its settings: the published task with
  ``--gen_kwargs temperature=None`` sends ``max_tokens`` and nulls only,
  and the same task run without that flag sends ``temperature: 0`` and is
  refused;
* a tampered log (an edited prompt, a missing repeat, a temperature set) is
  refused with every reason at once, and nothing is written.

No tokenizer, dataset or model is downloaded: the harness's chat client
needs no tokenizer (``tokenizer_backend`` defaults to none for
``local-chat-completions``), the documents are read from the local file and
the Hugging Face libraries are told to stay offline.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.cli import main
from llmarchive.comparison.lmeval_log import (LmEvalLogError, model_args, request_settings, results_file,
                                              submission_from_lm_eval)
from llmarchive.comparison.log_submission import LogImportRefused, write_submission
from llmarchive.comparison import ReaderServer
from llmarchive.protocols import load_panel_file, registry
from measure.schema import VERSIONS
from panels import readers
from publish.errors import PublishError
from publish.tasks.lmeval_task import published_problems, task_files, task_name
from tests.known_answer_helpers import published_panel

pytestmark = pytest.mark.slow    # four real lm_eval runs (a dev dependency: never skipped)

OPEN = "risky_choice_framing__wording__v0"
FRAMING = readers.FRAMING_SENSITIVE
NO_FLAG = "no-temperature-flag"
"""The run made without ``--gen_kwargs temperature=None`` (the harness then sends temperature 0)."""


class RecordingProxy:
    """A pass-through HTTP proxy on 127.0.0.1 that keeps every POST body it forwards (what the harness sent)."""

    def __init__(self, upstream: str) -> None:
        self.bodies: list[dict] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                return None

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.bodies.append(json.loads(raw))
                answer = httpx.post(upstream + self.path, content=raw, headers={"Content-Type": "application/json"})
                self.send_response(answer.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def chat_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1/chat/completions"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(the admitted archive's home, the panels folder: the panel file as published and its lm-eval task beside it)."""
    home, panel = published_panel(tmp_path_factory.mktemp("lmeval-route"), OPEN)
    for name, text in task_files(load_panel_file(panel)).items():
        (panel.parent / name).write_text(text, encoding="utf-8")
    return home, panel


def _lm_eval(folder: Path, url: str, model: str, out: Path, temperature_flag: bool) -> subprocess.Popen:
    """The recipe's command, run inside the panels folder, offline but for 127.0.0.1."""
    env = {**os.environ, "HF_HOME": str(out / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", "TQDM_DISABLE": "1"}
    env.pop("OPENAI_API_KEY", None)
    command = [sys.executable, "-m", "lm_eval", "--model", "local-chat-completions", "--apply_chat_template",
               "--model_args", f"model={model},base_url={url}", "--include_path", ".", "--tasks", task_name(OPEN),
               "--log_samples", "--output_path", str(out / "lm_eval_out")]
    if temperature_flag:
        command += ["--gen_kwargs", "temperature=None"]
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def runs(published, tmp_path_factory):
    """{reader or NO_FLAG: (samples log, request bodies the server got)}: four real ``lm_eval`` runs, at once.

    The three readers share one server (it counts calls per model and
    prompt); the run without the temperature flag has a server of its own,
    so its calls do not move the readers' counts.
    """
    _, panel = published
    out = tmp_path_factory.mktemp("lmeval-runs")
    with ReaderServer([panel]) as shared, ReaderServer([panel]) as apart:
        proxies = {name: RecordingProxy(shared.url) for name in readers.KNOWN_ANSWER_READERS}
        proxies[NO_FLAG] = RecordingProxy(apart.url)
        started = {}
        for name, proxy in proxies.items():
            model = readers.simulated_model_id(FRAMING if name == NO_FLAG else name)
            started[name] = _lm_eval(panel.parent, proxy.chat_url, model, out / name, name != NO_FLAG)
        found = {}
        for name, process in started.items():
            output, _ = process.communicate(timeout=600)
            assert process.returncode == 0, output[-3000:]
            [log] = sorted((out / name / "lm_eval_out").glob(f"*/samples_{task_name(OPEN)}_*.jsonl"))
            found[name] = (log, proxies[name].bodies)
            proxies[name].close()
    return found


def _submit(home: Path, run, out: Path) -> dict:
    write_submission(out, run)
    assert main(["--home", str(home), "comparison", "submit", str(out), "--date", "2026-12-03", "--known-answer"]) == 0
    [point] = [p for p in records.read(ArchivePaths(home), "comparison_point")
               if p["run_id"] == run.trials[0]["run_id"]]
    return point


def test_the_published_task_is_the_panel_exactly_and_its_bytes_depend_on_the_panel_alone(published):
    _, panel = published
    doc = load_panel_file(panel)
    files = task_files(doc)
    assert files == task_files(load_panel_file(panel)), "rendered twice, the same bytes"
    task = yaml.safe_load(files[f"{OPEN}.lm_eval.yaml"])
    assert task["task"] == task_name(OPEN) and task["output_type"] == "generate_until"
    assert task["repeats"] == doc["n_per_scenario"] and task["num_fewshot"] == 0 and task["doc_to_text"] == "text"
    assert task["generation_kwargs"] == {"until": [], "max_gen_toks": doc["generation"]["max_tokens"],
                                         "seed": None, "stop": None}, "nothing cuts an answer, nothing else is set"
    assert "description" not in task and "system_instruction" not in task
    assert {k: task["metadata"][k] for k in ("protocol_id", "panel_sha256", "protocol_sha256")} == \
        {k: doc[k] for k in ("protocol_id", "panel_sha256", "protocol_sha256")}
    assert task["dataset_kwargs"]["data_files"]["test"] == f"{OPEN}.lm_eval.jsonl"
    lines = [json.loads(line) for line in files[f"{OPEN}.lm_eval.jsonl"].splitlines()]
    assert [(d["item_id"], d["version"]) for d in lines] == [(i["item_id"], v) for i in doc["panel"] for v in VERSIONS]
    for d in lines:
        assert d["text"] == next(i for i in doc["panel"] if i["item_id"] == d["item_id"])["versions"][d["version"]]
        assert d["prompt_sha256"] == doc["prompt_sha256"][d["item_id"]][d["version"]]
    edited = json.loads(json.dumps(doc))
    edited["panel"][0]["versions"]["A"] += " "
    with pytest.raises(PublishError, match="does not verify"):
        task_files(edited)


def test_the_published_check_names_an_edited_a_missing_and_a_stray_lm_eval_file(published, tmp_path):
    _, panel = published
    folder = tmp_path / "panels"
    shutil.copytree(panel.parent, folder)
    assert published_problems(folder, {OPEN}) == []
    docs = folder / f"{OPEN}.lm_eval.jsonl"
    docs.write_text(docs.read_text(encoding="utf-8").replace("Option A", "Option  A", 1), encoding="utf-8")
    (folder / f"{OPEN}.lm_eval.yaml").unlink()
    shutil.copy(docs, folder / "risky_choice_framing__anchoring__v0.lm_eval.jsonl")
    found = published_problems(folder, {OPEN})
    assert len(found) == 3, found
    assert any(f"panels/{OPEN}.lm_eval.jsonl: not what its panel file renders" in p for p in found)
    assert any(f"panels/{OPEN}.lm_eval.yaml: missing" in p for p in found)
    assert any("risky_choice_framing__anchoring__v0 is not in the open lane" in p for p in found)


def test_three_readers_run_by_lm_eval_imported_and_submitted_recover_their_known_figures(published, runs, tmp_path):
    home, panel = published
    doc = load_panel_file(panel)
    protocol = registry.load_protocol(ArchivePaths(home), OPEN)
    points = {}
    for name in readers.KNOWN_ANSWER_READERS:
        log, bodies = runs[name]
        assert len(bodies) == 4 * doc["n"], "one call per slot: every repeat is a call of its own"
        run = submission_from_lm_eval(log, doc, submitted_by="lm-eval route test")
        model = readers.simulated_model_id(name)
        assert run.header["model_id"] == model and len(run.trials) == 4 * doc["n"]
        assert run.header["explicitly_set"] == {"model": model, "max_tokens": doc["generation"]["max_tokens"]}
        points[name] = _submit(home, run, tmp_path / f"{name}.jsonl")["measurement"]
    for name, m in points.items():
        known = readers.known_answer(name, protocol)
        assert m["gap_pct"] == pytest.approx(known["figures"]["gap_ab_pct"]), name
        assert m["gap_positive_pct"] == pytest.approx(known["figures"]["gap_ac_pct"]), name
        assert m["null_floor_pct"] is not None and "exploratory" in m["flags"]
    invariant, framing, blind = (points[n] for n in readers.KNOWN_ANSWER_READERS)
    assert invariant["gap_pct"] == 0 and invariant["at_noise_floor"] is True and "not_reading" not in invariant["flags"]
    gap = readers.known_answer(FRAMING, protocol)["figures"]["gap_ab_pct"]
    assert gap > 20 and 100 - framing["ci_high_pct"] <= gap <= 100 - framing["ci_low_pct"]
    assert "not_reading" not in framing["flags"] and framing["null_floor_pct"] < gap
    assert "not_reading" in blind["flags"] and blind["gap_positive_pct"] == 0


def test_the_request_rebuilt_from_the_log_is_the_request_lm_eval_sent(published, runs):
    _, panel = published
    doc = load_panel_file(panel)
    for name, (log, bodies) in runs.items():
        results = json.loads(results_file(log).read_text(encoding="utf-8"))
        args = model_args(results["config"])
        logged = [json.loads(line)["arguments"]["gen_args_0"]["arg_1"] for line in log.read_text(encoding="utf-8").splitlines()]
        rebuilt = {json.dumps(request_settings(gen, args), sort_keys=True) for gen in logged}
        sent = {json.dumps({k: v for k, v in b.items() if k not in ("model", "messages")}, sort_keys=True)
                for b in bodies}
        assert rebuilt == sent and len(sent) == 1, name
        assert all(b["messages"][0]["role"] == "user" and len(b["messages"]) == 1 for b in bodies)
    [published_run] = {json.dumps({k: v for k, v in b.items() if k not in ("model", "messages")})
                       for b in runs[FRAMING][1]}
    assert json.loads(published_run) == {"max_tokens": doc["generation"]["max_tokens"], "temperature": None,
                                         "stop": None, "seed": None}, "the published task sets max_tokens alone"
    with pytest.raises(LogImportRefused, match=r"temperature=0.*--gen_kwargs temperature=None") as refused:
        submission_from_lm_eval(runs[NO_FLAG][0], doc)
    assert len(refused.value.reasons) == 1, refused.value.reasons


def _tampered(log: Path, folder: Path, edit, edit_results=None) -> Path:
    """A copy of the log (and its results file) with ``edit(line_number, sample)`` applied to every line."""
    folder.mkdir(parents=True, exist_ok=True)
    results = json.loads(results_file(log).read_text(encoding="utf-8"))
    if edit_results is not None:
        edit_results(results)
    (folder / results_file(log).name).write_text(json.dumps(results), encoding="utf-8")
    lines = []
    for number, line in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
        sample = json.loads(line)
        edit(number, sample)
        lines.append(json.dumps(sample, ensure_ascii=False))
    copy = folder / log.name
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return copy


def _edit_prompt(number: int, sample: dict) -> None:
    if number == 1:
        messages = json.loads(sample["arguments"]["gen_args_0"]["arg_0"][0])
        messages[0]["content"] = messages[0]["content"].replace("Option A", "Option  A", 1)
        sample["arguments"]["gen_args_0"]["arg_0"][0] = json.dumps(messages)


def _drop_repeat(number: int, sample: dict) -> None:
    if number == 2:
        sample["resps"][0] = sample["resps"][0][:1]


def _set_temperature(number: int, sample: dict) -> None:
    sample["arguments"]["gen_args_0"]["arg_1"]["temperature"] = 0.7


TAMPERING = {
    "edited prompt": (_edit_prompt, r"line 1 \(s01 A\).*prompt was edited"),
    "missing repeat": (_drop_repeat, r"incomplete: 1 of 120 slots.*s01/A_prime/2"),
    "temperature set": (_set_temperature, r"the requests set temperature=0\.7"),
}


@pytest.mark.parametrize("kind", TAMPERING)
def test_a_tampered_log_is_refused_naming_what_was_tampered_and_nothing_is_written(published, runs, tmp_path, kind):
    _, panel = published
    edit, words = TAMPERING[kind]
    copy = _tampered(runs[FRAMING][0], tmp_path / "log", edit)
    out = tmp_path / "submission.jsonl"
    with pytest.raises(LogImportRefused, match=words) as refused:
        write_submission(out, submission_from_lm_eval(copy, load_panel_file(panel)))
    assert len(refused.value.reasons) == 1, refused.value.reasons
    assert not out.exists()


def test_every_reason_of_a_log_tampered_three_ways_is_listed_at_once(published, runs, tmp_path):
    _, panel = published

    def all_three(number: int, sample: dict) -> None:
        for edit, _ in TAMPERING.values():
            edit(number, sample)

    copy = _tampered(runs[FRAMING][0], tmp_path / "log", all_three)
    with pytest.raises(LogImportRefused) as refused:
        submission_from_lm_eval(copy, load_panel_file(panel))
    message = str(refused.value)
    assert message.splitlines()[0].endswith("import refused, nothing written (3 reasons):")
    for _, words in TAMPERING.values():
        assert any(re.search(words, reason) for reason in refused.value.reasons), (words, message)


def test_a_run_with_a_cache_a_system_instruction_or_of_another_panel_is_refused(published, runs, tmp_path):
    _, panel = published

    def results_edit(results: dict) -> None:
        results["config"]["use_cache"] = "lm_eval_cache"
        results["system_instruction"] = "Be brief."
        [config] = results["configs"].values()
        config["metadata"]["panel_sha256"] = "0" * 64

    copy = _tampered(runs[FRAMING][0], tmp_path / "log", lambda number, sample: None, results_edit)
    with pytest.raises(LogImportRefused) as refused:
        submission_from_lm_eval(copy, load_panel_file(panel))
    found = refused.value.reasons
    assert len(found) == 3, found
    assert any("--use_cache" in r for r in found) and any("system instruction" in r for r in found)
    assert any("the log is of another panel" in r for r in found)


def test_a_samples_log_without_the_results_file_beside_it_is_refused(published, runs, tmp_path):
    _, panel = published
    alone = tmp_path / runs[FRAMING][0].name
    shutil.copy(runs[FRAMING][0], alone)
    with pytest.raises(LogImportRefused, match="no results file beside the samples file"):
        submission_from_lm_eval(alone, load_panel_file(panel))
    renamed = tmp_path / "my-log.jsonl"
    shutil.copy(runs[FRAMING][0], renamed)
    with pytest.raises(LmEvalLogError, match="samples_<task>_<date>.jsonl"):
        submission_from_lm_eval(renamed, load_panel_file(panel))


def _nan_temperature(number: int, sample: dict) -> None:
    sample["arguments"]["gen_args_0"]["arg_1"]["temperature"] = float("nan")    # as `--gen_kwargs temperature=nan`


def _infinite_seed(results: dict) -> None:
    args = results["config"]["model_args"]
    if isinstance(args, str):
        results["config"]["model_args"] = args + ",seed=inf"       # lm-eval reads "inf" as a float
    else:
        args["seed"] = float("inf")


NOT_FINITE = ": a number that is not finite (NaN or infinity), which JSON cannot carry"


def test_a_number_that_is_not_finite_in_the_log_is_refused_in_one_line_naming_its_field_and_nothing_is_written(
        published, runs, tmp_path, capsys):
    """Issue 36, item 3: a NaN temperature crashed the import in the canonical JSON encoder (exit 1, a traceback)."""
    _, panel = published
    copy = _tampered(runs[FRAMING][0], tmp_path / "log", _nan_temperature)
    out = tmp_path / "submission.jsonl"
    assert main(["comparison", "import", str(copy), "--panel", str(panel), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"error: {copy}: import refused, nothing written (1 reason):" and len(err) == 2, err
    assert err[1].startswith(f"{copy}: line 1, line 2, ") and " more: " in err[1], err[1]
    assert err[1].endswith("arguments.gen_args_0.arg_1.temperature" + NOT_FINITE), err[1]
    assert not out.exists()
    seeded = _tampered(runs[FRAMING][0], tmp_path / "seeded", lambda number, sample: None, _infinite_seed)
    with pytest.raises(LogImportRefused) as refused:
        submission_from_lm_eval(seeded, load_panel_file(panel))
    assert refused.value.reasons == [f"{results_file(seeded).name}: config.model_args.seed" + NOT_FINITE]


def test_an_import_never_writes_over_the_results_file_beside_the_log_even_with_force(published, runs, tmp_path, capsys):
    _, panel = published
    copy = _tampered(runs[FRAMING][0], tmp_path / "log", lambda number, sample: None)
    results = results_file(copy)
    before = results.read_bytes()
    assert main(["comparison", "import", str(copy), "--panel", str(panel), "--out", str(results), "--force"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: --out {results} is the results file beside the log ("), line
    assert "not even with --force" in line and results.read_bytes() == before


def test_a_log_of_two_million_empty_records_shows_the_first_reasons_and_counts_the_rest(published, tmp_path,
                                                                                        capsys):
    """Issue 36: 2,000,000 empty lines printed 2,002 reasons (347 KB on stderr); the first few, and a count."""
    _, panel = published
    log = tmp_path / "samples_panel_2026-12-01T00-00-00.jsonl"
    log.write_bytes(b"{}\n" * 2_000_000)
    out = tmp_path / "submission.jsonl"
    assert main(["comparison", "import", str(log), "--panel", str(panel), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    total = int(re.fullmatch(rf"error: {re.escape(str(log))}: import refused, nothing written \(([\d,]+) reasons\):",
                             err[0]).group(1).replace(",", ""))
    assert total > 2000 and len(err) == 1 + 20 + 1, len(err)
    assert err[-1] == f"{log}: and {total - 20:,} more reason(s), not shown"
    assert err[1].startswith(f"{log}: samples file: the samples file holds more than 2,000 lines"), err[1]
    assert not out.exists()
