"""Overlapping paid runs cannot race the budget: whole run or nothing, however the runs are launched (method §9.4).

A month's paid partitions are separate processes (Dagster runs each in its
own); when they overlap — the run queue releasing the next while the first
is calling, a launch by hand beside the schedule's, a re-execution — each
must be judged as if the runs still calling had already spent what they
need.  The partitions here are real processes running the same function
the ``commercial_trials`` partition runs (the sweep limited to one
protocol), against the fake provider over HTTP with a latency that keeps
them calling side by side, on a pool that pays for three and a half runs.
The outcome must be the CLI's sequential sweep on a copy of the same home:
three runs complete, the fourth refused before any call, no run part-paid.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths, load_run, read_jsonl, sweep_run_id, utc_today
from llmarchive.budget import earmarks
from llmarchive.cli import main
from llmarchive.protocols import registry
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.instrument_helpers import paid_archive, preregister

ROOT = Path(__file__).resolve().parent.parent
MODEL = "claude-sonnet-5"
RUN_EUR = 120 * 0.01
# general pool = ceiling - bridge reserve - heartbeat reserve = 3.5 runs of 120 calls at 0.01 €
BUDGET = budget_mod.Budget(3.5 * RUN_EUR + 6.5 + 1.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001})
PROTOCOLS = ["risky_choice_framing__wording__v0", "risky_choice_framing__anchoring__v0",
             "risky_choice_framing__order__v0", "risky_choice_framing__default__v0"]
FIRST = "risky_choice_framing__anchoring__v0"   # with no rung in force the ladder ranks by id: it runs first

PARTITION = """
import json, sys
from llmarchive.archive.paths import ArchivePaths
from llmarchive.archive.dates import utc_today
from llmarchive.budget import RunBusy
from llmarchive.schedule.sweep import sweep
from llmarchive.subjects import make_subject
from llmarchive.succession.subject_models import load_subject_models
home, url, pid = sys.argv[1:4]
factory = lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model, base_url=url)
try:
    out = sweep(ArchivePaths.from_env(home), utc_today(), load_subject_models(), subject_factory=factory,
                concurrency=4, only=[pid])
except RunBusy as exc:
    print(json.dumps({"busy": str(exc)}))
else:
    print(json.dumps({"ran": out.ran, "skipped": [c for _, c, _ in out.skipped], "why": [r for _, _, r in out.skipped], "halted": out.halted}))
