"""Alerts the owner sees where they look: red ERROR checks in the UI, and the same events on the webhook.

Everything runs on a real Dagster instance (ephemeral) through the
project's own definitions: assets are materialised, sensors are evaluated
with Dagster's own tick evaluation (``evaluate_tick``, what the code server
runs for the daemon), and the schedule's failed tick is made by Dagster's
scheduler loop itself.  The reference model is a scripted engine named the
way the drill names one (``scripted:…``, :mod:`llmarchive.instrument.scripted`);
the provider is the fake one and the webhook a server on 127.0.0.1, both
over real HTTP.
"""
import datetime as dt
import logging

import pytest
import time_machine
from dagster import AssetCheckSeverity, build_schedule_context, build_sensor_context, instance_for_test

from assets.alerts import (EXPECTED_REFUSALS, MONTHLY_REFUSALS, PAGING_REFUSALS, failed_check_webhook,
                           failed_run_webhook)
from assets.definitions_builder import build_definitions
from assets.health import BRIDGE, DEADMAN, LATCH, REVIEW
from assets.refusals import KINDS
from assets.resources import ArchiveResource, ReferenceModelResource, SubjectResource, WebhookResource
from assets.schedules import monthly_sweep_schedule
from assets.sensors import lease_on_life, model_watch
from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.instrument import runtime_fingerprint, scripted
from llmarchive.instrument.acknowledge import acknowledge
from llmarchive.subjects import SubjectError
from llmarchive.succession import reviews
from tests.dagster_helpers import resources, run, today
from tests.fake_provider import FakeProvider
from tests.instrument_helpers import ScriptedSubject, answer_for, webhook_server
from tests.ports import free_port
from tests.test_instrument import PromptEngine

SCRIPTED = "scripted:tests.test_dagster_alerts:REFERENCE"
BASELINE = ["claude-haiku-5", "claude-sonnet-4-5", "claude-sonnet-5"]


class Broken(ScriptedSubject):
    def call(self, prompt, key=""):
        raise SubjectError("llama.cpp: failed to load model")


class ScriptedReference:
    """The reference model's stand-in: the fingerprint's engine and the rotation's subject, switchable by a test."""

    def __init__(self) -> None:
        self.tamper = None
        self.broken = False

    def engine(self):
        return PromptEngine(tamper=self.tamper)

    def subject(self, max_tokens: int):
        return (Broken if self.broken else ScriptedSubject)(answer_for(), max_tokens)


REFERENCE = ScriptedReference()


