"""The monthly sweep on the fake provider: pre-registration, the ladder, closed series, outages, coverage.

The sweeps are of November 2026 (the second, the ninth, the twentieth), so
the clock is set to the morning of 2 November 2026: the archive a fixture
builds is admitted that month, whatever day the suite runs on.
"""
import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import dates, load_run, record_logs as records, sweep_run_id
from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.succession import load_subject_models
from llmarchive.subjects import list_models, make_subject
from llmarchive.schedule.sweep import sweep
from llmarchive.schedule import sweep_month
from measure import chain
from tests.fake_provider import Fault, decide_by_hash
from tests.instrument_helpers import PAID_BUDGET, preregister

CONFIG = load_subject_models()
OPEN = "risky_choice_framing__wording__v0"
# general pool = 100 - 6.5 - 1 = 92.5 €; a protocol is 120 calls × 0.01 € = 1.2 €
BUDGET = PAID_BUDGET   # what conftest's paid_paths is written with

pytestmark = pytest.mark.time_machine("2026-11-02T06:00:00Z")


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
        meter.charge([(f"c{i}", {"answered": True})])


def test_a_protocol_not_preregistered_is_skipped_as_protocol_confounded_and_costs_nothing(paid_paths, fake):
    preregister(paid_paths, [OPEN])
    out = sweep_month(paid_paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake),
                      concurrency=8)
    assert out.ran == [OPEN] and out.model_id == "claude-sonnet-5"
    assert len(out.skipped) == 11 and {c for _, c, _ in out.skipped} == {"not_preregistered"}
    open_prompts = {item["versions"][v] for item in registry.load_protocol(paid_paths, OPEN)["panel"]
                    for v in ("A", "A_prime", "B", "C")}
    assert len(fake.chat_requests) == 120 and {r.prompt for r in fake.chat_requests} <= open_prompts
    skips = records.read(paid_paths, "skip")
    assert len(skips) == 11 and {(s["cause"], s["condition"]) for s in skips} == {("protocol_confounded",
                                                                                  "not_preregistered")}
    assert all(s["reason"].startswith("not_preregistered:") for s in skips)
    rows = {r["protocol_id"]: r for r in out.coverage_rows}
    assert rows[OPEN]["status"] == "ran" and rows[OPEN]["period"] == "2026-11"
    assert {rows[p]["cause"] for p in v0_ids(paid_paths) if p != OPEN} == {"protocol_confounded"}
    run = load_run(paid_paths.run_dir(sweep_run_id("2026-11-02", OPEN, "claude-sonnet-5")))
    assert run.run["job"] == "full_sweep" and run.run["preregistration"]["listed"] is True
    assert "instrument_suspect" in run.measurement["flags"], "no runtime fingerprint ran that day"
    spend = budget_mod.ledger(paid_paths)
    assert len(spend) == 120 and {e["job"] for e in spend} == {"full_sweep"}


def test_the_ladder_at_80_percent_lets_only_four_guard_protocols_run(paid_paths, fake):
    preregister(paid_paths, v0_ids(paid_paths))
    spend_general(paid_paths, 0.8 * BUDGET.general_pool_eur)
    out = sweep_month(paid_paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake),
                      concurrency=8)
    lanes = {h["protocol_id"]: h["lane"] for h in registry.list_protocols(paid_paths)}
    types = {h["protocol_id"]: h["rewording_type"] for h in registry.list_protocols(paid_paths)}
    assert len(out.ran) == 4 and {lanes[p] for p in out.ran} == {"guard"}
    assert sorted(types[p] for p in out.ran) == ["anchoring", "default", "order", "wording"]
    assert len(fake.chat_requests) == 480
    halted = [s for s in records.read(paid_paths, "skip") if s["cause"] == "budget_halted"]
    assert len(halted) == 8 and all("80" in s["reason"] for s in halted)
    assert sorted(r["cause"] for r in out.coverage_rows if r["status"] == "gap") == ["budget_halted"] * 8


def test_at_95_percent_the_sweep_sends_nothing(paid_paths, fake):
    preregister(paid_paths, v0_ids(paid_paths))
    spend_general(paid_paths, 0.96 * BUDGET.general_pool_eur)
    out = sweep_month(paid_paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake))
    assert out.ran == [] and fake.chat_requests == [] and len(out.skipped) == 12


