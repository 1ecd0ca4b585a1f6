"""The runner: schedule, durable trial log, resume, concurrency, records, secrets."""
import hashlib
import json
from collections import Counter

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import load_run, measurement_run, read_jsonl
from llmarchive.run.runner import (RunError, RunHalted, RunSettings, default_model_family, run_protocol, schedule,
                                   validate_protocol)
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.http import RetryPolicy
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from measure import chain
from measure.measurement import build
from measure.schema import OUTCOMES, VERSIONS
from tests.fake_provider import Fault, FakeProvider, Reply, decide_by_hash
from tests.protocol_fixtures import make_protocol

KEY = "fake-credential-runner-test"
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)


@pytest.fixture
def paths(paths, monkeypatch):
    """The shared empty archive, plus this module's (fake) key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return paths


@pytest.fixture
def fake():
    """Not the shared ``fake``: this one answers 401 unless the request carries this module's key."""
    with FakeProvider(decide_by_hash(), require_key=KEY) as server:
        yield server


def anthropic(fake, max_tokens=64, **kw):
    kw.setdefault("sleep", lambda seconds: None)   # back-off waits are not slept in tests
    return AnthropicSubject("claude-test-1", max_tokens, base_url=fake.base_url, retry=FAST, **kw)


def unbudgeted():
    return budget_mod.unbudgeted("manual")


def run(paths, protocol, subject, run_id="r1", **kw):
    kw.setdefault("run_date", "2026-11-01")
    authorization = kw.pop("authorization", unbudgeted())
    budget = kw.pop("budget", None)
    progress = kw.pop("progress", None)
    return run_protocol(paths, protocol, subject, RunSettings(run_id=run_id, **kw),
                        authorization=authorization, budget=budget, progress=progress)


# -- the schedule -------------------------------------------------------------------

def test_the_schedule_covers_every_identity_once_and_is_deterministic():
    protocol = make_protocol()
    plan = schedule(protocol)
    assert len(plan) == 4 * 30
    assert len({p.identity for p in plan}) == 120
    assert plan == schedule(make_protocol())
    assert [p.trial_index for p in plan] == list(range(120))


