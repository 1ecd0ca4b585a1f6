"""Every fault a provider can throw at a run, against the fake provider over real HTTP.

A fault is either an answer — recorded as its outcome — or no answer at all,
which is not a trial: the run stops as interrupted with the slot open, says
so in ``run.json``, and a resume after the fault clears completes the run
with exactly the slots of an uninterrupted run, none twice.  The ledger
charges answered calls from their usage and attempts of unknown fate at
their worst case; back-off waits go through an injected sleep (none is slept).
"""
import contextlib
import json
import resource

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import load_run, read_jsonl
from llmarchive.run import RunInterrupted, RunSettings, run_protocol, schedule
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.http import RetryPolicy
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from measure import chain
from tests.fake_provider import Fault, FakeProvider, Reply, decide_by_hash
from tests.protocol_fixtures import make_protocol
from tests.retry_helpers import Waits

KEY = "fake-credential-fault-matrix"
ATTEMPTS = 3
POLICY = RetryPolicy(max_attempts=ATTEMPTS, base_delay_s=1.0, max_delay_s=8.0)
PRICES = {"input": 3.0, "output": 15.0}          # € per million tokens
BUDGET = budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}, prices_eur_per_mtok=PRICES)
FAULT_AT = 2                                      # the third call of the run meets the fault


@pytest.fixture
def paths(paths, monkeypatch):
    """The shared empty archive, plus this module's budget and both providers' keys."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    budget_mod.write_budget(paths, BUDGET)
    return paths


@pytest.fixture
def fake():
    """Not the shared ``fake``: this one answers 401 unless the request carries this module's key."""
    with FakeProvider(decide_by_hash(), require_key=KEY) as server:
        yield server


def subject(kind, fake, waits, timeout_s=2.0):
    cls = AnthropicSubject if kind == "anthropic" else OpenAICompatSubject
    return cls("claude-test-1", 64, base_url=fake.base_url, retry=POLICY, timeout_s=timeout_s, sleep=waits)


def run(paths, protocol, subject, run_id="r1"):
    auth = budget_mod.authorize_run(paths, BUDGET, protocol, "manual", len(schedule(protocol)))
    return run_protocol(paths, protocol, subject, RunSettings(run_id=run_id, run_date="2026-11-04"),
                        authorization=auth, budget=BUDGET)


def slots(trials):
    return sorted((t["item_id"], t["version"], t["replicate_index"]) for t in trials)


def planned_slots(protocol):
    return sorted(p.identity for p in schedule(protocol))


# fault → (the failure the subject reports, whether the provider may have billed each attempt)
NO_ANSWER = {
    "timeout": (lambda: Fault.slow(0.6), "timeout", True),
    "reset": (Fault.reset, "connection", True),
    "429 with retry-after": (lambda: Fault.status(429, retry_after=7), "rate_limited", False),
    "429 without retry-after": (lambda: Fault.status(429), "rate_limited", False),
    "500": (lambda: Fault.status(500), "server_error", False),
    "529": (lambda: Fault.status(529), "overloaded", False),
    "malformed 200": (Fault.malformed, "malformed", True),
}


