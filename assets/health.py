"""What needs the owner, as red checks in the UI: the ``archive_health`` asset and when it is evaluated again.

An alarm that lives in a log line of a green run, or in the skip reason of
a grey sensor tick, is seen by nobody.  So each standing condition a person
must act on is an asset check of ERROR severity whose description is its
one line, failing while the condition holds and passing once it is
resolved.  The question each check asks is answered by the library function
that owns it, the same ones the morning check reads
(:mod:`llmarchive.schedule.status`):

* :data:`LATCH` — an instrument alarm not yet acknowledged
  (:func:`llmarchive.instrument.verdict.latched_alarm`); resolved by a human
  ``core_change`` (``llmarchive instrument acknowledge`` or
  ``acknowledge_instrument_job``);
* :data:`BRIDGE` — a generation bridge waiting for its runs
  (:func:`llmarchive.schedule.status.bridges_part`); resolved when both
  models' runs are complete, or closed ``incomplete`` when the old model
  leaves the provider's list first;
* :data:`REVIEW` — a new model id no provider declared the successor of
  (:func:`llmarchive.schedule.status.reviews_part`); resolved by
  ``llmarchive review resolve`` / ``review_job``, or by a later declaration;
* :data:`DEADMAN` — no daily cycle completed within ``deadman_alert`` (36 h)
  (:func:`llmarchive.schedule.lease.check`); resolved by the next daily cycle;
* :data:`PAGES` — the lifeline itself: a page owed to the webhook for more
  than an hour, or a webhook setting that is not a URL
  (:func:`llmarchive.schedule.outbox.overdue`); resolved when the webhook
  takes what is owed (or the setting is corrected).

The day's own instrument alarm (today's runtime fingerprint or guard
rotation) is a check of that day's partition, in :mod:`assets.instrument`.

**When the checks are evaluated.**  ``archive_health`` is unpartitioned and
reads only the archive's files; it is materialised by ``archive_health_job``
whenever a sensor finds that what the UI shows is no longer the archive's
state (:func:`health_request`): ``lease_on_life`` every hour and
``model_watch`` after each watch.  Each check's result carries a ``state``
(what identifies the condition, not the clock: the first open alarm and
how many, the pending bridges' keys, the review ids), and a run is asked for
only when some state differs from the one the latest evaluation recorded —
so the asset is red when something appears, green again once it is gone,
and not re-run every hour while nothing changes.  A check never evaluated
is read as passing: a healthy archive launches no run at all.
"""
import hashlib
import json
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from dagster import (AssetCheckKey, AssetCheckResult, AssetCheckSeverity,
                     AssetCheckSpec, AssetExecutionContext, AssetKey, DagsterInstance, MaterializeResult,
                     MetadataValue, RunRequest, asset)

from assets.resources import ArchiveResource, WebhookResource
from llmarchive.archive import ArchivePaths
from llmarchive.instrument import latch_reason, latched_alarm
from llmarchive.schedule import bridges_part, lease, outbox, reviews_part
from measure.errors import ArchiveError

ASSET = "archive_health"
LATCH = "no_latched_alarm"
BRIDGE = "no_pending_bridge"
REVIEW = "no_pending_review"
DEADMAN = "no_deadman_alert"
PAGES = "no_overdue_page"
CLEAR = "clear"
SUCCESSION = (BRIDGE, REVIEW)

