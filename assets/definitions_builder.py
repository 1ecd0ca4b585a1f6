"""Assemble the ``Definitions``: assets, checks, resources, jobs, schedules, sensors."""
import os
from typing import Any, Mapping, Optional

from dagster import Definitions

from assets import open_weights, protocols, publication
from assets.resources import AnthropicResource, ArchiveResource, BudgetResource, ReferenceModelResource

ASSETS = [
    protocols.protocols,
    protocols.preregistration_manifest,
    open_weights.open_weights_trials,
    open_weights.open_weights_measurements,
    publication.public_archive,
]
CHECKS = [protocols.protocol_checks, publication.publication_checks]


def default_resources(env: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """Resources configured from the environment (see ``definitions.py``)."""
    env = os.environ if env is None else env
    return {
        "archive": ArchiveResource(home=env.get("LLMARCHIVE_HOME") or None),
        "reference_model": ReferenceModelResource(
            model=env.get("LLMARCHIVE_REFERENCE_MODEL", "smollm2-135m"),
            model_path=env.get("LLMARCHIVE_REFERENCE_MODEL_PATH") or None,
            model_sha256=env.get("LLMARCHIVE_REFERENCE_MODEL_SHA256") or None,
        ),
        "subject": AnthropicResource(
            model=env.get("LLMARCHIVE_SUBJECT_MODEL", ""),
            base_url=env.get("LLMARCHIVE_SUBJECT_BASE_URL") or None,
            model_family=env.get("LLMARCHIVE_SUBJECT_FAMILY") or None,
        ),
        "budget": BudgetResource(),
    }


def build_definitions(resources: Optional[Mapping[str, Any]] = None) -> Definitions:
    """The project's ``Definitions``; ``resources`` override the environment's."""
    merged = default_resources()
    merged.update(resources or {})
    return Definitions(assets=ASSETS, asset_checks=CHECKS, resources=merged)
