"""Helpers for the Dagster tests: materialise the real asset graph in process.

The assets, checks and resources are the ones ``definitions.py`` serves;
only the resources' settings change (the archive home, the fake provider's
``base_url``), the way a deployment configures them.
"""
from datetime import datetime, timezone
from typing import Any, Optional

from dagster import DagsterInstance, materialize

from assets.definitions_builder import ASSETS, CHECKS
from assets.resources import ArchiveResource, BudgetResource, ReferenceModelResource, SubjectResource, WebhookResource
from llmarchive.archive import ArchivePaths


def resources(paths: ArchivePaths, base_url: Optional[str] = None, **subject: Any) -> dict[str, Any]:
    return {
        "archive": ArchiveResource(home=str(paths.home)),
        "reference_model": ReferenceModelResource(workers=2),
        "subject": SubjectResource(base_url=base_url, **subject),
        "budget": BudgetResource(),
        "webhook": WebhookResource(),
    }


def run(selection: list[str], resources: dict[str, Any], instance: DagsterInstance, *,
        partition_key: Any = None, run_config: Optional[dict] = None, raise_on_error: bool = True):
    return materialize(ASSETS + CHECKS, selection=selection, partition_key=partition_key, resources=resources,
                       instance=instance, run_config=run_config, raise_on_error=raise_on_error)


def this_month_key() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-01")


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def materialization_metadata(result, asset: str) -> dict[str, Any]:
    """The metadata values of ``asset``'s materialisation in ``result`` (plain Python values)."""
    [event] = [e for e in result.get_asset_materialization_events()
               if e.asset_key.to_user_string() == asset]
    return {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}


def failure_text(result) -> str:
    """Every step failure's description and error message in ``result``, joined."""
    parts = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            data = event.step_failure_data
            parts.append(str(data.user_failure_data.description if data.user_failure_data else "")
                         + " " + str(data.error.message if data.error else ""))
    return "\n".join(parts)


def refusals(result) -> list[tuple[str, dict[str, Any]]]:
    """Every intentional failure (a ``dagster.Failure``) in ``result``: its description and plain metadata."""
    out = []
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            data = event.step_failure_data.user_failure_data
            if data is not None and data.label == "intentional-failure":
                out.append((data.description, {k: getattr(v, "value", v) for k, v in data.metadata.items()}))
    return out
