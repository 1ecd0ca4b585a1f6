"""The instrument's daily checks, one partition per day (method §7), and revalidation.

The day's alarm is red on the day's partition: the runtime fingerprint and
the guard rotation each carry the check :data:`ALARM_CHECK` (ERROR), failing
with the alarm's reason when that day's check raised an
``instrument_alarm``.  The step itself still succeeds — the instrument
looked and recorded what it saw; the cycle goes on (method §7.4).  The
latch that follows is ``archive_health``'s check (:mod:`assets.health`).
"""
import warnings
from typing import Optional

from dagster import (AllPartitionMapping, AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetDep,
                     AssetExecutionContext, Config, Failure, MaterializeResult, MetadataValue, OpExecutionContext,
                     Output, asset, job, op)

from assets.partitions import days
from assets.protocols import protocols
from assets.refusals import refusal, required_budget
from assets.reporting import cost_metadata, subject_fingerprint_cost_note
from assets.resources import ArchiveResource, BudgetResource, ReferenceModelResource, SubjectResource
from llmarchive.run import progress as progress_bar
from llmarchive.protocols import registry
from llmarchive.instrument import (ALARM_VERDICTS, AcknowledgeError, RevalidationFailed, SUBJECT_ITEMS,
                                   SUBJECT_MAX_TOKENS, acknowledge as acknowledge_lib, day_verdict,
                                   default_engine_factory, due_protocol, guard_rotation as rotate, latched_alarm,
                                   pending_folders, revalidate as revalidate_lib,
                                   runtime_fingerprint as run_fingerprint, subject_fingerprint as ask_subject)
from llmarchive.succession import active_model
from llmarchive.archive import ArchivePaths, parse_date, utc_today
from llmarchive.budget import RunBusy


ALARM_CHECK = "no_instrument_alarm"
ALARM_CHECK_DESCRIPTIONS = {
    "runtime_fingerprint": "The day's runtime fingerprint raised no instrument_alarm (a digest that differs from the "
                           "expectation, a new runtime key, a fingerprint that could not run). Failing (ERROR) names "
                           "the alarm; it latches until a human core_change (archive_health's no_latched_alarm).",
    "guard_rotation": "The day's guard rotation raised no instrument_alarm (a slot decided differently, improved, "
                      "regressed, unmeasurable, unavailable). Failing (ERROR) names the alarm; it latches until a "
                      "human core_change (archive_health's no_latched_alarm).",
}


def _alarm_spec(asset_name: str) -> AssetCheckSpec:
    # Dagster calls checks evaluated per partition a preview; the alarm is the day's, so that is what we use.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec.*")
        return AssetCheckSpec(ALARM_CHECK, asset=asset_name, description=ALARM_CHECK_DESCRIPTIONS[asset_name],
                              partitions_def=days)


def _alarm_result(asset_name: str, alarm_reason: Optional[str], clear: str) -> AssetCheckResult:
    """The day's alarm check: failing with the alarm's reason on one line, or passing with what was seen."""
    return AssetCheckResult(asset_key=asset_name, check_name=ALARM_CHECK, passed=alarm_reason is None,
                            severity=AssetCheckSeverity.ERROR,
                            description=(" ".join(f"instrument_alarm: {alarm_reason}".split()) if alarm_reason
                                         else clear))


def _today_only(day: str) -> str:
    parse_date(day, "the day partition")
    today = utc_today()
    if day != today:
        raise refusal("not_today", f"the instrument observes the day it runs: the {day} partition cannot be run on "
                                   f"{today} (a missed day is a coverage gap with its cause, never a backfill). "
                                   f"Nothing was run.", day=day, today=today,
                      what_to_do=f"run the {today} partition") from None
    return day


def _progress(context: AssetExecutionContext, every: int):
    """Lines in the step's log every ``every`` reports, and a bar on the terminal when one is asked for."""
    bar = progress_bar.from_env()
    return bar, progress_bar.both(progress_bar.LogLines(context.log.info, every), bar if bar.active else None)


@asset(partitions_def=days, group_name="instrument", check_specs=[_alarm_spec("runtime_fingerprint")],
       description="Twelve fixed prompts on the reference model, greedy, top-5 logprobs per token hashed and "
                   "compared with the stored expectation for exact equality.")