@pytest.mark.parametrize("name", list(NO_ANSWER))
def test_a_call_that_never_gets_an_answer_stops_the_run_with_its_slot_open_and_a_resume_completes_it(
        paths, fake, name):
    make_fault, failure, billing_unknown = NO_ANSWER[name]
    protocol = make_protocol(n_items=2, n_per_scenario=1)          # 8 slots, sent in schedule order
    plan = schedule(protocol)
    waits = Waits()
    answers = iter([None] * FAULT_AT + [make_fault() for _ in range(ATTEMPTS)])

    def until_the_fault_clears(request):
        return next(answers, None) or decide_by_hash()(request)

    fake.responder = until_the_fault_clears
    with pytest.raises(RunInterrupted, match="provider_outage") as stopped:
        run(paths, protocol, subject("anthropic", fake, waits, timeout_s=0.2))
    assert "still open" in str(stopped.value) and "resume" in str(stopped.value)

    folder = load_run(paths.run_dir("r1"))
    assert folder.run["status"] == "interrupted" and folder.measurement is None
    interruption = folder.run["interruption"]
    assert (interruption["cause"], interruption["condition"], interruption["slot"]) == \
        ("provider_outage", "provider_unreachable", plan[FAULT_AT].key)
    assert interruption["detail"].startswith(failure) and interruption["at"].endswith("Z")
    assert folder.run["sessions"][-1]["interruption"] == interruption
    assert slots(folder.trials) == sorted(p.identity for p in plan[:FAULT_AT]), "no trial for the unanswered call"
    assert all(t["outcome"] != "blocked_upstream" for t in folder.trials)
    if name == "429 with retry-after":
        assert waits == [7.0] * (ATTEMPTS - 1), "the provider's retry-after is honoured (and not slept in a test)"
    else:
        assert len(waits) == ATTEMPTS - 1

    entries = budget_mod.ledger_entries(paths)
    assert budget_mod.open_reservations(entries) == [], "the stopped call's attempts are settled"
    [unanswered] = [e for e in budget_mod.ledger(paths) if not e["trial"]]
    worst = [e["worst_case_eur"] for e in entries if e.get("call_key") == plan[FAULT_AT].key
             and e["record_type"] == budget_mod.RESERVATION]
    assert len(worst) == ATTEMPTS
    assert unanswered["cost_eur"] == pytest.approx(sum(worst) if billing_unknown else 0.0)

    sent = len(fake.chat_requests)
    result = run(paths, protocol, subject("anthropic", fake, waits))
    assert result.complete and result.called == len(plan) - FAULT_AT
    assert len(fake.chat_requests) - sent == len(plan) - FAULT_AT, "only the open slots are called"
    assert result.run["interruption"] is None and [s["outcome"] for s in result.run["sessions"]] == \
        ["interrupted", "complete"]
    trials = read_jsonl(paths.run_dir("r1") / "trials.jsonl")
    assert chain.verify(trials) == len(plan)
    assert slots(trials) == planned_slots(protocol) and len(set(slots(trials))) == len(plan)
    assert budget_mod.open_reservations(budget_mod.ledger_entries(paths)) == []


RECORDED = {
    "a provider content block": ("openai", Fault.content_filter, "blocked_upstream"),
    "max_tokens": ("anthropic", Reply.max_tokens, "truncated"),
    "empty text": ("anthropic", Reply.empty, "empty"),
    "a refusal": ("anthropic", Reply.refusal, "refused"),
}


@pytest.mark.parametrize("name", list(RECORDED))
def test_an_answer_that_is_not_a_decision_is_recorded_as_its_outcome_and_the_run_completes(paths, fake, name):
    kind, make_answer, outcome = RECORDED[name]
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    plan = schedule(protocol)
    waits = Waits()
    fake.script(*[Reply.text("Weighing.\nDECISION: A")] * FAULT_AT, make_answer())
    result = run(paths, protocol, subject(kind, fake, waits))
    assert result.complete and result.run["interruption"] is None
    got = {t["trial_index"]: t for t in result.trials}
    assert got[FAULT_AT]["outcome"] == outcome and got[FAULT_AT]["attempts"] == 1 and waits == []
    assert [t["outcome"] for i, t in got.items() if i != FAULT_AT].count(outcome) == 0
    assert slots(result.trials) == planned_slots(protocol)

    again = run(paths, protocol, subject(kind, fake, waits))
    assert again.called == 0 and len(fake.chat_requests) == len(plan), "a recorded outcome is never re-sent"
    assert again.measurement == result.measurement


def test_only_the_providers_own_block_is_blocked_upstream_in_the_outcome_table():
    from llmarchive.subjects import base

    assert base.STOP_REASONS["openai"]["content_filter"] == "blocked_upstream"
    blocked = [(provider, reason) for provider, table in base.STOP_REASONS.items()
               for reason, outcome in table.items() if outcome == "blocked_upstream"]
    assert blocked == [("openai", "content_filter")]


def test_the_ledger_charges_an_answered_call_from_its_reported_usage(paths, fake):
    protocol = make_protocol(n_items=1, n_per_scenario=1)
    fake.script(*[Reply.text("DECISION: A", input_tokens=1000, output_tokens=200)] * 4)
    result = run(paths, protocol, subject("anthropic", fake, Waits()))
    charges = budget_mod.ledger(paths)
    assert {e["basis"] for e in charges} == {"usage"} and len(charges) == 4
    assert all(e["cost_eur"] == pytest.approx((1000 * 3.0 + 200 * 15.0) / 1e6) for e in charges)
    assert result.run["cost_charged_eur"] == pytest.approx(4 * 0.006) and result.run["cost_worst_case_eur"] == 0
    reservations = [e for e in budget_mod.ledger_entries(paths) if e["record_type"] == budget_mod.RESERVATION]
    prompt_bytes = len(protocol["panel"][0]["versions"]["A"].encode("utf-8"))
    assert {e["max_tokens"] for e in reservations} == {64}
    assert reservations[0]["worst_case_eur"] == pytest.approx(
        ((prompt_bytes + budget_mod.PROMPT_FRAMING_TOKENS) * 3.0 + 64 * 15.0) / 1e6, rel=0.05)


