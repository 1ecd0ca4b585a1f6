"""The Dagster asset graph, materialised in process on real components.

Protocols and their checks, the commercial month × protocol partition against
the local fake provider (over HTTP), its resumption after an interruption,
coverage and publication with their checks.  The open-weights partition on
the embedded model is in ``test_dagster_open_weights.py``.
"""

import pytest
from dagster import MultiPartitionKey

from llmarchive import budget as budget_mod
from llmarchive.archive import load_run, record_logs as records, sweep_run_id
from llmarchive.protocols import registry
from measure.canonical import canonical_sha256
from panels.build import protocol_hash
from tests.dagster_helpers import (failure_text, materialization_metadata, refusals, resources, run, this_month_key,
                                   today)
from tests.fake_provider import Fault, decide_by_hash
from tests.instrument_helpers import paid_archive, preregister

OPEN = "risky_choice_framing__wording__v0"
MODEL = "claude-sonnet-5"
BUDGET = budget_mod.Budget(100.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001})


@pytest.fixture
def paths(archive_home, monkeypatch):
    """An admitted archive with this module's budget and key, and the open protocol pre-registered."""
    paths = paid_archive(monkeypatch, BUDGET, "fake-credential-dagster-test")
    preregister(paths, [OPEN])
    return paths


def key(protocol_id: str, month: str = None) -> MultiPartitionKey:
    return MultiPartitionKey({"month": month or this_month_key(), "protocol": protocol_id})


def test_a_protocol_partition_builds_the_files_and_its_blocking_gate_checks_pass_for_that_protocol(
        archive_home, instance):
    from llmarchive.archive import ArchivePaths

    paths = ArchivePaths.from_env()
    result = run(["protocols"], resources(paths), instance, partition_key=OPEN)
    meta = materialization_metadata(result, "protocols")
    assert meta["status"] == "candidate" and meta["panel_sha256"] == registry.load_protocol(paths, OPEN)["panel_sha256"]
    evaluations = result.get_asset_check_evaluations()
    assert {e.partition for e in evaluations} == {OPEN}, "the gates are evaluated per protocol partition"
    checks = {e.check_name: e.passed for e in evaluations}
    # The four SPEC gates, and whatever blocking check panels adds beside them: all must pass on a clean build.
    assert {"gate_1", "gate_1b", "twin_pairing", "leak_12_words"} <= set(checks) and all(checks.values()), checks
    assert len(list(paths.protocols.glob("*.json"))) == 24


def test_a_builder_that_breaks_one_protocol_fails_gate_1b_on_that_partition_only(archive_home, instance, monkeypatch):
    from llmarchive.archive import ArchivePaths

    broken_id = "sunk_cost_fallacy__order__v0"
    build = registry.build_protocols

    def broken_builder(*seeds):
        """The real builder, with one B reworded beyond an order change (re-hashed: self-consistent)."""
        protocols = build(*seeds)
        for protocol in protocols:
            if protocol["protocol_id"] == broken_id:
                protocol["panel"][3]["versions"]["B"] = protocol["panel"][3]["versions"]["A"] + " Please think it over."
                protocol["panel_sha256"] = canonical_sha256(protocol["panel"])
                protocol["protocol_sha256"] = protocol_hash(protocol)
        return protocols

    monkeypatch.setattr(registry, "build_protocols", broken_builder)
    paths = ArchivePaths.from_env()
    broken = run(["protocols"], resources(paths), instance, partition_key=broken_id, raise_on_error=False)
    other = run(["protocols"], resources(paths), instance, partition_key=OPEN, raise_on_error=False)
    evaluations = {e.check_name: e for e in broken.get_asset_check_evaluations()}
    assert evaluations["gate_1b"].passed is False and evaluations["gate_1b"].partition == broken_id
    assert broken_id in evaluations["gate_1b"].metadata["first_failures"].value
    assert all(e.passed for e in other.get_asset_check_evaluations()), "another protocol's partition is not blamed"


