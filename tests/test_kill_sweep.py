"""A sweep SIGKILLed at 20 seeded random points and resumed each time ends where an uninterrupted one does.

The sweep is the real CLI (``llmarchive sweep``) in a subprocess, against
the fake provider served from this process, which also decides when to
kill: at a seeded random chat request the child is killed either while the
call is open (before the answer is sent) or a random 0–4 ms after the
answer left — between a response and its trial write, during the trial
write, during the ledger's charge or reservation writes.  After each kill
the sweep is started again.  Afterwards: the trial set is exactly the
slot set of an uninterrupted sweep (a later month in the same archive),
none twice, none lost, every chain verifies, and what the ledger holds —
charged plus the open worst case — is at least what the fake provider
counted as billed.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from llmarchive import budget as budget_mod
from llmarchive.protocols import registry
from llmarchive.archive import ArchivePaths, read_jsonl, sweep_run_id, utc_today
from llmarchive.run import schedule
from measure import chain
from measure.rng import Stream
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.instrument_helpers import paid_archive, preregister

ROOT = Path(__file__).resolve().parent.parent
KEY = "fake-credential-kill-sweep"
PROTOCOL = "risky_choice_framing__wording__v0"
MODEL = "claude-sonnet-5"
PRICES = {"input": 3.0, "output": 15.0}
BUDGET = budget_mod.Budget(100.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}, prices_eur_per_mtok=PRICES)
KILLS = 20
SEED = 20261130


class Killer:
    """Counts chat requests and SIGKILLs the current child at the planned one, in the planned way."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.child = None
        self.lock = threading.Lock()
        self.target = None
        self.mode = None
        self.seen = 0
        self.killed = threading.Event()
        self.modes: list[str] = []

    def arm(self, child: subprocess.Popen) -> None:
        with self.lock:
            self.child = child
            self.target = self.seen + 1 + self.stream.below(10)
            self.mode = "during the call" if self.stream.below(3) == 0 else "after the answer"
            self.delay_s = self.stream.uniform() * 0.004
            self.killed.clear()

    def _kill(self) -> None:
        child = self.child
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGKILL)
        self.killed.set()

    def __call__(self, request):
        answer = decide_by_hash()(request)
        with self.lock:
            self.seen += 1
            due = self.target is not None and self.seen == self.target
            if due:
                self.target = None
                self.modes.append(self.mode)
        if due and self.mode == "during the call":
            self._kill()                           # the answer below goes to a dead client, billed all the same
        elif due:
            threading.Timer(self.delay_s, self._kill).start()
        return answer


def sweep_cli(base_url: str, day: str) -> list[str]:
    return [sys.executable, "-m", "llmarchive", "sweep", "--base-url", base_url, "--date", day, "--quiet",
            "--concurrency", "4"]


def billed_eur(billed: dict) -> float:
    return (billed["input_tokens"] * PRICES["input"] + billed["output_tokens"] * PRICES["output"]) / 1e6


