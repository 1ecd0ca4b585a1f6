"""End to end: the real runner calls a provider over HTTP (the fake one on 127.0.0.1), then publication.

Real built and admitted protocols, real run folders written by
``llmarchive.run.runner.run_protocol``, real measurements: what the runner
writes is exactly what publication reads.
"""
import json
import sqlite3

import pytest

from llmarchive import budget as budget_mod
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.http import RetryPolicy
from publish import publish_all
from tests import publish_helpers as ph
from tests.fake_provider import FakeProvider, decide_by_hash

KEY = "fake-credential-publication-e2e"
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)


@pytest.fixture
def archive(archive, monkeypatch):
    """The shared fresh publication archive, plus this module's (fake) key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return archive


def test_runner_output_is_published_open_trials_copied_guard_trials_kept_private(archive):
    with FakeProvider(decide_by_hash(), require_key=KEY) as fake:
        base_url = fake.base_url
        results = {}
        for pid in ("risky_choice_framing__wording__v0", "risky_choice_framing__anchoring__v0"):
            protocol = ph.protocol(archive, pid)
            subject = AnthropicSubject("claude-sonnet-5", protocol["generation"]["max_tokens"],
                                       base_url=fake.base_url, retry=FAST)
            results[pid] = run_protocol(archive, protocol, subject,
                                        RunSettings(run_id=f"e2e-{pid.split('__')[1]}", run_date="2026-11-02",
                                                    concurrency=4),
                                        authorization=budget_mod.unbudgeted("manual"))
    assert all(r.complete for r in results.values())
    publish_all(archive, build_time="2026-11-03T00:00:00Z")
    public = archive.public

    stability = (public / "stability.csv").read_text()
    assert "e2e-wording" in stability and "e2e-anchoring" in stability
    open_run = results["risky_choice_framing__wording__v0"]
    logged = (open_run.run_dir / "trials.jsonl").read_bytes()
    lane = (public / "open-lane" / "2026.jsonl").read_bytes()
    trial_lines = b"".join(line + b"\n" for line in logged.split(b"\n")[:-1] if b'"record_type":"trial"' in line)
    assert lane == trial_lines and lane.count(b"\n") == 120
    assert b"e2e-anchoring" not in lane

    db = sqlite3.connect(public / "archive.db")
    runs = {r[0]: r for r in db.execute("select run_id, lane, explicitly_set, n_trials from runs")}
    assert runs["e2e-wording"][1] == "open" and runs["e2e-anchoring"][1] == "guard"
    assert json.loads(runs["e2e-wording"][2]) == open_run.run["explicitly_set"]
    assert runs["e2e-anchoring"][3] == 120
    assert db.execute("select count(*) from open_lane_trials where run_id = 'e2e-anchoring'").fetchone()[0] == 0
    measured = db.execute("select stability_pct, on_curve from measurements where run_id = 'e2e-wording'").fetchone()
    assert measured[0] == open_run.measurement["stability_pct"]

    for path in public.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data, path
            assert b"cost_eur" not in data and base_url.encode() not in data, path