@pytest.fixture(autouse=True)
def steady_reference(monkeypatch):
    """Each test starts with a reference model that answers as it always did."""
    monkeypatch.setattr(REFERENCE, "tamper", None)
    monkeypatch.setattr(REFERENCE, "broken", False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def res(paths: ArchivePaths, **subject) -> dict:
    return {**resources(paths, **subject), "reference_model": ReferenceModelResource(model=SCRIPTED, workers=1)}


def yesterday() -> str:
    return (dt.date.fromisoformat(today()) - dt.timedelta(days=1)).isoformat()


def checks(result, asset: str) -> dict:
    return {e.check_name: e for e in result.get_asset_check_evaluations() if e.asset_key.to_user_string() == asset}


def health(paths: ArchivePaths, instance) -> dict:
    return checks(run(["archive_health"], res(paths), instance), "archive_health")


def fingerprint_today(paths: ArchivePaths, instance, moved: bool = False):
    """Today's runtime fingerprint materialised, after yesterday's established the expectation."""
    if not records.read(paths, "runtime_fingerprint"):
        runtime_fingerprint(paths, yesterday(), scripted.engine_factory(SCRIPTED))
    REFERENCE.tamper = ("fp07", 3) if moved else None
    return run(["runtime_fingerprint"], res(paths), instance, partition_key=today())


# --- the day's alarm, red on the day's partition --------------------------------------------------------------

def test_an_instrument_alarm_fails_the_days_runtime_fingerprint_check_in_error_with_its_reason(paths, instance):
    result = fingerprint_today(paths, instance, moved=True)
    assert result.success, "the instrument looked and recorded what it saw: the step itself succeeds"
    [alarm] = records.read(paths, "instrument_alarm")
    check = checks(result, "runtime_fingerprint")["no_instrument_alarm"]
    assert check.passed is False and check.severity == AssetCheckSeverity.ERROR and check.partition == today()
    assert check.description == " ".join(f"instrument_alarm: {alarm['reason']}".split()) and "fp07" in alarm["reason"]
    assert "\n" not in check.description


def test_a_runtime_fingerprint_that_matches_its_expectation_passes_the_days_check(paths, instance):
    check = checks(fingerprint_today(paths, instance), "runtime_fingerprint")["no_instrument_alarm"]
    assert check.passed is True and "status pass" in check.description
    assert records.read(paths, "instrument_alarm") == []


def test_a_guard_rotation_that_could_not_run_fails_the_days_check_in_error(admitted, instance):
    REFERENCE.broken = True
    result = run(["guard_rotation"], res(admitted), instance, partition_key=today())
    check = checks(result, "guard_rotation")["no_instrument_alarm"]
    assert check.passed is False and check.severity == AssetCheckSeverity.ERROR
    assert "could not run" in check.description and "failed to load model" in check.description


def test_a_guard_rotation_baseline_passes_the_days_check(admitted, instance):
    result = run(["guard_rotation"], res(admitted), instance, partition_key=today())
    check = checks(result, "guard_rotation")["no_instrument_alarm"]
    assert check.passed is True and "verdict baseline" in check.description


# --- standing conditions, red on archive_health until resolved ------------------------------------------------

def evaluate(sensor, instance, paths: ArchivePaths, cursor=None, repository_def=None, **subject):
    """One tick of ``sensor`` as the daemon's code server evaluates it (resources, cursor and all); the webhook is
    whatever ``LLMARCHIVE_WEBHOOK_URL`` says, as in a deployment."""
    context = build_sensor_context(instance=instance, cursor=cursor, repository_def=repository_def,
                                   resources={"archive": ArchiveResource(home=str(paths.home)),
                                              "subject": SubjectResource(**subject), "webhook": WebhookResource()})
    return sensor.evaluate_tick(context)


def launch(request, paths: ArchivePaths, instance, base_url=None):
    """Run what a sensor requested: the project's ``archive_health_job``, as the run launcher would."""
    job = build_definitions(resources=res(paths, base_url=base_url)).resolve_job_def("archive_health_job")
    return job.execute_in_process(instance=instance, tags=request.tags)


def test_a_latched_alarm_is_red_on_archive_health_until_a_person_acknowledges_it(paths, instance):
    fingerprint_today(paths, instance, moved=True)
    [request] = evaluate(lease_on_life, instance, paths).run_requests
    assert request.tags["llmarchive/changed_checks"] == LATCH
    red = checks(launch(request, paths, instance), "archive_health")
    assert red[LATCH].passed is False and red[LATCH].severity == AssetCheckSeverity.ERROR
    assert red[LATCH].description.startswith(f"instrument_alarm latched since {today()} (runtime_fingerprint:")
    assert "llmarchive instrument acknowledge" in red[LATCH].description
    assert evaluate(lease_on_life, instance, paths).run_requests == [], "what the UI shows is the state: no run"

    defs = build_definitions(resources=res(paths))
    defs.resolve_job_def("acknowledge_instrument_job").execute_in_process(instance=instance, run_config={
        "ops": {"acknowledge_instrument_alarm": {"config": {"core_change": "test tamper", "reviewer": "T"}}}})
    [request] = evaluate(lease_on_life, instance, paths).run_requests
    green = checks(launch(request, paths, instance), "archive_health")
    assert green[LATCH].passed is True
    assert all(c.passed for c in green.values()), {n: c.description for n, c in green.items()}


def test_a_new_model_id_turns_the_bridge_and_review_checks_red_and_resolving_them_turns_them_green(
        admitted, instance, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-alerts")
    with FakeProvider(models=BASELINE) as fake:
        watch = dict(base_url=fake.base_url, max_attempts=2)
        first = evaluate(model_watch, instance, admitted, **watch)
        assert first.run_requests == [] and "no alarm" in first.skip_message
        fake.set_models(BASELINE + ["claude-sonnet-5-1"])
        second = evaluate(model_watch, instance, admitted, **watch)
        assert second.skip_message is None, "the bridge alarm is not hidden in a skip reason"
        red = checks(launch(second.run_requests[0], admitted, instance, fake.base_url), "archive_health")
        assert red[BRIDGE].passed is False and red[REVIEW].passed is False
        assert {red[BRIDGE].severity, red[REVIEW].severity} == {AssetCheckSeverity.ERROR}
        assert "claude-sonnet-5 → claude-sonnet-5-1" in red[BRIDGE].description
        assert "claude-sonnet-5-1" in red[REVIEW].description and "review resolve" in red[REVIEW].description
        assert evaluate(model_watch, instance, admitted, **watch).run_requests == [], "polled again: no new run"

        [review] = reviews(admitted)
        build_definitions(resources=res(admitted)).resolve_job_def("review_job").execute_in_process(
            instance=instance, run_config={"ops": {"resolve_needs_review": {"config": {
                "review_id": review.review_id, "decision": "not_successor", "reviewer": "T"}}}})
        fake.set_models(["claude-haiku-5", "claude-sonnet-5-1"])      # the old model leaves before its bridge ran
        third = evaluate(model_watch, instance, admitted, **watch)
        after = checks(launch(third.run_requests[0], admitted, instance, fake.base_url), "archive_health")
    assert after[REVIEW].passed is True and after[BRIDGE].passed is True
    assert records.read(admitted, "bridge_incomplete"), "the bridge was closed incomplete, not forgotten"


def test_the_dead_man_is_red_on_archive_health_and_the_next_daily_cycle_clears_it(paths, instance):
    red = health(paths, instance)
    assert red[DEADMAN].passed is False and red[DEADMAN].severity == AssetCheckSeverity.ERROR
    assert red[DEADMAN].description == "DEAD-MAN ALERT: no daily cycle has ever completed"
    assert all(red[name].passed for name in (LATCH, BRIDGE, REVIEW))
    fingerprint_today(paths, instance)
    assert health(paths, instance)[DEADMAN].passed is True


# --- the webhook ----------------------------------------------------------------------------------------------

def test_failing_checks_are_posted_once_over_http_and_their_resolution_once(paths, instance, monkeypatch):
    repo = build_definitions(resources=res(paths)).get_repository_def()
    with webhook_server() as (hook, posted):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook)

        def tick(cursor):
            return evaluate(failed_check_webhook, instance, paths, cursor, repo)

        health(paths, instance)                         # only the dead-man fails: the lease pages that one
        cursor = tick(None).cursor
        assert posted == []
        fingerprint_today(paths, instance, moved=True)
        health(paths, instance)
        cursor = tick(cursor).cursor
        assert sorted((p["event"], p["asset"], p["check"], p["partition"]) for p in posted) == [
            ("failed", "archive_health", LATCH, None),
            ("failed", "runtime_fingerprint", "no_instrument_alarm", today())]
        assert all(p["kind"] == "asset_check" and p["text"].startswith("FAILED CHECK ") for p in posted)
        cursor = tick(cursor).cursor
        health(paths, instance)                         # the same failure evaluated again
        cursor = tick(cursor).cursor
        assert len(posted) == 2, "an alert already sent is never posted again"

        acknowledge(paths, "test tamper", "T")
        health(paths, instance)
        cursor = tick(cursor).cursor
        cursor = tick(cursor).cursor
    assert [(p["event"], p["check"]) for p in posted[2:]] == [("resolved", LATCH)]
    assert posted[2]["text"].startswith("RESOLVED CHECK archive_health:no_latched_alarm: passes again")
    assert not any(p["check"] == DEADMAN for p in posted)


def test_the_lease_sensor_pages_the_dead_man_once_through_the_lease_memory_the_outside_timer_shares(
        paths, instance, monkeypatch):
    with webhook_server() as (hook, posted):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook)
        first = evaluate(lease_on_life, instance, paths)
        evaluate(lease_on_life, instance, paths)
    [page] = posted
    assert page["kind"] == "lease" and page["event"] == "alert" and page["deadman"] is True
    assert first.run_requests[0].tags["llmarchive/changed_checks"] == DEADMAN, "and red on archive_health"