def test_a_second_sweep_in_the_same_month_runs_nothing_again(paid_paths, fake):
    preregister(paid_paths, [OPEN])
    sweep_month(paid_paths, "2026-11-02", CONFIG, subject_factory=factory(fake), concurrency=8)
    again = sweep_month(paid_paths, "2026-11-20", CONFIG, subject_factory=factory(fake), concurrency=8)
    assert again.already == [OPEN] and again.ran == [] and len(fake.chat_requests) == 120


def test_a_closed_series_skips_the_sweep_as_generation_retired_early(paid_paths, fake):
    records.append(paid_paths, "series_closed", {"date": "2026-11-01", "model_family": "claude-sonnet",
                                            "model_id": "claude-sonnet-5", "reason": "gone, no successor"})
    out = sweep_month(paid_paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake))
    assert fake.chat_requests == [] and {c for _, c, _ in out.skipped} == {"series_closed_without_successor"}
    assert {r["cause"] for r in out.coverage_rows} == {"generation_retired_early"}


def test_an_unreachable_provider_skips_the_sweep_as_provider_outage(paid_paths, fake):
    preregister(paid_paths, v0_ids(paid_paths))
    fake.models_script.append(Fault.status(503))
    out = sweep_month(paid_paths, "2026-11-02", CONFIG, subject_factory=factory(fake), provider_check=check(fake))
    assert fake.chat_requests == [] and {c for _, c, _ in out.skipped} == {"provider_unreachable"}
    assert {r["cause"] for r in out.coverage_rows} == {"provider_outage"}


def test_the_cli_sweeps_the_active_model(paid_paths, fake, capsys):
    preregister(paid_paths, [OPEN])
    code = main(["sweep", "--base-url", fake.base_url, "--date", "2026-11-02", "--quiet", "--concurrency", "8"])
    out = capsys.readouterr().out
    assert code == 0 and "sweep 2026-11 on claude-sonnet-5: 1 ran, 0 already done this month, 11 skipped" in out
    assert "not_preregistered" in out


# -- a provider outage mid-sweep, and the order of cuts ------------------------------------------

def no_sleep_factory(fake):
    return lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model,
                                                  base_url=fake.base_url, max_attempts=2,
                                                  sleep=lambda seconds: None)


def test_an_outage_mid_sweep_leaves_the_run_interrupted_names_the_cause_and_the_next_sweep_resumes(paid_paths, fake):
    second = "base_rate_neglect__wording__v0"
    preregister(paid_paths, [OPEN, second])
    answered = {"n": 0}
    respond = decide_by_hash()

    def outage_after_50(request):
        answered["n"] += 1
        return Fault.status(503) if answered["n"] > 50 else respond(request)

    fake.responder = outage_after_50
    out = sweep_month(paid_paths, "2026-11-02", CONFIG, subject_factory=no_sleep_factory(fake), concurrency=1)
    assert out.ran == [] and out.halted and "provider_outage" in out.halted
    folders = [paid_paths.run_dir(sweep_run_id("2026-11-02", p, "claude-sonnet-5")) for p in (OPEN, second)]
    stopped = [load_run(f) for f in folders if f.exists()]
    assert len(stopped) == 1 and stopped[0].run["status"] == "interrupted"
    assert stopped[0].run["interruption"]["cause"] == "provider_outage" and len(stopped[0].trials) == 50
    assert all(t["outcome"] != "blocked_upstream" for t in stopped[0].trials), "an outage is never data"
    outage = [s for s in records.read(paid_paths, "skip") if s.get("condition") == "provider_unreachable"]
    assert sorted(s["protocol_id"] for s in outage) == sorted([OPEN, second]), "the stopped run and the rest"
    assert {s["cause"] for s in outage} == {"provider_outage"}

    fake.responder = respond                                     # the provider is back
    again = sweep_month(paid_paths, "2026-11-09", CONFIG, subject_factory=no_sleep_factory(fake), concurrency=4)
    assert sorted(again.ran) == sorted([OPEN, second]) and again.halted is None
    for folder in folders:
        run = load_run(folder)
        keys = [(t["item_id"], t["version"], t["replicate_index"]) for t in run.trials]
        assert run.run["status"] == "complete" and len(keys) == 120 == len(set(keys))
    assert len(fake.chat_requests) == 50 + 2 + 190, "50 answered, the failing call's two attempts, the rest once"


def seed_measured_calls(paths, budget, calls, eur_each):
    """``calls`` usage-charged sweep calls costing ``eur_each`` (input tokens only, at the input price)."""
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("sweep", "scenario", "general", 0.0001),
                                  "measured", "anthropic", "m", budget)
    start = len(meter.keys)
    tokens = round(eur_each * 1e6 / budget.prices_eur_per_mtok["input"])
    meter.charge([(f"c{start + i}", {"answered": True, "input_tokens": tokens, "output_tokens": 0})
                  for i in range(calls)])


