"""Alerts outside the UI: failing checks and failed runs, recorded as pages and sent to the owner's webhook.

Both sensors are producers for the archive's outbox
(:mod:`llmarchive.schedule.outbox`): each page is first recorded there under
a stable key, then the outbox's one sender posts what is owed (this tick's
pages and anything still owed from before), within a bounded time.  A post
that fails loses nothing — the outbox is the memory, not Dagster's cursor —
and an outbox owing a page for more than an hour is itself red
(``archive_health``'s ``no_overdue_page``).  Both are free and running by
default; without a webhook (``LLMARCHIVE_WEBHOOK_URL``, read when a page is
sent: :class:`assets.resources.WebhookResource`) they record nothing and say so.

``failed_check_webhook`` reads every asset-check evaluation Dagster stored
since its cursor, in the order they happened, and pages each ERROR check
that starts failing — per check *and partition* — once, and once more when
that partition passes again.  A failure and its resolution that both
happened between two ticks are both told.  The memory of which failures
were told is the outbox's, written in the same step as the page.  The
dead-man check is left to the lease (:func:`llmarchive.schedule.lease.deliver`,
called by ``lease_on_life`` and by the outside timer alike), which pages it
on a change of state and reminds daily — paged here too, it would page twice.

``failed_run_webhook`` (a ``run_failure_sensor``) pages each failed run a
person must act on.  An expected refusal (:mod:`assets.refusals`) does not
page: the archive's rules working as designed, recorded where they belong
(a coverage cause, the run a double launch left running).  Which kinds are
expected is :data:`EXPECTED_REFUSALS`; a provider outage that stopped
partitions before any call pages once for the month
(:data:`MONTHLY_REFUSALS`); every other kind, a refusal that spent money (a
run stopped part-paid), a ``Failure`` without a kind (a run that must be
resumed, a file that cannot be read) and any traceback pages per run.
"""
import json
from datetime import datetime, timezone
from typing import Any, Mapping, Optional, Sequence

from dagster import (AssetCheckKey, AssetCheckSeverity, DagsterInstance, DefaultSensorStatus,
                     RunFailureSensorContext, SensorEvaluationContext, SensorResult, run_failure_sensor, sensor)

from assets.health import ASSET, DEADMAN, one_line
from assets.resources import ArchiveResource, WebhookResource
from llmarchive.schedule import outbox

INTERVAL_S = 600
HISTORY_PAGE = 50

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
# Refusals paged once for the month, whichever of the month's partitions they stopped.
MONTHLY_REFUSALS = {
    "provider_outage": "the provider did not answer before any call: the month's partitions must be run again "
                       "this month, once it answers",
}
# Checks paged elsewhere: the dead-man by the lease's own deliver (shared with the outside timer).
PAGED_ELSEWHERE = {AssetCheckKey.from_user_string(f"{ASSET}:{DEADMAN}")}
# What to do about a failing check whose own description does not say it (a page a person reads on a phone).
WHAT_TO_DO = {
    "no_instrument_alarm": "find what changed in the reference model or its runtime (`llmarchive instrument "
                           "status`), then record it with `llmarchive instrument acknowledge --core-change … "
                           "--reviewer …`; until then every new measurement is instrument_suspect",
    "no_unexplained_gap": "`llmarchive coverage --dry-run` names the period with no output and no cause; run what "
                          "is missing while its period is open, or find why it could not run",
}


def _plain(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: getattr(v, "value", v) for k, v in (metadata or {}).items()}


def _error_line(error: Any) -> str:
    """The error a step raised, not Dagster's wrapper around it: ``Class: message``."""
    while error is not None and error.cls_name and error.cls_name.startswith("Dagster") and error.cause is not None:
        error = error.cause
    return f"{error.cls_name}: {error.message}" if error is not None else "failed"


def _refusal(event: Any) -> tuple[Optional[str], dict]:
    user = event.step_failure_data.user_failure_data
    meta = _plain(user.metadata) if user is not None else {}
    return meta.get("refusal"), meta


def step_reason(event: Any) -> Optional[str]:
    """Why one failed step needs a person, in one line; None for an expected refusal that spent nothing."""
    data = event.step_failure_data
    user = data.user_failure_data
    kind, meta = _refusal(event)
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


