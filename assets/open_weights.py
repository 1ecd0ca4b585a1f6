"""The open-weights series: every open protocol on the reference model, per generation."""
from typing import Optional

from dagster import (AllPartitionMapping, AssetDep, AssetExecutionContext, Config, MaterializeResult, MetadataValue,
                     asset)

from assets.partitions import generations
from assets.protocols import protocols
from assets.reporting import gate_check_results, gate_check_specs, measurement_table, outcome_table, typed_numbers
from assets.resources import ArchiveResource, ReferenceModelResource
from llmarchive.archive import load_run, open_weights_run_id
from llmarchive.schedule import open_weights as ow
from llmarchive.run import LogLines
from llmarchive.instrument import suspect_value
from measure.verify import recompute


class OpenWeightsConfig(Config):
    """Which open protocols to run: a protocol series (``v0``), optionally a subset.

    ``max_tokens`` overrides the protocols' frozen value for a quick trial;
    such runs are recorded as exploratory and never reach a curve.
    """

    protocol_series: str = "v0"
    protocols: Optional[list[str]] = None
    max_tokens: Optional[int] = None


@asset(partitions_def=generations, group_name="open_weights",
       # A generation runs every open protocol: all protocol partitions, not one.
       deps=[AssetDep(protocols, partition_mapping=AllPartitionMapping())],
       description="Trials of every admitted open protocol on the reference model for one generation "
                   "(resumable: a partition materialised again continues where it stopped).")
def open_weights_trials(context: AssetExecutionContext, config: OpenWeightsConfig, archive: ArchiveResource,
                        reference_model: ReferenceModelResource) -> MaterializeResult:
    paths = archive.paths()
    generation = context.partition_key
    subjects = ow.SubjectCache(reference_model.subject)
    # A line every 20 trials (a couple of minutes on the embedded model) with how many answers the grammar
    # could read; run_generation adds a terminal bar when one is asked for.
    progress = LogLines(context.log.info, every=20)
    result = ow.run_generation(paths, generation, subjects, protocol_series=config.protocol_series,
                               only=config.protocols,
                               instrument_suspect=lambda day, run_id: suspect_value(paths, day, run_id),
                               max_tokens=config.max_tokens, progress=progress)
    runs = [r.run for r in result.runs]
    return MaterializeResult(metadata={
        "generation": generation,
        "runs": MetadataValue.json([r["run_id"] for r in runs]),
        "complete": result.complete,
        "called_now": sum(r.called for r in result.runs),
        "already_recorded": sum(r.already_recorded for r in result.runs),
        "outcomes": MetadataValue.md(outcome_table(runs)),
        "spend_eur": 0.0,
        "trial_log_sha256": MetadataValue.json({r["run_id"]: r.get("trials_last_sha256") for r in runs}),
    })


@asset(partitions_def=generations, group_name="open_weights", deps=[open_weights_trials],
       check_specs=gate_check_specs("open_weights_measurements"),
       description="The measurement of each open protocol of the generation, re-verified from its trials: its "
                   "numbers as typed metadata per protocol (<protocol_id>/stability_pct …, plotted across "
                   "generations), its gates as WARN checks.")
def open_weights_measurements(context: AssetExecutionContext, config: OpenWeightsConfig,
                              archive: ArchiveResource) -> MaterializeResult:
    paths = archive.paths()
    generation = context.partition_key
    measurements, problems = [], []
    for protocol in ow.open_protocols(paths, config.protocol_series, config.protocols):
        folder = load_run(paths.run_dir(open_weights_run_id(generation, protocol["protocol_id"])))
        if folder.measurement is None:
            problems.append(f"{folder.path.name}: the run is not complete")
            continue
        differences = recompute(folder.measurement, folder.trials, folder.protocol_header)
        if differences:
            problems.append(f"{folder.path.name}: {len(differences)} field(s) do not recompute "
                            f"({', '.join(d['field'] for d in differences[:5])})")
        measurements.append(folder.measurement)
    if problems:
        raise RuntimeError("open-weights measurements are not ready: " + "; ".join(problems))
    numbers: dict = {}
    for m in measurements:
        numbers.update(typed_numbers(m, prefix=f"{m['protocol_id']}/"))
    return MaterializeResult(metadata={
        "generation": generation,
        "measurements": MetadataValue.md(measurement_table(measurements)),
        "on_curve": MetadataValue.int(sum(1 for m in measurements if m.get("on_curve"))),
        "flagged": MetadataValue.int(sum(1 for m in measurements if m.get("flags"))),
        **numbers,
    }, check_results=gate_check_results("open_weights_measurements", measurements,
                                        missing=None if measurements else "no open protocol was measured"))