DESCRIPTIONS = {
    LATCH: "No instrument alarm is latched: every instrument_alarm has been acknowledged by a human core_change. "
           "Failing (ERROR) until `llmarchive instrument acknowledge` or acknowledge_instrument_job records one.",
    BRIDGE: "No generation bridge is waiting for its runs. Failing (ERROR) while one is pending: run both models "
            "(`llmarchive bridge run`) before the old one is retired.",
    REVIEW: "No new model id waits for a needs_review decision. Failing (ERROR) until `llmarchive review resolve` "
            "or review_job decides it (or the provider declares the successor).",
    DEADMAN: "A daily cycle (the runtime fingerprint's record) completed within deadman_alert (36 h). Failing "
             "(ERROR) is the dead-man alert; the next daily cycle clears it.",
    PAGES: "Every page for the owner (a failed check or run, the dead-man, the bridge alarm) reached the webhook "
           "(LLMARCHIVE_WEBHOOK_URL) within an hour of being recorded. Failing (ERROR) while one is owed longer or "
           "the setting is not a usable URL; the owed pages go out, oldest first, once the webhook takes them.",
}
CHECKS = tuple(DESCRIPTIONS)
HEALTH_SPECS = [AssetCheckSpec(name, asset=ASSET, description=text) for name, text in DESCRIPTIONS.items()]


@dataclass(frozen=True)
class Health:
    """One check's answer: passed, its one line, and the ``state`` that identifies the condition."""

    check: str
    passed: bool
    description: str
    state: str = CLEAR

    def result(self) -> AssetCheckResult:
        return AssetCheckResult(asset_key=ASSET, check_name=self.check, passed=self.passed,
                                severity=AssetCheckSeverity.ERROR, description=self.description,
                                metadata={"state": self.state})


def one_line(text: object) -> str:
    """``text`` on one line (a check's description and a webhook's text are read at a glance)."""
    return " ".join(str(text).split())


def latch_health(paths: ArchivePaths) -> Health:
    latch = latched_alarm(paths)
    if latch is None:
        return Health(LATCH, True, "no instrument alarm is latched")
    return Health(LATCH, False, one_line(latch_reason(latch)),
                  f"{latch.get('first_alarm_sha256')}:{latch.get('alarm_count')}")


def bridge_health(paths: ArchivePaths) -> Health:
    pending = bridges_part(paths)
    if not pending:
        return Health(BRIDGE, True, "no generation bridge is pending")
    which = "; ".join(f"{b['old_model_id']} → {b['new_model_id']} since {b['date']}" for b in pending)
    return Health(BRIDGE, False, f"{len(pending)} generation bridge(s) pending: {which} — run both models "
                                 "(`llmarchive bridge run`) before the old one is retired",
                  "|".join(sorted(f"{b['model_family']}:{b['old_model_id']}:{b['new_model_id']}" for b in pending)))


def review_health(paths: ArchivePaths) -> Health:
    pending = reviews_part(paths)
    if not pending:
        return Health(REVIEW, True, "no needs_review is pending")
    which = "; ".join(f"{r['model_id']} (review {str(r['review_id'])[:12]}, since {r['date']})" for r in pending)
    return Health(REVIEW, False, f"{len(pending)} needs_review pending: {which} — decide with `llmarchive review "
                                 "resolve` or review_job; its bridge runs stay off every curve until then",
                  "|".join(sorted(str(r["review_id"]) for r in pending)))


def deadman_health(state: lease.LeaseState) -> Health:
    if not state.deadman:
        return Health(DEADMAN, True, f"a daily cycle completed {state.hours_since_cycle} h ago (last at "
                                     f"{state.last_cycle_at})")
    line = next((r for r in state.reasons if r.startswith("DEAD-MAN")), state.reason)
    return Health(DEADMAN, False, one_line(line), f"deadman since {state.last_cycle_at}")


def pages_health(paths: ArchivePaths, url: Optional[str]) -> Health:
    broken = outbox.overdue(paths, url)
    if broken is None:
        found = outbox.summary(paths)
        last = found.last_delivered
        said = (f"last page delivered {last['at']}" if last else "no page was ever needed") + (
            f"; {len(found.owed)} owed for less than an hour" if found.owed else "")
        return Health(PAGES, True, said if url else f"no webhook is configured; {said}")
    return Health(PAGES, False, one_line(broken[1]), broken[0])