def run_page(run: Any, partition: Optional[str], step_failures: Sequence[Any],
             run_failure_message: Optional[str]) -> Optional[outbox.Page]:
    """The page a failed run owes the owner, or None (only expected refusals that spent nothing).

    A run stopped only by refusals paged monthly is keyed by its job and
    month, so the month's twelve partitions make one page; every other run is
    keyed by its id.
    """
    reasons = paging_reasons(step_failures, run_failure_message)
    where = f"{run.job_name}" + (f" [{partition}]" if partition else "")
    fields = {"run_id": run.run_id, "job": run.job_name, "partition": partition, "reasons": reasons}
    kinds = {_refusal(e)[0] for e in step_failures}
    if reasons and step_failures and kinds <= set(MONTHLY_REFUSALS):
        month = (partition or "")[:7] or "unknown"
        [kind] = sorted(kinds)
        text = (f"FAILED RUNS of {run.job_name} in {month} need a person ({kind}): {MONTHLY_REFUSALS[kind]}. "
                f"First seen: run {run.run_id[:8]} [{partition}]: " + " | ".join(reasons))
        return outbox.Page(f"month|{run.job_name}|{month}|{kind}", "run_failure", one_line(text),
                           {**fields, "month": month, "refusal": kind})
    if not reasons:
        return None
    text = f"FAILED RUN {run.run_id[:8]} of {where} needs a person: " + " | ".join(reasons)
    return outbox.Page(f"run|{run.run_id}", "run_failure", text, fields)


def deliver(paths: Any, url: Optional[str], pages: Sequence[outbox.Page]) -> tuple[list[outbox.Page], outbox.Delivery]:
    """Record ``pages`` (the new ones) and send what the outbox owes; nothing is recorded without a webhook."""
    if not url:
        return [], outbox.send(paths, url)
    new = outbox.record(paths, pages)
    return new, outbox.send(paths, url)


@run_failure_sensor(minimum_interval_seconds=INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
                    description="Pages each failed run a person must act on to the webhook "
                                "(LLMARCHIVE_WEBHOOK_URL) through the outbox: a traceback, a run that stopped and "
                                "must be resumed, a missing key or budget; a provider outage once for the month. "
                                "Expected refusals (a past period, the budget ladder before any call, a double "
                                "launch) page nobody. Free.")
def failed_run_webhook(context: RunFailureSensorContext, archive: ArchiveResource, webhook: WebhookResource) -> None:
    run = context.dagster_run
    page = run_page(run, context.partition_key, context.get_step_failure_events(), context.failure_event.message)
    if page is None:
        context.log.info(f"run {run.run_id} of {run.job_name}: an expected refusal, nobody paged")
        return None
    url = webhook.url()
    if not url:
        context.log.warning(f"no webhook configured (LLMARCHIVE_WEBHOOK_URL): {page.text}")
        return None
    new, delivery = deliver(archive.paths(), url, [page])
    told = "recorded" if new else "already recorded"
    context.log.info(f"{page.text} — {told}; {delivery.of(page.key)}; outbox: {delivery.said()}")
    return None


# -- checks -----------------------------------------------------------------------------------------------------

def check_name(key: AssetCheckKey, partition: Optional[str]) -> str:
    """A check and partition as one name: ``coverage:no_unexplained_gap[2027-01-01]``."""
    return f"{key.asset_key.to_user_string()}:{key.name}" + (f"[{partition}]" if partition else "")


def check_text(name: str, description: str, failing: bool, check: str) -> str:
    if not failing:
        return f"RESOLVED CHECK {name}: passes again ({description})"
    what = WHAT_TO_DO.get(check)
    return f"FAILED CHECK {name}: {description}" + (f" What to do: {what}." if what and "What to do" not in
                                                    description else "")


def check_pages(evaluations: Sequence[tuple[str, Any]], told: Mapping[str, str]) -> list[outbox.Page]:
    """The pages ``evaluations`` (``(execution id, AssetCheckEvaluation)``, oldest first) owe, given what was told.

    Per check and partition: an ERROR failure not yet told is a page; a pass
    after a told failure is its resolution; anything else is already said.
    """
    memory = dict(told)
    pages = []
    for ident, evaluation in evaluations:
        key = AssetCheckKey(evaluation.asset_key, evaluation.check_name)
        if key in PAGED_ELSEWHERE:
            continue
        name = check_name(key, evaluation.partition)
        failing = not evaluation.passed and evaluation.severity == AssetCheckSeverity.ERROR
        if failing == (name in memory):
            continue
        if not failing and not evaluation.passed:
            continue            # a WARN failure after a told ERROR failure: not resolved
        description = one_line(evaluation.description or "-")
        event = "failed" if failing else "resolved"
        page = outbox.Page(f"check|{name}|{event}|{ident}", "asset_check",
                           check_text(name, description, failing, key.name),
                           {"event": event, "asset": key.asset_key.to_user_string(), "check": key.name,
                            "partition": evaluation.partition, "description": description},
                           told=(name, failing))
        pages.append(page)
        if failing:
            memory[name] = page.key
        else:
            memory.pop(name)
    return pages


