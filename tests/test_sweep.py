"""The monthly sweep on the fake provider: pre-registration, the ladder, closed series, outages, coverage."""
import pytest

from llmarchive import budget as budget_mod
from llmarchive import records
from llmarchive.cli import main
from llmarchive.runs import load_run
from llmarchive.subject_models import load_subject_models
from llmarchive.subjects import list_models, make_subject
from llmarchive.sweep import sweep, sweep_run_id
from panels import registry
from tests.fake_provider import Fault, FakeProvider, decide_by_hash
from tests.instrument_helpers import paid_archive, preregister

CONFIG = load_subject_models()
OPEN = "risky_choice_framing__wording__v0"
# general pool = 100 - 6.5 - 1 = 92.5 €; a protocol is 120 calls × 0.01 € = 1.2 €
BUDGET = budget_mod.Budget(100.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001})


@pytest.fixture
def paths(archive_home, monkeypatch):
    return paid_archive(monkeypatch, BUDGET, "fake-credential-sweep")


@pytest.fixture
def fake():
    with FakeProvider(decide_by_hash(), models=["claude-sonnet-5"]) as fake:
        yield fake


def v0_ids(paths):
    return sorted(h["protocol_id"] for h in registry.list_protocols(paths) if h["protocol_id"].endswith("__v0"))


def factory(fake):
    return lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model,
                                                  base_url=fake.base_url)


def check(fake):
    return lambda: list_models("anthropic", fake.base_url, max_attempts=1)


def spend_general(paths, euros):
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("manual", "scenario", "general", 0.5),
                                  "filler", "anthropic", "m")
    for i in range(int(euros * 2)):
        meter.record(f"c{i}", {"answered": True})


def test_a_protocol_not_preregistered_is_skipped_as_protocol_confounded_and_costs_nothing(paths, fake):
    preregister(paths, [OPEN])
    out = sweep(paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake),
                concurrency=8)
    assert out.ran == [OPEN] and out.model_id == "claude-sonnet-5"
    assert len(out.skipped) == 11 and {c for _, c, _ in out.skipped} == {"not_preregistered"}
    open_prompts = {item["versions"][v] for item in registry.load_protocol(paths, OPEN)["panel"]
                    for v in ("A", "A_prime", "B", "C")}
    assert len(fake.chat_requests) == 120 and {r.prompt for r in fake.chat_requests} <= open_prompts
    skips = records.read(paths, "skip")
    assert len(skips) == 11 and {(s["cause"], s["condition"]) for s in skips} == {("protocol_confounded",
                                                                                  "not_preregistered")}
    assert all(s["reason"].startswith("not_preregistered:") for s in skips)
    rows = {r["protocol_id"]: r for r in out.coverage_rows}
    assert rows[OPEN]["status"] == "ran" and rows[OPEN]["period"] == "2026-11"
    assert {rows[p]["cause"] for p in v0_ids(paths) if p != OPEN} == {"protocol_confounded"}
    run = load_run(paths.run_dir(sweep_run_id("2026-11-02", OPEN, "claude-sonnet-5")))
    assert run.run["job"] == "sweep" and run.run["preregistration"]["listed"] is True
    assert "instrument_suspect" in run.measurement["flags"], "no runtime fingerprint ran that day"
    spend = budget_mod.ledger(paths)
    assert len(spend) == 120 and {e["job"] for e in spend} == {"sweep"}


def test_the_ladder_at_80_percent_lets_only_four_guard_protocols_run(paths, fake):
    preregister(paths, v0_ids(paths))
    spend_general(paths, 0.8 * BUDGET.general_pool_eur)
    out = sweep(paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake),
                concurrency=8)
    lanes = {h["protocol_id"]: h["lane"] for h in registry.list_protocols(paths)}
    types = {h["protocol_id"]: h["rewording_type"] for h in registry.list_protocols(paths)}
    assert len(out.ran) == 4 and {lanes[p] for p in out.ran} == {"guard"}
    assert sorted(types[p] for p in out.ran) == ["anchoring", "default", "order", "wording"]
    assert len(fake.chat_requests) == 480
    halted = [s for s in records.read(paths, "skip") if s["cause"] == "budget_halted"]
    assert len(halted) == 8 and all("80" in s["reason"] for s in halted)
    assert sorted(r["cause"] for r in out.coverage_rows if r["status"] == "gap") == ["budget_halted"] * 8


def test_at_95_percent_the_sweep_sends_nothing(paths, fake):
    preregister(paths, v0_ids(paths))
    spend_general(paths, 0.96 * BUDGET.general_pool_eur)
    out = sweep(paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake))
    assert out.ran == [] and fake.chat_requests == [] and len(out.skipped) == 12


def test_a_second_sweep_in_the_same_month_runs_nothing_again(paths, fake):
    preregister(paths, [OPEN])
    sweep(paths, "2026-11-02", CONFIG, subject_factory=factory(fake), concurrency=8)
    again = sweep(paths, "2026-11-20", CONFIG, subject_factory=factory(fake), concurrency=8)
    assert again.already == [OPEN] and again.ran == [] and len(fake.chat_requests) == 120


def test_a_closed_series_skips_the_sweep_as_generation_retired_early(paths, fake):
    records.append(paths, "series_closed", {"date": "2026-11-01", "model_family": "claude-sonnet",
                                            "model_id": "claude-sonnet-5", "reason": "gone, no successor"})
    out = sweep(paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake))
    assert fake.chat_requests == [] and {c for _, c, _ in out.skipped} == {"series_closed_without_successor"}
    assert {r["cause"] for r in out.coverage_rows} == {"generation_retired_early"}


def test_an_unreachable_provider_skips_the_sweep_as_provider_outage(paths, fake):
    preregister(paths, v0_ids(paths))
    fake.models_script.append(Fault.status(503))
    out = sweep(paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake))
    assert fake.chat_requests == [] and {c for _, c, _ in out.skipped} == {"provider_unreachable"}
    assert {r["cause"] for r in out.coverage_rows} == {"provider_outage"}


def test_the_cli_sweeps_the_active_model(paths, fake, capsys):
    preregister(paths, [OPEN])
    code = main(["sweep", "--base-url", fake.base_url, "--date", "2026-11-02", "--quiet", "--concurrency", "8"])
    out = capsys.readouterr().out
    assert code == 0 and "sweep 2026-11 on claude-sonnet-5: 1 ran, 0 already done this month, 11 skipped" in out
    assert "not_preregistered" in out
