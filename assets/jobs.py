"""Jobs: what each schedule, sensor or maintainer launches, and which job of the archive it runs.

The archive's jobs have one name each (:mod:`llmarchive.archive.jobs`, the keys of
``cadence.yaml``); a Dagster job says which of them it runs, in its
description and in its ``llmarchive/jobs`` tag, and :data:`RUNS` lists the
same for code.  A Dagster job that runs none (building the panels,
publishing, a human's decision) says so.
"""
from dagster import AssetSelection, define_asset_job

from assets.instrument import acknowledge_instrument_job
from assets.protocols import write_manifest_job
from assets.review import review_job
from llmarchive.archive import jobs as library

RUNS_TAG = "llmarchive/jobs"
# Dagster job → the archive's jobs it runs (llmarchive.archive.jobs names); () for work outside the schedule table.
RUNS: dict[str, tuple[str, ...]] = {}


def _asset_job(name: str, assets: tuple[str, ...], runs: tuple[str, ...], description: str):
    for job in runs:
        library.spec(job)   # an unknown name fails at import, not in a run
    RUNS[name] = runs
    said = (f" Runs the archive's job{'s' if len(runs) > 1 else ''} {', '.join(runs)}." if runs
            else " Not one of the archive's scheduled jobs.")
    return define_asset_job(name, selection=AssetSelection.assets(*assets), description=description + said,
                            tags={RUNS_TAG: "+".join(runs) or "none"})


panels_job = _asset_job("panels_job", ("protocols",), (),
                        "Build one protocol (a partition per protocol id) and run its gate checks.")
manifest_job = _asset_job("manifest_job", ("preregistration_manifest",), (),
                          "Record one pre-registration manifest (a partition per manifest): the protocols it lists "
                          "and its OpenTimestamps state; config stamp: true timestamps one that has no proof yet.")
open_weights_job = _asset_job("open_weights_job", ("open_weights_trials", "open_weights_measurements"),
                              (library.OPEN_WEIGHTS_SERIES,),
                              "The open protocols on the reference model for one generation (free).")
# The instrument's free daily self-checks, as the job table lists them (llmarchive.archive.jobs.self_checks).
daily_instrument_job = _asset_job(
    "daily_instrument_job", library.assets(self_check=True), tuple(job.name for job in library.self_checks()),
    "The free daily checks: " + ", ".join(job.says for job in library.self_checks()) + ".")
subject_fingerprint_job = _asset_job("subject_fingerprint_job", ("subject_fingerprint",),
                                     (library.SUBJECT_FINGERPRINT,),
                                     "PAID. The daily subject fingerprint (24 items); manual.")
commercial_job = _asset_job("commercial_job", ("commercial_trials", "commercial_measurements"),
                            (library.FULL_SWEEP,),
                            "PAID. One protocol of one month on the tracked commercial model; manual.")
coverage_job = _asset_job("coverage_job", ("coverage",), (library.COVERAGE_PUBLISH,), "The month's coverage rows.")
publication_job = _asset_job("publication_job", ("public_archive",), (),
                             "Regenerate everything under public/ (with its checks).")
archive_health_job = _asset_job("archive_health_job", ("archive_health",), (),
                                "Evaluate what needs the owner now (a latched alarm, a pending bridge or "
                                "needs_review, the dead-man alert) as archive_health's ERROR checks; free, launched "
                                "by lease_on_life and model_watch when the state changed.")
log_integrity_job = _asset_job("log_integrity_job", ("log_integrity",), (),
                               "The day's slice of the deep verification of the chained logs (free; pages the owner "
                               "once when a log is broken; no coverage row).")

JOBS = [panels_job, manifest_job, open_weights_job, daily_instrument_job, subject_fingerprint_job, commercial_job,
        coverage_job, publication_job, archive_health_job, log_integrity_job]

# An op job with config (the human's core_change), not an asset selection.
JOBS.append(acknowledge_instrument_job)
RUNS[acknowledge_instrument_job.name] = ()

# Writing a manifest of the admitted protocols (an act, then recorded as the new manifest's partition).
JOBS.append(write_manifest_job)
RUNS[write_manifest_job.name] = ()

# The needs_review decision (method §4.3): an op job configured with the reviewer's decision.
JOBS.append(review_job)
RUNS[review_job.name] = ()