def test_a_commercial_partition_runs_its_protocol_over_http_and_the_measurement_recomputes(paths, fake, instance):
    res = resources(paths, fake.base_url, concurrency=8)
    result = run(["commercial_trials", "commercial_measurements"], res, instance, partition_key=key(OPEN))
    trials_meta = materialization_metadata(result, "commercial_trials")
    assert trials_meta["ran"] is True and trials_meta["model_id"] == MODEL
    assert trials_meta["protocol_id"] == OPEN and trials_meta["month"] == this_month_key()[:7]
    assert len(fake.chat_requests) == 120 and all(r.path == "/v1/messages" for r in fake.chat_requests)
    measured = materialization_metadata(result, "commercial_measurements")
    run_id = sweep_run_id(today(), OPEN, MODEL)
    assert measured["run_id"] == run_id
    folder = load_run(paths.run_dir(run_id))
    assert len(folder.trials) == 120 and folder.run["job"] == "full_sweep"
    assert measured["stability_pct"] == folder.measurement["stability_pct"]
    assert len(budget_mod.ledger(paths)) == 120, "every paid call reaches the spend ledger"
    assert "fake-credential-dagster-test" not in (paths.run_dir(run_id) / "run.json").read_text(encoding="utf-8")


def test_a_measurement_carries_typed_numbers_and_an_off_curve_one_fails_its_warn_checks_with_the_reason(
        paths, fake, instance):
    from dagster import AssetCheckSeverity, BoolMetadataValue, FloatMetadataValue, IntMetadataValue

    result = run(["commercial_trials", "commercial_measurements"], resources(paths, fake.base_url, concurrency=8),
                 instance, partition_key=key(OPEN))
    trials_meta = materialization_metadata(result, "commercial_trials")
    assert trials_meta["planned_calls"] == 120 and trials_meta["rate_eur_per_call"] == 0.01
    assert trials_meta["estimated_cost_eur"] == pytest.approx(1.2)
    [event] = [e for e in result.get_asset_materialization_events()
               if e.asset_key.to_user_string() == "commercial_measurements"]
    raw = event.materialization.metadata
    for name in ("stability_pct", "ci_low_pct", "ci_high_pct", "gap_pct", "null_floor_pct", "u_a", "u_a_prime",
                 "u_b", "u_c"):
        assert isinstance(raw[name], FloatMetadataValue), name
    assert isinstance(raw["n"], IntMetadataValue) and isinstance(raw["on_curve"], BoolMetadataValue)
    measurement = load_run(paths.run_dir(sweep_run_id(today(), OPEN, MODEL))).measurement
    assert raw["u_b"].value == measurement["u_b"] and raw["gap_pct"].value == measurement["gap_pct"]
    assert measurement["on_curve"] is False and measurement["flags"], "the fake's answers ignore the wording"
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()
              if e.asset_key.to_user_string() == "commercial_measurements"}
    assert set(checks) == {"drop_bound", "missingness_asymmetry", "finding_above_losses", "above_surface_noise",
                           "positive_control", "not_degenerate", "scenario_concentration", "on_curve"}
    assert all(e.severity == AssetCheckSeverity.WARN for e in checks.values())
    assert result.success, "a failed WARN check never fails the run"
    on_curve = checks["on_curve"]
    assert on_curve.passed is False
    first = measurement["flags"][0]
    assert f"{first}: {measurement['flag_reasons'][first]}" in on_curve.description
    failing_gates = {g["check"] for g in measurement["gates"] if not g["pass"]}
    assert {name for name, e in checks.items() if not e.passed} == failing_gates | {"on_curve"}


def test_a_partition_whose_protocol_is_not_preregistered_spends_nothing_and_names_the_cause(paths, fake, instance):
    other = "base_rate_neglect__anchoring__v0"
    result = run(["commercial_trials", "commercial_measurements"], resources(paths, fake.base_url), instance,
                 partition_key=key(other))
    assert fake.chat_requests == []
    meta = materialization_metadata(result, "commercial_trials")
    assert meta["ran"] is False and meta["skipped"][0]["condition"] == "not_preregistered"
    measured = materialization_metadata(result, "commercial_measurements")
    assert measured["measurement"] == "none" and measured["skip_cause"] == "protocol_confounded"
    checks = [e for e in result.get_asset_check_evaluations() if e.check_name == "on_curve"]
    assert [e.passed for e in checks] == [False] and "not evaluated" in checks[0].description