def test_an_alert_the_webhook_did_not_take_stays_owed_and_is_posted_when_it_answers(paths, instance, monkeypatch):
    repo = build_definitions(resources=res(paths)).get_repository_def()
    fingerprint_today(paths, instance, moved=True)
    monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", f"http://127.0.0.1:{free_port()}/hook")   # nothing listens there
    first = evaluate(failed_check_webhook, instance, paths, None, repo)
    assert "1 owed" in first.skip_message and "ConnectError" in first.skip_message
    with webhook_server() as (hook, posted):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook)
        with time_machine.travel(dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=6)):   # its back-off
            evaluate(failed_check_webhook, instance, paths, first.cursor, repo)
    assert [(p["event"], p["asset"]) for p in posted] == [("failed", "runtime_fingerprint")]


def test_the_run_failure_sensor_pages_a_run_that_needs_a_person_and_not_an_expected_refusal(paths, built, instance,
                                                                                            tmp_path, monkeypatch):
    bad = tmp_path / "subject_models.yaml"
    bad.write_text("model_family: [unclosed\n", encoding="utf-8")
    with webhook_server() as (hook, posted):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook)

        def tick(cursor):
            context = build_sensor_context(instance=instance, cursor=cursor,
                                           resources={"archive": ArchiveResource(home=str(paths.home)),
                                                      "webhook": WebhookResource()})
            return failed_run_webhook.evaluate_tick(context)

        cursor = tick(None).cursor                     # Dagster's run-status sensors start from now
        expected = run(["runtime_fingerprint"], res(paths), instance, partition_key=yesterday(), raise_on_error=False)
        refused = run(["guard_rotation"], res(paths), instance, partition_key=today(), raise_on_error=False)
        broken = run(["subject_fingerprint"], res(paths, subject_models_file=str(bad)), instance,
                     partition_key=today(), raise_on_error=False)
        assert not (expected.success or refused.success or broken.success)
        cursor = tick(cursor).cursor
        tick(cursor)
    paged = {p["run_id"]: p for p in posted}
    assert set(paged) == {refused.run_id, broken.run_id}, "a past day refused (not_today) pages nobody"
    assert "refusal no_guard_protocol" in paged[refused.run_id]["text"]
    assert "What to do: promote guard protocols" in paged[refused.run_id]["text"]
    assert "traceback" in paged[broken.run_id]["text"] and "SubjectModelsError" in paged[broken.run_id]["text"]
    assert all(p["kind"] == "run_failure" and p["text"].startswith("FAILED RUN ") for p in posted)


