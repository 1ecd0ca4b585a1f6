"""Schedules.  The free ones run by default; every paid one is created STOPPED.

SPEC keeps every paid job manual: the owner decides when money is spent.  So
the paid schedules (the subject fingerprint and the monthly sweep) start
STOPPED whether or not a key is configured, and their descriptions say how
to start one in the UI.  A key in the environment only makes a started
schedule able to run; it never starts one.

**A tick that fails is told.**  A schedule whose own code fails (the sweep
reading a malformed ``subject_models.yaml``) launches nothing, and the
daemon does not evaluate that tick again (Dagster retries a failed tick
only when ``max_tick_retries`` is set).  So every schedule runs its body
through :func:`_told`: the failure is recorded as a page in the owner's
outbox and sent to the webhook (``LLMARCHIVE_WEBHOOK_URL``; still owed, and
sent later, when the webhook does not take it) and raised again as one line
(:class:`ScheduleTickFailed`), which Dagster shows as the schedule's failed
tick in the UI.  A person who reads only the webhook learns of it; one who
reads only the UI sees it red.

**A late tick of an ended period is skipped, with its reason.**  Dagster
does not catch up: when the daemon was down it launches only each
schedule's latest missed tick, late, under that tick's time (method §8).
The instrument observes the day it runs and a month is measured in that
month, so a daily tick that arrives on a later day, or the sweep's tick in a
later month, could only launch runs that refuse; it is skipped instead,
saying why, and the period it missed is a coverage gap with its cause
(``human_absent``: nobody kept the machine running).  A late tick of a
period still running goes ahead; coverage and publication only read, so
they go ahead whenever they come.
"""
from datetime import date, datetime, timedelta, timezone
from typing import Callable, Optional, Union

from dagster import (DefaultScheduleStatus, MultiPartitionKey, RunRequest, ScheduleEvaluationContext, SkipReason,
                     schedule)

from assets.jobs import commercial_job, coverage_job, daily_instrument_job, publication_job, subject_fingerprint_job
from assets.partitions import MONTH_START
from assets.resources import PAID_KEY, ArchiveResource, SubjectResource, WebhookResource
from llmarchive.schedule import outbox
from measure.errors import ArchiveError
from panels.build import all_protocol_ids

# Never RUNNING by default, key or no key (see the module docstring).
PAID_STATUS = DefaultScheduleStatus.STOPPED

PAID_NOTE = (f"Paid, so it is created STOPPED (key or no key) and runs only once you start it: in the Dagster UI "
             f"open the Automation page, find this schedule and turn its toggle on (turn it off the same way). "
             f"A started schedule still needs {PAID_KEY} where the daemon runs and a budget file "
             f"(`llmarchive budget init`).")


class ScheduleTickFailed(ArchiveError, RuntimeError):
    """A schedule's tick that launched nothing: which schedule, which tick, why, and whether the webhook was told."""


Requests = Union[RunRequest, list[RunRequest], SkipReason]


def _late(context: ScheduleEvaluationContext, period: str, rule: str) -> Optional[SkipReason]:
    """A skip for a tick evaluated after its ``period`` (``%Y-%m-%d`` or ``%Y-%m``) has ended, else None."""
    now = datetime.now(timezone.utc)
    due = context.scheduled_execution_time
    if now.strftime(period) == due.strftime(period):
        return None
    return SkipReason(f"the tick of {due:%Y-%m-%d %H:%M} UTC came late, on {now:%Y-%m-%d %H:%M} UTC (the daemon was "
                      f"not running): {rule}, so nothing is launched and {due.strftime(period)} is a coverage gap "
                      "(human_absent) — method §8")


def _before_start(month: date) -> Optional[SkipReason]:
    """A skip for a month before this archive's first one: it has no partition and nothing to judge."""
    if f"{month:%Y-%m-%d}" >= MONTH_START:
        return None
    return SkipReason(f"{month:%Y-%m} is before this archive's first month ({MONTH_START[:7]}): there is no "
                      "coverage to judge")


def _told(context: ScheduleEvaluationContext, archive: ArchiveResource, webhook: WebhookResource, name: str,
          requests: Callable[[], Requests]) -> Requests:
    """``requests()``, or — when it fails — a page in the outbox, sent, and a one-line :class:`ScheduleTickFailed`."""
    try:
        return requests()
    except Exception as exc:   # noqa: BLE001 — whatever broke, the tick launched nothing and someone must hear
        when = context.scheduled_execution_time
        line = " ".join(f"{name}: the tick of {when:%Y-%m-%d %H:%M} UTC launched nothing: "
                        f"{type(exc).__name__}: {exc}".split())
        told = _page(archive, webhook.url(), outbox.Page(
            f"tick|{name}|{when.isoformat()}", "schedule_tick", f"FAILED SCHEDULE TICK {line}",
            {"schedule": name, "tick": when.isoformat(), "error": f"{type(exc).__name__}: {exc}"}))
        # A mistake a person made (a malformed file) is its one line; anything else keeps its traceback.
        raise ScheduleTickFailed(f"{line} (webhook: {told})") from (None if isinstance(exc, ArchiveError) else exc)


