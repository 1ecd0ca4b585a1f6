"""Dagster resources: the archive's home, the subjects and the budget.

Everything a step needs from outside arrives through these, configured —
never patched — so a test points the API subjects at the local fake
provider by setting ``base_url``, and a deployment points them at the real
API.  Keys come from the environment only (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY``); a resource never holds or logs one.
"""
import os
from typing import Any, Optional

from dagster import ConfigurableResource

from llmarchive import budget as budget_mod
from llmarchive.paths import ArchivePaths
from llmarchive.subjects import list_models, make_subject


class ArchiveResource(ConfigurableResource):
    """Where the archive lives: ``home``, else ``$LLMARCHIVE_HOME``, else ``./var``."""

    home: Optional[str] = None

    def paths(self) -> ArchivePaths:
        return ArchivePaths.from_env(self.home).ensure()


class ReferenceModelResource(ConfigurableResource):
    """The frozen local reference model (SPEC §7) through llama-cpp-python.

    ``model`` names a pinned configuration (``smollm2-135m``, the embedded
    default, or ``qwen2.5-1.5b``); ``model_path`` and ``model_sha256`` point at
    a file of your own.  The sha256 is checked before every load.
    """

    model: str = "smollm2-135m"
    model_path: Optional[str] = None
    model_sha256: Optional[str] = None
    n_threads: int = 1
    n_batch: int = 512
    # Identical instances answering side by side: same answers, and on a
    # two-core machine close to twice the calls per hour.
    workers: int = 2

    def subject(self, max_tokens: int) -> Any:
        """A loaded reference subject for one ``max_tokens`` value (load once, call many)."""
        return make_subject("reference", max_tokens=max_tokens, model=self.model, model_path=self.model_path,
                            model_sha256=self.model_sha256, n_threads=self.n_threads, n_batch=self.n_batch,
                            workers=self.workers)


class ApiSubjectResource(ConfigurableResource):
    """A commercial model behind an HTTP API; ``kind`` is ``anthropic`` or ``openai``."""

    kind: str = "anthropic"
    model: str = ""
    base_url: Optional[str] = None
    model_family: Optional[str] = None
    concurrency: int = 4
    max_attempts: int = 6
    timeout_s: float = 120.0

    @property
    def key_variable(self) -> str:
        return "ANTHROPIC_API_KEY" if self.kind == "anthropic" else "OPENAI_API_KEY"

    def configured(self) -> tuple[bool, str]:
        """Whether paid work may start, and why not in words."""
        if not self.model:
            return False, f"no model is configured for the {self.kind} subject"
        if self.kind == "anthropic" and not os.environ.get(self.key_variable):
            return False, f"{self.key_variable} is not set"
        return True, "configured"

    def subject(self, max_tokens: int) -> Any:
        return make_subject(self.kind, max_tokens=max_tokens, model=self.model, base_url=self.base_url,
                            max_attempts=self.max_attempts, timeout_s=self.timeout_s)

    def models(self) -> list[dict]:
        """The provider's models list (for the model watch)."""
        return list_models(self.kind, base_url=self.base_url, max_attempts=self.max_attempts,
                           timeout_s=min(self.timeout_s, 30.0))


class AnthropicResource(ApiSubjectResource):
    """The Anthropic Messages API (the tracked commercial series)."""

    kind: str = "anthropic"


class OpenAICompatResource(ApiSubjectResource):
    """Any OpenAI-compatible chat-completions server (llama-server, vLLM, Ollama)."""

    kind: str = "openai"


class BudgetResource(ConfigurableResource):
    """The private budget (``budget.json``) and the ladder that gates paid work.

    ``unbudgeted`` allows paid-protocol runs against a server that costs
    nothing (your own OpenAI-compatible server); costs are then logged as
    unknown.  The Anthropic API is never run unbudgeted.
    """

    job: str = "sweep"
    unbudgeted: bool = False

    def load(self, paths: ArchivePaths):
        return budget_mod.load_budget(paths)
