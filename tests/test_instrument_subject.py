"""The subject fingerprint against the fake provider (real HTTP, the Anthropic Messages dialect)."""
import pytest

from llmarchive import budget as budget_mod
from llmarchive import records
from llmarchive.cli import main
from llmarchive.instrument.prompts import SUBJECT_ITEMS, SUBJECT_MAX_TOKENS
from llmarchive.instrument.subject import subject_fingerprint
from llmarchive.paths import ArchivePaths
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.http import RetryPolicy
from tests.fake_provider import Fault, FakeProvider, Reply

TRUTH = {question: truth for _, question, truth in SUBJECT_ITEMS}
BUDGET = budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001})


def knows_the_facts(request):
    question = next(q for q in TRUTH if request.prompt.startswith(q))
    return Reply.text(f"Let me think.\nDECISION: {TRUTH[question]}", model="claude-sonnet-5-20260101")


@pytest.fixture
def paths(archive_home, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-subject")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    paths = ArchivePaths.from_env().ensure()
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


def test_the_cli_asks_the_active_model(paths, capsys):
    with FakeProvider(knows_the_facts) as fake:
        code = main(["instrument", "subject-fingerprint", "--base-url", fake.base_url, "--date", "2026-11-03"])
        assert {r.body["model"] for r in fake.chat_requests} == {"claude-sonnet-5"}
    out = capsys.readouterr().out
    assert code == 0 and "24/24 correct (yes 12, no 12, invalid 0)" in out
