"""A scripted reference engine in place of llama.cpp, chosen by name and recorded as scripted.

The instrument's daily checks (the runtime fingerprint, the guard rotation)
run on the real reference model.  A drill that drives the archive through
two simulated years (``make drill``) cannot load llama.cpp 730 times, and it
needs an engine whose fingerprint changes on a date its script names.  So a
reference model may be named ``scripted:<module>:<attribute>``: the attribute
is an object with ``engine()`` (the fingerprint's engine: ``runtime()`` and
``generate(prompt_id, prompt, max_tokens, top)``) and ``subject(max_tokens)``
(the rotation's subject, the subject contract of :mod:`llmarchive.subjects`).

Never silent.  Whatever the scripted object reports, the engine and subject
handed back are wrapped so that ``runtime()`` and ``config()`` carry
``scripted`` (the name, with its dotted path) and ``model_name``; the
``runtime_fingerprint`` record copies ``scripted`` and the ``guard_rotation``
record keeps the whole runtime, so a record made on a scripted engine says
so wherever it is read.
"""
import importlib
from typing import Any, Optional

from measure.errors import ArchiveError

PREFIX = "scripted:"


class ScriptedEngineError(ArchiveError, ValueError):
    """A ``scripted:`` name that does not name an importable object with ``engine`` and ``subject``."""


def is_scripted(model: Optional[str]) -> bool:
    """Whether a reference model name selects a scripted engine."""
    return isinstance(model, str) and model.startswith(PREFIX)


def load(model: str) -> Any:
    """The object ``scripted:<module>:<attribute>`` names (imported by dotted path)."""
    target = model[len(PREFIX):]
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ScriptedEngineError(f"{model!r}: a scripted engine is named scripted:<module>:<attribute>")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ScriptedEngineError(f"{model!r} cannot be imported: {exc}") from None
    if not (callable(getattr(found, "engine", None)) and callable(getattr(found, "subject", None))):
        raise ScriptedEngineError(f"{model!r} has no engine() and subject(max_tokens)")
    return found


class _Marked:
    """A scripted engine or subject whose runtime and config always say it is scripted."""

    def __init__(self, inner: Any, model: str) -> None:
        self._inner = inner
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def runtime(self) -> dict:
        return {**self._inner.runtime(), "scripted": self._model, "model_name": self._model}

    def config(self) -> dict:
        inner = self._inner.config() if hasattr(self._inner, "config") else {}
        return {**inner, "scripted": self._model}


def engine_factory(model: str):
    """A no-argument factory of the fingerprint's engine for ``model`` (``scripted:…``)."""
    def make() -> Any:
        return _Marked(load(model).engine(), model)
    return make


def subject(model: str, max_tokens: int) -> Any:
    """The guard rotation's subject for ``model`` (``scripted:…``) at ``max_tokens``."""
    return _Marked(load(model).subject(max_tokens), model)
