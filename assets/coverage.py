"""Coverage: every scheduled job of a month, ran or exactly one cause."""
from datetime import datetime, timezone

from dagster import (AllPartitionMapping, AssetDep, AssetExecutionContext, Failure, MaterializeResult, MetadataValue,
                     asset)

from assets.partitions import months
from assets.resources import ArchiveResource
from llmarchive.schedule.coverage import UnexplainedGap, month_bounds, record_coverage
from llmarchive.archive.dates import parse_month
from measure.errors import ArchiveError


@asset(partitions_def=months, group_name="publication",
       # A month's coverage reads every generation there is: a generation is not a period of time, so the
       # dynamic generation partitions map onto each month as a whole.
       deps=["commercial_measurements", AssetDep("open_weights_measurements", partition_mapping=AllPartitionMapping()),
             "runtime_fingerprint", "guard_rotation", "subject_fingerprint", "revalidation"],
       description="The month's coverage rows, written as one batch: for every scheduled job and period, it ran "
                   "or exactly one cause from the closed list (a gap is a coverage_gap record). A period with "
                   "neither fails this step.")
def coverage(context: AssetExecutionContext, archive: ArchiveResource) -> MaterializeResult:
    paths = archive.paths()
    first, last = month_bounds(parse_month(context.partition_key[:7], "the month partition"))
    today = datetime.now(timezone.utc).date()
    if first > today:
        raise Failure(description=f"{context.partition_key[:7]} has not started yet")
    through = min(last, today).isoformat()
    try:
        result = record_coverage(paths, through, since=first.isoformat())
    except (UnexplainedGap, ArchiveError) as exc:
        # A gap with no cause, or a file that cannot be read: the one line that names it, not a traceback.
        raise Failure(description=str(exc)) from None
    gaps: dict[str, int] = {}
    for row in result.rows:
        if row["status"] == "gap":
            gaps[row["cause"]] = gaps.get(row["cause"], 0) + 1
    return MaterializeResult(metadata={
        "rows": MetadataValue.int(len(result.rows)),
        "ran": MetadataValue.int(sum(1 for r in result.rows if r["status"] == "ran")),
        "gaps": MetadataValue.int(sum(gaps.values())),
        "gaps_by_cause": MetadataValue.json(gaps),
        "pending": MetadataValue.int(len(result.pending)),
        "through": through,
    })