def test_every_refusal_kind_is_either_expected_or_pages_a_person():
    groups = [set(EXPECTED_REFUSALS), set(PAGING_REFUSALS), set(MONTHLY_REFUSALS)]
    assert sum(len(g) for g in groups) == len(set().union(*groups)), "a kind is in one group only"
    assert set().union(*groups) == set(KINDS), "decide whether a new kind pages"


# --- a schedule tick that fails -------------------------------------------------------------------------------

def next_sweep_tick(now: dt.datetime) -> dt.datetime:
    """The monthly sweep's next tick after ``now`` (the 2nd at 06:00 UTC)."""
    tick = now.replace(day=2, hour=6, minute=0, second=0, microsecond=0)
    while tick <= now:
        tick = (tick.replace(day=1) + dt.timedelta(days=32)).replace(day=2)
    return tick


def test_a_schedule_tick_that_fails_posts_to_the_webhook_and_is_a_failed_tick_in_dagster(paths, tmp_path, monkeypatch):
    """Dagster's own scheduler loop evaluates the sweep's tick against a malformed subject_models.yaml."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.scheduler.instigation import TickStatus
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
    # The daemon module first: it and the scheduler's module import each other.
    from dagster._daemon.daemon import SchedulerDaemon  # noqa: F401
    from dagster._scheduler.scheduler import launch_scheduled_runs
    from tests.conftest import ROOT

    bad = tmp_path / "subject_models.yaml"
    bad.write_text("model_family: [unclosed\n", encoding="utf-8")
    with webhook_server() as (hook, posted):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook)
        location = tmp_path / "location.py"
        location.write_text(
            "from assets.definitions_builder import build_definitions\n"
            "from assets.resources import ArchiveResource, SubjectResource\n"
            f"defs = build_definitions(resources={{'archive': ArchiveResource(home={str(paths.home)!r}),\n"
            f"    'subject': SubjectResource(subject_models_file={str(bad)!r})}})\n",
            encoding="utf-8")
        origin = InProcessCodeLocationOrigin(LoadableTargetOrigin(python_file=str(location), attribute="defs",
                                                                  working_directory=str(ROOT)),
                                             location_name="alerts_test")
        with instance_for_test() as instance, \
                WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as context:
            entry = next(iter(context.create_request_context().get_code_location_entries().values()))
            assert entry.code_location is not None, entry.load_error
            [repo] = entry.code_location.get_repositories().values()
            schedule = repo.get_schedule("monthly_sweep_schedule")
            instance.start_schedule(schedule)          # paid, created STOPPED: the owner turned it on
            due = next_sweep_tick(dt.datetime.now(dt.timezone.utc))
            with time_machine.travel(due + dt.timedelta(minutes=1), tick=False):   # the tick is evaluated on time
                list(launch_scheduled_runs(context, logging.getLogger("test"), due + dt.timedelta(minutes=1), {}))
            ticks = instance.get_ticks(schedule.get_remote_origin_id(), schedule.selector_id)
            runs = instance.get_runs()
    [tick] = ticks
    assert tick.status == TickStatus.FAILURE and tick.timestamp == due.timestamp()
    shown = tick.error.to_string()        # what the UI shows under the failed tick: Dagster's wrapper and our line
    assert f"ScheduleTickFailed: monthly_sweep_schedule: the tick of {due:%Y-%m-%d %H:%M} UTC launched nothing: " \
           "SubjectModelsError" in shown and "(webhook: sent (HTTP 204))" in shown
    assert runs == []
    [post] = posted
    assert post["kind"] == "schedule_tick" and post["schedule"] == "monthly_sweep_schedule"
    assert post["text"].startswith("FAILED SCHEDULE TICK monthly_sweep_schedule")
    assert "SubjectModelsError" in post["text"]


@pytest.mark.time_machine("2026-12-02T06:00:30Z")
def test_a_schedule_tick_that_works_posts_nothing(admitted, instance, monkeypatch):
    with webhook_server() as (hook, posted):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook)
        context = build_schedule_context(instance=instance, resources={"subject": SubjectResource(),
                                                                       "archive": ArchiveResource(home=str(admitted.home)),
                                                                       "webhook": WebhookResource()},
                                         scheduled_execution_time=dt.datetime(2026, 12, 2, 6, tzinfo=dt.timezone.utc),
                                         repository_def=build_definitions(resources=res(admitted)).get_repository_def())
        data = monthly_sweep_schedule.evaluate_tick(context)
    assert len(data.run_requests) == 12 and posted == []
