"""Alerts outside the UI: failing checks and failed runs, POSTed to the owner's webhook.

The webhook is the one the archive already has (``LLMARCHIVE_WEBHOOK_URL``,
:attr:`assets.resources.SubjectResource.webhook_url`; the body is JSON with a
one-line ``text``, as the model watch's bridge alarm).  Two sensors, both
free and running by default; without a webhook they post nothing and say so.

``failed_check_webhook`` posts each asset check of ERROR severity that
starts failing, once, and a ``resolved`` post once when it passes again.
It reads the latest evaluation of every check of the repository; its memory
of what it told is its cursor, so an alert is never posted twice — not on
the next tick, not when the same failing check is evaluated again.  A new
partition failing (the next day's alarm, another protocol's gate) is a new
alert.  A post the webhook did not take stays owed and is tried again at
the next tick.  The dead-man check is left to the lease
(:func:`llmarchive.schedule.lease.deliver`, called by ``lease_on_life`` and
by the outside timer alike), which pages it on a change of state and
reminds daily — posted here too, it would page twice.

``failed_run_webhook`` (a ``run_failure_sensor``) posts each failed run a
person must act on.  An expected refusal (:mod:`assets.refusals`) does not
page: the archive's rules working as designed, recorded where they belong
(a coverage cause, the run a double launch left running).  Which kinds are
expected is :data:`EXPECTED_REFUSALS`; every other kind, a refusal that
spent money (a run stopped part-paid), a ``Failure`` without a kind (a run
that must be resumed, a file that cannot be read) and any traceback pages.
"""
import json
from typing import Any, Mapping, Optional, Sequence

from dagster import (AssetCheckKey, AssetCheckSeverity, DefaultSensorStatus, RunFailureSensorContext,
                     SensorEvaluationContext, SensorResult, run_failure_sensor, sensor)

from assets.health import ASSET, DEADMAN, one_line
from assets.resources import SubjectResource
from llmarchive.schedule import post_webhook
from measure.errors import ArchiveError

INTERVAL_S = 600

# Refusals that are the archive's rules doing their work, when nothing was spent (assets/refusals.py KINDS).
EXPECTED_REFUSALS = {
    "budget_refused": "the budget ladder refused a run before any call; coverage records the cause",
    "not_this_month": "a past month is never backfilled; coverage records the cause",
    "not_today": "a missed day is never backfilled; coverage records the cause",
    "not_started": "a period that has not started yet; nothing to do",
    "no_manifest": "a manifest partition launched by hand without its file; the person who launched it saw it",
    "run_busy": "a double launch; the launch already working on the partition goes on",
}
# Refusals that wait for a person: the archive cannot go on until someone sets something up.
PAGING_REFUSALS = {
    "no_key": "a started paid job without its key",
    "no_budget": "paid work without a budget file",
    "bad_budget": "a budget file that cannot be read",
    "no_guard_protocol": "the daily guard rotation has nothing to rotate through",
}
# Checks paged elsewhere: the dead-man by the lease's own deliver (shared with the outside timer).
PAGED_ELSEWHERE = {AssetCheckKey.from_user_string(f"{ASSET}:{DEADMAN}")}


class WebhookNotTaken(ArchiveError, RuntimeError):
    """The webhook did not take a failed run's alert: the sensor's tick fails with this line (red in the UI).

    A run-status sensor's cursor is Dagster's and moves on regardless, so
    the failed tick is where the lost alert is seen.
    """


def _plain(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: getattr(v, "value", v) for k, v in (metadata or {}).items()}


def _error_line(error: Any) -> str:
    """The error a step raised, not Dagster's wrapper around it: ``Class: message``."""
    while error is not None and error.cls_name and error.cls_name.startswith("Dagster") and error.cause is not None:
        error = error.cause
    return f"{error.cls_name}: {error.message}" if error is not None else "failed"


def step_reason(event: Any) -> Optional[str]:
    """Why one failed step needs a person, in one line; None for an expected refusal that spent nothing."""
    data = event.step_failure_data
    user = data.user_failure_data
    meta = _plain(user.metadata) if user is not None else {}
    kind = meta.get("refusal")
    if kind in EXPECTED_REFUSALS and meta.get("spent_eur") == 0:
        return None
    said = (user.description if user is not None and user.description else None) or _error_line(data.error)
    what = f" What to do: {meta['what_to_do']}" if meta.get("what_to_do") else ""
    label = f"refusal {kind}" if kind else ("traceback" if user is None else "failure")
    return one_line(f"{event.step_key} ({label}): {str(said).rstrip('. ')}.{what}")


def paging_reasons(step_failures: Sequence[Any], run_failure_message: Optional[str]) -> list[str]:
    """Every reason a failed run needs a person (empty: only expected refusals).  A run that failed outside
    any step (a launch, a crashed worker) always does."""
    if not step_failures:
        return [one_line(run_failure_message or "the run failed outside any step")]
    return [reason for reason in (step_reason(e) for e in step_failures) if reason is not None]


@run_failure_sensor(minimum_interval_seconds=INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
                    description="Posts each failed run a person must act on to the webhook "
                                "(LLMARCHIVE_WEBHOOK_URL): a traceback, a run that stopped and must be resumed, a "
                                "missing key or budget. Expected refusals (a past period, the budget ladder "
                                "before any call, a double launch) page nobody. Free.")
