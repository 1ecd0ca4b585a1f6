"""The month just ended is judged on the 1st, by the Dagster schedule and by the CLI alike (method §10.4).

The coverage schedule fires on the 1st at 08:00 UTC for the month that just
ended.  Its partition must judge that month whole the same day — its last
day's rows and its monthly rows ran or one cause, none left pending for a
month — and write what ``llmarchive coverage`` writes on that day.  A period
with no output and no cause is a failing ERROR check on the partition, with
the one line naming it, beside the rows that are known (not a failed step).

The home: twelve v0 protocols admitted on 2026-10-01, the daily cycle run
through October and then nobody tended the machine — no sweep in November,
no daily job.  The clock is frozen at the schedule's tick; the partition is
the one the schedule's own RunRequest names, materialised through the real
asset graph on an ephemeral Dagster instance.
"""
from datetime import datetime, timezone

import pytest
import time_machine
from dagster import AssetCheckSeverity, build_schedule_context

from assets.definitions_builder import build_definitions
from assets.schedules import monthly_coverage_schedule
from llmarchive.archive import record_logs as records
from llmarchive.cli import main
from llmarchive.protocols import sweep_protocols
from tests import publish_helpers as ph
from tests.dagster_helpers import materialization_metadata, resources, run
from tests.test_coverage import beat_days
from tests.test_publication_refuses import GUARD, _unexplained_november

TICK = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)   # monthly_coverage_schedule: "0 8 1 * *" UTC
CHECK = "no_unexplained_gap"   # the coverage asset's check (assets/coverage.py)


@pytest.fixture(scope="module")
def october(tmp_path_factory):
    """The home's template: admitted on 2026-10-01, the daily cycle every day of October, nothing after."""
    with time_machine.travel("2026-10-01T09:00:00Z", tick=False):
        paths = ph.template_archive(tmp_path_factory.mktemp("october") / "home")
    beat_days(paths, "2026-10-01", "2026-10-31")
    return paths


@pytest.fixture
def on_the_first(time_machine):
    """The clock at the coverage schedule's tick of 2026-12-01, frozen (the rows' words name the moment)."""
    time_machine.move_to(TICK, tick=False)


def scheduled_partition(paths) -> str:
    """The partition the schedule's own tick asks for, evaluated by Dagster's schedule machinery against the
    project's definitions (which check the key against the job's partitions)."""
    settings = resources(paths)
    repository = build_definitions(settings).get_repository_def()
    context = build_schedule_context(scheduled_execution_time=TICK, repository_def=repository, resources=settings)
    [request] = monthly_coverage_schedule.evaluate_tick(context).run_requests
    return request.partition_key


def written(paths) -> set[tuple]:
    """Every coverage row recorded, by what it says (not when it was written)."""
    return {(r["period"], r["job"], r.get("protocol_id"), r["status"], r["cause"], r.get("condition"), r["detail"])
            for r in records.read(paths, "coverage")}


def test_on_the_first_the_schedules_partition_judges_the_month_just_ended_as_the_cli_does(
        october, on_the_first, tmp_path, instance, capsys):
    dagster_home = ph.fresh_archive(october, tmp_path / "dagster")
    key = scheduled_partition(dagster_home)
    assert key == "2026-11-01"
    result = run(["coverage"], resources(dagster_home), instance, partition_key=key)
    assert materialization_metadata(result, "coverage")["pending"] == 0, "nothing of November is left for later"

    logged = {(r["period"], r["job"], r.get("protocol_id")): r for r in records.read(dagster_home, "coverage")}
    twelve = [p["protocol_id"] for p in sweep_protocols(dagster_home, "v0")]
    assert len(twelve) == 12
    sweep = [logged.get(("2026-11", "full_sweep", pid)) for pid in twelve]
    assert all(r is not None for r in sweep), "every protocol's November sweep is judged on the 1st"
    assert {(r["status"], r["cause"]) for r in sweep} == {("gap", "human_absent")}
    last_day = {job: r for (period, job, _), r in logged.items() if period == "2026-11-30"}
    assert set(last_day) == {"runtime_fingerprint", "guard_margin_rotation", "subject_fingerprint"}
    assert {(r["status"], r["cause"]) for r in last_day.values()} == {("gap", "human_absent")}
    assert not any(period.startswith("2026-12") for period, _, _ in logged), "December is not over"

    cli_home = ph.fresh_archive(october, tmp_path / "cli")
    assert main(["--home", str(cli_home.home), "coverage"]) == 0, capsys.readouterr().err
    assert written(cli_home) == written(dagster_home), "the CLI and the schedule write the same rows on the 1st"


def test_an_unexplained_period_fails_the_partitions_error_check_by_name_and_a_clean_month_passes_it(
        october, on_the_first, tmp_path, instance):
    clean_home = ph.fresh_archive(october, tmp_path / "clean")
    key = scheduled_partition(clean_home)
    clean = run(["coverage"], resources(clean_home), instance, partition_key=key)
    [passed] = [e for e in clean.get_asset_check_evaluations() if e.check_name == CHECK]
    assert passed.passed and passed.partition == key and passed.asset_key.to_user_string() == "coverage"

    paths = ph.fresh_archive(october, tmp_path / "unexplained")
    _unexplained_november(paths)
    result = run(["coverage"], resources(paths), instance, partition_key=key, raise_on_error=False)
    assert result.success, "the rows are written and the materialisation recorded: the check is what turns red"
    [failed] = [e for e in result.get_asset_check_evaluations() if e.check_name == CHECK]
    assert (failed.passed, failed.severity, failed.partition) == (False, AssetCheckSeverity.ERROR, key)
    assert failed.description.startswith("1 scheduled period(s) have no output and no observed condition: "
                                         f"full_sweep 2026-11 {GUARD}.")
    assert "\n" not in failed.description
    assert materialization_metadata(result, "coverage")["unexplained"] == 1
    logged = {(r["period"], r["job"], r.get("protocol_id")): r for r in records.read(paths, "coverage")}
    assert ("2026-11", "full_sweep", GUARD) not in logged, "no cause is made up for the unexplained period"
    assert logged[("2026-11", "full_sweep", "risky_choice_framing__wording__v0")]["cause"] == "human_absent"
    assert logged[("2026-11-30", "subject_fingerprint", None)]["cause"] == "human_absent", \
        "every explained row is still written, the month's last day's among them"
