"""The archive's own schedules on trivially cheap jobs, every one RUNNING: what tests/test_daemon_faketime.py
hands to a real ``dagster-daemon`` (and to Dagster's scheduler in process) to see which ticks it launches.

Why the project's schedules and not copies of their cron strings: the point is to pin what Dagster does
with *these* schedules — their cron strings, zone and evaluation functions (so the run keys and partition
keys a tick asks for are the archive's) — while the runs themselves cost nothing.  Only the job each one
targets changes (a no-op job on the same partitions), and the paid ones, created STOPPED for the owner
to start, are RUNNING here, as an owner who has started them has them.

One sensor, on the dead-man sensor's interval (``lease_on_life``), records each evaluation as a skip:
a sensor is not caught up either, and the drill needs to know how often one ticks around an outage.
"""
import inspect

from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    OpExecutionContext,
    PartitionsDefinition,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SkipReason,
    job,
    op,
    sensor,
)

from assets.definitions_builder import default_resources
from assets.integrity import daily_log_integrity_schedule
from assets.jobs import (commercial_job, coverage_job, daily_instrument_job, log_integrity_job, publication_job,
                         subject_fingerprint_job)
from assets.partitions import commercial, days, months
from assets.schedules import SCHEDULES
from assets.sensors import lease_on_life


@op
def nothing(context: OpExecutionContext) -> None:
    """A run that costs nothing: the tests look at which ticks launch runs, not at what the runs do."""
    context.log.info("cheap run")


def _cheap_job(name: str, partitions: PartitionsDefinition | None):
    @job(name=name, partitions_def=partitions)
    def cheap():
        nothing()

    return cheap


# Each project job the schedules target → a no-op job of the same name on the same partitions.
CHEAP_JOBS = {
    daily_instrument_job.name: _cheap_job(daily_instrument_job.name, days),
    subject_fingerprint_job.name: _cheap_job(subject_fingerprint_job.name, days),
    commercial_job.name: _cheap_job(commercial_job.name, commercial),
    coverage_job.name: _cheap_job(coverage_job.name, months),
    publication_job.name: _cheap_job(publication_job.name, None),
    log_integrity_job.name: _cheap_job(log_integrity_job.name, None),
}


def _running_copy(project: ScheduleDefinition) -> ScheduleDefinition:
    """``project`` — same name, cron string, zone, evaluation function and resources — on its cheap job, RUNNING."""
    def evaluate(context: ScheduleEvaluationContext):
        requests = project(context)   # what the project's function returns: one request, a list, or a generator
        if isinstance(requests, list) or inspect.isgenerator(requests):   # (a RunRequest is itself a tuple)
            yield from requests
        else:
            yield requests

    return ScheduleDefinition(name=project.name, cron_schedule=project.cron_schedule,
                              execution_timezone=project.execution_timezone, job=CHEAP_JOBS[project.job_name],
                              execution_fn=evaluate, default_status=DefaultScheduleStatus.RUNNING,
                              required_resource_keys=project.required_resource_keys)


SCHEDULE_COPIES = [_running_copy(s) for s in [*SCHEDULES, daily_log_integrity_schedule]]

PROBE_SENSOR = "lease_on_life_probe"


@sensor(name=PROBE_SENSOR, minimum_interval_seconds=lease_on_life.minimum_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING)
def lease_on_life_probe(context: SensorEvaluationContext):
    return SkipReason("evaluated")


# The project's resources, configured from the environment as definitions.py configures them (a schedule may
# need one: the webhook it tells of a failed tick).
defs = Definitions(jobs=list(CHEAP_JOBS.values()), schedules=SCHEDULE_COPIES, sensors=[lease_on_life_probe],
                   resources=default_resources())
