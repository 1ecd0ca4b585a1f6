"""The commercial series: one partition per month and protocol, the paid path."""
from typing import Optional

from dagster import (AllPartitionMapping, AssetDep, AssetExecutionContext, Failure, MaterializeResult, MetadataValue,
                     asset)

from assets.partitions import commercial
from assets.protocols import preregistration_manifest, protocols
from assets.refusals import refusal, required_budget
from assets.reporting import cost_metadata, gate_check_results, gate_check_specs, measurement_metadata, run_metadata
from assets.resources import ArchiveResource, BudgetResource, SubjectResource
from llmarchive.archive import ArchivePaths, last_skip, load_run, parse_month, store, sweep_run_folder
from llmarchive.budget import Budget, BudgetHalted, RunBusy, protocol_calls
from llmarchive.protocols import registry
from llmarchive.run import LogLines
from llmarchive.schedule import NotThisMonth, partition_day, sweep
from llmarchive.succession import active_model
from measure.verify import recompute
from panels.build import SERIES as PROTOCOL_SERIES


def _calls_note() -> str:
    """What one partition costs, in calls and in the formula the budget's rate turns into euros.

    The rate is the owner's private figure (``budget.json``), read only at run
    time; the description states calls and formula, the materialisation the amount.
    """
    per_series = ", ".join(f"{4 * s['n']} calls for a {name} protocol (4 versions × n = {s['n']})"
                           for name, s in PROTOCOL_SERIES.items())
    return (f"Cost: one partition sends {per_series}; cost = calls × rates_eur_per_call.scenario of the "
            "private budget.json (the estimate and the amount charged are in the materialisation metadata: "
            "planned_calls, rate_eur_per_call, estimated_cost_eur, spend_eur). Manual: nothing starts it but you — "
            "materialise the current month's partition by hand, or turn on the monthly_sweep_schedule (created "
            "STOPPED).")