def test_the_schedule_interleaves_versions_and_items_so_a_drift_cannot_fall_on_one_version():
    plan = schedule(make_protocol())
    versions = [p.version for p in plan]
    assert all(versions[i] != versions[i + 1] for i in range(len(versions) - 1))
    for start in range(0, 120, 4):  # every block of four consecutive calls holds all four versions
        assert sorted(versions[start:start + 4]) == sorted(VERSIONS)
    # each version takes each position within its block equally often, and is spread over the whole run
    positions = Counter((p.version, p.trial_index % 4) for p in plan)
    assert set(positions.values()) == {30 // 4, 30 // 4 + 1}
    for version in VERSIONS:
        indices = [p.trial_index for p in plan if p.version == version]
        assert indices[0] < 8 and indices[-1] > 111


# -- one full run -------------------------------------------------------------------------

def test_a_full_run_writes_a_chained_trial_log_a_run_record_and_the_measurement(paths, fake):
    protocol = make_protocol()
    result = run(paths, protocol, anthropic(fake), concurrency=4)
    assert result.complete and result.called == 120 and len(fake.chat_requests) == 120
    folder = load_run(result.run_dir)
    assert chain.verify(read_jsonl(result.run_dir / "trials.jsonl")) == 120
    assert folder.measurement == build(folder.protocol_header, folder.trials, measurement_run(folder.run))
    run_record = folder.run
    assert run_record["record_type"] == "experiment_run" and run_record["status"] == "complete"
    assert run_record["protocol_sha256"] == protocol["protocol_sha256"]
    assert run_record["panel_sha256"] == protocol["panel_sha256"]
    assert run_record["grammar_version"] == 1 and len(run_record["extractor_sha"]) == 64
    assert run_record["explicitly_set"] == {"model": "claude-test-1", "max_tokens": 64,
                                            "thinking": {"type": "disabled"}}
    assert run_record["series"] == "commercial" and run_record["model_family"] == "claude-test"
    assert run_record["returned_model_id"] == "claude-test-1"
    assert run_record["input_tokens"] == sum(t["input_tokens"] for t in folder.trials) > 0
    assert run_record["started_at"].endswith("Z") and run_record["finished_at"].endswith("Z")
    assert run_record["n_trials_recorded"] == 120 and run_record["attempts"] == 120
    assert "panel" not in run_record["protocol_header"]
    assert folder.measurement["n"] == 30 and folder.measurement["api_surface_sha"] == run_record["api_surface_sha"]


def test_a_trial_records_the_prompt_hash_never_the_prompt(paths, fake):
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    result = run(paths, protocol, anthropic(fake))
    texts = {(i["item_id"], v): t for i in protocol["panel"] for v, t in i["versions"].items()}
    raw = (result.run_dir / "trials.jsonl").read_text()
    for trial in result.trials:
        prompt = texts[(trial["item_id"], trial["version"])]
        assert trial["prompt_sha256"] == hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        assert prompt not in raw and "Scenario s01" not in raw
        assert trial["outcome"] in OUTCOMES and trial["record_type"] == "trial"
        assert trial["response_text"].startswith("Weighing the options.")
        assert trial["started_at"].endswith("Z") and trial["finished_at"] >= trial["started_at"]
        assert trial["n_items"] == 2 and trial["attempts"] == 1


def test_repeated_samples_are_real_calls_not_a_cache(paths, fake):
    protocol = make_protocol(n_items=1, n_per_scenario=3)
    run(paths, protocol, anthropic(fake))
    prompts = Counter(r.prompt for r in fake.chat_requests)
    assert len(prompts) == 4 and set(prompts.values()) == {3}


def test_faults_during_a_run_end_in_their_outcomes_with_attempts_recorded(paths, fake):
    protocol = make_protocol(n_items=2, n_per_scenario=1)  # 8 trials, sent in schedule order
    fake.script(Fault.status(429, retry_after=0.01), Reply.text("DECISION: A"),   # trial 0: valid after 2
                Reply.refusal(),                                                  # trial 1
                Reply.max_tokens(),                                               # trial 2
                Reply.non_text(),                                                 # trial 3
                Reply.empty(),                                                    # trial 4
                Reply.text("DECISION: B"),                                        # trial 5
                Fault.malformed(), Reply.text("DECISION: B"),                     # trial 6: valid after 2
                Fault.status(529), Reply.text("no decision"))                     # trial 7: unparseable
    result = run(paths, protocol, anthropic(fake), concurrency=1)
    got = [(t["outcome"], t["token"], t["attempts"]) for t in result.trials]
    assert got == [("valid", "A", 2), ("refused", None, 1), ("truncated", None, 1), ("off_format", None, 1),
                   ("empty", None, 1), ("valid", "B", 1), ("valid", "B", 2),
                   ("unparseable", None, 2)]
    assert result.trials[0]["retry_causes"] == ["HTTP 429 rate_limit_error"]
    assert result.complete and result.run["attempts"] == 11


def test_concurrency_never_exceeds_its_bound_and_is_used(paths, fake):
    fake.latency_s = 0.05
    protocol = make_protocol(n_items=6, n_per_scenario=2)
    run(paths, protocol, anthropic(fake), concurrency=5)
    assert fake.max_in_flight == 5
    fake2_paths = paths
    fake.max_in_flight = 0
    run(fake2_paths, protocol, anthropic(fake), run_id="r2", concurrency=2)
    assert fake.max_in_flight == 2


def test_the_api_key_appears_in_no_file_written_under_the_archive_home(paths, fake, archive_home):
    protocol = make_protocol(n_items=3, n_per_scenario=1)
    budget_mod.write_budget(paths, budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}))
    budget = budget_mod.load_budget(paths)
    auth = budget_mod.authorize_run(paths, budget, protocol, "manual", 12)
    fake.script(Fault.status(401))  # the provider's error path too
    with pytest.raises(RunHalted):
        run(paths, protocol, anthropic(fake), authorization=auth, budget=budget)
    run(paths, protocol, anthropic(fake), authorization=auth, budget=budget)
    files = [f for f in archive_home.rglob("*") if f.is_file()]
    assert any(f.name == "trials.jsonl" for f in files) and any(f.name == "spend.jsonl" for f in files)
    for file in files:
        assert KEY.encode() not in file.read_bytes(), f"the key leaked into {file}"


