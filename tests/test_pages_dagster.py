"""The owner's pages through Dagster: none lost, none sent twice, none told of the wrong partition, no token shown.

Each test drives the project's own sensors on a real Dagster instance —
evaluated as the daemon's code server evaluates them, or by the daemon's own
sensor loop on a moved clock — against a webhook receiver on 127.0.0.1 that
can be down, failing, slow or hung (:mod:`tests.webhook_receiver`).
"""
import datetime as dt
import logging
import time

import pytest
import time_machine
from dagster import (AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, Definitions, MaterializeResult,
                     MonthlyPartitionsDefinition, asset, build_sensor_context, instance_for_test, materialize)

from assets.alerts import failed_check_webhook
from assets.definitions_builder import build_definitions
from assets.resources import ArchiveResource, SubjectResource, WebhookResource
from llmarchive.archive import ArchivePaths
from llmarchive.schedule import outbox, webhook
from tests.dagster_helpers import resources, run, today
from tests.webhook_receiver import Receiver

MONTHS = MonthlyPartitionsDefinition(start_date="2026-01-01")
VERDICT: dict[str, bool] = {}      # partition → whether the toy check passes


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(webhook, "READ_TIMEOUT_S", 1.0)
    monkeypatch.setattr(webhook, "CONNECT_TIMEOUT_S", 0.5)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    VERDICT.clear()


@asset(partitions_def=MONTHS, check_specs=[AssetCheckSpec("no_gap", asset="ledgerish", partitions_def=MONTHS)])
def ledgerish(context) -> MaterializeResult:
    """A monthly asset with an ERROR check per partition, as the coverage asset has (its verdict is the test's)."""
    passed = VERDICT[context.partition_key]
    return MaterializeResult(check_results=[AssetCheckResult(
        check_name="no_gap", passed=passed, severity=AssetCheckSeverity.ERROR,
        description="every period ran or has one cause" if passed else f"{context.partition_key[:7]} has a gap")])


def evaluate_month(instance, month: str, passed: bool) -> None:
    VERDICT[month] = passed
    materialize([ledgerish], partition_key=month, instance=instance, raise_on_error=False)


def tick(sensor, instance, paths: ArchivePaths, cursor=None, repository_def=None):
    """One tick as the daemon's code server evaluates it; the checks read are the toy repository's by default."""
    repository_def = repository_def or Definitions(assets=[ledgerish]).get_repository_def()
    context = build_sensor_context(instance=instance, cursor=cursor, repository_def=repository_def, resources={
        "archive": ArchiveResource(home=str(paths.home)), "subject": SubjectResource(), "webhook": WebhookResource()})
    return sensor.evaluate_tick(context)


def told(hook: Receiver) -> list[tuple]:
    return [(b["event"], b["partition"]) for b in hook.bodies() if b.get("kind") == "asset_check"]


def test_a_pass_in_another_partition_does_not_resolve_a_failing_one(paths, instance, monkeypatch):
    with Receiver() as hook:
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook.url)
        evaluate_month(instance, "2026-01-01", passed=False)
        cursor = tick(failed_check_webhook, instance, paths).cursor
        evaluate_month(instance, "2026-02-01", passed=True)
        cursor = tick(failed_check_webhook, instance, paths, cursor).cursor
        assert told(hook) == [("failed", "2026-01-01")], "February passing says nothing of January"
        evaluate_month(instance, "2026-01-01", passed=True)
        tick(failed_check_webhook, instance, paths, cursor)
    assert told(hook) == [("failed", "2026-01-01"), ("resolved", "2026-01-01")]
    assert hook.bodies()[1]["text"] == ("RESOLVED CHECK ledgerish:no_gap[2026-01-01]: passes again (every period "
                                        "ran or has one cause)")


def test_a_failure_and_its_resolution_between_two_ticks_are_both_told_in_order(paths, instance, monkeypatch):
    with Receiver() as hook:
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook.url)
        cursor = tick(failed_check_webhook, instance, paths).cursor
        evaluate_month(instance, "2026-03-01", passed=False)
        evaluate_month(instance, "2026-03-01", passed=True)
        cursor = tick(failed_check_webhook, instance, paths, cursor).cursor
        tick(failed_check_webhook, instance, paths, cursor)
    assert told(hook) == [("failed", "2026-03-01"), ("resolved", "2026-03-01")]


def test_a_slow_webhook_gets_each_alert_with_its_key_and_one_tick_stays_inside_its_time(paths, instance,
                                                                                        monkeypatch):
    """The issue's webhook that reads the body and answers long after: repeats carry the key a receiver drops."""
    monkeypatch.setattr(outbox, "SEND_BUDGET_S", 4.0)
    with Receiver(slow_s=3.0) as hook:
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook.url)
        cursor = tick(failed_check_webhook, instance, paths).cursor
        for month in ("2026-01-01", "2026-02-01", "2026-03-01", "2026-04-01", "2026-05-01", "2026-06-01"):
            evaluate_month(instance, month, passed=False)
        hook.set("slow")
        started = time.monotonic()
        cursor = tick(failed_check_webhook, instance, paths, cursor).cursor
        took = time.monotonic() - started
        tried = list(hook.received)
        hook.set("ok")
        with time_machine.travel(dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=30)):
            tick(failed_check_webhook, instance, paths, cursor)
    assert took < 4.0 + 3.0, f"six owed alerts, one tick of {took:.1f} s (Dagster stops a tick at 60 s)"
    assert len(tried) < 6, "what did not fit in the tick's time waits for the next"
    keys = [r.key for r in hook.received]
    assert all(k and r.body["page_key"] == k for k, r in zip(keys, hook.received))
    assert len(set(keys)) == 6, "every alert reached the receiver"
    firsts = {k: keys.index(k) for k in set(keys)}
    deduped = [r.body["partition"] for i, r in enumerate(hook.received) if firsts[r.key] == i]
    assert sorted(deduped) == sorted(f"2026-0{m}-01" for m in range(1, 7)), "a receiver dropping repeats: once each"
    assert outbox.summary(paths).owed == []