PRICED = budget_mod.Budget(12.5, 6.5, 1.0, {"scenario": 0.0001, "fingerprint": 0.001},
                           prices_eur_per_mtok={"input": 1.0, "output": 5.0})


def test_a_measured_cost_above_the_pool_cuts_protocols_then_frequency_then_the_tier_each_a_dated_record(paid_paths):
    # general pool €5; a month of fingerprints 720 × €0.001; protocols of 120 calls at a measured €0.01
    seed_measured_calls(paid_paths, PRICED, 150, 0.01)
    day = f"{dates.utc_month()}-02"
    cuts = budget_mod.review_degradation(paid_paths, PRICED, day, 120)
    # 12 (15.12 €) → 8 (10.32 €) → 6 (7.92 €) → 6 quarterly (3.12 €) fits in 5 €
    assert [(c["from_level"], c["to_level"], c["step"]) for c in cuts] == \
        [(0, 1, "protocols"), (1, 2, "protocols"), (2, 3, "frequency")]
    assert [c["protocols"] for c in cuts] == [8, 6, 6] and cuts[-1]["frequency"] == "quarterly"
    assert all(c["date"] == day and c["record_type"] == "budget_cut" for c in cuts)
    assert chain.verify(budget_mod.budget_cuts(paid_paths)) == 3
    assert budget_mod.review_degradation(paid_paths, PRICED, day, 120) == [], "a decision is taken once"

    seed_measured_calls(paid_paths, PRICED, 2000, 0.05)               # dearer still: only the tier is left
    [tier] = budget_mod.review_degradation(paid_paths, PRICED, day, 120)
    assert (tier["step"], tier["tier_drop"]) == ("tier", True) and "Haiku-class" in tier["reason"]
    assert not budget_mod.sweep_due(budget_mod.current_level(paid_paths), "2027-01")


def test_without_enough_measured_calls_nothing_is_cut(paid_paths):
    seed_measured_calls(paid_paths, PRICED, budget_mod.MIN_MEASURED_CALLS - 1, 1.0)
    assert budget_mod.review_degradation(paid_paths, PRICED, f"{dates.utc_month()}-02", 120) == []


@pytest.mark.parametrize("day, quarter_starts", [
    pytest.param("2027-01-02", True, marks=pytest.mark.time_machine("2027-01-02T06:00:00Z"),
                 id="a-quarters-first-month"),
    pytest.param("2026-11-02", False, marks=pytest.mark.time_machine("2026-11-02T06:00:00Z"),
                 id="another-month"),
])
def test_the_sweep_applies_the_latest_cut_and_names_it_in_every_skip(paid_paths, fake, day, quarter_starts):
    budget_mod.write_budget(paid_paths, PRICED)
    preregister(paid_paths, v0_ids(paid_paths))
    seed_measured_calls(paid_paths, PRICED, 150, 0.0095)              # 12 → 8 → 6 monthly (7.56 € > 5) → quarterly
    assert day[:7] == dates.utc_month(), "the calls were measured in the sweep's month"
    kept = "risky_choice_framing__wording__v0"                   # an open protocol: always among the 6 kept
    dropped = "sunk_cost_fallacy__order__v0"
    out = sweep(paid_paths, day, CONFIG, subject_factory=no_sleep_factory(fake), concurrency=8, only={kept, dropped})
    cuts = budget_mod.budget_cuts(paid_paths)
    assert [c["to_level"] for c in cuts] == [1, 2, 3]
    reasons = {pid: reason for pid, condition, reason in out.skipped if condition == "budget_refused"}
    assert all(f"budget_cut of {day}" in r for r in reasons.values())
    assert budget_mod.sweep_due(budget_mod.LEVELS[3], day[:7]) is quarter_starts
    if quarter_starts:                                           # a quarter's first month: 6 protocols run
        assert out.ran == [kept] and list(reasons) == [dropped]
        assert len(fake.chat_requests) == 120
    else:                                                        # any other month: the quarterly sweep waits
        assert out.ran == [] and sorted(reasons) == sorted([kept, dropped]) and fake.chat_requests == []
    skips = [s for s in records.read(paid_paths, "skip") if s["protocol_id"] in reasons]
    assert {s["cause"] for s in skips} == {"budget_halted"}