def test_a_run_stops_before_a_call_whose_worst_case_would_pass_the_pools_cap(paths, fake):
    protocol = make_protocol(n_items=2, n_per_scenario=1)
    tight = budget_mod.Budget(7.5005, 6.5, 1.0, {"scenario": 0.00001, "fingerprint": 0.00001},
                              prices_eur_per_mtok={"input": 100.0, "output": 1000.0})   # general pool: €0.0005
    budget_mod.write_budget(paths, tight)
    auth = budget_mod.authorize_run(paths, tight, protocol, "manual", 8)
    with pytest.raises(RunInterrupted, match="budget_halted"):
        run_protocol(paths, protocol, subject("anthropic", fake, Waits()),
                     RunSettings(run_id="r1", run_date="2026-11-04"), authorization=auth, budget=tight)
    folder = load_run(paths.run_dir("r1"))
    assert folder.run["interruption"]["condition"] == "budget_refused"
    state = budget_mod.ladder_state(paths, tight)
    assert state.spent_eur["general"] <= tight.general_pool_eur, "charged + worst case never passes the cap"
    assert len(fake.chat_requests) == len(folder.trials) < 8


# -- a write that fails mid-run ----------------------------------------------------------------

@contextlib.contextmanager
def file_size_limit(limit_bytes: int):
    """A real full disk for this process: no file may grow past ``limit_bytes`` (RLIMIT_FSIZE).

    A write that would cross the limit is cut short by the kernel and the
    next one fails with EFBIG — the partial write a full disk produces.
    Python ignores SIGXFSZ, so the process survives to handle the error.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_trial_write_that_fails_stops_the_run_and_the_log_reopens_cleanly(paths, fake, concurrency):
    protocol = make_protocol(n_items=3, n_per_scenario=1)       # 12 slots
    long_answer = " ".join(["considering-" + "x" * 80] * 60) + "\nDECISION: A"   # ~5 kB, 62 tokens
    fake.responder = lambda request: Reply.text(long_answer)
    settings = RunSettings(run_id="r1", run_date="2026-11-04", concurrency=concurrency)
    auth = budget_mod.authorize_run(paths, BUDGET, protocol, "manual", 12)
    with file_size_limit(14_000):                                # room for two trials at most
        with pytest.raises(RunInterrupted, match="write_failed") as stopped:
            run_protocol(paths, protocol, subject("anthropic", fake, Waits()), settings, authorization=auth,
                         budget=BUDGET)
    assert "trial log" in str(stopped.value) and "still open" in str(stopped.value)
    run_json = json.loads((paths.run_dir("r1") / "run.json").read_text())
    assert run_json["status"] == "interrupted" and run_json["interruption"]["cause"] == "write_failed"
    log = paths.run_dir("r1") / "trials.jsonl"
    written = log.read_bytes()
    # Under load the writer may group the first trials into one write that fails whole: then nothing is kept.
    assert written == b"" or written.endswith(b"\n"), "the failed write was cut back out: no half record is left"
    kept = read_jsonl(log, tolerate_torn_tail=False)
    assert chain.verify(kept) == len(kept) <= 2          # how many fit depends on how the writes were grouped

    result = run_protocol(paths, protocol, subject("anthropic", fake, Waits()), settings, authorization=auth,
                          budget=BUDGET)
    assert result.complete and result.already_recorded == len(kept)
    trials = read_jsonl(log)
    assert chain.verify(trials) == 12 and slots(trials) == planned_slots(protocol)
    charged = [e for e in budget_mod.ledger(paths) if e["trial"]]
    assert len(charged) == 12 and len({e["call_key"] for e in charged}) == 12
    # the calls answered but never recorded stay charged at their worst case: money is never understated
    billed = fake.billed
    total = sum(e["cost_eur"] for e in budget_mod.ledger(paths)) + sum(
        e["worst_case_eur"] for e in budget_mod.open_reservations(budget_mod.ledger_entries(paths)))
    assert billed["calls"] > 12 and total >= (billed["input_tokens"] * 3.0 + billed["output_tokens"] * 15.0) / 1e6
