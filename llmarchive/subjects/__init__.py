"""Subjects: whatever answers the prompts, behind one call contract.

* :class:`~llmarchive.subjects.anthropic.AnthropicSubject` — the Messages API;
* :class:`~llmarchive.subjects.openai_compat.OpenAICompatSubject` — any
  OpenAI-compatible chat-completions server;
* :class:`~llmarchive.subjects.reference.ReferenceSubject` — the pinned local
  model through llama-cpp-python.

Each returns a :class:`~llmarchive.subjects.base.CallResult` per call, and
:func:`~llmarchive.subjects.base.classify` is the one place a result becomes
an outcome.  :func:`make_subject` builds one from command-line style options, through the
provider table (:mod:`llmarchive.subjects.providers`, one row per provider:
a new provider is its module and its row).  What a whole run records as the
model that answered — every id its calls named — is one rule,
:mod:`llmarchive.subjects.returned_model`.
"""
from typing import Any, Optional

# providers: imported for its rows, which it registers in the table when it is first imported.
from llmarchive.archive import either
from llmarchive.subjects import models, providers, registry  # noqa: F401
from llmarchive.subjects.base import CallResult, Classified, SubjectError, SubjectSettingsError, classify
from llmarchive.subjects.registry import Provider, SubjectOptions, register

__all__ = ["CallResult", "Classified", "Provider", "SubjectError", "SubjectOptions", "SubjectSettingsError",
           "api_provider", "check_api_settings", "classify", "list_models", "make_subject", "register",
           "subject_kinds"]
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.subjects.models import EMBEDDED_SHA256, embedded_model_path
from llmarchive.subjects.reference import ReferenceSettings, ReferenceSubject
from llmarchive.subjects.returned_model import returned_model_id, returned_model_id_differences
__all__ += ["EMBEDDED_SHA256", "ReferenceSettings", "ReferenceSubject", "embedded_model_path", "returned_model_id",
            "returned_model_id_differences"]
# (end of the face)


def subject_kinds() -> tuple[str, ...]:
    """Every provider name in the table (``llmarchive run --subject``'s choices), read when asked."""
    return registry.names()


def make_subject(kind: str, *, max_tokens: int, model: Optional[str] = None, base_url: Optional[str] = None,
                 model_path: Optional[str] = None, model_sha256: Optional[str] = None,
                 max_attempts: int = 6, timeout_s: float = 120.0, n_threads: int = 1, n_batch: int = 512,
                 retry_seed: int = 0, workers: int = 1, sleep: Optional[Any] = None,
                 pin_source: Optional[str] = None) -> Any:
    """A subject of ``kind`` (a provider of the table) for a protocol whose generation asks ``max_tokens``.

    For the reference model, ``workers`` > 1 loads that many identical
    instances that answer side by side (:mod:`llmarchive.subjects.reference_pool`).
    ``sleep`` replaces the API subjects' back-off wait (tests record it instead of sleeping).
    ``pin_source`` says where a reference model's ``model_sha256`` came from when a caller pinned it (the
    instrument pins a model given by path alone to its baseline's sha256).  The row's factory refuses
    the options that do not apply to its provider (:mod:`llmarchive.subjects.providers`).
    """
    row = registry.find(kind)
    if row is None:
        raise SubjectSettingsError(f"unknown subject {kind!r}; known: {', '.join(registry.names())}")
    return row.make(SubjectOptions(max_tokens=max_tokens, model=model, base_url=base_url, model_path=model_path,
                                   model_sha256=model_sha256, max_attempts=max_attempts, timeout_s=timeout_s,
                                   n_threads=n_threads, n_batch=n_batch, retry_seed=retry_seed, workers=workers,
                                   sleep=sleep, pin_source=pin_source))


def api_provider(kind: str) -> Optional[Provider]:
    """The table's row for ``kind`` when it is reached over HTTP (a key, a base URL, a models list), else None."""
    row = registry.find(kind)
    return row if row is not None and row.api else None


def list_models(kind: str, base_url: Optional[str] = None, max_attempts: int = 6,
                timeout_s: float = 30.0) -> list[dict]:
    """Every model an API provider lists (``GET /v1/models``, all pages), as it describes them.

    For the model watch: each entry is the provider's own object (it has at
    least ``id``).  Raises :class:`SubjectError` when the list cannot be read.
    """
    if api_provider(kind) is None:
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
    if api_provider(kind) is None:
        raise SubjectSettingsError(f"{kind!r} is not an API provider ({either(registry.api_names())})")
    make_subject(kind, max_tokens=1, model="settings-check", base_url=base_url)