def _keys(context: AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return parse_month(keys["month"][:7], "the month partition"), keys["protocol"]


def _partition_day(paths: ArchivePaths, month: str, protocol_id: str, model: str) -> str:
    """The day the partition runs as (:func:`llmarchive.schedule.no_backfill.partition_day`), or its refusal.

    Today in the partition's own month; in a later one only the run that
    month's sweep started and left open resumes, under its own date.
    """
    try:
        return partition_day(paths, month, protocol_id, model)
    except NotThisMonth as exc:
        todo = (f"nothing: the {month} run is complete and its measurement stands" if exc.complete
                else f"run the {exc.today[:7]} partition")
        raise refusal(exc.refusal, str(exc), month=month, today=exc.today, what_to_do=todo) from None


@asset(partitions_def=commercial, group_name="commercial",
       # A month × protocol partition depends on its protocol's partition (Dagster maps the shared "protocol"
       # dimension by default) and on whatever manifests exist.
       deps=[protocols, AssetDep(preregistration_manifest, partition_mapping=AllPartitionMapping())],
       description="PAID. One protocol's trials on the tracked commercial model for one month, through the "
                   "sweep's rules: pre-registration guard (not_preregistered → skipped, nothing spent), budget "
                   "ladder, resumable run folders. " + _calls_note())
def commercial_trials(context: AssetExecutionContext, archive: ArchiveResource, subject: SubjectResource,
                      budget: BudgetResource) -> MaterializeResult:
    month, protocol_id = _keys(context)
    paths = archive.paths()
    config = subject.models_config()
    day = _partition_day(paths, month, protocol_id, active_model(paths, config))
    ready, why = subject.configured()
    if not ready:
        raise refusal("no_key", f"{why}. Nothing was spent.", protocol_id=protocol_id, month=month,
                      what_to_do=f"set {subject.key_variable} where the step runs, then run the partition "
                                 "again") from None
    loaded_budget = required_budget(budget, paths, protocol_id=protocol_id, month=month)
    protocol, cost = _protocol_and_cost(paths, protocol_id, loaded_budget)

    progress = LogLines(context.log.info, every=20)    # with how many answers the grammar could read
    try:
        outcome = sweep.sweep(paths, day, config, subject_factory=subject.factory(), provider_check=subject.model_ids,
                        concurrency=subject.concurrency, budget=loaded_budget, progress=progress,
                        only=[protocol_id], protocols={protocol_id: protocol} if protocol else None)
    except BudgetHalted as exc:
        raise refusal("budget_refused", f"{exc}. Nothing more was spent.", spent_eur=None,
                      protocol_id=protocol_id, month=month,
                      what_to_do="see `llmarchive budget show`; the next month's pools open on the 1st") from None
    except RunBusy as exc:
        raise refusal("run_busy", str(exc), protocol_id=protocol_id, month=month,
                      what_to_do="nothing: the launch already working on this partition goes on; look at that run"
                      ) from None
    except registry.ProtocolNotBuilt as exc:   # a person's step, not an expected refusal: reading never builds
        raise Failure(description=f"{exc}. Nothing was spent.", metadata={"protocol_id": protocol_id}) from None
    metadata = {
        "month": month,
        "protocol_id": protocol_id,
        "model_id": outcome.model_id,
        "ran": protocol_id in outcome.ran,
        "already_done_this_month": protocol_id in outcome.already,
        "skipped": MetadataValue.json([{"condition": c, "reason": r} for _, c, r in outcome.skipped]),
        **cost,
    }
    run_id = outcome.runs.get(protocol_id)     # the run the sweep made (or found) for this partition
    run = store.run_record(paths, run_id) if run_id else None
    if run is not None:
        metadata.update(run_metadata(run))
        spent = run.get("cost_eur")
        metadata["spend_eur"] = MetadataValue.float(float(spent)) if isinstance(spent, (int, float)) else "unknown"
    if outcome.halted:
        raise Failure(description=f"the run stopped and can be resumed: {outcome.halted}", metadata=metadata)
    outage = next((reason for pid, condition, reason in outcome.skipped
                   if pid == protocol_id and condition == "provider_unreachable"), None)
    if outage is not None and protocol_id not in outcome.ran:
        # Not a measurement and not the archive's rule at work: a green run here would hide the month's gap.
        raise refusal("provider_outage", f"{outage}. Nothing was spent.", protocol_id=protocol_id, month=month,
                      what_to_do=f"run this partition again once the provider answers, before {month[:7]} ends "
                                 "(re-execute the failed runs, or materialise the partition)") from None
    return MaterializeResult(metadata=metadata)


def _protocol_and_cost(paths: ArchivePaths, protocol_id: str, loaded_budget: Budget) -> tuple[Optional[dict], dict]:
    """The protocol, loaded once for the partition (the sweep is handed it), and its cost metadata.

    Planned calls × the budget's scenario rate: what one run of this protocol
    is expected to cost.  An unknown or edited protocol has no cost: the
    sweep itself refuses it and says why.
    """
    try:
        protocol = registry.load_protocol(paths, protocol_id)
    except ValueError as exc:
        return None, {"planned_calls": f"unknown ({exc})"}
    return protocol, cost_metadata(protocol_calls(protocol), None if loaded_budget is None else loaded_budget.rate("scenario"))


@asset(partitions_def=commercial, group_name="commercial", deps=[commercial_trials],
       check_specs=gate_check_specs("commercial_measurements"),
       description="The measurement of that month's run, re-verified from its trials (its numbers as typed "
                   "metadata, plotted across months; its gates as WARN checks); or the recorded reason it was "
                   "not run. Free: it reads the run folder, it calls nothing.")
def commercial_measurements(context: AssetExecutionContext, archive: ArchiveResource,
                            subject: SubjectResource) -> MaterializeResult:
    month, protocol_id = _keys(context)
    paths = archive.paths()
    model = active_model(paths, subject.models_config())
    # The month's sweep run of this protocol, when the sweep started one (commercial_trials ran before this step).
    folder_path = sweep_run_folder(paths, month, protocol_id, model)
    if folder_path is None:
        last = last_skip(paths, month, protocol_id)
        why = (f"{last.get('cause')}: {last.get('reason')}" if last
               else "no run and no recorded skip yet")
        return MaterializeResult(metadata={
            "measurement": "none",
            "skip_cause": (last or {}).get("cause") or "-",
            "skip_reason": (last or {}).get("reason") or "no run and no recorded skip yet",
        }, check_results=gate_check_results("commercial_measurements", [], missing=f"no measurement ({why})"))
    folder = load_run(folder_path)
    if folder.measurement is None:
        raise Failure(description=f"{folder_path.name} is not complete: materialise commercial_trials again to resume")
    differences = recompute(folder.measurement, folder.trials, folder.protocol_header)
    if differences:
        raise Failure(description=f"{folder_path.name}: {len(differences)} field(s) do not recompute",
                      metadata={"differences": MetadataValue.json(differences[:20])})
    spend = folder.run.get("cost_eur")
    return MaterializeResult(
        metadata={"run_id": folder_path.name, **measurement_metadata(folder.measurement),
                  "spend_eur": MetadataValue.float(float(spend)) if isinstance(spend, (int, float)) else "unknown"},
        check_results=gate_check_results("commercial_measurements", [folder.measurement]))
