"""The model-watch and lease sensors, evaluated against a real Dagster instance and the fake provider."""
import functools

import pytest
from dagster import SensorResult, build_sensor_context

from assets.partitions import GENERATIONS
from assets.resources import ArchiveResource, SubjectResource, WebhookResource
from assets.sensors import lease_on_life, model_watch
from llmarchive import subjects
from llmarchive.schedule import lease
from llmarchive.archive import ArchivePaths, record_logs as records, utc_today
from llmarchive.instrument import runtime_fingerprint
from tests.fake_provider import Fault, FakeProvider
from tests.instrument_helpers import webhook_server
from tests.test_instrument import PromptEngine

BASELINE = ["claude-haiku-5", "claude-sonnet-4-5", "claude-sonnet-5"]


@pytest.fixture
def paths(admitted, monkeypatch):
    """The shared admitted archive, plus the (fake) key the model watch lists models with."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-sensor")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    return admitted


def evaluate(instance, paths: ArchivePaths, base_url: str) -> SensorResult:
    context = build_sensor_context(instance=instance, resources={
        "archive": ArchiveResource(home=str(paths.home)),
        "subject": SubjectResource(base_url=base_url, max_attempts=2), "webhook": WebhookResource()})
    result = model_watch(context)
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_the_first_watch_adds_the_active_model_as_a_generation_and_raises_no_alarm(instance, paths):
    with FakeProvider(models=BASELINE) as fake:
        result = evaluate(instance, paths, fake.base_url)
    assert instance.get_dynamic_partitions(GENERATIONS) == ["claude-sonnet-5"]
    assert "no alarm" in result.skip_reason.skip_message and "3 models listed" in result.skip_reason.skip_message
    assert records.read(paths, "generation_bridge") == []


def test_a_new_id_in_the_family_adds_its_partition_and_raises_the_bridge_alarm(instance, paths, monkeypatch):
    with FakeProvider(models=BASELINE) as fake, webhook_server() as (hook, posted):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook)
        evaluate(instance, paths, fake.base_url)
        fake.set_models(BASELINE + ["claude-sonnet-5-1"])
        result = evaluate(instance, paths, fake.base_url)
    assert sorted(instance.get_dynamic_partitions(GENERATIONS)) == ["claude-sonnet-5", "claude-sonnet-5-1"]
    # Not a skip reason on a grey tick: the free run that turns archive_health's succession checks red.
    [request] = result.run_requests
    assert result.skip_reason is None and model_watch.job_name == "archive_health_job"
    assert request.tags["llmarchive/changed_checks"] == "no_pending_bridge,no_pending_review"
    [bridge] = records.read(paths, "generation_bridge")
    assert (bridge["old_model_id"], bridge["new_model_id"]) == ("claude-sonnet-5", "claude-sonnet-5-1")
    assert any("claude-sonnet-5-1" in str(body) for body in posted)
    assert not [r for r in records.read(paths, "subject_model") if r["model_id"] == "claude-sonnet-5-1"], \
        "an undeclared new id raises the alarm but never switches the active model"


def test_polling_again_the_same_day_with_no_change_adds_nothing_and_raises_nothing(instance, paths):
    with FakeProvider(models=BASELINE) as fake:
        evaluate(instance, paths, fake.base_url)
        again = evaluate(instance, paths, fake.base_url)
    assert again.dynamic_partitions_requests in (None, [])
    assert "0 new, no alarm" in again.skip_reason.skip_message
    assert records.read(paths, "generation_bridge") == [] and records.read(paths, "needs_review") == []


def test_an_unreachable_provider_is_a_recorded_outage_not_a_crash(instance, paths, waits, monkeypatch):
    # The sensor makes its own subject: hand it the recording sleep so the back-off is not slept.
    monkeypatch.setattr(subjects, "make_subject", functools.partial(subjects.make_subject, sleep=waits))
    with FakeProvider(models=BASELINE) as fake:
        fake.models_script.extend([Fault.status(503), Fault.status(503)])
        result = evaluate(instance, paths, fake.base_url)
    assert len(waits) == 1 and waits[0] > 0, "one back-off between the two attempts, recorded, not slept"
    assert result.skip_reason.skip_message.startswith("provider_outage recorded")
    assert instance.get_dynamic_partitions(GENERATIONS) == []
    [skip] = records.read(paths, "skip")
    assert skip["job"] == "model_watch" and skip["condition"] == "provider_unreachable"


def test_the_lease_sensor_reports_the_archive_state_without_the_daily_cycle(instance, paths):
    resources = {"archive": ArchiveResource(home=str(paths.home)), "subject": SubjectResource(),
                 "webhook": WebhookResource()}
    result = lease_on_life(build_sensor_context(instance=instance, resources=resources))
    state = lease.check(paths)
    assert state.deadman, "no daily cycle has ever run on this archive"
    [request] = result.run_requests     # the dead-man, red on archive_health (tests/test_dagster_alerts.py)
    assert request.tags["llmarchive/changed_checks"] == "no_deadman_alert"
    runtime_fingerprint(paths, utc_today(), PromptEngine)     # a daily cycle: the heartbeat is its record
    again = lease_on_life(build_sensor_context(instance=instance, resources=resources))
    state = lease.check(paths)
    assert again.run_requests == [] and again.skip_reason.skip_message == f"{state.state}: {state.reason}"
