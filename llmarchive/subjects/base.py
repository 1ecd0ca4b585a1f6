"""What every subject returns per call, and how a call becomes an outcome.

A *subject* is whatever answers the prompts: the commercial API, an
OpenAI-compatible server, or the local reference model.  Each call is one
fresh session (no history, no system prompt, no cache) and returns one
:class:`CallResult`, whatever the provider.  The runner turns that result
into a trial outcome with :func:`classify`, and nowhere else.

The outcome table
-----------------
method §6 lists seven outcomes.  ``valid`` and ``unparseable`` are the
grammar's (:func:`measure.extract`); the other five are decided here, from
what the provider said, *before* any text is read.  The rows are checked in
this order and the first that applies wins:

=================  ===========================================================
outcome            when
=================  ===========================================================
blocked_upstream   the provider blocked the content itself, in its own words:
                   a documented error code on a 4xx answer (an HTTP
                   content-filter refusal) or a documented stop reason
                   (OpenAI ``finish_reason: content_filter``)
refused            the provider says the model refused (Anthropic
                   ``stop_reason: refusal``; OpenAI ``message.refusal`` set)
off_format         the reply is not plain text: a non-text content block or a
                   tool call (Anthropic ``tool_use`` / ``pause_turn``; OpenAI
                   ``tool_calls`` / ``function_call``)
truncated          generation stopped at the token limit (Anthropic
                   ``max_tokens`` / ``model_context_window_exceeded``; OpenAI
                   and llama.cpp ``length``) — even if a decision line was
                   already written, because what came after it is unknown
empty              the text is empty or only whitespace
valid/unparseable  everything else: :func:`measure.extract` with the
                   protocol's options and ``grammar_version``
=================  ===========================================================

A call that never got an answer is **not a trial** and has no row here: a
timeout, a dropped or reset connection, a 429/5xx/529 or a malformed 200
that outlasts the bounded retries says something about the network or the
provider's load, nothing about the model.  The subject returns it with
``failure`` set (and ``answered`` false); :func:`classify` refuses it
(:class:`NotATrial`), and the runner stops the run as interrupted with the
slot still open, to be called again when the provider is back.

Stop reasons the table does not name (``end_turn``, ``stop``,
``stop_sequence`` and any value a provider adds later) go to the grammar;
the stop reason is kept on the trial either way, so a new value can be
audited and mapped in a later version of this table.
"""
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import measure
from llmarchive.subjects import registry
from measure.errors import ArchiveError

# Provider stop reason → outcome, by the provider a CallResult names.  ``None`` means "a normal end: read the
# text".  Each provider's row of the provider table holds its own (llmarchive.subjects.providers); this view
# reads the table when asked, so a provider registered later is mapped too.
STOP_REASONS: Mapping[str, Mapping[str, Optional[str]]] = registry.StopReasons()

# Precedence of the non-grammar outcomes (the table above, top to bottom).
PRECEDENCE = ("blocked_upstream", "refused", "off_format", "truncated", "empty")


class NotATrial(ArchiveError, ValueError):
    """A call result without an answer was about to be scored as a trial outcome."""


class SubjectError(ArchiveError, RuntimeError):
    """A problem no retry can fix (bad key, unknown model, malformed request).

    The runner stops on it without recording a trial, so the run can be
    resumed once the configuration is fixed.  The message never contains a
    secret.  ``status`` is the HTTP status the provider answered with, when
    the error is such an answer (``None`` for a local problem: a missing key,
    a bad option, a model file), so a caller decides on the number rather
    than on the wording of the message.
    """

    def __init__(self, message: str, *, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


class SubjectSettingsError(SubjectError):
    """Our own mistake in how a subject is set up: a missing key, a malformed base URL, a bad option.

    Nothing was sent, so the provider has said nothing: it is never a
    provider outage and never a gap cause.  The sweep and the model watch
    check for it before they record anything (:func:`llmarchive.subjects.check_api_settings`)
    and stop with its one-line message instead.
    """


@dataclass
class CallResult:
    """One call to a subject, as the provider answered it.

    ``text`` is the concatenated text content (``None`` when there was no
    response at all).  ``blocked``, ``refused`` and ``non_text`` are the
    provider-level signals the subject read off the response, in the words
    of the outcome table; ``stop_reason`` is the provider's own value,
    unchanged.  ``latency_ms`` spans every attempt including back-off waits.
    ``answered`` is true when the provider returned a response (the call can
    have been billed).  ``retry_causes`` says why each failed attempt failed.

    ``failure`` is set when the call never got an answer after its retries
    (``timeout``, ``connection``, ``rate_limited``, ``server_error``,
    ``overloaded``, ``malformed``): the result is then not a trial.
    ``unknown_attempts`` counts the attempts whose billing cannot be known
    (the request reached the provider but no usable answer came back: a
    read timeout, a connection cut after sending, a malformed 200); the
    ledger charges each of them at its worst case.

    ``system_fingerprint`` is the server's build identity when its API
    reports one with the answer (OpenAI-compatible servers' field of that
    name; llama.cpp's server puts its build there), unchanged; ``None`` when
    it reports none.  A change of build under an unchanged model id is a
    provider-side change the archive exists to see (method §10.1).
    """

    provider: str
    text: Optional[str]
    stop_reason: Optional[str]
    returned_model_id: Optional[str]
    input_tokens: Optional[int]
    output_tokens: Optional[int]
    latency_ms: int
    attempts: int
    explicitly_set: Mapping[str, Any]
    started_at: str
    finished_at: str
    blocked: bool = False
    refused: bool = False
    non_text: bool = False
    content_types: Sequence[str] = field(default_factory=tuple)
    detail: Optional[str] = None
    answered: bool = True
    retry_causes: Sequence[str] = field(default_factory=tuple)
    failure: Optional[str] = None
    unknown_attempts: int = 0
    system_fingerprint: Optional[str] = None


@dataclass(frozen=True)
class Classified:
    """The outcome of one call: outcome, token (valid only) and why."""

    outcome: str
    token: Optional[str]
    reason: Optional[str]


def stop_outcome(provider: str, stop_reason: Optional[str]) -> Optional[str]:
    """The outcome a provider's stop reason forces, or ``None`` to read the text."""
    if stop_reason is None:
        return None
    return STOP_REASONS.get(provider, {}).get(stop_reason)


def classify(result: CallResult, options: Sequence[str], grammar_version: int) -> Classified:
    """Apply the outcome table to one call result; a result without an answer is refused."""
    if result.failure is not None:
        raise NotATrial(f"the call got no answer ({result.failure}: {result.detail or 'no detail'}); "
                        "it is not a trial and has no outcome")
    forced = stop_outcome(result.provider, result.stop_reason)
    signals = {
        "blocked_upstream": result.blocked or forced == "blocked_upstream",
        "refused": result.refused or forced == "refused",
        "off_format": result.non_text or forced == "off_format",
        "truncated": forced == "truncated",
        "empty": result.text is None or result.text.strip() == "",
    }
    for outcome in PRECEDENCE:
        if signals[outcome]:
            return Classified(outcome, None, _reason(outcome, result))
    extraction = measure.extract(result.text, options, grammar_version)
    return Classified(extraction.outcome, extraction.token, extraction.reason)


def _reason(outcome: str, result: CallResult) -> str:
    if result.detail:
        return result.detail
    if result.stop_reason is not None and outcome != "empty":
        return f"stop_reason={result.stop_reason}"
    if outcome == "off_format":
        return "non-text content: " + ",".join(result.content_types)
    return {"empty": "no text in the response", "blocked_upstream": "no response"}.get(outcome, outcome)