# -- resuming --------------------------------------------------------------------------------

def test_a_halted_run_resumes_without_resending_or_rebilling_a_recorded_trial(paths, fake):
    protocol = make_protocol()
    budget_mod.write_budget(paths, budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}))
    budget = budget_mod.load_budget(paths)
    auth = budget_mod.authorize_run(paths, budget, protocol, "manual", 120)
    responses = {"n": 0}
    respond = decide_by_hash()

    def flaky(request):
        responses["n"] += 1
        return Fault.status(401) if responses["n"] == 38 else respond(request)

    fake.responder = flaky
    with pytest.raises(RunHalted, match="resume"):
        run(paths, protocol, anthropic(fake), authorization=auth, budget=budget)
    first = load_run(paths.run_dir("r1"))
    assert len(first.trials) == 37 and first.run["status"] == "halted" and first.measurement is None
    first_lines = (paths.run_dir("r1") / "trials.jsonl").read_text().splitlines()
    before = len(fake.chat_requests)

    fake.responder = respond
    result = run(paths, protocol, anthropic(fake), authorization=auth, budget=budget)
    assert result.complete and result.called == 120 - 37 and result.already_recorded == 37
    assert len(fake.chat_requests) - before == 83
    lines = (paths.run_dir("r1") / "trials.jsonl").read_text().splitlines()
    assert lines[:37] == first_lines, "earlier trials, tokens and timestamps are never rewritten"
    assert result.run["started_at"] == first.run["started_at"]
    assert [s["outcome"] for s in result.run["sessions"]] == ["halted", "complete"]
    spend = [e for e in budget_mod.ledger(paths) if e["run_id"] == "r1" and e["trial"]]
    assert len(spend) == 120 and len({e["call_key"] for e in spend}) == 120
    refused = [e for e in budget_mod.ledger(paths) if not e["trial"]]
    assert [(e["answered"], e["cost_eur"]) for e in refused] == [(False, 0.0)], "the 401 call: settled, not billed"
    assert budget_mod.open_reservations(budget_mod.ledger_entries(paths)) == [], "an error answer is not billed"
    assert result.run["cost_eur"] == pytest.approx(1.2)

    again = run(paths, protocol, anthropic(fake), authorization=auth, budget=budget)
    assert again.called == 0 and len(fake.chat_requests) - before == 83
    assert again.measurement == result.measurement


def test_the_ledger_catches_up_with_trials_recorded_just_before_a_kill(paths, fake):
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    budget_mod.write_budget(paths, budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}))
    budget = budget_mod.load_budget(paths)
    auth = budget_mod.authorize_run(paths, budget, protocol, "manual", 8)
    run(paths, protocol, anthropic(fake), authorization=auth, budget=budget)
    # a kill between the trials' fsync and their charges: cut the ledger before the last two charges
    lines = paths.spend_ledger.read_text().splitlines(keepends=True)
    charges = [i for i, line in enumerate(lines) if '"record_type":"spend"' in line]
    paths.spend_ledger.write_text("".join(lines[:charges[-2]]))
    (paths.run_dir("r1") / "measurement.json").unlink()
    result = run(paths, protocol, anthropic(fake), authorization=auth, budget=budget)
    assert result.called == 0
    spend = budget_mod.ledger(paths)
    assert len(spend) == 8 and len({e["call_key"] for e in spend}) == 8
    entries = budget_mod.ledger_entries(paths)
    assert chain.verify(entries) == len(entries)
    assert budget_mod.open_reservations(entries) == [], "the catch-up charges settle the reservations"


