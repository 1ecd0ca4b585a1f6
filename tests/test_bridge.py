"""The generation bridge on the fake provider: plan, reserve, same week, resume, pre-emption, a model that leaves.

The bridge is raised on 2 November 2026 and run from the third, so the
clock is set to 1 November 2026: the archive is admitted before the story.
"""
import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import bridge_run_id, load_run, record_logs as records
from llmarchive.protocols import registry
from llmarchive.schedule.bridge import BridgeError, bridge_calls, bridge_runs, half_complete, open_bridges, run_bridge
from llmarchive.cli import main
from llmarchive.run import RunHalted
from llmarchive.succession import load_subject_models
from llmarchive.subjects import list_models, make_subject
from llmarchive.schedule import sweep_month
from llmarchive.schedule.watch import watch
from tests.fake_provider import Fault, decide_by_hash
from tests.instrument_helpers import paid_archive

CONFIG = load_subject_models()
OLD, NEW = "claude-sonnet-5", "claude-sonnet-5-5"
BUDGET = budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.005, "fingerprint": 0.001})

pytestmark = pytest.mark.time_machine("2026-11-01T06:00:00Z")


@pytest.fixture
def paths(archive_home, monkeypatch):
    """The admitted archive with this module's budget and (fake) key: the paid paths."""
    return paid_archive(monkeypatch, BUDGET, "fake-credential-bridge")


def raise_bridge(paths, fake):
    watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
    fake.set_models([OLD, NEW])
    watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
    (bridge,) = open_bridges(paths)
    return bridge


def factory(fake):
    return lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model,
                                                  base_url=fake.base_url)


def listed(fake):
    return lambda: [m["id"] for m in list_models("anthropic", fake.base_url)]


def exhaust_general_pool(paths):
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("manual", "scenario", "general", 0.5),
                                  "filler", "anthropic", "m")
    for i in range(25):                 # 12.5 € of a 12.5 € general pool
        meter.charge([(f"c{i}", {"answered": True})])


def test_the_plan_is_one_admitted_protocol_per_type_960_calls_for_v0(paths, fake):
    bridge = raise_bridge(paths, fake)
    by_id = {h["protocol_id"]: h for h in registry.list_protocols(paths)}
    assert sorted(by_id[p]["rewording_type"] for p in bridge["protocol_ids"]) == ["anchoring", "default", "order",
                                                                                  "wording"]
    assert all(p.endswith("__v0") for p in bridge["protocol_ids"])
    assert bridge_calls(paths, bridge["protocol_ids"]) == 960


def test_the_bridge_runs_old_then_new_from_the_reserve_only_and_takes_the_months_sweep(paths, fake):
    bridge = raise_bridge(paths, fake)
    exhaust_general_pool(paths)
    outcome = run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake),
                         concurrency=8)
    assert outcome.status == "complete" and outcome.calls == 960 and len(outcome.run_ids) == 8
    models = [r.body["model"] for r in fake.chat_requests]
    assert models[:480] == [OLD] * 480 and models[480:] == [NEW] * 480, "the old model first"
    bridge_spend = [e for e in budget_mod.ledger(paths) if e["job"] == "bridge"]
    assert len(bridge_spend) == 960 and {e["pool"] for e in bridge_spend} == {"bridge"}
    run = load_run(paths.run_dir(bridge_run_id(OLD, NEW, bridge["protocol_ids"][0], "old"))).run
    assert run["job"] == "bridge" and run["series"] == "commercial" and run["model_family"] == "claude-sonnet"
    assert [r["status"] for r in records.read(paths, "generation_bridge")] == ["pending", "complete"]

    after = watch(paths, "2026-11-04", CONFIG, base_url=fake.base_url)
    assert after.alarms == [], "the alarm stops once both models' runs exist"

    calls_before = len(fake.chat_requests)
    swept = sweep_month(paths, "2026-11-05", CONFIG, subject_factory=factory(fake))
    assert len(fake.chat_requests) == calls_before, "the bridge month's sweep sends nothing"
    assert {c for _, c, _ in swept.skipped} == {"bridge_preempts_sweep"} and len(swept.skipped) == 12
    assert {r["cause"] for r in swept.coverage_rows} == {"generation_bridge"}


