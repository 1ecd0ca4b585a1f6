"""Dagster resources: the archive's home, the subjects and the budget.

Everything a step needs from outside arrives through these, configured —
never patched — so a test points the API subjects at the local fake
provider by setting ``base_url``, and a deployment points them at the real
API.  Keys come from the environment only (the variable each provider's
row of :mod:`llmarchive.subjects.providers` names); a resource never holds
or logs one.
"""
import os
from pathlib import Path
from typing import Any, Callable, Optional

from dagster import ConfigurableResource

from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths, either, read_json
from llmarchive.instrument import scripted
from llmarchive.schedule import WEBHOOK_ENV, webhook_from
from llmarchive.succession import SubjectModels, load_subject_models
from llmarchive.subjects import Provider, api_provider, list_models, make_subject, registry


# The key paid work needs where the daemon runs: the commercial provider's, as the provider table names it
# (the schedules' and the model watch's descriptions say it).
PAID_KEY = either(registry.commercial_keys())


class ArchiveResource(ConfigurableResource):
    """Where the archive lives: ``home``, else ``$LLMARCHIVE_HOME``, else ``./var``."""

    home: Optional[str] = None

    def paths(self) -> ArchivePaths:
        return ArchivePaths.from_env(self.home).ensure()


class ReferenceModelResource(ConfigurableResource):
    """The frozen local reference model (method §7) through llama-cpp-python.

    ``model`` names a pinned configuration (``smollm2-135m``, the embedded
    default, or ``qwen2.5-1.5b``); ``model_path`` and ``model_sha256`` point at
    a file of your own.  The sha256 is checked before every load.

    ``model: scripted:<module>:<attribute>`` selects a scripted engine instead
    of llama.cpp (:mod:`llmarchive.instrument.scripted`) — what ``make drill``
    configures, so two simulated years of daily checks run in minutes and the
    fingerprint changes on the day its script says.  It is never silent: the
    runtime fingerprint's record names it (``scripted``), and so does the
    runtime every guard-rotation record and run folder keeps.
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
        if scripted.is_scripted(self.model):
            return scripted.subject(self.model, max_tokens)
        return make_subject("reference", max_tokens=max_tokens, model=self.model, model_path=self.model_path,
                            model_sha256=self.model_sha256, n_threads=self.n_threads, n_batch=self.n_batch,
                            workers=self.workers)


class SubjectResource(ConfigurableResource):
    """The tracked commercial model behind its HTTP API.

    *Which* model is not configured here: ``subject_models.yaml`` names the
    family and its active model, and the model watch records any switch.
    This resource says how to reach the provider — ``provider`` (default:
    the file's; an API row of the provider table,
    :mod:`llmarchive.subjects.providers`), ``base_url`` (default: the
    public API; tests point it at the local fake provider) — and how hard to
    push it.  The key is read from the environment by the subject at call
    time (the variable the provider's row names), never stored here.
    """

    subject_models_file: Optional[str] = None
    provider: Optional[str] = None
    base_url: Optional[str] = None
    concurrency: int = 4
    max_attempts: int = 6
    timeout_s: float = 120.0

    def models_config(self) -> SubjectModels:
        return load_subject_models(self.subject_models_file)

    @property
    def kind(self) -> str:
        return self.provider or self.models_config().provider

    @property
    def row(self) -> Optional[Provider]:
        """The provider table's row for :attr:`kind` (None for a kind the table has no API row for)."""
        return api_provider(self.kind)

    @property
    def key_variable(self) -> Optional[str]:
        """Where the subject reads its key: the provider table's row says."""
        return self.row.key_env if self.row else None

    def configured(self) -> tuple[bool, str]:
        """Whether paid work may start, and why not in words.

        A provider whose key is required needs it set; one whose key is
        optional (a local server) needs a ``base_url`` or its key.
        """
        row, key = self.row, self.key_variable
        if row is None or key is None:
            return True, "configured"
        if row.key_required and not os.environ.get(key):
            return False, f"{key} is not set: the commercial series is paid work and stays off"
        if not row.key_required and not (self.base_url or os.environ.get(key)):
            return False, f"no {row.title} server is configured (base_url) and {key} is not set"
        return True, "configured"

    def factory(self) -> Callable[[str, int], Any]:
        """``factory(model_id, max_tokens)`` → a subject for one protocol's frozen max_tokens."""
        def make(model: str, max_tokens: int) -> Any:
            return make_subject(self.kind, max_tokens=max_tokens, model=model, base_url=self.base_url,
                                max_attempts=self.max_attempts, timeout_s=self.timeout_s)
        return make

    def models(self) -> list[dict]:
        """The provider's models list (the model watch reads it)."""
        return list_models(self.kind, base_url=self.base_url, max_attempts=self.max_attempts,
                           timeout_s=min(self.timeout_s, 30.0))

    def model_ids(self) -> list[str]:
        return [m["id"] for m in self.models() if isinstance(m, dict) and "id" in m]


class WebhookResource(ConfigurableResource):
    """Where the owner's pages go: the URL is read from the environment when a page is sent, never held here.

    A webhook URL often carries its token, and everything a resource is
    configured with is part of the repository snapshot the Dagster UI serves
    (the Resources page, GraphQL).  So this resource holds only the *name*
    of the variable (``env_var``, default ``LLMARCHIVE_WEBHOOK_URL``; the
    watch's older name is still read), as the subjects hold only the name
    of their key's variable.  The webhook stays optional: an unset variable
    is no webhook, and a malformed one never stops the definitions from
    loading — it is told when a page is sent and turns ``archive_health``'s
    ``no_overdue_page`` check red (:mod:`llmarchive.schedule.outbox`).
    """

    env_var: str = WEBHOOK_ENV

    def url(self) -> Optional[str]:
        """The webhook URL now, or None when none is set."""
        if self.env_var == WEBHOOK_ENV:
            return webhook_from(os.environ)
        return os.environ.get(self.env_var) or None


class BudgetResource(ConfigurableResource):
    """The private budget (``budget.json`` under the archive) that gates paid work.

    The ladder itself (method §9) is :mod:`llmarchive.budget`; this resource
    only says where the budget comes from, so a test can hand the steps a
    budget file of its own.  ``budget_file`` defaults to the archive's.
    """

    budget_file: Optional[str] = None

    def load(self, paths: ArchivePaths):
        """The budget, or None when none exists (paid work then refuses to start)."""
        if self.budget_file is None:
            return budget_mod.load_budget(paths)
        return budget_mod.parse_budget(read_json(Path(self.budget_file)), self.budget_file)