def test_a_torn_last_line_from_a_killed_writer_is_cut_and_that_trial_called_again(paths, fake):
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    run(paths, protocol, anthropic(fake))
    log = paths.run_dir("r1") / "trials.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:5]) + lines[5][:40])  # record 5 half-written, 6 and 7 never written
    (paths.run_dir("r1") / "measurement.json").unlink()
    before = len(fake.chat_requests)
    result = run(paths, protocol, anthropic(fake))
    assert result.complete and len(fake.chat_requests) - before == 3
    assert chain.verify(read_jsonl(log)) == 8


def test_a_run_id_cannot_be_resumed_with_another_protocol_or_subject(paths, fake):
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    run(paths, protocol, anthropic(fake))
    with pytest.raises(RunError, match="protocol_id"):
        run(paths, make_protocol("other__wording__v0", n_items=2, n_per_scenario=1), anthropic(fake))
    with pytest.raises(RunError, match="subject_model_id"):
        run(paths, protocol, AnthropicSubject("claude-test-2", 64, base_url=fake.base_url))
    with pytest.raises(RunError, match="run_date"):
        run(paths, protocol, anthropic(fake), run_date="2026-12-01")


def test_an_edited_trial_log_is_refused_not_extended(paths, fake):
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    run(paths, protocol, anthropic(fake))
    log = paths.run_dir("r1") / "trials.jsonl"
    log.write_text(log.read_text().replace('"outcome":"valid"', '"outcome":"refused"', 1))
    with pytest.raises(RunError, match="does not verify"):
        run(paths, protocol, anthropic(fake))


def test_a_paid_subject_without_an_authorization_is_refused(paths, fake):
    with pytest.raises(RunError, match="budget authorization"):
        run(paths, make_protocol(n_items=1, n_per_scenario=1), anthropic(fake), authorization=None)


# -- protocol checks ---------------------------------------------------------------------------

@pytest.mark.parametrize("edit, message", [
    (lambda p: p.pop("panel"), "'panel' must be a non-empty list"),
    (lambda p: p.update(n=31), "'n' \\(31\\) must equal"),
    (lambda p: p["panel"][3]["versions"].pop("C"), "panel\\[3\\] \\(s04\\): version C"),
    (lambda p: p["generation"].pop("max_tokens"), "generation.max_tokens"),
    (lambda p: p.update(options=["A"]), "'options'"),
])
def test_a_broken_protocol_is_refused_naming_the_field(edit, message):
    protocol = make_protocol()
    edit(protocol)
    with pytest.raises(RunError, match=message):
        validate_protocol(protocol)


def test_a_subject_max_tokens_other_than_the_protocols_needs_an_explicit_override(paths, fake):
    protocol = make_protocol(n_items=1, n_per_scenario=1, max_tokens=64)
    with pytest.raises(RunError, match="freezes generation.max_tokens 64"):
        run(paths, protocol, anthropic(fake, max_tokens=32))
    result = run(paths, protocol, anthropic(fake, max_tokens=32), allow_generation_override=True)
    assert "exploratory" in result.measurement["flags"]
    assert result.run["generation_override"] == {"max_tokens": 32}
    assert result.measurement["on_curve"] is False


def test_the_openai_subject_runs_a_protocol_the_same_way(paths, fake):
    fake.require_key = None
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    subject = OpenAICompatSubject("local-llama", 64, base_url=fake.base_url, retry=FAST)
    result = run(paths, protocol, subject, concurrency=3)
    assert result.complete and result.run["series"] == "open_weights"
    assert {t["stop_reason"] for t in result.trials} == {"stop"}