def _page(archive: ArchiveResource, url: Optional[str], page: outbox.Page) -> str:
    """Record ``page`` and send what is owed; what became of it, in a few words (never raises: the tick's own
    failure is the story)."""
    if not url:
        return "no webhook configured"
    try:
        paths = archive.paths()
        outbox.record(paths, [page])
        return outbox.send(paths, url).of(page.key)
    except Exception as exc:   # noqa: BLE001 — a page that cannot be recorded is said, not raised over the tick's
        return f"not recorded: {type(exc).__name__}: {exc}"


@schedule(job=daily_instrument_job, cron_schedule="0 4 * * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING,
          description="Every day at 04:00 UTC: runtime fingerprint, guard rotation, revalidation (free).")
def daily_instrument_schedule(context: ScheduleEvaluationContext, archive: ArchiveResource,
                              webhook: WebhookResource):
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return _told(context, archive, webhook, "daily_instrument_schedule",
                 lambda: _late(context, "%Y-%m-%d", "the instrument observes the day it runs")
                 or RunRequest(run_key=f"instrument-{day}", partition_key=day))


@schedule(job=subject_fingerprint_job, cron_schedule="30 4 * * *", execution_timezone="UTC",
          default_status=PAID_STATUS,
          description="Every day at 04:30 UTC: the subject fingerprint. " + PAID_NOTE)
def daily_subject_fingerprint_schedule(context: ScheduleEvaluationContext, archive: ArchiveResource,
                                       webhook: WebhookResource):
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return _told(context, archive, webhook, "daily_subject_fingerprint_schedule",
                 lambda: _late(context, "%Y-%m-%d", "the subject fingerprint observes the day it runs")
                 or RunRequest(run_key=f"subject-fingerprint-{day}", partition_key=day))


def sweep_requests(month: str, series: str) -> list[RunRequest]:
    """One run per protocol of ``series`` for ``month`` (``YYYY-MM-01``)."""
    return [RunRequest(run_key=f"sweep-{month}-{pid}", partition_key=MultiPartitionKey({"month": month,
                                                                                       "protocol": pid}))
            for pid in all_protocol_ids() if pid.endswith(f"__{series}")]


@schedule(job=commercial_job, cron_schedule="0 6 2 * *", execution_timezone="UTC", default_status=PAID_STATUS,
          description="The 2nd of every month at 06:00 UTC: one run per protocol of the sweep's series — the "
                      "paid path, gated by pre-registration and the budget ladder. " + PAID_NOTE)
def monthly_sweep_schedule(context: ScheduleEvaluationContext, subject: SubjectResource, archive: ArchiveResource,
                           webhook: WebhookResource):
    month = context.scheduled_execution_time.strftime("%Y-%m-01")
    # The subject_models.yaml the assets read (LLMARCHIVE_SUBJECT_MODELS, else the repository's).
    return _told(context, archive, webhook, "monthly_sweep_schedule",
                 lambda: _late(context, "%Y-%m", "a month is measured in that month, never backfilled")
                 or sweep_requests(month, subject.models_config().protocol_series))


@schedule(job=coverage_job, cron_schedule="0 8 1 * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING,
          description="The 1st of every month at 08:00 UTC: coverage of the month that just ended (free).")
def monthly_coverage_schedule(context: ScheduleEvaluationContext, archive: ArchiveResource,
                              webhook: WebhookResource):
    first = context.scheduled_execution_time.date().replace(day=1)
    previous = (first - timedelta(days=1)).replace(day=1)
    return _told(context, archive, webhook, "monthly_coverage_schedule",
                 lambda: _before_start(previous)
                 or RunRequest(run_key=f"coverage-{previous:%Y-%m}", partition_key=f"{previous:%Y-%m-%d}"))


@schedule(job=publication_job, cron_schedule="0 9 1 * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING,
          description="The 1st of every month at 09:00 UTC: regenerate the public archive (free).")
def monthly_publication_schedule(context: ScheduleEvaluationContext, archive: ArchiveResource,
                                 webhook: WebhookResource):
    return _told(context, archive, webhook, "monthly_publication_schedule",
                 lambda: RunRequest(run_key=f"publication-{context.scheduled_execution_time:%Y-%m}"))


SCHEDULES = [daily_instrument_schedule, daily_subject_fingerprint_schedule, monthly_sweep_schedule,
             monthly_coverage_schedule, monthly_publication_schedule]