def test_a_sweep_killed_at_twenty_random_points_resumes_to_exactly_the_uninterrupted_slot_set(
        archive_home, monkeypatch, capsys):
    paths = paid_archive(monkeypatch, BUDGET, KEY)
    preregister(paths, [PROTOCOL])
    # The uninterrupted sweep runs in a twin of this home, made before anything ran: the same month (a sweep
    # starts only in the month it is dated, and the subprocesses run on the real clock), the same protocol.
    twin = ArchivePaths.from_env(shutil.copytree(paths.home, archive_home.parent / "twin"))
    today = utc_today()
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
    run_dir = paths.run_dir(sweep_run_id(today, PROTOCOL, MODEL))
    log = run_dir / "trials.jsonl"
    killer = Killer(Stream(SEED))
    torn = {"trials": 0, "ledger": 0}
    open_after_kill = []
    with FakeProvider(killer, models=[MODEL], require_key=KEY, latency_s=0.002) as fake:
        kills = 0
        while kills < KILLS:
            child = subprocess.Popen(sweep_cli(fake.base_url, today), cwd=ROOT, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            killer.arm(child)
            child.wait(timeout=120)
            err = child.stderr.read().decode()
            child.stderr.close()
            if child.returncode != -signal.SIGKILL:
                assert child.returncode == 0, err
                break                              # the sweep finished before the planned kill came
            kills += 1
            torn["trials"] += log.exists() and not log.read_bytes().endswith(b"\n")
            torn["ledger"] += paths.spend_ledger.exists() and not paths.spend_ledger.read_bytes().endswith(b"\n")
            open_after_kill.append(len(budget_mod.open_reservations(read_jsonl(paths.spend_ledger))))
        killer.target = None
        final = subprocess.run(sweep_cli(fake.base_url, today), cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=300)
        assert final.returncode == 0, final.stderr
        killed_requests = len(fake.chat_requests)
        billed_killed = dict(fake.billed)
        straight = subprocess.run(sweep_cli(fake.base_url, today), cwd=ROOT,
                                  env={**env, "LLMARCHIVE_HOME": str(twin.home)}, capture_output=True,
                                  text=True, timeout=300)
        assert straight.returncode == 0, straight.stderr
        billed_total = dict(fake.billed)

    protocol = registry.load_protocol(paths, PROTOCOL)
    slots = sorted(p.identity for p in schedule(protocol))
    killed = read_jsonl(log)
    uninterrupted = read_jsonl(twin.run_dir(sweep_run_id(today, PROTOCOL, MODEL)) / "trials.jsonl")
    identity = lambda t: (t["item_id"], t["version"], t["replicate_index"])    # noqa: E731
    assert kills == KILLS, f"only {kills} kills landed before the sweep completed"
    assert chain.verify(killed) == len(slots) and chain.verify(uninterrupted) == len(slots)
    assert sorted(map(identity, killed)) == sorted(map(identity, uninterrupted)) == slots
    assert len(set(map(identity, killed))) == len(slots), "0 duplicates"
    assert sorted((identity(t), t["token"]) for t in killed) == sorted((identity(t), t["token"]) for t in uninterrupted)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "complete" and len(run["sessions"]) >= KILLS + 1

    entries = budget_mod.ledger_entries(paths)
    assert chain.verify(entries) == len(entries)
    charges = [e for e in budget_mod.ledger(paths) if e["run_id"] == run["run_id"] and e["trial"]]
    assert sorted(e["call_key"] for e in charges) == sorted(f"{i}/{v}/{r}" for i, v, r in slots), \
        "every recorded trial charged exactly once"
    mine = [e for e in entries if e.get("run_id") == run["run_id"]]
    charged = sum(e["cost_eur"] for e in mine if e["record_type"] == budget_mod.CHARGE)
    worst = sum(e["worst_case_eur"] for e in budget_mod.open_reservations(entries) if e["run_id"] == run["run_id"])
    assert charged + worst >= billed_eur(billed_killed), "the ledger never understates what the provider billed"

    straight_id = sweep_run_id(today, PROTOCOL, MODEL)
    straight_charged = sum(e["cost_eur"] for e in budget_mod.ledger_entries(twin) if e.get("run_id") == straight_id
                           and e["record_type"] == budget_mod.CHARGE)
    with capsys.disabled():
        print(f"\nkill sweep (seed {SEED}): {kills} SIGKILLs ({killer.modes.count('during the call')} during a call, "
              f"{killer.modes.count('after the answer')} 0–4 ms after an answer left; torn trial tail seen "
              f"{torn['trials']}×, torn ledger tail {torn['ledger']}×; open reservations after each kill "
              f"{open_after_kill}); {killed_requests} chat requests for {len(slots)} slots; "
              f"{len(killed)} trials, 0 duplicates, 0 lost; ledger charged €{charged:.6f} + worst case "
              f"€{worst:.6f} = €{charged + worst:.6f} ≥ billed €{billed_eur(billed_killed):.6f}; uninterrupted "
              f"run charged €{straight_charged:.6f} for billed "
              f"€{billed_eur(billed_total) - billed_eur(billed_killed):.6f}")
