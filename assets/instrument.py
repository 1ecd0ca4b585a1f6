"""The instrument's daily checks, one partition per day (SPEC §7), and revalidation."""

from dagster import AssetExecutionContext, Config, Failure, MaterializeResult, MetadataValue, asset

from assets.partitions import days
from assets.protocols import protocols
from assets.resources import ArchiveResource, BudgetResource, ReferenceModelResource, SubjectResource
from llmarchive.instrument.fingerprint import default_engine_factory, runtime_fingerprint as run_fingerprint
from llmarchive.instrument.prompts import SUBJECT_MAX_TOKENS
from llmarchive.instrument.rotation import due_protocol, guard_rotation as rotate
from llmarchive.instrument.subject import subject_fingerprint as ask_subject
from llmarchive.instrument.verdict import day_verdict
from llmarchive.revalidate import RevalidationFailed, revalidate
from llmarchive.subject_models import active_model
from panels import registry
from llmarchive.records import utc_today


def _today_only(day: str) -> str:
    today = utc_today()
    if day != today:
        raise Failure(description=f"the instrument observes the day it runs: the {day} partition cannot be run on "
                                  f"{today} (a missed day is a coverage gap with its cause, never a backfill)")
    return day


@asset(partitions_def=days, group_name="instrument",
       description="Twelve fixed prompts on the reference model, greedy, top-5 logprobs per token hashed and "
                   "compared with the stored expectation for exact equality.")
def runtime_fingerprint(context: AssetExecutionContext, archive: ArchiveResource,
                        reference_model: ReferenceModelResource) -> MaterializeResult:
    day = _today_only(context.partition_key)
    paths = archive.paths()
    r = reference_model
    outcome = run_fingerprint(paths, day, default_engine_factory(r.model, r.model_path, r.model_sha256,
                                                                 r.n_threads, r.n_batch))
    record = outcome.record
    metadata = {
        "status": record["status"],
        "digest": record.get("digest") or "-",
        "expected_digest": record.get("expected_digest") or "-",
        "model_sha256": record.get("model_sha256") or "-",
        "template_sha256": record.get("template_sha256") or "-",
        "runtime": MetadataValue.json({k: record.get(k) for k in ("llama_cpp_version", "runner_arch",
                                                                  "n_threads", "n_batch", "seed")}),
        "day_verdict": "passing" if day_verdict(paths, day).passing else day_verdict(paths, day).reason,
    }
    if outcome.alarm is not None:
        context.log.error(f"instrument_alarm: {outcome.alarm.get('reason')}")
        metadata["alarm"] = outcome.alarm.get("reason")
    return MaterializeResult(metadata=metadata)


class RotationConfig(Config):
    """``max_tokens`` overrides the guard protocol's value for a quick trial (kept apart from the real series)."""

    max_tokens: int = 0


@asset(partitions_def=days, group_name="instrument", deps=[protocols, runtime_fingerprint],
       description="The day's guard protocol on the reference model (a fixed cycle through every guard "
                   "protocol), compared with its previous result by SPEC §6's change rule.")
def guard_rotation(context: AssetExecutionContext, config: RotationConfig, archive: ArchiveResource,
                   reference_model: ReferenceModelResource) -> MaterializeResult:
    day = _today_only(context.partition_key)
    paths = archive.paths()
    pid = due_protocol(paths, day)
    if pid is None:
        raise Failure(description="no admitted guard protocol to rotate through (promote guard protocols first)")
    max_tokens = config.max_tokens or None
    # Loaded once for the step, not per call.
    subject = reference_model.subject(max_tokens or registry.load_protocol(paths, pid)["generation"]["max_tokens"])
    record = rotate(paths, day, subject, max_tokens=max_tokens)
    if record.get("verdict") in ("improved", "regressed", "unmeasurable", "unavailable"):
        context.log.error(f"instrument_alarm from the guard rotation: {record.get('reason')}")
    return MaterializeResult(metadata={
        "protocol_id": record.get("protocol_id"),
        "verdict": record.get("verdict"),
        "run_id": record.get("run_id") or "-",
        "previous_run_id": record.get("previous_run_id") or "-",
        "stability_pct": record.get("stability_pct"),
        "reason": record.get("reason") or "-",
    })


@asset(partitions_def=days, group_name="instrument",
       description="Twenty-four short single-fact items (half true, half false) asked of the tracked "
                   "commercial model: a public daily series. Paid: off until a key is configured.")
def subject_fingerprint(context: AssetExecutionContext, archive: ArchiveResource, subject: SubjectResource,
                        budget: BudgetResource) -> MaterializeResult:
    day = _today_only(context.partition_key)
    ready, why = subject.configured()
    if not ready:
        raise Failure(description=f"{why}. Nothing was spent.")
    paths = archive.paths()
    model = active_model(paths, subject.models_config())
    outcome = ask_subject(paths, day, subject.factory()(model, SUBJECT_MAX_TOKENS), budget=budget.load(paths),
                          concurrency=subject.concurrency)
    record = outcome.record or {}
    return MaterializeResult(metadata={
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
        outcome = revalidate(archive.paths(), day)
    except RevalidationFailed as exc:
        raise Failure(description=str(exc)) from None
    return MaterializeResult(metadata={"revalidated": MetadataValue.json(outcome.chosen),
                                       "differing": len(outcome.differing)})
