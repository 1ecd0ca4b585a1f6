"""The outsider's route proven against a server nobody here wrote: llama.cpp's own OpenAI-compatible server.

``python -m llama_cpp.server`` with the embedded SmolLM2 model (the
``llama_server`` fixture in tests/conftest.py) answers chat completions as a
real server speaks the protocol — its own defaults, its own headers, its own
model id — not as our fake provider does.  The end-to-end test is the
newcomer's two commands: ``comparison run`` in an empty home from nothing
but a copy of the published ``public/`` folder, then ``comparison submit``
into the archive, whose recomputed measurement must be the one ``llmarchive
verify`` gets from the submitted trials.  Slow (one open v0 protocol, 120
real generations, a few minutes on two cores) and part of ``make test``.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmarchive.archive import record_logs as records
from llmarchive.protocols import registry
from llmarchive.archive.paths import ArchivePaths
from llmarchive.subjects.openai_compat import OpenAICompatSubject
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
    archive = template_archive(tmp_path / "archive")
    cli(archive.home, "publish", "--build-time", f"{DAY}T00:00:00Z")
    download = tmp_path / "download" / "public"
    shutil.copytree(archive.public, download)
    panel = download / "panels" / f"{OPEN}.json"
    assert panel.is_file(), f"the publication has no {panel.relative_to(download)}"
    doc = json.loads(panel.read_text(encoding="utf-8"))

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
    (tmp_path / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trials), encoding="utf-8")
    (tmp_path / "measurement.json").write_text(json.dumps(measurement), encoding="utf-8")
    protocol_header = registry.header(registry.load_protocol(ArchivePaths(archive.home), OPEN))
    (tmp_path / "protocol.json").write_text(json.dumps(protocol_header), encoding="utf-8")
    verified = cli(archive.home, "verify", "--trials", str(tmp_path / "trials.jsonl"),
                   "--measurement", str(tmp_path / "measurement.json"),
                   "--protocol", str(tmp_path / "protocol.json"), "--json")
    assert json.loads(verified.stdout) == []
    print(f"\nllama.cpp server: {len(trials)} calls; measurement "
          + json.dumps({k: measurement.get(k) for k in ("n", "n_valid", "flags", "decision_change_pct",
                                                         "stability_pct", "ci_low_pct", "ci_high_pct")}))
