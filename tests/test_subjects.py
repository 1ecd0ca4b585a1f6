"""The API subjects against a real local HTTP server (tests/fake_provider.py)."""
import email.utils

import pytest

from llmarchive.subjects import make_subject
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.base import CallResult, NotATrial, SubjectError, classify
from llmarchive.subjects.http import RetryPolicy, parse_retry_after
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from measure.rng import Stream
from tests.fake_provider import Fault, FakeProvider, Reply
from tests.retry_helpers import Waits

KEY = "fake-credential-subjects-test"
FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)
OPTIONS = ["A", "B"]


@pytest.fixture
def fake(monkeypatch):
    """Not the shared ``fake``: default answers, and 401 unless the request carries this module's key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeProvider(require_key=KEY) as server:
        yield server


def subject_for(kind: str, fake: FakeProvider, **kw) -> object:
    options = dict(retry=FAST, timeout_s=kw.pop("timeout_s", 2.0), sleep=kw.pop("sleep", Waits()), **kw)
    if kind == "anthropic":
        return AnthropicSubject("claude-test-1", 64, base_url=fake.base_url, **options)
    return OpenAICompatSubject("local-model", 64, base_url=fake.base_url, **options)


def outcome_of(result: CallResult) -> str:
    return classify(result, OPTIONS, 1).outcome


# -- the request itself ---------------------------------------------------------

def test_anthropic_request_carries_exactly_model_max_tokens_one_user_turn_and_disabled_thinking(fake):
    subject = subject_for("anthropic", fake)
    result = subject.call("Pick one.")
    request = fake.chat_requests[-1]
    assert request.path == "/v1/messages"
    assert request.body == {"model": "claude-test-1", "max_tokens": 64, "thinking": {"type": "disabled"},
                            "messages": [{"role": "user", "content": "Pick one."}]}
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["x-api-key"] == KEY
    assert result.explicitly_set == {"model": "claude-test-1", "max_tokens": 64, "thinking": {"type": "disabled"}}
    for absent in ("temperature", "system", "tools", "top_p", "top_k"):
        assert absent not in request.body


def test_openai_request_has_no_system_prompt_and_no_sampling_parameter(fake):
    subject = subject_for("openai", fake)
    subject.call("Pick one.")
    request = fake.chat_requests[-1]
    assert request.path == "/v1/chat/completions"
    assert request.body == {"model": "local-model", "max_tokens": 64,
                            "messages": [{"role": "user", "content": "Pick one."}]}
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_openai_base_url_given_with_v1_suffix_reaches_the_same_endpoint(fake):
    subject = OpenAICompatSubject("m", 16, base_url=fake.base_url + "/v1/", retry=FAST)
    assert outcome_of(subject.call("x")) == "valid"
    assert fake.chat_requests[-1].path == "/v1/chat/completions"


def test_api_surface_sha_ignores_the_prompt_but_follows_every_parameter(fake):
    a = subject_for("anthropic", fake)
    b = AnthropicSubject("claude-test-1", 65, base_url=fake.base_url)
    c = AnthropicSubject("claude-test-2", 64, base_url=fake.base_url)
    assert a.api_surface_sha == subject_for("anthropic", fake).api_surface_sha
    assert len({a.api_surface_sha, b.api_surface_sha, c.api_surface_sha}) == 3
    assert "<prompt>" in str(a.surface()) and KEY not in str(a.surface())


def test_the_key_is_read_from_the_environment_only_and_never_appears_in_config_or_results(fake):
    subject = subject_for("anthropic", fake)
    result = subject.call("x")
    assert KEY not in repr(subject.config()) and KEY not in repr(result)
    assert subject.config()["key_env"] == "ANTHROPIC_API_KEY"
    assert subject.config()["key_present"] is True


def test_a_missing_anthropic_key_is_refused_before_any_call(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SubjectError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicSubject("claude-x", 64, base_url="http://127.0.0.1:9")


def test_a_rejected_key_stops_with_an_error_that_does_not_contain_the_key(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-wrong")
    subject = subject_for("anthropic", fake)
    with pytest.raises(SubjectError) as err:
        subject.call("x")
    assert "HTTP 401" in str(err.value) and "fake-credential-wrong" not in str(err.value)
    assert len(fake.chat_requests) == 1, "an authentication failure is not retried"


# -- faults: every one ends in the right outcome, attempts counted, no crash --------

@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("fault, attempts", [
    (Fault.status(429, retry_after=0.05), 2),
    (Fault.status(500), 2),
    (Fault.status(529), 2),
    (Fault.status(503), 2),
    (Fault.malformed(), 2),
    (Fault.drop(), 2),
    (Fault.slow(1.0), 2),
])
def test_a_transient_fault_is_retried_and_the_answer_still_counts(fake, kind, fault, attempts):
    subject = subject_for(kind, fake, timeout_s=0.4)
    fake.script(fault, Reply.text("Reasoning.\nDECISION: B"))
    result = subject.call("x")
    assert classify(result, OPTIONS, 1).token == "B"
    assert result.attempts == attempts
    assert len(result.retry_causes) == attempts - 1


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("fault, failure, billing_unknown", [
    (Fault.status(529), "overloaded", False),
    (Fault.status(500), "server_error", False),
    (Fault.status(429, retry_after=0.01), "rate_limited", False),
    (Fault.malformed(), "malformed", True),
    (Fault.drop(), "connection", True),
    (Fault.reset(), "connection", True),
    (Fault.slow(1.0), "timeout", True),
])
def test_a_fault_that_outlasts_the_retries_is_no_answer_and_not_a_trial(fake, kind, fault, failure, billing_unknown):
    subject = subject_for(kind, fake, timeout_s=0.3)
    fake.script(*[fault] * FAST.max_attempts)
    result = subject.call("x")
    assert result.failure == failure and result.answered is False and result.blocked is False
    assert result.attempts == FAST.max_attempts and result.text is None
    assert f"after {FAST.max_attempts} attempts" in result.detail
    # an error status is not billed; a request that left without an intact answer may have been
    assert result.unknown_attempts == (FAST.max_attempts if billing_unknown else 0)
    with pytest.raises(NotATrial, match="not a trial"):
        classify(result, OPTIONS, 1)


def test_the_backoff_waits_go_through_the_injected_sleep_and_follow_the_policy(fake):
    waits = Waits()
    subject = subject_for("anthropic", fake, sleep=waits)
    fake.script(Fault.status(500), Fault.status(500), Fault.status(500), Reply.text("DECISION: A"))
    result = subject.call("x", key="run/s01/A/0")
    assert result.attempts == 4 and len(waits) == 3
    again = Waits()
    fake.script(Fault.status(500), Fault.status(500), Fault.status(500), Reply.text("DECISION: A"))
    subject_for("anthropic", fake, sleep=again).call("x", key="run/s01/A/0")
    assert waits == again, "the jitter is seeded by the call's key: the same waits every time"
    for k, wait in enumerate(waits, start=1):
        cap = min(FAST.max_delay_s, FAST.base_delay_s * 2 ** (k - 1))
        assert 0.5 * cap <= wait < cap


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("reply, outcome", [
    (Reply.refusal(), "refused"),
    (Reply.max_tokens("Thinking about it... DECISION: A and then"), "truncated"),
    (Reply.non_text(), "off_format"),
    (Reply.empty(), "empty"),
    (Reply.text("I like A.\nDECISION: A"), "valid"),
    (Reply.text("A or B, hard to say."), "unparseable"),
])
def test_provider_answers_map_to_the_outcome_table_in_one_attempt(fake, kind, reply, outcome):
    fake.script(reply)
    result = subject_for(kind, fake).call("x")
    assert outcome_of(result) == outcome
    assert result.attempts == 1


def test_a_provider_side_content_block_is_blocked_upstream_without_retrying(fake):
    fake.script(Fault.content_filter())
    result = subject_for("openai", fake).call("x")
    assert outcome_of(result) == "blocked_upstream"
    assert result.attempts == 1 and "provider block" in result.detail


def test_retry_after_is_honoured(fake):
    waits = Waits()
    fake.script(Fault.status(429, retry_after=30), Reply.text("DECISION: A"))
    result = subject_for("anthropic", fake, sleep=waits).call("x")
    assert waits == [30.0], "the wait is the provider's retry-after, not the shorter back-off"
    assert result.attempts == 2 and result.retry_causes == ("HTTP 429 rate_limit_error",)


def test_a_retry_after_beyond_the_limit_ends_the_call_at_once(fake):
    policy = RetryPolicy(max_attempts=5, base_delay_s=0.01, max_retry_after_s=1.0)
    waits = Waits()
    subject = AnthropicSubject("claude-test-1", 64, base_url=fake.base_url, retry=policy, sleep=waits)
    fake.script(Fault.status(429, retry_after=3600))
    result = subject.call("x")
    assert waits == [] and result.attempts == 1
    assert result.failure == "rate_limited" and result.answered is False
    assert "exceeds the limit" in result.detail


def test_the_returned_model_id_is_the_providers_not_the_requested_one(fake):
    fake.script(Reply.text("DECISION: A", model="claude-test-1-20270101"))
    result = subject_for("anthropic", fake).call("x")
    assert result.returned_model_id == "claude-test-1-20270101"
    assert (result.input_tokens, result.output_tokens) == (1, 2)


# -- the models list (for the model watch) --------------------------------------------

def test_anthropic_models_list_follows_every_page(fake):
    fake.set_models([f"claude-model-{i:04d}" for i in range(2300)])
    models = subject_for("anthropic", fake).list_models()
    assert [m["id"] for m in models] == [f"claude-model-{i:04d}" for i in range(2300)]
    assert len([r for r in fake.requests if r.method == "GET"]) == 3
    assert all(r.headers.get("x-api-key") == KEY for r in fake.requests if r.method == "GET")


def test_models_list_sees_a_changed_list_and_retries_a_transient_failure(fake):
    subject = subject_for("openai", fake)
    fake.set_models(["a", "b"])
    assert [m["id"] for m in subject.list_models()] == ["a", "b"]
    fake.set_models(["a", "b", "c"])
    fake.models_script.append(Fault.status(503))
    assert [m["id"] for m in subject.list_models()] == ["a", "b", "c"]


def test_the_models_list_backs_off_through_the_injected_sleep_too(fake):
    waits = Waits()
    fake.models_script.extend([Fault.status(503), Fault.status(503)])
    assert [m["id"] for m in subject_for("openai", fake, sleep=waits).list_models()] == ["claude-sonnet-5"]
    assert len(waits) == 2


def test_models_list_that_keeps_failing_raises_a_subject_error(fake):
    fake.models_script.extend([Fault.status(500)] * FAST.max_attempts)
    with pytest.raises(SubjectError, match="still failing"):
        subject_for("anthropic", fake).list_models()


# -- pieces ----------------------------------------------------------------------------

def _result(**kw) -> CallResult:
    base = dict(provider="anthropic", text="DECISION: A", stop_reason="end_turn", returned_model_id="m",
                input_tokens=1, output_tokens=1, latency_ms=1, attempts=1, explicitly_set={},
                started_at="t", finished_at="t")
    base.update(kw)
    return CallResult(**base)


def test_the_outcome_table_reads_no_text_when_the_provider_has_decided():
    assert classify(_result(stop_reason="max_tokens"), OPTIONS, 1).outcome == "truncated"
    assert classify(_result(stop_reason="refusal"), OPTIONS, 1).outcome == "refused"
    assert classify(_result(non_text=True, stop_reason="max_tokens"), OPTIONS, 1).outcome == "off_format"
    assert classify(_result(blocked=True, refused=True), OPTIONS, 1).outcome == "blocked_upstream"
    assert classify(_result(text="  \n"), OPTIONS, 1).outcome == "empty"
    assert classify(_result(stop_reason="a_new_reason"), OPTIONS, 1).outcome == "valid"
    assert classify(_result(provider="llama.cpp", stop_reason="length"), OPTIONS, 1).outcome == "truncated"


def test_grammar_version_two_is_used_when_the_protocol_declares_it():
    text = "DECISION: maybe\nDECISION: B"
    assert classify(_result(text=text), OPTIONS, 1).outcome == "unparseable"
    assert classify(_result(text=text), OPTIONS, 2).token == "B"


def test_backoff_grows_is_jittered_reproducibly_and_never_undercuts_retry_after():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0)
    delays = [policy.delay(k, None, Stream(7)) for k in range(1, 6)]
    assert delays == [policy.delay(k, None, Stream(7)) for k in range(1, 6)]
    for k, d in enumerate(delays, start=1):
        cap = min(8.0, 2 ** (k - 1))
        assert 0.5 * cap <= d < cap
    assert policy.delay(1, 30.0, Stream(7)) == 30.0


def test_retry_after_is_read_as_seconds_or_as_an_http_date():
    assert parse_retry_after("2.5") == 2.5
    now = 1_800_000_000.0
    assert parse_retry_after(email.utils.formatdate(now + 10, usegmt=True), now=now) == pytest.approx(10, abs=1)
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_make_subject_names_what_is_missing():
    with pytest.raises(SubjectError, match="needs --model"):
        make_subject("openai", max_tokens=10)
    with pytest.raises(SubjectError, match="unknown subject"):
        make_subject("gemini", max_tokens=10, model="x")
    with pytest.raises(SubjectError, match="reference model only"):
        make_subject("openai", max_tokens=10, model="x", model_path="/tmp/x.gguf")


def test_a_base_url_with_credentials_is_refused_so_they_cannot_reach_a_record():
    with pytest.raises(SubjectError, match="carries credentials"):
        OpenAICompatSubject("m", 8, base_url="https://user:secret@example.org")
