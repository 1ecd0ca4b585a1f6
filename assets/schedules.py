"""Schedules.  The free ones run by default; every paid one is created STOPPED.

SPEC keeps every paid job manual: the owner decides when money is spent.  So
the paid schedules (the subject fingerprint and the monthly sweep) start
STOPPED whether or not a key is configured, and their descriptions say how
to start one in the UI.  A key in the environment only makes a started
schedule able to run; it never starts one.
"""
from datetime import timedelta

from dagster import DefaultScheduleStatus, MultiPartitionKey, RunRequest, schedule

from assets.jobs import commercial_job, coverage_job, daily_instrument_job, publication_job, subject_fingerprint_job
from llmarchive.succession.subject_models import load_subject_models
from panels.build import all_protocol_ids

PAID_KEY = "ANTHROPIC_API_KEY"
# Never RUNNING by default, key or no key (see the module docstring).
PAID_STATUS = DefaultScheduleStatus.STOPPED

PAID_NOTE = (f"Paid, so it is created STOPPED (key or no key) and runs only once you start it: in the Dagster UI "
             f"open the Automation page, find this schedule and turn its toggle on (turn it off the same way). "
             f"A started schedule still needs {PAID_KEY} where the daemon runs and a budget file "
             f"(`llmarchive budget init`).")


@schedule(job=daily_instrument_job, cron_schedule="0 4 * * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING,
          description="Every day at 04:00 UTC: runtime fingerprint, guard rotation, revalidation (free).")
def daily_instrument_schedule(context):
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return RunRequest(run_key=f"instrument-{day}", partition_key=day)


@schedule(job=subject_fingerprint_job, cron_schedule="30 4 * * *", execution_timezone="UTC",
          default_status=PAID_STATUS,
          description="Every day at 04:30 UTC: the subject fingerprint. " + PAID_NOTE)
def daily_subject_fingerprint_schedule(context):
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return RunRequest(run_key=f"subject-fingerprint-{day}", partition_key=day)


def sweep_series() -> str:
    return load_subject_models().protocol_series


@schedule(job=commercial_job, cron_schedule="0 6 2 * *", execution_timezone="UTC", default_status=PAID_STATUS,
          description="The 2nd of every month at 06:00 UTC: one run per protocol of the sweep's series — the "
                      "paid path, gated by pre-registration and the budget ladder. " + PAID_NOTE)
def monthly_sweep_schedule(context):
    month = context.scheduled_execution_time.strftime("%Y-%m-01")
    series = sweep_series()
    for pid in all_protocol_ids():
        if pid.endswith(f"__{series}"):
            yield RunRequest(run_key=f"sweep-{month}-{pid}",
                             partition_key=MultiPartitionKey({"month": month, "protocol": pid}))


@schedule(job=coverage_job, cron_schedule="0 8 1 * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING,
          description="The 1st of every month at 08:00 UTC: coverage of the month that just ended (free).")
def monthly_coverage_schedule(context):
    first = context.scheduled_execution_time.date().replace(day=1)
    previous = (first - timedelta(days=1)).replace(day=1)
    return RunRequest(run_key=f"coverage-{previous:%Y-%m}", partition_key=previous.strftime("%Y-%m-%d"))


@schedule(job=publication_job, cron_schedule="0 9 1 * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING,
          description="The 1st of every month at 09:00 UTC: regenerate the public archive (free).")
def monthly_publication_schedule(context):
    return RunRequest(run_key=f"publication-{context.scheduled_execution_time:%Y-%m}")


SCHEDULES = [daily_instrument_schedule, daily_subject_fingerprint_schedule, monthly_sweep_schedule,
             monthly_coverage_schedule, monthly_publication_schedule]