def test_a_bridge_that_does_not_fit_the_reserve_is_refused_before_any_call(paths, fake):
    raise_bridge(paths, fake)
    budget_mod.write_budget(paths, budget_mod.Budget(20.0, 4.0, 1.0, {"scenario": 0.005, "fingerprint": 0.001}))
    with pytest.raises(BridgeError, match="bridge reserve"):
        run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    assert fake.chat_requests == []
    skip = records.read(paths, "skip")[-1]
    assert (skip["job"], skip["cause"]) == ("bridge", "budget_halted")


def test_an_old_model_that_leaves_during_the_bridge_makes_it_incomplete(paths, fake):
    raise_bridge(paths, fake)

    def leaves(request):
        if request.body["model"] == OLD and len(fake.chat_requests) > 40:
            fake.set_models([NEW])
            return Fault.status(404, error_type="not_found_error")
        return decide_by_hash()(request)

    fake.responder = leaves
    outcome = run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    assert outcome.status == "incomplete" and "left the provider's list" in outcome.message
    (incomplete,) = records.read(paths, "bridge_incomplete")
    assert (incomplete["old_model_id"], incomplete["new_model_id"]) == (OLD, NEW)
    assert open_bridges(paths) == []
    assert NEW not in {r.body["model"] for r in fake.chat_requests}


def test_runs_more_than_a_week_after_the_first_are_not_the_same_bridge(paths, fake):
    raise_bridge(paths, fake)
    fake.responder = lambda request: Fault.status(401)      # stops the first run early, trials kept
    with pytest.raises(RunHalted):
        run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    fake.responder = decide_by_hash()
    with pytest.raises(BridgeError, match="not be the same week"):
        run_bridge(paths, "2026-11-10", CONFIG, subject_factory=factory(fake), listed=listed(fake))


def test_the_cli_shows_the_pending_bridge_and_refuses_without_one(paths, fake, capsys):
    assert main(["bridge", "run", "--base-url", fake.base_url]) == 2
    assert "no bridge is pending" in capsys.readouterr().err
    raise_bridge(paths, fake)
    assert main(["bridge", "status"]) == 0
    assert f"{OLD} → {NEW} raised 2026-11-02: pending (0/8 runs complete)" in capsys.readouterr().out


