"""Subjects: whatever answers the prompts, behind one call contract.

* :class:`~llmarchive.subjects.anthropic.AnthropicSubject` — the Messages API;
* :class:`~llmarchive.subjects.openai_compat.OpenAICompatSubject` — any
  OpenAI-compatible chat-completions server;
* :class:`~llmarchive.subjects.reference.ReferenceSubject` — the pinned local
  model through llama-cpp-python.

Each returns a :class:`~llmarchive.subjects.base.CallResult` per call, and
:func:`~llmarchive.subjects.base.classify` is the one place a result becomes
an outcome.  :func:`make_subject` builds one from command-line style options.
"""
from typing import Any, Optional

from llmarchive.subjects import models
from llmarchive.subjects.base import CallResult, Classified, SubjectError, SubjectSettingsError, classify
from llmarchive.subjects.reference import ReferenceSettings, ReferenceSubject
from llmarchive.subjects.reference_pool import ReferencePool

SUBJECT_KINDS = ("reference", "anthropic", "openai")

__all__ = ["CallResult", "Classified", "SUBJECT_KINDS", "SubjectError", "SubjectSettingsError", "check_api_settings",
           "classify", "list_models", "make_subject"]


def make_subject(kind: str, *, max_tokens: int, model: Optional[str] = None, base_url: Optional[str] = None,
                 model_path: Optional[str] = None, model_sha256: Optional[str] = None,
                 max_attempts: int = 6, timeout_s: float = 120.0, n_threads: int = 1, n_batch: int = 512,
                 retry_seed: int = 0, workers: int = 1, sleep: Optional[Any] = None,
                 pin_source: Optional[str] = None) -> Any:
    """A subject of ``kind`` for a protocol whose generation asks ``max_tokens``.

    For the reference model, ``workers`` > 1 loads that many identical
    instances that answer side by side (:mod:`llmarchive.subjects.reference_pool`).
    ``sleep`` replaces the API subjects' back-off wait (tests record it instead of sleeping).
    ``pin_source`` says where a reference model's ``model_sha256`` came from when a caller pinned it (the
    instrument pins a model given by path alone to its baseline's sha256).
    """
    if kind == "reference":
        if base_url:
            raise SubjectSettingsError("--base-url applies to API subjects, not to the reference model")
        if not isinstance(workers, int) or workers < 1:
            raise SubjectSettingsError(f"workers must be a positive integer, got {workers!r}")

        def one() -> ReferenceSubject:
            return ReferenceSubject(max_tokens, model=model or models.DEFAULT_MODEL, model_path=model_path,
                                    model_sha256=model_sha256,
                                    settings=ReferenceSettings(n_threads=n_threads, n_batch=n_batch),
                                    pin_source=pin_source)

        if workers == 1:
            return one()
        return ReferencePool([one() for _ in range(workers)])
    if kind in ("anthropic", "openai"):
        # The HTTP subjects are imported here, when one is made, not above: importing any module of this
        # package runs this file, and httpx costs ~0.1 s that a reference run or a reading command does
        # not need.  Not a cycle.
        from llmarchive.subjects.http import RetryPolicy

        if model_path or model_sha256:
            raise SubjectSettingsError("--model-path/--model-sha256 apply to the reference model only")
        if workers != 1:
            raise SubjectSettingsError("--workers applies to the reference model only (API subjects: --concurrency)")
        if not model:
            raise SubjectSettingsError(f"the {kind} subject needs --model (the provider's model id)")
        options = dict(base_url=base_url, timeout_s=timeout_s, retry=RetryPolicy(max_attempts=max_attempts),
                       retry_seed=retry_seed, sleep=sleep)
        if kind == "anthropic":
            from llmarchive.subjects.anthropic import AnthropicSubject
            return AnthropicSubject(model, max_tokens, **options)
        from llmarchive.subjects.openai_compat import OpenAICompatSubject
        return OpenAICompatSubject(model, max_tokens, **options)
    raise SubjectSettingsError(f"unknown subject {kind!r}; known: {', '.join(SUBJECT_KINDS)}")


def list_models(kind: str, base_url: Optional[str] = None, max_attempts: int = 6,
                timeout_s: float = 30.0) -> list[dict]:
    """Every model an API provider lists (``GET /v1/models``, all pages), as it describes them.

    For the model watch: each entry is the provider's own object (it has at
    least ``id``).  Raises :class:`SubjectError` when the list cannot be read.
    """
    if kind not in ("anthropic", "openai"):
        raise SubjectSettingsError(f"only API subjects list models; got {kind!r}")
    subject = make_subject(kind, max_tokens=1, model="models-list", base_url=base_url,
                           max_attempts=max_attempts, timeout_s=timeout_s)
    return subject.list_models()


def check_api_settings(kind: str, base_url: Optional[str] = None) -> None:
    """Refuse, before anything is recorded, what is our mistake and not the provider's.

    An API subject of ``kind`` is set up exactly as a call or the models
    list would set it up — the base URL read, the key looked up in its
    environment variable — and nothing is sent.  A missing key or a
    malformed ``--base-url`` raises :class:`SubjectSettingsError`: the
    sweep and the model watch stop with that one line instead of recording
    a provider outage the provider never had.
    """
    if kind not in ("anthropic", "openai"):
        raise SubjectSettingsError(f"{kind!r} is not an API provider (anthropic or openai)")
    make_subject(kind, max_tokens=1, model="settings-check", base_url=base_url)
