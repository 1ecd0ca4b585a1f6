"""Jobs: what each schedule, sensor or maintainer launches."""
from dagster import AssetSelection, define_asset_job


panels_job = define_asset_job("panels_job", selection=AssetSelection.assets("protocols", "preregistration_manifest"),
                              description="Build the protocols, run their checks, write the pre-registration manifest.")
open_weights_job = define_asset_job(
    "open_weights_job",
    selection=AssetSelection.assets("open_weights_trials", "open_weights_measurements"),
    description="The open protocols on the reference model for one generation (free).")
daily_instrument_job = define_asset_job(
    "daily_instrument_job",
    selection=AssetSelection.assets("runtime_fingerprint", "guard_rotation", "revalidation"),
    description="The free daily checks: runtime fingerprint, guard rotation, revalidation.")
subject_fingerprint_job = define_asset_job(
    "subject_fingerprint_job", selection=AssetSelection.assets("subject_fingerprint"),
    description="The paid daily subject fingerprint (24 items).")
commercial_job = define_asset_job(
    "commercial_job",
    selection=AssetSelection.assets("commercial_trials", "commercial_measurements"),
    description="One protocol of one month on the tracked commercial model (paid).")
coverage_job = define_asset_job("coverage_job", selection=AssetSelection.assets("coverage"),
                                description="The month's coverage rows.")
publication_job = define_asset_job("publication_job", selection=AssetSelection.assets("public_archive"),
                                   description="Regenerate everything under public/ (with its checks).")

JOBS = [panels_job, open_weights_job, daily_instrument_job, subject_fingerprint_job, commercial_job, coverage_job,
        publication_job]