def test_an_interrupted_commercial_partition_resumes_without_repeating_a_trial(paths, fake, instance):
    answer = decide_by_hash()
    calls = {"n": 0, "key_revoked": True}

    def responder(request):
        calls["n"] += 1
        if calls["n"] > 50 and calls["key_revoked"]:
            return Fault.status(401)
        return answer(request)

    fake.responder = responder
    res = resources(paths, fake.base_url, concurrency=4)
    first = run(["commercial_trials"], res, instance, partition_key=key(OPEN), raise_on_error=False)
    assert not first.success and "can be resumed" in failure_text(first)
    run_dir = paths.run_dir(sweep_run_id(today(), OPEN, MODEL))
    done_first = len(load_run(run_dir).trials)
    assert 40 <= done_first < 120
    skip = records.read(paths, "skip")[-1]
    assert skip["condition"] == "provider_refused_request" and skip["protocol_id"] == OPEN

    calls["key_revoked"] = False
    sent_before = len(fake.chat_requests)
    second = run(["commercial_trials", "commercial_measurements"], res, instance, partition_key=key(OPEN))
    assert second.success
    folder = load_run(run_dir)
    assert len(folder.trials) == 120
    assert len({(t["item_id"], t["version"], t["replicate_index"]) for t in folder.trials}) == 120
    assert len(fake.chat_requests) - sent_before == 120 - done_first, "only the missing trials were sent"
    assert materialization_metadata(second, "commercial_measurements")["run_id"] == run_dir.name


def test_a_commercial_partition_refuses_a_past_month_a_missing_key_and_a_missing_budget_as_intended_failures(
        paths, fake, instance, monkeypatch):
    res = resources(paths, fake.base_url)
    past = run(["commercial_trials"], res, instance, partition_key=key(OPEN, "2026-09-01"), raise_on_error=False)
    [(said, facts)] = refusals(past)
    assert not past.success and "never backfilled" in said and "Nothing was spent" in said
    assert facts["refusal"] == "not_this_month" and facts["spent_eur"] == 0.0 and facts["month"] == "2026-09"

    paths.budget_file.unlink()
    budgetless = run(["commercial_trials"], res, instance, partition_key=key(OPEN), raise_on_error=False)
    [(said, facts)] = refusals(budgetless)
    assert "no budget" in said and facts["refusal"] == "no_budget" and "budget init" in facts["what_to_do"]

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    keyless = run(["commercial_trials"], res, instance, partition_key=key(OPEN), raise_on_error=False)
    [(said, facts)] = refusals(keyless)
    assert "ANTHROPIC_API_KEY is not set" in said and "Nothing was spent" in said
    assert facts["refusal"] == "no_key" and facts["spent_eur"] == 0.0 and facts["protocol_id"] == OPEN
    assert fake.chat_requests == [] and budget_mod.ledger(paths) == []


def test_the_instrument_refuses_a_day_that_is_not_today_as_an_intended_failure(paths, instance):
    from datetime import date, timedelta

    yesterday = (date.fromisoformat(today()) - timedelta(days=1)).isoformat()
    past = run(["runtime_fingerprint"], resources(paths), instance, partition_key=yesterday, raise_on_error=False)
    [(said, facts)] = refusals(past)
    assert "never a backfill" in said and facts["refusal"] == "not_today" and facts["today"] == today()


def test_coverage_and_publication_after_a_commercial_month_pass_their_checks(paths, fake, instance):
    res = resources(paths, fake.base_url, concurrency=8)
    run(["commercial_trials", "commercial_measurements"], res, instance, partition_key=key(OPEN))
    covered = run(["coverage"], res, instance, partition_key=this_month_key())
    meta = materialization_metadata(covered, "coverage")
    assert meta["ran"] >= 1 and meta["rows"] >= 1
    published = run(["public_archive"], res, instance)
    checks = {e.check_name: e.passed for e in published.get_asset_check_evaluations()}
    assert checks == {"trial_log_chains": True, "no_flagged_measurement_on_curve": True,
                      "coverage_gaps_have_causes": True, "leak_guard": True}
    import sqlite3

    with sqlite3.connect(paths.public / "archive.db") as db:
        protocols = {row[0] for row in db.execute("select protocol_id from measurements")}
    assert OPEN in protocols
    guard_words = [registry.load_protocol(paths, p["protocol_id"])["panel"][0]["versions"]["A"]
                   for p in registry.list_protocols(paths) if p.get("lane") == "guard"]
    blob = b"".join(f.read_bytes() for f in paths.public.rglob("*") if f.is_file())
    assert all(text[:200].encode() not in blob for text in guard_words)