def runtime_fingerprint(context: AssetExecutionContext, archive: ArchiveResource,
                        reference_model: ReferenceModelResource) -> MaterializeResult:
    day = _today_only(context.partition_key)
    paths = archive.paths()
    r = reference_model
    bar, report = _progress(context, every=3)
    with bar:
        outcome = run_fingerprint(paths, day, default_engine_factory(r.model, r.model_path, r.model_sha256,
                                                                     r.n_threads, r.n_batch), progress=report)
    record = outcome.record
    verdict = day_verdict(paths, day)
    context.log.info(f"runtime fingerprint: {record['status']} ({record.get('reason') or '-'}); the day's "
                     f"instrument verdict: {'passing' if verdict.passing else verdict.reason}")
    latch = latched_alarm(paths)
    metadata = {
        "status": record["status"],
        "latched_alarm": MetadataValue.json(latch),
        "digest": record.get("digest") or "-",
        "expected_digest": record.get("expected_digest") or "-",
        "model_sha256": record.get("model_sha256") or "-",
        "template_sha256": record.get("template_sha256") or "-",
        "runtime": MetadataValue.json({k: record.get(k) for k in ("llama_cpp_version", "runner_arch",
                                                                  "n_threads", "n_batch", "seed")}),
        "reason": record.get("reason") or "-",
        "day_verdict": "passing" if verdict.passing else verdict.reason,
    }
    if outcome.alarm is not None:
        context.log.error(f"instrument_alarm: {outcome.alarm.get('reason')}")
        metadata["alarm"] = outcome.alarm.get("reason")
    if latch is not None:
        context.log.warning(f"instrument alarm latched since {latch['since']} ({latch['alarm_count']} unacknowledged): "
                            f"new measurements are instrument_suspect until acknowledge_instrument_job records a "
                            f"core_change")
    metadata["pending_suspect_marks"] = _pending_marks(context, paths)
    alarm = (outcome.alarm.get("reason") or "no reason recorded") if outcome.alarm is not None else None
    return MaterializeResult(metadata=metadata, check_results=[_alarm_result(
        "runtime_fingerprint", alarm, f"no instrument alarm from the runtime fingerprint of {day} "
                                      f"(status {record['status']})")])


def _pending_marks(context: AssetExecutionContext, paths: ArchivePaths) -> MetadataValue:
    """The run folders an alarm met unreadable, their marks not applied yet (publication refuses them)."""
    pending = [folder.name for folder in pending_folders(paths)]
    if pending:
        context.log.warning(f"{len(pending)} run folder(s) hold a suspect mark an alarm could not apply: "
                            f"{', '.join(pending[:10])}; repair the run record, then `llmarchive instrument "
                            f"apply-marks` (publication refuses them until then)")
    return MetadataValue.json(pending)


class RotationConfig(Config):
    """``max_tokens`` overrides the guard protocol's value for a quick trial (kept apart from the real series)."""

    max_tokens: int = 0


@asset(partitions_def=days, group_name="instrument", check_specs=[_alarm_spec("guard_rotation")],
       # The day's guard protocol is any of them (a fixed cycle): every protocol partition, not one.
       deps=[AssetDep(protocols, partition_mapping=AllPartitionMapping()), runtime_fingerprint],
       description="The day's guard protocol on the reference model (a fixed cycle through every guard "
                   "protocol), compared slot by slot with its accepted baseline (every decision must "
                   "repeat exactly on the greedy, pinned runtime), then by method §6's change rule.")
def guard_rotation(context: AssetExecutionContext, config: RotationConfig, archive: ArchiveResource,
                   reference_model: ReferenceModelResource) -> MaterializeResult:
    day = _today_only(context.partition_key)
    paths = archive.paths()
    pid = due_protocol(paths, day)
    if pid is None:
        raise refusal("no_guard_protocol", "no admitted guard protocol to rotate through: nothing was run",
                      what_to_do="promote guard protocols (`llmarchive panels promote`)") from None
    max_tokens = config.max_tokens or None
    # Loaded once for the step, not per call.
    subject = reference_model.subject(max_tokens or registry.load_protocol(paths, pid)["generation"]["max_tokens"])
    bar, report = _progress(context, every=12)
    with bar:
        record = rotate(paths, day, subject, max_tokens=max_tokens, progress=report)
    context.log.info(f"guard rotation of {record.get('protocol_id')}: {record.get('verdict')} "
                     f"({record.get('reason') or '-'})")
    alarmed = record.get("verdict") in ALARM_VERDICTS
    if alarmed:
        context.log.error(f"instrument_alarm from the guard rotation: {record.get('reason')}")
    check = _alarm_result("guard_rotation", (record.get("reason") or record.get("verdict")) if alarmed else None,
                          f"no instrument alarm from the guard rotation of {record.get('protocol_id')} on {day} "
                          f"(verdict {record.get('verdict')})")
    return MaterializeResult(check_results=[check], metadata={
        "protocol_id": record.get("protocol_id"),
        "verdict": record.get("verdict"),
        "run_id": record.get("run_id") or "-",
        "previous_run_id": record.get("previous_run_id") or "-",
        "stability_pct": record.get("stability_pct"),
        "reason": record.get("reason") or "-",
        "pending_suspect_marks": _pending_marks(context, paths),
    })