def test_default_model_family_drops_versions_and_dates():
    assert default_model_family("claude-sonnet-5-5-20270101") == "claude-sonnet"
    assert default_model_family("claude-sonnet-5") == "claude-sonnet"
    assert default_model_family("smollm2-135m") == "smollm2-135m"


def test_progress_reports_every_recorded_trial(paths, fake):
    seen = []
    run(paths, make_protocol(n_items=1, n_per_scenario=2), anthropic(fake),
        progress=lambda done, total, trial: seen.append((done, total, trial["trial_index"])))
    assert [s[0] for s in seen] == list(range(1, 9)) and {s[1] for s in seen} == {8}


def test_progress_counts_each_trial_once_when_a_batch_is_recorded_together(paths, fake):
    """Trials answered together are recorded in one batch: each is reported with its own count, 1, 2, … —
    not the batch's last count repeated (a CLI sweep printed 100/120 four times and started at 80/120)."""
    seen = []
    run(paths, make_protocol(n_items=2, n_per_scenario=4), anthropic(fake), concurrency=8,
        progress=lambda done, total, trial: seen.append(done))
    assert seen == list(range(1, len(seen) + 1)) and len(seen) > 8


def test_run_json_is_readable_by_the_measure_command(paths, fake, capsys):
    from llmarchive.cli import main
    result = run(paths, make_protocol(n_items=2, n_per_scenario=1), anthropic(fake))
    assert main(["measure", str(result.run_dir)]) == 0
    assert json.loads(capsys.readouterr().out) == result.measurement


def test_the_cli_runs_a_built_protocol_on_an_openai_compatible_server_unbudgeted(paths, built, fake, capsys):
    from llmarchive.cli import main
    fake.require_key = None
    code = main(["run", "base_rate_neglect__wording__v0", "--subject", "openai", "--model", "local-llama",
                 "--base-url", fake.base_url + "/v1", "--unbudgeted", "--run-id", "outside", "--quiet",
                 "--concurrency", "6"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "status: complete (120/120 trials" in out.out and "cost: unknown" in out.out
    assert fake.max_in_flight <= 6
    run_record = load_run(paths.run_dir("outside")).run
    assert run_record["budget"]["budgeted"] is False and run_record["cost_eur"] is None
    assert run_record["preregistration"]["listed"] is False
    assert run_record["exploratory"].startswith("not pre-registered")
    spend = budget_mod.ledger(paths)
    assert len(spend) == 120 and {e["cost_eur"] for e in spend} == {None}
    assert main(["run", "base_rate_neglect__wording__v0", "--subject", "openai", "--model", "local-llama",
                 "--base-url", fake.base_url, "--unbudgeted", "--run-id", "outside", "--quiet"]) == 0
    assert len(fake.chat_requests) == 120, "running a complete run again calls nothing"


def test_the_cli_says_a_run_was_interrupted_by_an_outage_and_resumes_it_when_the_provider_is_back(
        paths, built, fake, capsys):
    from llmarchive.cli import main
    fake.require_key = None
    respond = decide_by_hash()
    fake.responder = lambda request: Fault.status(503)
    args = ["run", "base_rate_neglect__wording__v0", "--subject", "openai", "--model", "local-llama",
            "--base-url", fake.base_url, "--unbudgeted", "--run-id", "outage", "--quiet", "--concurrency", "1",
            "--max-attempts", "1"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "interrupted: run outage interrupted (provider_outage) after 0 of 120 trials" in err
    assert "120 slot(s) are still open" in err
    stopped = load_run(paths.run_dir("outage")).run
    assert stopped["status"] == "interrupted" and stopped["interruption"]["condition"] == "provider_unreachable"
    assert stopped["n_trials_recorded"] == 0, "an outage records no trial"

    fake.responder = respond
    assert main(args) == 0
    assert "status: complete (120/120 trials" in capsys.readouterr().out
    assert len(fake.chat_requests) == 1 + 120
