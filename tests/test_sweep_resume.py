"""A sweep resumed after an interruption keeps the decisions of its first pass (issue 17 §2).

The fake provider answers (real HTTP); the budget cut comes from measured
usage-charged calls, as in production; the clock is the story's month.
"""
import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import complete_runs, record_logs as records
from llmarchive.protocols import registry
from llmarchive.succession import load_subject_models
from llmarchive.subjects import make_subject
from llmarchive.schedule import sweep_month
from tests.fake_provider import Fault, decide_by_hash
from tests.instrument_helpers import preregister

pytestmark = pytest.mark.time_machine("2026-11-02T06:00:00Z")

CONFIG = load_subject_models()
DAY = "2026-11-02"
# General pool 12 €; a month of subject fingerprints 720 × 0.001 €. At a measured 0.01 € a call a protocol
# (120 calls) costs 1.20 €: 12 protocols (15.12 €) do not fit, 8 (10.32 €) do — one cut, to 8 protocols.
PRICED = budget_mod.Budget(19.5, 6.5, 1.0, {"scenario": 0.0001, "fingerprint": 0.001},
                           prices_eur_per_mtok={"input": 1.0, "output": 5.0})


def seed_measured_calls(paths, calls: int, eur_each: float) -> None:
    """``calls`` usage-charged sweep calls costing ``eur_each`` (input tokens only, at the input price)."""
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("full_sweep", "scenario", "general", 0.0001),
                                  "measured", "anthropic", "m", PRICED)
    tokens = round(eur_each * 1e6 / PRICED.prices_eur_per_mtok["input"])
    meter.charge([(f"c{i}", {"answered": True, "input_tokens": tokens, "output_tokens": 0})
                  for i in range(calls)])


def factory(fake):
    return lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model,
                                                  base_url=fake.base_url, max_attempts=2, sleep=lambda s: None)


def v0_ids(paths):
    return sorted(h["protocol_id"] for h in registry.list_protocols(paths) if h["protocol_id"].endswith("__v0"))


def sweep_runs_of_the_month(paths) -> set[str]:
    return {r["protocol_id"] for r in complete_runs(paths) if r.get("job") == "full_sweep"
            and str(r.get("run_date")).startswith("2026-11")}


def test_a_budget_cut_to_8_protocols_holds_when_an_interrupted_sweep_is_resumed(paid_paths, fake):
    budget_mod.write_budget(paid_paths, PRICED)
    preregister(paid_paths, v0_ids(paid_paths))
    seed_measured_calls(paid_paths, 150, 0.01)
    answered = {"n": 0}
    respond = decide_by_hash()

    def outage_after_300(request):       # two and a half protocols, then the provider goes away
        answered["n"] += 1
        return Fault.status(503) if answered["n"] > 300 else respond(request)

    fake.responder = outage_after_300
    first = sweep_month(paid_paths, DAY, CONFIG, subject_factory=factory(fake), concurrency=8)
    [cut] = budget_mod.budget_cuts(paid_paths)
    assert (cut["to_level"], cut["protocols"]) == (1, 8)
    kept = cut["kept_protocols"]
    assert len(kept) == 8 and set(kept) <= set(v0_ids(paid_paths)), "the choice is recorded with the decision"
    assert first.halted and 0 < len(sweep_runs_of_the_month(paid_paths)) < 8

    fake.responder = respond             # the provider is back: the next sweep this month resumes
    second = sweep_month(paid_paths, DAY, CONFIG, subject_factory=factory(fake), concurrency=8)
    assert second.halted is None
    ran = sweep_runs_of_the_month(paid_paths)
    assert ran == set(kept), f"{len(ran)} protocols ran under a cut to 8"
    assert budget_mod.budget_cuts(paid_paths) == [cut], "the decision is not taken again"
    refused = {s["protocol_id"] for s in records.read(paid_paths, "skip")
               if s.get("condition") == "budget_refused" and s["date"] == DAY}
    assert refused == set(v0_ids(paid_paths)) - set(kept)
    rows = {r["protocol_id"]: r for r in records.read(paid_paths, "coverage") if r["period"] == "2026-11"}
    assert {p for p, r in rows.items() if r["status"] == "ran"} == set(kept)
    assert {r["cause"] for p, r in rows.items() if p not in kept} == {"budget_halted"}


def test_a_cut_recorded_without_its_list_is_applied_to_the_whole_programme_on_every_pass(paid_paths):
    """Older cut records carry no list: the rule then ranks every protocol of the month, run or not."""
    headers = [h for h in registry.list_protocols(paid_paths) if h["protocol_id"].endswith("__v0")]
    cut = {"to_level": 1}
    everything = budget_mod.kept_protocols(cut, headers)
    assert len(everything) == 8
    assert budget_mod.kept_protocols({"to_level": 1, "kept_protocols": everything[:3]}, headers) == everything[:3]
