"""The daily slice of the deep verification: ``log_integrity``, its job and its schedule (method §10.1.1).

Thin: the slice, the verification and the owner's page are
:func:`llmarchive.schedule.deep_rotation.run`'s.  A broken log does not fail
the run (the run-failure sensor would page it a second time, under another
key): it is paged once through the outbox and shown in the materialisation's
metadata and log.  It is not a coverage job and leaves no coverage row.
"""
from dagster import (AssetExecutionContext, DefaultScheduleStatus, MaterializeResult, MetadataValue, RunRequest,
                     ScheduleEvaluationContext, asset, schedule)

from assets.jobs import log_integrity_job
from assets.resources import ArchiveResource, WebhookResource
from llmarchive.archive import utc_today
from llmarchive.schedule import deep_rotation


@asset(group_name="alerts",
       description="Every hash-chained log verified whole within a week, a slice a day (the logs verified longest "
                   "ago): the bytes the hot path trusts to its checkpoints are read here. A broken log is paged to "
                   "the owner once, through the outbox. Free: reads the archive's logs.")
def log_integrity(context: AssetExecutionContext, archive: ArchiveResource,
                  webhook: WebhookResource) -> MaterializeResult:
    found, paged = deep_rotation.run(archive.paths(), utc_today(), webhook.url())
    for _, problem in found.broken:
        context.log.error(problem)
    return MaterializeResult(metadata={
        "verified": len(found.verified), "logs": found.total,
        "broken": MetadataValue.json([{"log": log, "problem": problem} for log, problem in found.broken]),
        "paged": MetadataValue.json([page.key for page in paged])})


@schedule(job=log_integrity_job, cron_schedule="30 5 * * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING,
          description="Every day at 05:30 UTC: the day's slice of the deep verification (free). Kept out of "
                      "assets.schedules.SCHEDULES, the schedules of the archive's jobs.")
def daily_log_integrity_schedule(context: ScheduleEvaluationContext):
    return RunRequest(run_key=f"log-integrity-{context.scheduled_execution_time:%Y-%m-%d}")
