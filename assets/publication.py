"""The public archive: database, CSVs, Croissant, open lane, site, status."""
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset_check,
)

from assets.resources import ArchiveResource
from llmarchive.archive import jobs as job_table
from measure.errors import ArchiveError
from publish import publish_all
from publish.pipeline import checks

CHECK_DESCRIPTIONS = {
    "trial_log_chains": "Every trial log and bookkeeping log verifies as a hash chain, and every complete run's "
                        "trial log is the one its record describes.",
    "no_flagged_measurement_on_curve": "No measurement is on the curve while carrying a flag.",
    "coverage_gaps_have_causes": "Every coverage gap names exactly one cause from the closed list, and no period "
                                 "that has ended is left with neither output nor a cause.",
    "leak_guard": "No published byte carries guard or sealed wording (12-word runs included), the owner's money, "
                  "a path of this machine or a credential.",
}


# What to do when a check fails: its page is read on a phone, away from the logs.
WHAT_TO_DO = {
    "trial_log_chains": "find the log named (`llmarchive verify`), restore it from a backup; never re-chain it",
    "no_flagged_measurement_on_curve": "look at the measurement named; a flagged one belongs off the curve",
    "coverage_gaps_have_causes": "run `llmarchive coverage` for the month named and give the gap its cause",
    "leak_guard": "public/ as it stands holds what the line names: take it down, remove it from its source, then "
                  "publish again",
}


def _said(name: str, problems: list) -> str:
    """A check's one line: what it holds when it passes; how many problems, the first and what to do when not."""
    if not problems:
        return f"passes: {CHECK_DESCRIPTIONS[name]}"
    first = " ".join(str(problems[0]).split())
    return (f"{len(problems)} problem(s); the first: {first[:300]} What to do: {WHAT_TO_DO[name]}.")


# The measurements, coverage, and every daily job whose records are published (the job table's ``published``).
UPSTREAM = ["open_weights_measurements", "commercial_measurements", "coverage", *job_table.assets(published=True)]


@asset(group_name="publication", deps=UPSTREAM,
       description="Everything under public/: archive.db, the CSVs, croissant.json, open-lane JSONL, "
                   "the static site, status.json and the render manifest.")
def public_archive(context: AssetExecutionContext, archive: ArchiveResource) -> MaterializeResult:
    paths = archive.paths()
    # publish_all runs the blocking checks first and the two boundary checks on the staging folder, so this asset
    # and `llmarchive publish` publish under one rule; a refusal fails the step with the same one line.
    try:
        manifest = publish_all(paths)
    except ArchiveError as exc:      # a refusal (PublishError and its kinds) or a file that cannot be read
        raise Failure(description=str(exc)) from None
    files = manifest.get("files", {})
    context.log.info(f"published {len(files)} files under {paths.public}")
    return MaterializeResult(metadata={
        "public": str(paths.public),
        "build_time": manifest.get("build_time"),
        "schema_sha256": manifest.get("schema_sha256"),
        "files": MetadataValue.md("\n".join(
            f"- `{name}` {info.get('sha256', '')[:16]}…" if isinstance(info, dict) else f"- `{name}`"
            for name, info in sorted(files.items()))),
    })


@multi_asset_check(
    specs=[AssetCheckSpec(name, asset="public_archive", description=CHECK_DESCRIPTIONS[name])
           for name in checks.CHECKS],
)
def publication_checks(archive: ArchiveResource):
    paths = archive.paths()
    # What publish_all checked moments before, while public/ is byte for byte what it published; else run now.
    results, build_time = checks.after_build(paths)
    checked = f"by the build of {build_time} (public/ unchanged since)" if build_time else "now, over public/ as it stands"
    for name, problems in results.items():
        yield AssetCheckResult(
            asset_key="public_archive",
            check_name=name,
            passed=not problems,
            severity=AssetCheckSeverity.ERROR,
            description=_said(name, problems),
            metadata={"problems": len(problems), "checked": checked,
                      "first_problems": MetadataValue.md("\n".join(f"- {p}" for p in problems[:20]) or "none")},
        )
