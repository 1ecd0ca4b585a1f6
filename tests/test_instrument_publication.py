"""The records the daily cycle writes are what publication reads: one archive, end to end.

A sweep of the pre-registered open protocol (fake provider), the instrument
checks, the model watch raising a bridge, a comparison point and the
coverage rows — all written by this issue's modules — then ``publish_all``:
the coverage table, the instrument table, the succession table and the
comparison table carry them, and the sealed-text check finds no guard wording.

The day is 2 November 2026 (a watch on 1 December raises next month's
bridge), so the clock is set to 1 November 2026: the archive is admitted in
the month it is swept, whatever day the suite runs on.
"""
import csv
import io
import json
import sqlite3

import pytest

from llmarchive import budget as budget_mod
from llmarchive.protocols import registry
from llmarchive.comparison import submit
from llmarchive.schedule.coverage import record_coverage
from llmarchive.instrument import SUBJECT_MAX_TOKENS, guard_rotation, runtime_fingerprint, subject_fingerprint
from llmarchive.succession import load_subject_models
from llmarchive.subjects import list_models, make_subject
from llmarchive.archive import sweep_run_id
from llmarchive.schedule import sweep_month
from llmarchive.schedule.watch import watch
from publish import publish_all
from tests.fake_provider import FakeProvider, Reply, decide_by_hash
from tests.instrument_helpers import ScriptedSubject, admitted_archive, preregister
from tests.test_instrument import PromptEngine
from tests.test_instrument_subject import TRUTH

CONFIG = load_subject_models()
OPEN = "risky_choice_framing__wording__v0"


@pytest.mark.time_machine("2026-11-01T06:00:00Z")
def test_a_day_of_the_cycle_is_published_from_its_records(archive_home, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-cycle")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    paths = admitted_archive(monkeypatch)
    budget_mod.write_budget(paths, budget_mod.Budget(100.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}))
    preregister(paths, [OPEN])

    def respond(request):
        for question, truth in TRUTH.items():
            if request.prompt.startswith(question):
                return Reply.text(f"DECISION: {truth}")
        return decide_by_hash()(request)

    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine())
    with FakeProvider(respond, models=["claude-sonnet-5"]) as fake:
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        factory = lambda model, mt: make_subject("anthropic", max_tokens=mt, model=model,  # noqa: E731
                                                 base_url=fake.base_url)
        swept = sweep_month(paths, "2026-11-02", CONFIG, subject_factory=factory, concurrency=8,
                            provider_check=lambda: list_models("anthropic", fake.base_url))
        assert swept.ran == [OPEN]
        subject_fingerprint(paths, "2026-11-02", factory("claude-sonnet-5", SUBJECT_MAX_TOKENS))
        fake.set_models(["claude-sonnet-5", "claude-sonnet-5-5"])
        watch(paths, "2026-12-01", CONFIG, base_url=fake.base_url)     # next month's sweep gives way to it
    pid = registry.guard_protocol_ids(paths)[0]
    max_tokens = registry.load_protocol(paths, pid)["generation"]["max_tokens"]
    guard_rotation(paths, "2026-11-02", ScriptedSubject(lambda p: "DECISION: A", max_tokens), protocol_id=pid)
    run_dir = paths.run_dir(sweep_run_id("2026-11-02", OPEN, "claude-sonnet-5"))
    # An outside lab's run of the open panel on the same model: its own answers under its own run id (the
    # sweep's own trial log is the archive's run, which the intake refuses as a comparison point).
    outside = tmp_path / "outside-lab.jsonl"
    with open(run_dir / "trials.jsonl", encoding="utf-8") as log, open(outside, "w", encoding="utf-8") as out:
        for line in log:
            t = {k: v for k, v in json.loads(line).items() if k not in ("prev_sha256", "record_sha256")}
            t.update(run_id="outside-lab-run-1", response_text=f"The lab's run reads it.\nDECISION: {t['token']}")
            out.write(json.dumps(t) + "\n")
    submit(paths, outside, submitted_by="a test lab", today="2026-11-03")
    record_coverage(paths, "2026-11-02", jobs=("full_sweep", "runtime_fingerprint", "subject_fingerprint"))

    publish_all(paths, build_time="2026-11-03T00:00:00Z")
    public = paths.public
    coverage = list(csv.DictReader(io.StringIO((public / "coverage.csv").read_text())))
    by_key = {(r["job"], r["period"], r["protocol_id"]): r for r in coverage}
    assert by_key[("full_sweep", "2026-11", OPEN)]["status"] == "ran"
    guard_rows = [r for r in coverage if r["job"] == "full_sweep" and r["protocol_id"] != OPEN]
    assert len(guard_rows) == 11 and {r["cause"] for r in guard_rows} == {"protocol_confounded"}
    assert by_key[("runtime_fingerprint", "2026-11-01", "")]["status"] == "ran"

    db = sqlite3.connect(public / "archive.db")
    kinds = {row[0] for row in db.execute("select kind from instrument")}
    assert kinds == {"runtime_fingerprint", "guard_rotation", "subject_fingerprint"}
    assert db.execute("select status from instrument where kind = 'subject_fingerprint'").fetchone()[0] == "24/24"
    succession = {row[0] for row in db.execute("select kind from succession")}
    assert {"subject_model", "generation_bridge", "needs_review"} <= succession
    point = db.execute("select model_id, submitted_by from comparison_points").fetchone()
    assert point == ("claude-sonnet-5", "a test lab")
    measured = db.execute("select flags from measurements where run_id = ?", (run_dir.name,)).fetchone()[0]
    assert "instrument_suspect" not in measured, "the day had a passing fingerprint"
