"""Coverage: every scheduled job of a month, ran or exactly one cause — and a red check when one has neither.

The month partition is judged on the day it runs, by the rule the CLI
judges by (:func:`llmarchive.schedule.coverage.record_month`): the
schedule's run on the 1st judges the whole month just ended.  A period
with no output and no cause is not a failed step but a failing ERROR
check of the partition, :data:`CHECK`, whose description is the one line
naming each job and period: the owner sees it red on the asset (and the
sensor that watches failing checks sends it on), beside the rows that
were written.
"""
import warnings
from datetime import datetime, timezone

from dagster import (AllPartitionMapping, AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetDep,
                     AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset)

from assets.partitions import months
from assets.resources import ArchiveResource
from llmarchive.archive import jobs as job_table, parse_month
from llmarchive.schedule import record_month
from measure.errors import ArchiveError

CHECK = "no_unexplained_gap"
CHECK_DESCRIPTION = ("Every scheduled job and period that has ended through this month ran or has exactly one cause "
                     "from the closed list; failing (ERROR) names each one that has neither.")

# Dagster calls checks evaluated per partition a preview; coverage is judged per month, so that is what we use.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec.*")
    COVERAGE_CHECKS = [AssetCheckSpec(CHECK, asset="coverage", description=CHECK_DESCRIPTION, partitions_def=months)]


@asset(partitions_def=months, group_name="publication", check_specs=COVERAGE_CHECKS,
       # A month's coverage reads every generation there is: a generation is not a period of time, so the
       # dynamic generation partitions map onto each month as a whole.
       deps=["commercial_measurements", AssetDep("open_weights_measurements", partition_mapping=AllPartitionMapping()),
             *job_table.assets()],     # every daily job's asset, from the job table
       description="The month's coverage rows, written as one batch: for every scheduled job and period, it ran "
                   "or exactly one cause from the closed list (a gap is a coverage_gap record). The month is "
                   "judged on the day this runs, so on the 1st the month just ended is whole. A period with "
                   f"neither fails the check {CHECK} (ERROR) by name; the rows that are known are still written.")
def coverage(context: AssetExecutionContext, archive: ArchiveResource) -> MaterializeResult:
    paths = archive.paths()
    month = parse_month(context.partition_key[:7], "the month partition")
    today = datetime.now(timezone.utc).date()
    try:
        result, unexplained = record_month(paths, month, today)
    except ArchiveError as exc:
        # A month not started yet, or a file that cannot be read: the one line that names it, not a traceback.
        raise Failure(description=str(exc)) from None
    gaps: dict[str, int] = {}
    for row in result.rows:
        if row["status"] == "gap":
            gaps[row["cause"]] = gaps.get(row["cause"], 0) + 1
    check = AssetCheckResult(
        asset_key="coverage", check_name=CHECK, passed=unexplained is None, severity=AssetCheckSeverity.ERROR,
        description=str(unexplained) if unexplained is not None else f"every period through {result.through} "
                                                                       "that has ended ran or has one cause",
        metadata={"unexplained": MetadataValue.int(len(unexplained.gaps) if unexplained is not None else 0),
                  "judged_on": today.isoformat()})
    return MaterializeResult(metadata={
        "rows": MetadataValue.int(len(result.rows)),
        "ran": MetadataValue.int(sum(1 for r in result.rows if r["status"] == "ran")),
        "gaps": MetadataValue.int(sum(gaps.values())),
        "gaps_by_cause": MetadataValue.json(gaps),
        "pending": MetadataValue.int(len(result.pending)),
        "unexplained": MetadataValue.int(len(unexplained.gaps) if unexplained is not None else 0),
        "through": result.through,
        "judged_on": today.isoformat(),
    }, check_results=[check])
