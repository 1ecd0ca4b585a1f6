"""What a person does in the Dagster UI, done through the UI's own GraphQL mutations.

The UI launches a run, re-executes one and launches a backfill with the
``launchPipelineExecution``, ``launchPipelineReexecution`` and
``launchPartitionBackfill`` mutations of ``dagster_graphql``; the drill sends
the same ones, in process, against the drill's workspace, so a launch by
hand goes through the same run coordinator (the queue) as it would from a
browser.  Each returns the run ids (or the backfill id) Dagster answered,
or raises with the answer when Dagster refused the request.
"""
from typing import Any, Optional

from dagster import DagsterRunStatus, RunsFilter
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster_graphql.client.query import (LAUNCH_PARTITION_BACKFILL_MUTATION, LAUNCH_PIPELINE_EXECUTION_MUTATION,
                                          LAUNCH_PIPELINE_REEXECUTION_MUTATION)
from dagster_graphql.test.utils import execute_dagster_graphql

REPOSITORY = "__repository__"


class ActionRefused(RuntimeError):
    """Dagster's GraphQL answered something other than success."""


def _selector(context: WorkspaceProcessContext, job: str) -> dict:
    [location] = context.create_request_context().get_code_location_entries()
    return {"repositoryLocationName": location, "repositoryName": REPOSITORY, "jobName": job}


def _answer(result: Any, field: str) -> dict:
    if result.errors:
        raise ActionRefused(f"{field}: {result.errors}")
    data = result.data[field]
    if data.get("__typename") not in ("LaunchRunSuccess", "LaunchBackfillSuccess"):
        raise ActionRefused(f"{field}: {data}")
    return data


def launch(context: WorkspaceProcessContext, job: str, partition: Optional[str] = None,
           run_config: Optional[dict] = None) -> str:
    """Launch ``job`` (one ``partition`` of it) as the Launchpad does; the new run's id.

    The partition's tags are the ones the UI sends: ``dagster/partition`` and,
    for a multi-dimensional key (``2026-12-01|<protocol>``), one tag per
    dimension, from the job's own partitions definition.
    """
    tags = [{"key": k, "value": v} for k, v in partition_tags(job, partition).items()] if partition else []
    params = {"selector": _selector(context, job), "runConfigData": run_config or {},
              "executionMetadata": {"tags": tags}}
    result = execute_dagster_graphql(context.create_request_context(), LAUNCH_PIPELINE_EXECUTION_MUTATION,
                                     {"executionParams": params})
    return _answer(result, "launchPipelineExecution")["run"]["runId"]


def partition_tags(job: str, partition: str) -> dict:
    """The tags Dagster derives for ``partition`` of ``job`` (the code location's own definitions)."""
    import importlib

    from scripts.drill_dagster import LOCATION_MODULE

    definition = importlib.import_module(LOCATION_MODULE).defs.get_job_def(job).partitions_def
    return dict(definition.get_tags_for_partition_key(partition)) if definition else {"dagster/partition": partition}


def reexecute_failed(context: WorkspaceProcessContext, job: str, since_timestamp: float) -> list[str]:
    """Re-execute from failure every failed run of ``job`` created since ``since_timestamp``, as the run page does."""
    instance = context.instance
    failed = instance.get_runs(RunsFilter(job_name=job, statuses=[DagsterRunStatus.FAILURE]))
    out = []
    for run in failed:
        record = instance.get_run_record_by_id(run.run_id)
        if record is None or record.create_timestamp.timestamp() < since_timestamp:
            continue
        if instance.get_runs(RunsFilter(tags={"dagster/parent_run_id": run.run_id})):
            continue          # re-executed already
        result = execute_dagster_graphql(context.create_request_context(), LAUNCH_PIPELINE_REEXECUTION_MUTATION,
                                         {"reexecutionParams": {"parentRunId": run.run_id,
                                                                "strategy": "FROM_FAILURE"}})
        out.append(_answer(result, "launchPipelineReexecution")["run"]["runId"])
    return out


def backfill(context: WorkspaceProcessContext, asset: str, partitions: list[str]) -> str:
    """A backfill of ``asset`` over ``partitions`` launched as the asset's page launches one; its id."""
    params = {"partitionNames": partitions, "assetSelection": [{"path": [asset]}], "fromFailure": False}
    result = execute_dagster_graphql(context.create_request_context(), LAUNCH_PARTITION_BACKFILL_MUTATION,
                                     {"backfillParams": params})
    return _answer(result, "launchPartitionBackfill")["backfillId"]


def acknowledge(context: WorkspaceProcessContext, core_change: str, reviewer: str) -> str:
    """acknowledge_instrument_job launched from the Launchpad with the human's core_change."""
    config = {"ops": {"acknowledge_instrument_alarm": {"config": {"core_change": core_change,
                                                                  "reviewer": reviewer}}}}
    return launch(context, "acknowledge_instrument_job", run_config=config)