def test_the_webhook_url_and_its_token_are_nowhere_in_what_the_ui_serves(paths, monkeypatch):
    from dagster._core.remote_representation.external_data import RepositorySnap
    from dagster_shared.serdes import serialize_value

    monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", "https://hooks.example.net/services/T0KEN-s3cr3t")
    repository = build_definitions().get_repository_def()
    shown = serialize_value(RepositorySnap.from_def(repository))
    assert "T0KEN-s3cr3t" not in shown and "hooks.example.net" not in shown
    assert "LLMARCHIVE_WEBHOOK_URL" in shown, "the resource names its variable, as the subjects name their key's"


def test_a_malformed_webhook_never_stops_the_definitions_and_is_red_on_archive_health(paths, instance, monkeypatch):
    monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", "http://hooks.example.net:notaport/T0KEN")
    defs = build_definitions(resources={"archive": ArchiveResource(home=str(paths.home))})
    assert defs.get_repository_def().get_sensor_def("failed_check_webhook") is not None
    result = tick(failed_check_webhook, instance, paths, repository_def=defs.get_repository_def())
    assert result.skip_message and "T0KEN" not in result.skip_message
    red = {e.check_name: e for e in run(["archive_health"], resources(paths), instance).get_asset_check_evaluations()}
    check = red["no_overdue_page"]
    assert check.passed is False and check.severity == AssetCheckSeverity.ERROR
    assert "not a usable http(s) URL" in check.description and "T0KEN" not in check.description


def test_a_failed_run_page_is_not_lost_when_the_webhook_is_down_under_the_daemons_sensor_loop(paths, tmp_path,
                                                                                             monkeypatch):
    """Dagster's own sensor loop on a moved clock: a run launched from the code location fails while the endpoint
    refuses connections; when it is back the page goes out once — the outbox remembers it, not the run-status
    cursor Dagster moved on."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
    from dagster._daemon.daemon import SchedulerDaemon  # noqa: F401 — import order: see test_dagster_alerts
    from dagster._daemon.sensor import execute_sensor_iteration
    from dagster_graphql.client.query import LAUNCH_PIPELINE_EXECUTION_MUTATION
    from dagster_graphql.test.utils import execute_dagster_graphql
    from tests.conftest import ROOT

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)      # the paid job refuses: no_key, which pages
    location = tmp_path / "location.py"
    location.write_text("from assets.definitions_builder import build_definitions\n"
                        "from assets.resources import ArchiveResource\n"
                        f"defs = build_definitions(resources={{'archive': ArchiveResource(home={str(paths.home)!r})}})\n",
                        encoding="utf-8")
    origin = InProcessCodeLocationOrigin(LoadableTargetOrigin(python_file=str(location), attribute="defs",
                                                              working_directory=str(ROOT)), location_name="pages")
    launcher = {"run_launcher": {"module": "scripts.drill_launcher", "class": "ThreadedInProcessRunLauncher"},
                "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}}
    start = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    with Receiver() as hook, instance_for_test(overrides=launcher) as instance, \
            WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as context:
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook.url)

        def daemon_pass(minutes: int) -> None:
            with time_machine.travel(start + dt.timedelta(minutes=minutes), tick=True):
                list(execute_sensor_iteration(context, logging.getLogger("test"), threadpool_executor=None,
                                              submit_threadpool_executor=None))

        daemon_pass(0)                                   # the run-status sensor starts from now
        hook.set("down")
        with time_machine.travel(start + dt.timedelta(minutes=5), tick=True):
            params = {"selector": {"repositoryLocationName": "pages", "repositoryName": "__repository__",
                                   "jobName": "subject_fingerprint_job"}, "runConfigData": {},
                      "executionMetadata": {"tags": [{"key": "dagster/partition", "value": today()}]}}
            answer = execute_dagster_graphql(context.create_request_context(), LAUNCH_PIPELINE_EXECUTION_MUTATION,
                                             {"executionParams": params})
            run_id = answer.data["launchPipelineExecution"]["run"]["runId"]
            instance.run_launcher.wait(120)
        assert instance.get_run_by_id(run_id).status.value == "FAILURE"
        daemon_pass(11)                                  # the webhook refuses connections
        assert [b for b in hook.bodies() if b.get("kind") == "run_failure"] == []
        hook.set("ok")
        daemon_pass(22)
        daemon_pass(33)
    pages = [r for r in hook.received if r.body.get("kind") == "run_failure"]
    assert [r.body["run_id"] for r in pages] == [run_id], "delivered once, after the webhook came back"
    assert pages[0].taken and pages[0].key == f"run|{run_id}" and "refusal no_key" in pages[0].body["text"]


def test_a_publication_check_page_says_what_failed_and_what_to_do(paths, built, instance):
    from publish.pipeline import checks

    result = run(["public_archive"], resources(paths), instance, raise_on_error=False)
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == set(checks.CHECKS)
    for name, evaluation in evaluations.items():
        assert evaluation.description, f"{name}: a page would read '-'"
        assert evaluation.passed or "What to do:" in evaluation.description
