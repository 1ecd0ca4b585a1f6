"""One table of job names: the cadence keys, read by coverage and the budget, named by every Dagster job."""
import pytest

from llmarchive.schedule import coverage
from llmarchive.archive import jobs
from llmarchive.archive.cadence import POLICY_KEYS, SCHEDULE_KEYS, load_cadence


def test_every_scheduled_job_is_named_by_its_cadence_key():
    raw = load_cadence().raw
    assert set(jobs.SCHEDULED) <= set(SCHEDULE_KEYS) | set(POLICY_KEYS)
    assert all(name in raw for name in jobs.SCHEDULED)
    assert {j.name for j in coverage.JOBS} <= set(jobs.SCHEDULED)
    assert all(j.cadence_key == j.name for j in coverage.JOBS)


def test_an_older_name_in_a_stored_record_still_reads_as_its_job():
    assert jobs.canonical("sweep") == jobs.FULL_SWEEP == jobs.canonical("full_sweep")
    assert jobs.stored_names(jobs.FULL_SWEEP) == ("full_sweep", "sweep")
    sweep = next(j for j in coverage.JOBS if j.name == jobs.FULL_SWEEP)
    assert "sweep" in sweep.skip_jobs and "full_sweep" in sweep.skip_jobs
    with pytest.raises(jobs.UnknownJob, match="unknown job 'weekly_sweep'"):
        jobs.canonical("weekly_sweep")


def test_every_dagster_job_names_the_archive_jobs_it_runs():
    from assets.jobs import JOBS, RUNS, RUNS_TAG

    assert {j.name for j in JOBS} == set(RUNS)
    run_by_dagster = {name for runs in RUNS.values() for name in runs}
    assert run_by_dagster <= set(jobs.BY_NAME)
    assert {j.name for j in coverage.JOBS} <= run_by_dagster, "every job coverage accounts for has a Dagster job"
    for job in JOBS:
        if RUNS[job.name]:
            assert job.tags[RUNS_TAG] == "+".join(RUNS[job.name])
            assert all(name in job.description for name in RUNS[job.name])


def test_the_paid_jobs_of_the_table_are_the_budget_jobs():
    from llmarchive import budget

    assert set(budget.JOBS) == set(jobs.PAID)
    for name, (category, pool) in budget.JOBS.items():
        assert (jobs.BY_NAME[name].category, jobs.BY_NAME[name].pool) == (category, pool)