@asset(partitions_def=days, group_name="instrument",
       description="PAID. Twenty-four short single-fact items (half true, half false) asked of the tracked "
                   "commercial model: a public daily series; a day with any unanswered call records no "
                   "fingerprint, only a skip. " + subject_fingerprint_cost_note(len(SUBJECT_ITEMS)))
def subject_fingerprint(context: AssetExecutionContext, archive: ArchiveResource, subject: SubjectResource,
                        budget: BudgetResource) -> MaterializeResult:
    day = _today_only(context.partition_key)
    ready, why = subject.configured()
    if not ready:
        raise refusal("no_key", f"{why}. Nothing was spent.", day=day,
                      what_to_do=f"set {subject.key_variable} where the step runs, then run today's partition "
                                 "again") from None
    paths = archive.paths()
    model = active_model(paths, subject.models_config())
    b = required_budget(budget, paths, day=day)
    try:
        outcome = ask_subject(paths, day, subject.factory()(model, SUBJECT_MAX_TOKENS), budget=b,
                              concurrency=subject.concurrency)
    except RunBusy as exc:
        raise refusal("run_busy", str(exc), day=day, model_id=model,
                      what_to_do="nothing: the launch already asking this day goes on; look at its record") from None
    record = outcome.record or {}
    return MaterializeResult(metadata={
        **cost_metadata(len(SUBJECT_ITEMS), b.rate("fingerprint") if b else None),
        "model_id": model,
        "correct": record.get("correct"),
        "total": record.get("total"),
        "already_done_today": outcome.already,
        "skipped": (outcome.skip or {}).get("reason") or "-",
    })


@asset(partitions_def=days, group_name="instrument",
       description="Ten historical measurements recomputed from their trials with the frozen estimator; "
                   "any difference fails loudly.")
def revalidation(context: AssetExecutionContext, archive: ArchiveResource) -> MaterializeResult:
    day = _today_only(context.partition_key)
    try:
        outcome = revalidate_lib.revalidate(archive.paths(), day)
    except RevalidationFailed as exc:
        raise Failure(description=str(exc)) from None
    return MaterializeResult(metadata={"revalidated": MetadataValue.json(outcome.chosen),
                                       "differing": len(outcome.differing)})


class AcknowledgeConfig(Config):
    """The human ``core_change`` that ends a latched alarm: both fields are required and may not be empty."""

    core_change: str
    reviewer: str


@op(description="Record a human core_change ending the latched instrument alarm: what changed and why, and who "
                "reviewed it. Accepts the pending fingerprint candidates and alarmed guard-rotation results as the "
                "new expectations. Succeeds without recording anything when no alarm is latched.")
def acknowledge_instrument_alarm(context: OpExecutionContext, config: AcknowledgeConfig,
                                 archive: ArchiveResource) -> Output[bool]:
    try:
        outcome = acknowledge_lib.acknowledge(archive.paths(), config.core_change, config.reviewer)
    except AcknowledgeError as exc:
        raise Failure(description=str(exc)) from None
    if not outcome.recorded:
        context.log.info("no instrument alarm is latched: nothing to acknowledge, nothing recorded")
        return Output(False, metadata={"recorded": False})
    record, latch = outcome.record, outcome.latch
    context.log.info(f"core_change recorded by {record['reviewer']}: the alarm latched since {latch['since']} "
                     f"({latch['alarm_count']} alarm(s)) is acknowledged; archive_health's no_latched_alarm turns "
                     f"green at lease_on_life's next tick (within the hour), or at once when archive_health is "
                     f"materialised")
    return Output(True, metadata={
        "recorded": True,
        "latched_since": latch["since"],
        "alarm_count": latch["alarm_count"],
        "record_sha256": record.get("record_sha256"),
        "accepted_expectations": len(record["accepted_expectations"]),
        "accepted_rotations": MetadataValue.json(record["accepted_rotations"]),
    })


@job(description="Acknowledge a latched instrument alarm (method §7: recovery only by a human core_change). "
                 "Launch it from the Launchpad with ops.acknowledge_instrument_alarm.config.core_change and "
                 ".reviewer filled in.")
def acknowledge_instrument_job():
    acknowledge_instrument_alarm()