def failed_run_webhook(context: RunFailureSensorContext, subject: SubjectResource) -> None:
    run = context.dagster_run
    reasons = paging_reasons(context.get_step_failure_events(), context.failure_event.message)
    where = f"{run.job_name}" + (f" [{context.partition_key}]" if context.partition_key else "")
    if not reasons:
        context.log.info(f"run {run.run_id} of {where}: an expected refusal, nobody paged")
        return None
    text = f"FAILED RUN {run.run_id[:8]} of {where} needs a person: " + " | ".join(reasons)
    if not subject.webhook_url:
        context.log.warning(f"no webhook configured (LLMARCHIVE_WEBHOOK_URL): {text}")
        return None
    outcome = post_webhook(subject.webhook_url, {"text": text, "kind": "run_failure", "run_id": run.run_id,
                                          "job": run.job_name, "partition": context.partition_key,
                                          "reasons": reasons})
    if not outcome.startswith("sent"):
        raise WebhookNotTaken(f"the webhook did not take the alert for run {run.run_id} ({outcome})")
    context.log.info(f"{text} — webhook {outcome}")
    return None


def _check_text(key: AssetCheckKey, partition: Optional[str], description: str, failing: bool) -> str:
    where = f"{key.asset_key.to_user_string()}:{key.name}" + (f" [{partition}]" if partition else "")
    return (f"FAILED CHECK {where}: {description}" if failing else f"RESOLVED CHECK {where}: passes again "
                                                                    f"({description})")


def remember(memory: dict, key: AssetCheckKey, record: Any) -> None:
    """Fold the latest completed evaluation of ``key`` into ``memory`` (what is owed to the webhook).

    ``memory[name]``: ``failing``, ``partition``, ``id`` (the evaluation
    read), ``sent`` and the ``payload`` to post.  A check that passes is
    forgotten once its resolution is sent; one that never failed is never
    remembered.
    """
    name = key.to_user_string()
    seen = memory.get(name)
    evaluation = record.evaluation
    if evaluation is None or (seen is not None and seen["id"] == record.id):
        return
    failing = not evaluation.passed and evaluation.severity == AssetCheckSeverity.ERROR
    description = one_line(evaluation.description or "-")
    if failing and seen is not None and seen["failing"] and seen["partition"] == record.partition:
        seen["id"] = record.id          # the same failure evaluated again: already told (or owed)
        return
    if not failing and (seen is None or not seen["failing"]):
        return
    if not failing and not seen["sent"]:
        del memory[name]                # it failed and passed before anyone was told: nothing to resolve
        return
    memory[name] = {"failing": failing, "partition": record.partition, "id": record.id, "sent": False,
                    "payload": {"text": _check_text(key, record.partition, description, failing),
                                "kind": "asset_check", "event": "failed" if failing else "resolved",
                                "asset": key.asset_key.to_user_string(), "check": key.name,
                                "partition": record.partition, "description": description}}


def _load(cursor: Optional[str]) -> dict:
    try:
        memory = json.loads(cursor) if cursor else {}     # one JSON document: the sensor's cursor
    except json.JSONDecodeError:
        memory = {}
    return memory if isinstance(memory, dict) else {}


@sensor(minimum_interval_seconds=INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
        description="Posts each asset check of ERROR severity that starts failing to the webhook "
                    "(LLMARCHIVE_WEBHOOK_URL) once, and once more when it passes again; never twice. The dead-man "
                    "check is paged by lease_on_life instead. Free: reads Dagster's own check evaluations.")
def failed_check_webhook(context: SensorEvaluationContext, subject: SubjectResource) -> SensorResult:
    url = subject.webhook_url
    if not url:
        return SensorResult(skip_reason="no webhook configured (LLMARCHIVE_WEBHOOK_URL): failing checks are shown "
                                        "in the UI only")
    if context.repository_def is None:
        return SensorResult(skip_reason="no repository to read the checks of")
    keys = sorted((k for k in context.repository_def.asset_graph.asset_check_keys if k not in PAGED_ELSEWHERE),
                  key=lambda k: k.to_user_string())
    memory = _load(context.cursor)
    latest = context.instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    for key in keys:
        record = latest.get(key)
        if record is not None and record.status.value in ("SUCCEEDED", "FAILED"):
            remember(memory, key, record)
    told, owed = [], []
    for name, entry in sorted(memory.items()):
        if entry["sent"]:
            continue
        outcome = post_webhook(url, entry["payload"])
        if outcome.startswith("sent"):
            entry["sent"] = True
            told.append(f"{entry['payload']['event']} {name}")
        else:
            owed.append(f"{name} ({outcome})")
    memory = {name: entry for name, entry in memory.items() if entry["failing"] or not entry["sent"]}
    failing = sorted(name for name, entry in memory.items() if entry["failing"])
    summary = (f"posted: {', '.join(told) or 'nothing new'}; failing: {', '.join(failing) or 'none'}"
               + (f"; owed, to try again: {', '.join(owed)}" if owed else ""))
    return SensorResult(skip_reason=summary, cursor=json.dumps(memory, sort_keys=True))


ALERT_SENSORS = [failed_check_webhook, failed_run_webhook]