"""


def launch(paths: ArchivePaths, fake: FakeProvider, pid: str) -> subprocess.Popen:
    """One month × protocol partition in a process of its own, as Dagster's executor runs it."""
    return subprocess.Popen([sys.executable, "-c", PARTITION, str(paths.home), fake.base_url, pid], cwd=ROOT,
                            env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(child: subprocess.Popen) -> dict:
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def wait_for_calls(fake: FakeProvider, at_least: int, child: subprocess.Popen, timeout_s: float = 60.0) -> None:
    """Until ``at_least`` calls arrived (the child is calling) or the child ended (it was refused)."""
    deadline = time.monotonic() + timeout_s
    while len(fake.chat_requests) < at_least and child.poll() is None:
        assert time.monotonic() < deadline, f"only {len(fake.chat_requests)} calls arrived"
        time.sleep(0.05)


def wait_for_billed(fake: FakeProvider, calls: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while fake.billed["calls"] < calls:
        assert time.monotonic() < deadline, f"only {fake.billed['calls']} calls billed"
        time.sleep(0.05)


def month_outcome(paths: ArchivePaths) -> dict:
    """Per protocol: trials recorded in its sweep run this month (absent: no run), and the month's spend."""
    trials = {}
    for pid in PROTOCOLS:
        folder = paths.run_dir(sweep_run_id(utc_today(), pid, MODEL))
        if folder.exists():
            trials[pid] = len(load_run(folder).trials)
    charges = [e for e in read_jsonl(paths.spend_ledger) if e.get("record_type", "spend") == "spend"]
    return {"trials": trials, "charged_eur": round(sum(e["cost_eur"] for e in charges), 6),
            "charged_calls": sum(1 for e in charges if e.get("answered"))}


@pytest.fixture
def home(archive_home, monkeypatch):
    paths = paid_archive(monkeypatch, BUDGET)
    preregister(paths, PROTOCOLS)
    return paths


def test_partitions_started_while_earlier_ones_still_call_reach_the_sequential_sweeps_outcome(home, tmp_path,
                                                                                                   monkeypatch):
    sequential = ArchivePaths(tmp_path / "sequential")
    shutil.copytree(home.home, sequential.home)
    with FakeProvider(decide_by_hash(), models=[MODEL]) as fake:
        monkeypatch.setenv("LLMARCHIVE_HOME", str(sequential.home))
        main(["sweep", "--base-url", fake.base_url, "--quiet"])
        monkeypatch.setenv("LLMARCHIVE_HOME", str(home.home))
        expected = month_outcome(sequential)
        expected_billed = fake.billed["calls"]
    assert sorted(expected["trials"].values()) == [120, 120, 120], expected   # three whole runs, one refused

    with FakeProvider(decide_by_hash(), models=[MODEL], latency_s=0.4) as fake:
        children = []
        for pid in PROTOCOLS[1:]:           # each launched while the ones before it are still calling
            children.append(launch(home, fake, pid))
            wait_for_calls(fake, len(fake.chat_requests) + 8, children[-1])
        # The last one is launched by hand once the month has passed the ladder's 60 % rung, whose ranking puts
        # the open protocol first: judged on charges alone it would be allowed and left part-paid.
        wait_for_billed(fake, int(0.62 * 3.5 * 120))
        children.append(launch(home, fake, PROTOCOLS[0]))
        results = [finish(child) for child in children]
        billed = fake.billed["calls"]
        assert fake.max_in_flight > 4       # two partitions really called side by side
    got = month_outcome(home)
    assert got["trials"] == expected["trials"], (got, results)
    assert got["charged_eur"] == expected["charged_eur"] <= 3.5 * RUN_EUR
    assert billed == expected_billed == got["charged_calls"] == 360
    assert results[-1]["ran"] == [] and results[-1]["skipped"] == ["budget_refused"], results
    assert earmarks.live(home) == []        # every earmark released with its run


def test_a_partition_launched_twice_at_once_is_refused_as_busy_and_nothing_is_spent_twice(home):
    pid = FIRST
    with FakeProvider(decide_by_hash(), models=[MODEL], latency_s=0.2) as fake:
        first = launch(home, fake, pid)
        wait_for_calls(fake, 8, first)
        second = finish(launch(home, fake, pid))
        assert "being worked on by another process" in second["busy"]
        assert finish(first)["ran"] == [pid]
        billed = fake.billed["calls"]
    assert billed == 120 == month_outcome(home)["charged_calls"]


def test_an_earmark_whose_holder_died_is_discarded_and_frees_its_money(home):
    pid = PROTOCOLS[0]
    header = registry.load_protocol(home, pid)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "from llmarchive.archive.paths import ArchivePaths\n"
        "from llmarchive.budget import earmarks\n"
        "kept = earmarks.take(ArchivePaths.from_env(sys.argv[1]), earmarks.EarmarkRecord("
        "'r1', sys.argv[2], 'full_sweep', 'general', sys.argv[3], 120, 4.0, 0.0, 'now'))\n"
        "print('held', flush=True); time.sleep(60)\n"), str(home.home), pid, utc_today()[:7]],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        state = budget_mod.ladder_state(home, BUDGET, date=utc_today())
        assert state.general_left_eur == pytest.approx(3.5 * RUN_EUR - 4.0)
        with pytest.raises(budget_mod.BudgetHalted):
            budget_mod.earmark_run(home, BUDGET, header, "full_sweep", 120, date=utc_today(), run_id="r2")
    finally:
        holder.kill()
        holder.wait()
    state = budget_mod.ladder_state(home, BUDGET, date=utc_today())
    assert state.general_left_eur == pytest.approx(3.5 * RUN_EUR)
    assert earmarks.live(home) == [] and not list(earmarks.earmarks_dir(home).glob("*.json"))


def test_a_dagster_partition_launched_while_its_run_is_being_worked_on_is_a_run_busy_refusal(home):
    """Through the real asset graph: the refusal is a ``Failure`` with refusal metadata, never a traceback."""
    from dagster import DagsterInstance, MultiPartitionKey

    from tests.dagster_helpers import refusals, resources, run, this_month_key

    pid = FIRST
    with FakeProvider(decide_by_hash(), models=[MODEL], latency_s=0.2) as fake:
        first = launch(home, fake, pid)
        wait_for_calls(fake, 8, first)
        result = run(["commercial_trials"], resources(home, fake.base_url), DagsterInstance.ephemeral(),
                     partition_key=MultiPartitionKey({"month": this_month_key(), "protocol": pid}),
                     raise_on_error=False)
        assert finish(first)["ran"] == [pid]
        billed = fake.billed["calls"]
    (description, metadata), = refusals(result)
    assert metadata["refusal"] == "run_busy" and metadata["spent_eur"] == 0.0
    assert "being worked on by another process" in description and "\n" not in description
    assert billed == 120
