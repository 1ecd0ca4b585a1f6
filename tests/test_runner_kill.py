"""A run SIGKILLed mid-way and resumed ends exactly where an uninterrupted run does.

The run goes through the real CLI in a subprocess (``llmarchive run`` on a
real built protocol, the Anthropic subject, a budget and its ledger)
against the fake provider served from this process; the parent kills it
once a third of the trials are recorded.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmarchive.archive import ArchivePaths, read_json, read_jsonl, utc_today
from llmarchive import budget as budget_mod
from llmarchive.protocols import registry
from measure import chain
from tests.fake_provider import FakeProvider, decide_by_hash

ROOT = Path(__file__).resolve().parent.parent
KEY = "fake-credential-kill-test"
PROTOCOL = "risky_choice_framing__wording__v0"


def cli(home: Path, base_url: str, run_id: str) -> list[str]:
    return [sys.executable, "-m", "llmarchive", "--home", str(home), "run", PROTOCOL, "--subject", "anthropic",
            "--model", "claude-test-1", "--base-url", base_url, "--run-id", run_id, "--run-date", utc_today(),
            "--concurrency", "4", "--quiet"]


def identities(trials: list[dict]) -> list[tuple]:
    return sorted((t["item_id"], t["version"], t["replicate_index"]) for t in trials)


def test_a_killed_run_resumes_to_the_same_trials_as_an_uninterrupted_one(tmp_path):
    home = tmp_path / "archive"
    paths = ArchivePaths.from_env(home).ensure()
    registry.build_all(paths)      # a run reads its protocol; it never builds one
    budget_mod.write_budget(paths, budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}))
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "LLMARCHIVE_HOME": str(home)}
    log = paths.run_dir("killed") / "trials.jsonl"
    with FakeProvider(decide_by_hash(), require_key=KEY, latency_s=0.03) as fake:
        child = subprocess.Popen(cli(home, fake.base_url, "killed"), cwd=ROOT, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if log.exists() and log.read_bytes().count(b"\n") >= 40:
                break
            if child.poll() is not None:
                pytest.fail(f"the run ended before it could be killed: {child.stderr.read().decode()}")
            time.sleep(0.002)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stderr.close()
        assert child.returncode == -signal.SIGKILL
        sent_before_kill = len(fake.chat_requests)
        recorded_at_kill = len(read_jsonl(log))           # a torn last line does not count
        assert 40 <= recorded_at_kill < 120
        assert sent_before_kill <= recorded_at_kill + 4 + 1, "at most the calls in flight are lost"

        resumed = subprocess.run(cli(home, fake.base_url, "killed"), cwd=ROOT, env=env, capture_output=True,
                                 text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        sent_on_resume = len(fake.chat_requests) - sent_before_kill
        assert sent_on_resume == 120 - recorded_at_kill, "no recorded trial is ever sent again"

        straight = subprocess.run(cli(home, fake.base_url, "straight"), cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=300)
        assert straight.returncode == 0, straight.stderr

    killed = read_jsonl(log)
    uninterrupted = read_jsonl(paths.run_dir("straight") / "trials.jsonl")
    assert chain.verify(killed) == 120 and chain.verify(uninterrupted) == 120
    assert identities(killed) == identities(uninterrupted)
    assert len(set(identities(killed))) == 120, "no duplicates"
    # the same prompts got the same (deterministic) answers, so the measurements agree too
    assert sorted((t["item_id"], t["version"], t["replicate_index"], t["token"]) for t in killed) == \
        sorted((t["item_id"], t["version"], t["replicate_index"], t["token"]) for t in uninterrupted)

    entries = budget_mod.ledger_entries(paths)
    assert chain.verify(entries) == len(entries)
    ledger = budget_mod.ledger(paths)
    for run_id in ("killed", "straight"):
        keys = [e["call_key"] for e in ledger if e["run_id"] == run_id and e["trial"]]
        assert len(keys) == 120 and len(set(keys)) == 120, f"{run_id}: every recorded call is billed once"

    run = (paths.run_dir("killed") / "run.json").read_text()
    assert '"status": "complete"' in run and KEY not in run
    sessions = read_json(paths.run_dir("killed") / "run.json")["sessions"]
    assert sessions[0]["ended_at"] is None and sessions[1]["outcome"] == "complete"
    assert sessions[1]["recorded_before"] == recorded_at_kill