def _history(instance: DagsterInstance, key: AssetCheckKey, after: int) -> list[Any]:
    """Every execution of ``key`` with an id above ``after``, newest first (a page of them at a time)."""
    found, cursor = [], None
    storage = instance.event_log_storage
    while True:
        page = storage.get_asset_check_execution_history(key, limit=HISTORY_PAGE, cursor=cursor)
        found += [r for r in page if r.id > after]
        if len(page) < HISTORY_PAGE or page[-1].id <= after:
            return found
        cursor = page[-1].id


def new_evaluations(instance: DagsterInstance, keys: Sequence[AssetCheckKey],
                    after: Mapping[str, int]) -> tuple[list[tuple[str, Any]], dict[str, int]]:
    """The evaluations stored since ``after`` (per check: the execution id read up to), in the order they happened.

    Dagster numbers a check's execution when it is *planned*, and fills in
    its evaluation when the check runs, so an execution still planned keeps
    the mark below it: it is read again at the next tick (what was read
    above it is read again too, and its pages, already recorded, are not
    recorded twice).  One query finds the checks evaluated since; only
    those are read.
    """
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(keys))
    # Nothing older than the outbox's memory of keys is paged: a sensor whose cursor was reset must not tell
    # again of a failure resolved years ago, whose page's key is forgotten.
    horizon = (datetime.now(timezone.utc) - outbox.KEEP_KEYS).timestamp()
    out: list[tuple[float, int, str, Any]] = []
    marks = dict(after)
    for key in keys:
        name, record = key.to_user_string(), latest.get(key)
        if record is None or record.id <= after.get(name, 0):
            continue
        waiting = []
        for execution in _history(instance, key, after.get(name, 0)):
            evaluation = execution.evaluation
            if execution.status.value in ("SUCCEEDED", "FAILED") and evaluation is not None:
                if execution.event.timestamp >= horizon:
                    out.append((execution.event.timestamp, execution.id, f"{execution.id}", evaluation))
            else:
                run = instance.get_run_by_id(execution.run_id)
                if run is not None and not run.is_finished:
                    waiting.append(execution.id)
        marks[name] = min(waiting) - 1 if waiting else record.id
    out.sort(key=lambda item: (item[0], item[1]))
    return [(ident, evaluation) for _, _, ident, evaluation in out], marks


def _cursor(cursor: Optional[str], instance: DagsterInstance,
            keys: Sequence[AssetCheckKey]) -> dict[str, int]:
    """Per check, the execution id read up to.

    A cursor of the sensor's earlier form (its memory of what it told, one
    JSON document) starts each check from its newest execution: what it told
    before is not told again.
    """
    if not cursor:
        return {}
    try:
        value = json.loads(cursor)    # one JSON document: the sensor's cursor
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("read"), dict):
        return {str(k): int(v) for k, v in value["read"].items()}
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(keys))
    return {key.to_user_string(): record.id for key, record in latest.items() if record is not None}


@sensor(minimum_interval_seconds=INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
        description="Pages each asset check of ERROR severity that starts failing, per partition, to the webhook "
                    "(LLMARCHIVE_WEBHOOK_URL) through the outbox, once, and once more when it passes again — "
                    "both, when both happened between two ticks. The dead-man check is paged by lease_on_life "
                    "instead. Free: reads Dagster's own check evaluations.")
def failed_check_webhook(context: SensorEvaluationContext, archive: ArchiveResource,
                         webhook: WebhookResource) -> SensorResult:
    url = webhook.url()
    if not url:
        return SensorResult(skip_reason="no webhook configured (LLMARCHIVE_WEBHOOK_URL): failing checks are shown "
                                        "in the UI only")
    if context.repository_def is None:
        return SensorResult(skip_reason="no repository to read the checks of")
    paths = archive.paths()
    keys = sorted((k for k in context.repository_def.asset_graph.asset_check_keys if k not in PAGED_ELSEWHERE),
                  key=lambda k: k.to_user_string())
    evaluations, marks = new_evaluations(context.instance, keys, _cursor(context.cursor, context.instance, keys))
    pages = check_pages(evaluations, outbox.told(paths))
    new, delivery = deliver(paths, url, pages)
    failing = sorted(outbox.told(paths))
    summary = (f"{len(evaluations)} evaluation(s) read, {len(new)} page(s) recorded; outbox: {delivery.said()}; "
               f"failing, told: {', '.join(failing) or 'none'}")
    if delivery.waiting and delivery.owed:
        context.log.warning(f"pages owed: {delivery.waiting}")
    return SensorResult(skip_reason=summary, cursor=json.dumps({"read": marks}, sort_keys=True))


ALERT_SENSORS = [failed_check_webhook, failed_run_webhook]
