"""The outsider's route proven against a server nobody here wrote: llama.cpp's own OpenAI-compatible server.

``python -m llama_cpp.server`` with the embedded SmolLM2 model (the
``llama_server`` fixture in tests/conftest.py) answers chat completions as a
real server speaks the protocol — its own defaults, its own headers, its own
model id — not as our fake provider does.  The end-to-end test is the
newcomer's two commands: ``comparison run`` in an empty home from nothing
but a copy of the published ``public/`` folder, then ``comparison submit``
into the archive, whose recomputed measurement must be the one ``llmarchive
verify`` gets from the submitted trials.  The harness route is the same
proof with three commands: Inspect AI's own ``inspect eval`` of the published
task file (``panels/<protocol_id>.py``) against the same server
(``--model openai-api/llamacpp/<model>`` with ``LLAMACPP_BASE_URL``), then
``comparison import`` of its log and ``comparison submit``.  Slow (one open
v0 protocol, 120 real generations per route, a few minutes each on two
cores; both share the module's one server) and part of ``make test``.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.protocols import registry
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from tests.inspect_helpers import inspect_eval
from tests.publish_helpers import template_archive

pytestmark = pytest.mark.slow

OPEN = "risky_choice_framing__wording__v0"
DAY = "2026-12-01"


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    """The installed command, as a user types it, with ``home`` as ``$LLMARCHIVE_HOME``."""
    env = {**os.environ, "LLMARCHIVE_HOME": str(home), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    env.pop("OPENAI_API_KEY", None)           # a local server wants no key
    done = subprocess.run([str(Path(sys.executable).with_name("llmarchive")), *args], env=env,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"llmarchive {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def published_and_downloaded(tmp_path: Path) -> tuple:
    """The fixture archive published with the CLI, and the open panel of a copy of its ``public/`` folder as an
    outsider downloads it: (the archive, the downloaded panel file, its contents)."""
    archive = template_archive(tmp_path / "archive")
    cli(archive.home, "publish", "--build-time", f"{DAY}T00:00:00Z")
    download = tmp_path / "download" / "public"
    shutil.copytree(archive.public, download)
    panel = download / "panels" / f"{OPEN}.json"
    assert panel.is_file(), f"the publication has no {panel.relative_to(download)}"
    return archive, panel, json.loads(panel.read_text(encoding="utf-8"))


def test_llama_cpp_server_answers_a_chat_completion_through_the_openai_subject(llama_server):
    base_url, model_id = llama_server
    subject = OpenAICompatSubject(model_id, 16, base_url=base_url)
    result = subject.call("Answer in one word: what colour is the sky on a clear day?", "smoke")
    assert result.failure is None, result.detail
    assert result.returned_model_id == model_id
    assert isinstance(result.text, str) and result.text.strip()
    assert result.output_tokens is not None and 0 < result.output_tokens <= 16
    assert subject.explicitly_set == {"model": model_id, "max_tokens": 16}


def test_an_outsider_runs_a_published_open_panel_on_llama_cpp_server_and_the_archive_recomputes_it(
        llama_server, tmp_path):
    base_url, model_id = llama_server
    archive, panel, doc = published_and_downloaded(tmp_path)

    outsider = tmp_path / "outsider"          # an empty home: nothing but the downloaded panel file
    outsider.mkdir()
    submission = tmp_path / "submission.jsonl"
    cli(outsider, "comparison", "run", "--panel", str(panel), "--base-url", base_url, "--model", model_id,
        "--api", "openai", "--out", str(submission), "--run-date", DAY, "--submitted-by", "an outside lab",
        "--quiet")
    lines = [json.loads(line) for line in submission.read_text(encoding="utf-8").splitlines()]
    header, trials = lines[0], lines[1:]
    calls = 4 * doc["n"]
    assert header["record_type"] == "comparison_submission" and header["model_id"] == model_id
    assert header["run_date"] == DAY
    assert len(trials) == calls == doc["how_to_send"]["calls"]
    assert {t["returned_model_id"] for t in trials} == {model_id}
    assert {t["prompt_sha256"] for t in trials} == {h for by in doc["prompt_sha256"].values() for h in by.values()}
    # the client set the panel's max_tokens and nothing else; the server's own sampling defaults did the rest
    assert header["explicitly_set"] == {"model": model_id, "max_tokens": doc["generation"]["max_tokens"]}
    assert not (outsider / "public").exists() or not any((outsider / "public").iterdir())

    cli(archive.home, "comparison", "submit", str(submission), "--date", DAY)
    points = records.read(ArchivePaths(archive.home), "comparison_point")
    assert len(points) == 1
    measurement = points[0]["measurement"]
    assert measurement["panel_sha256"] == doc["panel_sha256"] and measurement["n"] == doc["n"]
    assert measurement["on_curve"] is False

    # `llmarchive verify` recomputes it from the submitted trials alone and finds no field that differs
    assert recomputed_by_verify(archive.home, tmp_path, trials, measurement) == []
    print(f"\nllama.cpp server: {len(trials)} calls; measurement "
          + json.dumps({k: measurement.get(k) for k in ("n", "n_valid", "flags", "decision_change_pct",
                                                         "stability_pct", "ci_low_pct", "ci_high_pct")}))


def recomputed_by_verify(home: Path, folder: Path, trials: list, measurement: dict) -> list:
    """What `llmarchive verify` finds different between ``measurement`` and a recomputation from ``trials``."""
    (folder / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trials), encoding="utf-8")
    (folder / "measurement.json").write_text(json.dumps(measurement), encoding="utf-8")
    protocol_header = registry.header(registry.load_protocol(ArchivePaths(home), OPEN))
    (folder / "protocol.json").write_text(json.dumps(protocol_header), encoding="utf-8")
    verified = cli(home, "verify", "--trials", str(folder / "trials.jsonl"), "--measurement",
                   str(folder / "measurement.json"), "--protocol", str(folder / "protocol.json"), "--json")
    return json.loads(verified.stdout)


def test_an_outsider_runs_the_published_inspect_task_on_llama_cpp_server_imports_its_log_and_the_archive_recomputes_it(
        llama_server, tmp_path):
    from inspect_ai.log import read_eval_log

    base_url, model_id = llama_server
    archive, panel, doc = published_and_downloaded(tmp_path)
    folder = panel.parent
    assert (folder / f"{OPEN}.py").is_file(), "the publication has no Inspect task beside the panel"

    # 1. Inspect's own command, the task file as downloaded, llama.cpp's server as an openai-api service
    done, seconds = inspect_eval(folder, OPEN, [model_id], tmp_path / "logs", base_url, service="llamacpp",
                                 timeout=1500)
    assert done.returncode == 0, done.stdout + done.stderr
    [log_file] = list((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(log_file), header_only=True)
    assert log.status == "success" and log.eval.config.epochs == doc["n_per_scenario"]

    # 2. import (an empty home: nothing but the downloaded files and the log), 3. submit into the archive
    submission = tmp_path / "submission.jsonl"
    cli(tmp_path / "outsider", "comparison", "import", str(log_file), "--panel", str(panel), "--out",
        str(submission), "--submitted-by", "an outside lab")
    lines = [json.loads(line) for line in submission.read_text(encoding="utf-8").splitlines()]
    header, trials = lines[0], lines[1:]
    assert header["model_id"] == model_id and {t["returned_model_id"] for t in trials} == {model_id}
    assert header["explicitly_set"] == {"model": model_id, "max_tokens": doc["generation"]["max_tokens"]}
    assert len(trials) == 4 * doc["n"] == doc["how_to_send"]["calls"]
    assert {t["prompt_sha256"] for t in trials} == {h for by in doc["prompt_sha256"].values() for h in by.values()}
    cli(archive.home, "comparison", "submit", str(submission), "--date", DAY)
    [point] = records.read(ArchivePaths(archive.home), "comparison_point")
    measurement = point["measurement"]
    assert measurement["run_id"] == trials[0]["run_id"] and measurement["on_curve"] is False
    assert measurement["panel_sha256"] == doc["panel_sha256"] and measurement["n"] == doc["n"]

    # `llmarchive verify` recomputes the accepted point from the imported trials and finds no field that differs
    assert recomputed_by_verify(archive.home, tmp_path, trials, measurement) == []
    readable = sum(t["outcome"] == "valid" for t in trials)
    print(f"\nInspect on llama.cpp's server: {len(trials) // doc['n_per_scenario']} samples x "
          f"{doc['n_per_scenario']} epochs = {len(trials)} calls, {seconds:.0f} s wall (inspect eval); model id as "
          f"logged: {log.eval.model} -> output.model {header['model_id']}; {readable} of {len(trials)} answers "
          f"readable; measurement " + json.dumps({k: measurement.get(k) for k in (
              "n_valid", "flags", "stability_pct", "ci_low_pct", "ci_high_pct")}))