def test_an_interrupted_bridge_resumes_the_next_day_under_its_start_date(paths, fake):
    bridge = raise_bridge(paths, fake)
    answered = []

    def stops_after_300(request):
        if len(answered) >= 300:
            return Fault.status(401)          # e.g. a key revoked mid-run: the session stops, trials kept
        answered.append(request.body["model"])
        return decide_by_hash()(request)

    fake.responder = stops_after_300
    with pytest.raises(RunHalted):
        run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    fake.responder = decide_by_hash()
    outcome = run_bridge(paths, "2026-11-04", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    assert outcome.status == "complete"
    runs = bridge_runs(paths, bridge)
    assert len(runs) == 8 and {r["run_date"] for r in runs.values()} == {"2026-11-03"}, "the bridge's start date"
    assert {r["bridge"]["first_run_date"] for r in runs.values()} == {"2026-11-03"}
    assert len(answered) + outcome.calls == 960, "each slot answered once across the two days"
    assert sum(r["n_trials_recorded"] for r in runs.values()) == 960
    resumed_on = [s["started_at"][:10] for r in runs.values() for s in r["sessions"]]
    assert len(resumed_on) > 8, "at least one run was resumed in a second session"


def test_an_old_model_that_leaves_after_its_half_is_complete_does_not_end_the_bridge(paths, fake):
    bridge = raise_bridge(paths, fake)

    def new_not_yet(request):
        if request.body["model"] == NEW:
            return Fault.status(401)          # the new model's half cannot start today
        return decide_by_hash()(request)

    fake.responder = new_not_yet
    with pytest.raises(RunHalted):
        run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    assert half_complete(paths, bridge, "old") and not half_complete(paths, bridge, "new")

    fake.set_models([NEW])                    # the old model is retired after its half was measured
    fake.responder = decide_by_hash()
    seen = watch(paths, "2026-11-04", CONFIG, base_url=fake.base_url)
    assert [r for r in seen.written if r["record_type"] == "bridge_incomplete"] == []
    assert len(seen.alarms) == 1 and any("its half of the bridge is complete" in n for n in seen.notes)
    outcome = run_bridge(paths, "2026-11-05", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    assert outcome.status == "complete" and outcome.calls == 480
    assert {r.body["model"] for r in fake.chat_requests[-480:]} == {NEW}
    assert records.read(paths, "bridge_incomplete") == []
    assert [r["status"] for r in records.read(paths, "generation_bridge")] == ["pending", "complete"]


def test_an_old_model_gone_before_its_half_is_complete_still_makes_the_bridge_incomplete_at_once(paths, fake):
    raise_bridge(paths, fake)
    fake.set_models([NEW])
    outcome = run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    assert outcome.status == "incomplete" and "its half of the bridge is not complete" in outcome.message
    assert fake.chat_requests == [] and len(records.read(paths, "bridge_incomplete")) == 1


def main_help(command: str) -> str:
    from llmarchive.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return " ".join(sub.format_help().split())


def test_llmarchive_run_refuses_the_bridge_job_so_only_the_bridge_spends_the_bridge_reserve(paths, fake, capsys):
    with pytest.raises(SystemExit) as refused:     # not even offered (issue 17): `--job` has no bridge choice
        main(["run", "risky_choice_framing__wording__v0", "--subject", "anthropic", "--model", OLD,
              "--base-url", fake.base_url, "--job", "bridge", "--run-date", "2026-11-03", "--quiet"])
    assert refused.value.code == 2
    assert "invalid choice: 'bridge'" in capsys.readouterr().err
    assert "llmarchive bridge run" in main_help("run")
    assert fake.chat_requests == [] and budget_mod.ledger(paths) == []
    assert list(paths.experiments.iterdir()) == []


def test_a_provider_that_stops_answering_interrupts_the_bridge_cleanly_and_a_resume_completes_it(paths, fake):
    """No answer is not a configuration error: the bridge says so and resumes; an unreadable list proves nothing."""
    from llmarchive.subjects.anthropic import AnthropicSubject
    from llmarchive.subjects import SubjectError
    from llmarchive.subjects.http import RetryPolicy

    bridge = raise_bridge(paths, fake)
    calls = {"n": 0}

    def resets_after_100(request):
        calls["n"] += 1
        if calls["n"] > 100:
            return Fault.reset()
        return decide_by_hash()(request)

    def quick_subject(model, max_tokens):
        return AnthropicSubject(model, max_tokens, base_url=fake.base_url,
                                retry=RetryPolicy(max_attempts=2, base_delay_s=1.0, max_delay_s=1.0),
                                sleep=lambda seconds: None)

    def unreadable():
        raise SubjectError("the models list could not be read (connection reset)")

    fake.responder = resets_after_100
    outcome = run_bridge(paths, "2026-11-03", CONFIG, subject_factory=quick_subject, listed=unreadable,
                         concurrency=1)
    assert outcome.status == "running" and outcome.message.startswith("interrupted:")
    assert "llmarchive bridge run" in outcome.message and records.read(paths, "bridge_incomplete") == []
    fake.responder = decide_by_hash()
    outcome = run_bridge(paths, "2026-11-04", CONFIG, subject_factory=factory(fake), listed=unreadable)
    assert outcome.status == "complete"
    assert {r["run_date"] for r in bridge_runs(paths, bridge).values()} == {"2026-11-03"}
