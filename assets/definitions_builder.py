"""Assemble the ``Definitions``: assets, checks, resources, jobs, schedules, sensors."""
import os
from typing import Any, Mapping, Optional

from dagster import Definitions

from assets import commercial, coverage, health, integrity, open_weights, protocols, publication, selfchecks
from assets.alerts import ALERT_SENSORS
from assets.jobs import JOBS
from assets.resources import ArchiveResource, BudgetResource, ReferenceModelResource, SubjectResource, WebhookResource
from assets.schedules import SCHEDULES
from assets.sensors import SENSORS
from llmarchive.succession import SUBJECT_MODELS_ENV, subject_base_url


def all_assets() -> list:
    """Every asset, the daily jobs' as the job table is now (hand-written, or built from their row)."""
    return [
        protocols.protocols,
        protocols.preregistration_manifest,
        commercial.commercial_trials,
        commercial.commercial_measurements,
        open_weights.open_weights_trials,
        open_weights.open_weights_measurements,
        *selfchecks.daily_assets(),
        coverage.coverage,
        publication.public_archive,
        health.archive_health,
        integrity.log_integrity,
    ]


# The assets as the table was at import (scripts/demo.py, tests); build_definitions asks again when it builds.
ASSETS = all_assets()
CHECKS = [publication.publication_checks]   # the protocol gates are check specs of the protocols asset itself


def default_resources(env: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """Resources configured from the environment (see ``definitions.py``)."""
    env = os.environ if env is None else env
    return {
        "archive": ArchiveResource(home=env.get("LLMARCHIVE_HOME") or None),
        "reference_model": ReferenceModelResource(
            model=env.get("LLMARCHIVE_REFERENCE_MODEL", "smollm2-135m"),
            model_path=env.get("LLMARCHIVE_REFERENCE_MODEL_PATH") or None,
            model_sha256=env.get("LLMARCHIVE_REFERENCE_MODEL_SHA256") or None,
            workers=int(env.get("LLMARCHIVE_REFERENCE_WORKERS", "2")),
        ),
        "subject": SubjectResource(     # the settings the CLI reads too (llmarchive.succession.subject_models)
            subject_models_file=env.get(SUBJECT_MODELS_ENV) or None,
            base_url=subject_base_url(env),
        ),
        "budget": BudgetResource(),
        "webhook": WebhookResource(),     # the name of its variable only: the URL is read when a page is sent
    }


def build_definitions(resources: Optional[Mapping[str, Any]] = None) -> Definitions:
    """The project's ``Definitions``; ``resources`` override the environment's."""
    merged = default_resources()
    merged.update(resources or {})
    return Definitions(assets=all_assets(), asset_checks=CHECKS, jobs=JOBS, schedules=SCHEDULES + [integrity.daily_log_integrity_schedule],
                       sensors=SENSORS + ALERT_SENSORS, resources=merged)