def _guarded(check: str, part: Callable[[], Health]) -> Health:
    """A part that cannot be read fails its own check with why (the morning check's rule), not the others."""
    try:
        return part()
    except (ArchiveError, OSError, ValueError) as exc:
        return Health(check, False, one_line(f"cannot be read: {type(exc).__name__}: {exc}"),
                      f"error:{type(exc).__name__}")


def health(paths: ArchivePaths, checks: Iterable[str] = CHECKS, lease_state: Optional[lease.LeaseState] = None,
           url: Optional[str] = None) -> list[Health]:
    """The answer of each of ``checks`` now (``lease_state``: a lease already checked by the caller; ``url``: the
    webhook, for the lifeline's check)."""
    parts: dict[str, Callable[[], Health]] = {
        LATCH: lambda: latch_health(paths),
        BRIDGE: lambda: bridge_health(paths),
        REVIEW: lambda: review_health(paths),
        DEADMAN: lambda: deadman_health(lease_state or lease.check(paths)),
        PAGES: lambda: pages_health(paths, url),
    }
    return [_guarded(name, parts[name]) for name in checks]


@asset(group_name="alerts", check_specs=HEALTH_SPECS,
       description="What needs the owner now, as checks of ERROR severity (red while it holds, green once "
                   "resolved): a latched instrument alarm, a pending generation bridge, a pending needs_review, "
                   "the dead-man alert, pages that do not reach the webhook. Free: reads the archive's records. "
                   "Materialised by archive_health_job when lease_on_life (hourly) or model_watch finds the state "
                   "changed; never materialised on an archive where nothing was ever wrong. Materialise it by hand "
                   "to look now.")
def archive_health(context: AssetExecutionContext, archive: ArchiveResource,
                   webhook: WebhookResource) -> MaterializeResult:
    found = health(archive.paths(), url=webhook.url())
    failing = [h for h in found if not h.passed]
    for h in failing:
        context.log.error(f"{h.check}: {h.description}")
    return MaterializeResult(metadata={"failing": MetadataValue.json([h.check for h in failing])},
                             check_results=[h.result() for h in found])


def shown_state(instance: DagsterInstance, check: str) -> Optional[tuple[str, int]]:
    """The ``state`` the UI shows for ``check`` and the id of that evaluation (CLEAR, 0 when never evaluated).

    None while a run is evaluating it.
    """
    key = AssetCheckKey(AssetKey(ASSET), check)
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([key]).get(key)
    if record is None:
        return CLEAR, 0
    if record.status.value == "PLANNED":    # a run has announced it and not evaluated it yet
        run = instance.get_run_by_id(record.run_id)
        return None if run is not None and not run.is_finished else (CLEAR, record.id)
    evaluation = record.evaluation
    state = evaluation.metadata.get("state") if evaluation is not None else None
    return (getattr(state, "value", None) or (CLEAR if evaluation is None or evaluation.passed else "failing"),
            record.id)


def health_request(instance: DagsterInstance, paths: ArchivePaths, checks: Iterable[str] = CHECKS,
                   lease_state: Optional[lease.LeaseState] = None, url: Optional[str] = None) -> Optional[RunRequest]:
    """An ``archive_health_job`` run when the state of any of ``checks`` is not what the UI shows; else None.

    None as well while a run is evaluating them (the next tick looks
    again).  The run key names the states and the evaluations they are
    compared with, so a sensor asking twice about the same change launches
    one run, and a state that comes back after it was cleared is asked
    about again.
    """
    now = {h.check: h.state for h in health(paths, checks, lease_state, url)}
    shown = {name: shown_state(instance, name) for name in now}
    if any(seen is None for seen in shown.values()):
        return None
    changed = sorted(name for name in now if now[name] != shown[name][0])
    if not changed:
        return None
    digest = hashlib.sha256(json.dumps([now, shown], sort_keys=True).encode()).hexdigest()[:16]
    return RunRequest(run_key=f"{ASSET}-{digest}", tags={"llmarchive/changed_checks": ",".join(changed)})
