"""The provider table: one row per provider, declared here and nowhere else.

A new provider is its subject module (``subjects/<name>.py``, usually a
subclass of :class:`~llmarchive.subjects.http.HttpSubject`) and one
:func:`~llmarchive.subjects.registry.register` call below; the CLI's
choices, the key variable the Dagster resource checks, the stop reasons, the
run id of a comparison run and ``subject_models.yaml``'s accepted providers
follow from the row (:mod:`llmarchive.subjects.registry` says how).

Each factory imports its subject module when it is called, not when this
table is read: the CLI builds its choices from the table on every start, and
``httpx`` (~0.1 s) or ``llama_cpp`` is not something a reading command should
pay for.
"""
from typing import Any

from llmarchive.subjects import models
from llmarchive.subjects.base import SubjectSettingsError
from llmarchive.subjects.registry import Provider, SubjectOptions, register


def _reference(options: SubjectOptions) -> Any:
    """The pinned local model; ``workers`` > 1 loads that many identical instances that answer side by side."""
    from llmarchive.subjects.reference import ReferenceSettings, ReferenceSubject
    from llmarchive.subjects.reference_pool import ReferencePool

    if options.base_url:
        raise SubjectSettingsError("--base-url applies to API subjects, not to the reference model")
    workers = options.workers
    if not isinstance(workers, int) or workers < 1:
        raise SubjectSettingsError(f"workers must be a positive integer, got {workers!r}")

    def one() -> ReferenceSubject:
        return ReferenceSubject(options.max_tokens, model=options.model or models.DEFAULT_MODEL,
                                model_path=options.model_path, model_sha256=options.model_sha256,
                                settings=ReferenceSettings(n_threads=options.n_threads, n_batch=options.n_batch),
                                pin_source=options.pin_source)

    return one() if workers == 1 else ReferencePool([one() for _ in range(workers)])


def _anthropic(options: SubjectOptions) -> Any:
    from llmarchive.subjects.anthropic import AnthropicSubject
    return AnthropicSubject.from_options(options)


def _openai(options: SubjectOptions) -> Any:
    from llmarchive.subjects.openai_compat import OpenAICompatSubject
    return OpenAICompatSubject.from_options(options)


# The outcome table's provider rows (llmarchive.subjects.base explains the outcomes); None: a normal end.
register(Provider(
    name="reference", title="the reference model", make=_reference, records_as="llama.cpp",
    stop_reasons={"stop": None, "length": "truncated"},
    api=False, needs=("llama_cpp",), says="with no other option runs the embedded SmolLM2 model"))
register(Provider(
    name="anthropic", title="Anthropic", make=_anthropic, key_env="ANTHROPIC_API_KEY", key_required=True,
    stop_reasons={"end_turn": None, "stop_sequence": None, "refusal": "refused", "max_tokens": "truncated",
                  "model_context_window_exceeded": "truncated", "tool_use": "off_format",
                  "pause_turn": "off_format"},
    comparison=True, series="commercial", says="reads {key_env}"))
register(Provider(
    name="openai", title="OpenAI-compatible", make=_openai, key_env="OPENAI_API_KEY",
    stop_reasons={"stop": None, "length": "truncated", "content_filter": "blocked_upstream",
                  "tool_calls": "off_format", "function_call": "off_format"},
    comparison=True, comparison_default=True,
    says="talks to any OpenAI-compatible server (llama-server, vLLM, Ollama) and reads {key_env} if set"))
