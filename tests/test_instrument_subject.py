"""The subject fingerprint against the fake provider (real HTTP, the Anthropic Messages dialect)."""
import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import record_logs as records
from llmarchive.cli import main
from llmarchive.instrument.prompts import SUBJECT_ITEMS, SUBJECT_MAX_TOKENS, subject_prompt
from llmarchive.instrument import subject_fingerprint
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.http import RetryPolicy
from tests.fake_provider import Fault, FakeProvider, Reply

TRUTH = {question: truth for _, question, truth in SUBJECT_ITEMS}
BUDGET = budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001})


def knows_the_facts(request):
    question = next(q for q in TRUTH if request.prompt.startswith(q))
    return Reply.text(f"Let me think.\nDECISION: {TRUTH[question]}", model="claude-sonnet-5-20260101")


@pytest.fixture
def paths(paths, monkeypatch):
    """The shared empty archive, plus this module's budget and (fake) key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-subject")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    budget_mod.write_budget(paths, BUDGET)
    return paths


def subject(fake, **kw):
    return AnthropicSubject("claude-sonnet-5", SUBJECT_MAX_TOKENS, base_url=fake.base_url, **kw)


def test_a_model_that_knows_the_facts_scores_24_of_24_and_every_call_is_charged(paths):
    with FakeProvider(knows_the_facts) as fake:
        outcome = subject_fingerprint(paths, "2026-11-02", subject(fake))
        bodies = [r.body for r in fake.chat_requests]
    r = outcome.record
    assert (r["correct"], r["total"], r["answered_yes"], r["answered_no"], r["invalid"]) == (24, 24, 12, 12, 0)
    assert r["returned_model_id"] == "claude-sonnet-5-20260101" and r["subject_model_id"] == "claude-sonnet-5"
    assert [i["item_id"] for i in r["items"]] == [i for i, _, _ in SUBJECT_ITEMS]
    assert all(b["max_tokens"] == 64 and b["thinking"] == {"type": "disabled"} for b in bodies)
    spend = budget_mod.ledger(paths)
    assert len(spend) == 24 and {(e["job"], e["category"]) for e in spend} == {("subject_fingerprint", "fingerprint")}


def test_a_yes_habit_scores_half_not_full_marks(paths):
    with FakeProvider(lambda request: Reply.text("DECISION: yes")) as fake:
        r = subject_fingerprint(paths, "2026-11-02", subject(fake)).record
    assert (r["correct"], r["answered_yes"]) == (12, 24)


def test_unreadable_answers_are_counted_as_invalid_not_as_wrong_guesses(paths):
    with FakeProvider(knows_the_facts) as fake:
        fake.script(Reply.max_tokens("Let me weigh"), Reply.refusal(), Reply.text("yes, clearly"))
        r = subject_fingerprint(paths, "2026-11-02", subject(fake)).record
    assert r["invalid"] == 3 and r["correct"] == 21
    assert sorted(i["outcome"] for i in r["items"] if not i["correct"]) == ["refused", "truncated", "unparseable"]


def test_an_unreachable_provider_is_a_provider_outage_not_a_fingerprint(paths):
    with FakeProvider(lambda request: Fault.status(529)) as fake:
        outcome = subject_fingerprint(paths, "2026-11-02", subject(fake, retry=RetryPolicy(max_attempts=1)))
    assert outcome.record is None and records.read(paths, "subject_fingerprint") == []
    assert (outcome.skip["cause"], outcome.skip["condition"]) == ("provider_outage", "provider_unreachable")
    assert {e["cost_eur"] for e in budget_mod.ledger(paths)} == {0.0}, "unanswered calls cost nothing"


def test_a_refused_key_is_recorded_as_needing_a_person(paths):
    with FakeProvider(knows_the_facts, require_key="fake-credential-the-real-one") as fake:
        outcome = subject_fingerprint(paths, "2026-11-02", subject(fake))
    assert outcome.record is None
    assert (outcome.skip["cause"], outcome.skip["condition"]) == ("human_absent", "provider_refused_request")
    assert "fake-credential-subject" not in outcome.skip["reason"]


def test_a_day_already_fingerprinted_is_not_asked_or_billed_again(paths):
    with FakeProvider(knows_the_facts) as fake:
        first = subject_fingerprint(paths, "2026-11-02", subject(fake))
        again = subject_fingerprint(paths, "2026-11-02", subject(fake))
        assert len(fake.chat_requests) == 24
    assert again.already and again.record == first.record


@pytest.mark.time_machine("2026-11-03T06:00:00Z")
def test_the_cli_asks_the_active_model(paths, capsys):
    with FakeProvider(knows_the_facts) as fake:
        code = main(["instrument", "subject-fingerprint", "--base-url", fake.base_url, "--date", "2026-11-03"])
        assert {r.body["model"] for r in fake.chat_requests} == {"claude-sonnet-5"}
    out = capsys.readouterr().out
    assert code == 0 and "24/24 correct (yes 12, no 12, invalid 0)" in out


# -- a day where not every call is answered, and the money of every call that left -------------------------

PRICED = budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001},
                           prices_eur_per_mtok={"input": 2.8, "output": 14.0})
ONE_ITEM = SUBJECT_ITEMS[5][1]   # the question whose call the provider does not answer


def knows_the_facts_but_one(fault):
    def respond(request):
        return fault if request.prompt.startswith(ONE_ITEM) else knows_the_facts(request)
    return respond


def no_wait(seconds):
    return None


def charges_by_item(paths):
    return {e["call_key"].rsplit("/", 1)[1]: e for e in budget_mod.ledger(paths)}


def test_one_unanswered_call_makes_the_day_a_skip_and_every_call_that_left_is_charged(paths):
    budget_mod.write_budget(paths, PRICED)
    retry = RetryPolicy(max_attempts=2)
    with FakeProvider(knows_the_facts_but_one(Fault.malformed())) as fake:
        outcome = subject_fingerprint(paths, "2026-11-02", subject(fake, retry=retry, sleep=no_wait))
        billed = dict(fake.billed)
    assert outcome.record is None and records.read(paths, "subject_fingerprint") == []
    assert (outcome.skip["cause"], outcome.skip["condition"]) == ("provider_outage", "provider_unreachable")
    assert "1 of the 24 calls" in outcome.skip["reason"]
    charges = charges_by_item(paths)
    assert len(charges) == 24
    lost_id = SUBJECT_ITEMS[5][0]
    lost = charges.pop(lost_id)
    prompt_bytes = len(subject_prompt(ONE_ITEM).encode("utf-8"))
    assert (lost["answered"], lost["trial"], lost["attempts"], lost["unknown_attempts"]) == (False, False, 2, 2)
    assert lost["cost_eur"] == pytest.approx(2 * PRICED.attempt_worst_case(prompt_bytes, SUBJECT_MAX_TOKENS))
    assert all(e["answered"] and e["basis"] == "usage" and e["cost_eur"] > 0 for e in charges.values())
    assert budget_mod.open_reservations(budget_mod.ledger_entries(paths)) == [], "every reservation is settled"
    total = sum(e["cost_eur"] for e in budget_mod.ledger(paths))
    assert total >= PRICED.usage_cost(billed["input_tokens"], billed["output_tokens"]), "never below the bill"


def test_a_day_asked_again_after_a_skip_is_recorded_and_charged_again(paths):
    with FakeProvider(knows_the_facts_but_one(Fault.status(500))) as fake:
        first = subject_fingerprint(paths, "2026-11-02", subject(fake, retry=RetryPolicy(max_attempts=1)))
        fake.responder = knows_the_facts
        second = subject_fingerprint(paths, "2026-11-02", subject(fake))
        assert len(fake.chat_requests) == 48
    assert first.record is None and first.skip["condition"] == "provider_unreachable"
    assert second.record["correct"] == 24
    charges = budget_mod.ledger(paths)
    assert len(charges) == 48 and sum(e["answered"] for e in charges) == 47
    assert [e["cost_eur"] for e in charges if not e["answered"]] == [0.0], "an HTTP error answer is not billed"


def test_a_refused_call_does_not_lose_the_charges_of_the_answered_ones(paths):
    with FakeProvider(knows_the_facts_but_one(Fault.status(404, error_type="not_found_error"))) as fake:
        outcome = subject_fingerprint(paths, "2026-11-02", subject(fake))
    assert outcome.record is None
    assert (outcome.skip["cause"], outcome.skip["condition"]) == ("human_absent", "provider_refused_request")
    charges = budget_mod.ledger(paths)
    assert sum(e["answered"] for e in charges) == 23 and len(charges) == 24


@pytest.mark.time_machine("2026-11-02T06:00:00Z")   # the days' spend lands in their own month, the one judged
def test_fingerprint_spending_uses_the_heartbeat_reserve_after_the_general_pool_and_stops_at_both(paths):
    small = budget_mod.Budget(1.0, 0.5, 0.1, {"scenario": 0.01, "fingerprint": 0.01})   # general pool €0.40
    budget_mod.write_budget(paths, small)
    with FakeProvider(knows_the_facts) as fake:
        days = [subject_fingerprint(paths, f"2026-11-0{d}", subject(fake)) for d in (2, 3, 4)]
        asked = len(fake.chat_requests)
    assert [o.record is not None for o in days] == [True, True, False]
    assert asked == 48, "the refused day sent nothing"
    assert (days[2].skip["cause"], days[2].skip["condition"]) == ("budget_halted", "budget_refused")
    # Concurrent calls settle in the order they finish, and a charge counts the worst case of the calls still in
    # flight, so on the day the general pool runs out how many of its calls it takes depends on timing.  What
    # must hold: the first day (24 calls, €0.24) is all general, the reserve is reached only after that, the
    # general pool never holds more than its 40 calls, and nothing else is drawn on.
    pools = [e["pool"] for e in budget_mod.ledger(paths)]
    assert pools[:24] == ["general"] * 24 and "heartbeat" in pools[24:]
    assert pools.count("general") <= 40 and set(pools) == {"general", "heartbeat"}
    state = budget_mod.ladder_state(paths, small)
    assert state.spent_eur["general"] <= small.general_pool_eur + 1e-9
    assert state.spent_eur["heartbeat"] <= small.heartbeat_reserve_eur + 1e-9
    assert state.spent_eur["bridge"] == 0.0


def test_the_paid_subject_fingerprint_asset_says_it_is_paid_manual_and_what_it_costs(paths, instance):
    from assets.instrument import subject_fingerprint as asset
    from tests.dagster_helpers import materialization_metadata, resources, run, today

    [text] = asset.descriptions_by_key.values()
    assert text.startswith("PAID.") and "Manual" in text
    assert "24 calls a day" in text and "24 × rates_eur_per_call.fingerprint" in text
    with FakeProvider(knows_the_facts) as fake:
        result = run(["subject_fingerprint"], resources(paths, fake.base_url), instance, partition_key=today())
    meta = materialization_metadata(result, "subject_fingerprint")
    assert (meta["planned_calls"], meta["rate_eur_per_call"]) == (24, 0.001)
    assert meta["estimated_cost_eur"] == pytest.approx(0.024) and meta["correct"] == 24


def test_a_fingerprint_attempt_past_the_heartbeat_reserve_is_refused_before_it_leaves(paths):
    small = budget_mod.Budget(1.0, 0.5, 0.1, {"scenario": 0.01, "fingerprint": 0.01})   # general €0.40
    auth = budget_mod.Authorization("subject_fingerprint", "fingerprint", "general", 0.01)
    meter = budget_mod.SpendMeter(paths, auth, "fp-cap", "anthropic", "m", small)
    meter.charge([(f"item-{i}", {"answered": True}) for i in range(49)])   # €0.40 general + €0.09 heartbeat
    assert meter.reserve("item-49", "1", 1, 40, SUBJECT_MAX_TOKENS)["pool"] == "heartbeat"
    with pytest.raises(budget_mod.BudgetHalted, match="heartbeat pool"):
        meter.reserve("item-50", "1", 1, 40, SUBJECT_MAX_TOKENS)


@pytest.mark.time_machine("2026-12-05T06:00:00Z")
def test_the_cli_refuses_a_paid_day_of_a_month_that_has_ended_before_any_call(paths, capsys):
    with FakeProvider(knows_the_facts) as fake:
        code = main(["instrument", "subject-fingerprint", "--base-url", fake.base_url, "--date", "2026-11-28"])
        assert fake.chat_requests == []
    err = capsys.readouterr().err
    assert code == 2 and "2026-11 has ended" in err and len(err.strip().splitlines()) == 1
    assert records.read(paths, "subject_fingerprint") == [] and records.read(paths, "skip") == []
