"""Sensors: the model watch, the lease on life and the manifests (the webhook sensors are in :mod:`assets.alerts`).

``model_watch`` polls the provider's models list through the subject
resource, records every listed id (``model_observed``), adds a generation
partition for every model of the tracked family it has not seen, and
raises the bridge alarm for a new id in the family — in the record logs, as
a POST to the configured webhook, and in the UI as the failing checks of
``archive_health`` (a pending bridge, a pending ``needs_review``): when
what it found is not what those checks show, it requests the free
``archive_health_job`` run that turns them red (:func:`assets.health.health_request`).
It never launches a paid run: the bridge is started by hand (``llmarchive
bridge run``).  It talks to the paid provider with the owner's key, so like
every paid job it is created STOPPED, key or no key.  A provider that
cannot be reached is a recorded ``provider_outage``, not a crash.

``preregistration_manifests`` records every pre-registration manifest in the
UI, free: every ten minutes it adds a partition for each manifest on disk
that has none yet, and asks for a ``manifest_job`` run of each manifest that
is new or whose OpenTimestamps state changed since it last looked (stamped,
then upgraded by ``ots upgrade``) — so a manifest written or stamped from the
command line shows up beside what the UI wrote.

``lease_on_life`` checks, every hour, that a daily cycle completed within
36 hours and that the archive is not dormant; it must not depend on the
daily cycle it watches.  It records the state (:func:`llmarchive.schedule.lease.record_state`),
pages the webhook through :func:`llmarchive.schedule.lease.deliver` — the
same memory and the same outbox the outside timer (``deploy/``) uses, so the
two never page twice — and requests an ``archive_health_job`` run when any of
``archive_health``'s checks no longer shows the archive's state (an
acknowledgement, a resolved review, a dead-man that began or ended, pages
that stopped getting through).
"""
import json

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, sensor

from assets.health import SUCCESSION, health_request
from assets.jobs import archive_health_job, manifest_job
from assets.partitions import GENERATIONS, MANIFESTS, generations, manifests
from assets.resources import PAID_KEY, ArchiveResource, SubjectResource, WebhookResource
from llmarchive.schedule import lease, watch as model_watch_lib
from llmarchive.protocols import prereg
from llmarchive.succession import active_model
from llmarchive.archive import utc_today
from measure.errors import ArchiveError


@sensor(job=archive_health_job, minimum_interval_seconds=6 * 3600, default_status=DefaultSensorStatus.STOPPED,
        description="Reads the provider's models list every 6 h. New id in the family → generation partition, "
                    "bridge alarm (webhook) and the archive_health_job run that turns archive_health's "
                    "no_pending_bridge and no_pending_review checks red; never launches a paid run. It uses the "
                    "paid provider's key, so it is created STOPPED (key or no key): start it in the Dagster UI on "
                    f"the Automation page by turning on model_watch's toggle; it needs {PAID_KEY} where the daemon "
                    "runs.")
def model_watch(context: SensorEvaluationContext, archive: ArchiveResource, subject: SubjectResource,
                webhook: WebhookResource):
    paths = archive.paths()
    config = subject.models_config()
    day = utc_today()
    outcome = model_watch_lib.watch(paths, day, config, base_url=subject.base_url, webhook=webhook.url(),
                                    fetch=subject.models, max_attempts=subject.max_attempts)
    known = set(context.instance.get_dynamic_partitions(GENERATIONS))
    family = [i for i in outcome.listed if config.in_family(i)]
    wanted = [i for i in family if i in outcome.new_ids or i == active_model(paths, config)]
    to_add = sorted(set(wanted) - known)
    for alarm in outcome.alarms:
        context.log.warning(f"BRIDGE ALARM: {alarm}")
    request = health_request(context.instance, paths, SUCCESSION, url=webhook.url())
    if outcome.outage:
        message = f"provider_outage recorded: {outcome.outage}"
    else:
        message = f"{len(outcome.listed)} models listed, {len(outcome.new_ids)} new"
    if outcome.alarms:
        message += f"; {len(outcome.alarms)} generation bridge(s) pending, red on archive_health"
    elif not outcome.outage:
        message += ", no alarm"
    return SensorResult(
        run_requests=[request] if request else [],
        skip_reason=None if request else message,
        dynamic_partitions_requests=[generations.build_add_request(to_add)] if to_add else [],
        cursor=day,
    )


@sensor(job=archive_health_job, minimum_interval_seconds=3600, default_status=DefaultSensorStatus.RUNNING,
        description="Every hour: the dead-man alert when no daily cycle completed for 36 h (paged to the webhook, "
                    "LLMARCHIVE_WEBHOOK_URL, once per change and daily while it lasts; the outside timer in "
                    "deploy/ pages through the same memory), dormant after 180 days without a run; and the "
                    "archive_health_job run whenever archive_health's checks no longer show the archive's state.")
def lease_on_life(context: SensorEvaluationContext, archive: ArchiveResource, webhook: WebhookResource):
    paths = archive.paths()
    state = lease.check(paths)
    lease.record_state(paths, state)
    said = f"{state.state}: {state.reason}"
    url = webhook.url()
    if url:
        try:
            delivered = lease.deliver(paths, state, url)
        except ArchiveError as exc:     # an unusable URL must not stop the checks below: no_overdue_page says it
            context.log.error(f"lease webhook: {exc}")
            said += f" (webhook: {exc})"
        else:
            if delivered is not None:
                said += f" (webhook: {delivered[0]['event']} {delivered[1]})"
    context.log.info(f"lease: {said}")
    request = health_request(context.instance, paths, lease_state=state, url=url)
    return SensorResult(run_requests=[request] if request else [], skip_reason=None if request else said)


@sensor(job=manifest_job, minimum_interval_seconds=600, default_status=DefaultSensorStatus.RUNNING,
        description="Every 10 min (free, reads the archive's files): a partition for each pre-registration manifest "
                    "that has none yet, and a manifest_job run for each manifest that is new or whose "
                    "OpenTimestamps state changed (none → pending → upgraded).")
def preregistration_manifests(context: SensorEvaluationContext, archive: ArchiveResource):
    paths = archive.paths()
    files = {prereg.manifest_key(path): path for path in prereg.manifests(paths)}
    known = set(context.instance.get_dynamic_partitions(MANIFESTS))
    try:
        seen = json.loads(context.cursor) if context.cursor else {}     # one JSON document: the sensor's cursor
    except json.JSONDecodeError:
        seen = {}
    state, requests = {}, []
    for key, path in sorted(files.items()):
        state[key] = f"{prereg.file_sha256(path)[:16]}:{prereg.stamp_state(path)}"
        if seen.get(key) != state[key]:
            requests.append(RunRequest(run_key=f"manifest-{key}-{state[key]}", partition_key=key))
    to_add = sorted(set(files) - known)
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[manifests.build_add_request(to_add)] if to_add else [],
        cursor=json.dumps(state, sort_keys=True),
        skip_reason=None if requests else f"{len(files)} manifest(s), none new or changed",
    )


SENSORS = [model_watch, lease_on_life, preregistration_manifests]
