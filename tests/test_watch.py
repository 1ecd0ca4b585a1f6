"""The model watch on the fake provider's models list: the three succession cases, alarms, outages."""
import json

import pytest

from llmarchive.archive import record_logs as records
from llmarchive.schedule.bridge import open_bridges
from llmarchive.cli import main
from llmarchive.schedule.coverage import compute, gather
from llmarchive.succession import active_model, load_subject_models
from llmarchive.schedule.watch import watch
from tests.fake_provider import Fault, FakeProvider
from tests.instrument_helpers import webhook_server

CONFIG = load_subject_models()
BASELINE = ["claude-haiku-5", "claude-sonnet-4-5", "claude-sonnet-5"]


@pytest.fixture(autouse=True)
def env(archive_home, monkeypatch):
    """Every test here runs with the watch's (fake) key; the archives are conftest's ``paths`` / ``admitted``."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-watch")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def kinds(outcome, kind):
    return [r for r in outcome.written if r["record_type"] == kind]


def test_the_first_watch_records_the_list_as_the_baseline_and_the_initial_model(paths):
    with FakeProvider(models=BASELINE) as fake:
        out = watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
    observed = kinds(out, "model_observed")
    assert [(r["model_id"], r["in_family"]) for r in observed] == [
        ("claude-haiku-5", False), ("claude-sonnet-4-5", True), ("claude-sonnet-5", True)]
    assert kinds(out, "subject_model")[0]["model_id"] == "claude-sonnet-5"
    assert out.new_ids == [] and kinds(out, "generation_bridge") == [] and out.alarms == []


def test_a_declared_successor_on_the_models_endpoint_bridges_and_switches(admitted):
    paths = admitted
    with FakeProvider(models=BASELINE) as fake:
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        fake.set_models(["claude-haiku-5", "claude-sonnet-4-5",
                         {"id": "claude-sonnet-5", "successor": "claude-sonnet-6"}, "claude-sonnet-6"])
        out = watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
    bridge = kinds(out, "generation_bridge")[0]
    assert (bridge["old_model_id"], bridge["new_model_id"], bridge["status"]) == ("claude-sonnet-5",
                                                                                   "claude-sonnet-6", "pending")
    assert len(bridge["protocol_ids"]) == 4
    switch = kinds(out, "subject_model")[0]
    assert (switch["model_id"], switch["previous_model_id"]) == ("claude-sonnet-6", "claude-sonnet-5")
    assert "models endpoint field 'successor'" in switch["declared_by"]
    assert kinds(out, "needs_review") == []
    assert active_model(paths, CONFIG) == "claude-sonnet-6"
    assert out.alarms and "claude-sonnet-5 → claude-sonnet-6" in out.alarms[0]


def test_a_dated_archived_deprecation_page_naming_the_successor_is_a_declaration(paths):
    folder = paths.private / "succession" / "snapshots"
    folder.mkdir(parents=True)
    (folder / "2026-11-02_deprecations.json").write_text(json.dumps({
        "captured_on": "2026-11-02",
        "archive_url": "https://web.archive.org/web/20261102000000/https://example.com/model-deprecations",
        "page_sha256": "ab" * 32, "model_id": "claude-sonnet-5", "successor_model_id": "claude-sonnet-6",
        "quote": "claude-sonnet-5 will be retired; we recommend claude-sonnet-6 as its replacement."}))
    (folder / "broken.json").write_text(json.dumps({"captured_on": "2026-11-02", "model_id": "claude-sonnet-5"}))
    with FakeProvider(models=BASELINE) as fake:
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        fake.set_models(BASELINE + ["claude-sonnet-6"])
        out = watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
    switch = kinds(out, "subject_model")[0]
    assert switch["model_id"] == "claude-sonnet-6" and "web.archive.org" in switch["declared_by"]
    assert kinds(out, "generation_bridge")[0]["new_model_id"] == "claude-sonnet-6"
    assert any("broken.json" in note and "snapshot ignored" in note for note in out.notes)


def test_a_similar_new_name_without_declaration_bridges_but_does_not_switch(paths):
    with FakeProvider(models=BASELINE) as fake:
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        fake.set_models(BASELINE + ["claude-sonnet-5-5", "claude-opus-6"])
        out = watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
    assert out.new_ids == ["claude-sonnet-5-5"], "only ids in the family trigger a bridge"
    bridge = kinds(out, "generation_bridge")[0]
    assert (bridge["new_model_id"], bridge["status"]) == ("claude-sonnet-5-5", "pending")
    assert "plan_problem" in bridge, "no protocol is admitted in this archive; the alarm still fires"
    review = kinds(out, "needs_review")[0]
    assert review["model_id"] == "claude-sonnet-5-5" and "no provider declaration" in review["reason"]
    assert kinds(out, "subject_model") == [] and active_model(paths, CONFIG) == "claude-sonnet-5"


def test_the_active_model_gone_with_no_successor_closes_the_series(paths):
    with FakeProvider(models=BASELINE) as fake:
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        fake.set_models(["claude-haiku-5", "claude-sonnet-4-5"])
        out = watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
        again = watch(paths, "2026-11-03", CONFIG, base_url=fake.base_url)
    closed = kinds(out, "series_closed")[0]
    assert closed["model_id"] == "claude-sonnet-5" and "no successor" in closed["reason"]
    assert kinds(again, "series_closed") == [], "closed once"
    assert kinds(out, "subject_model") == [] and kinds(out, "generation_bridge") == []
    result = compute(paths, "2026-11-05", facts=gather(paths, protocols=[]), jobs=("subject_fingerprint",))
    causes = {r["period"]: r["cause"] for r in result.rows}
    assert causes["2026-11-03"] == "generation_retired_early"


def test_the_bridge_alarm_repeats_daily_once_a_day_and_reaches_the_webhook(paths):
    with FakeProvider(models=BASELINE) as fake, webhook_server() as (url, received):
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        fake.set_models(BASELINE + ["claude-sonnet-5-5"])
        for day in ("2026-11-02", "2026-11-02", "2026-11-03", "2026-11-04"):
            out = watch(paths, day, CONFIG, base_url=fake.base_url, webhook=url)
            assert len(out.alarms) == 1 and "claude-sonnet-5 → claude-sonnet-5-5" in out.alarms[0]
    alarms = records.read(paths, "bridge_alarm")
    assert [a["date"] for a in alarms] == ["2026-11-02", "2026-11-03", "2026-11-04"]
    assert all(a["notified"] == "sent (HTTP 204)" for a in alarms)
    assert [r["date"] for r in received] == ["2026-11-02", "2026-11-03", "2026-11-04"]
    assert received[0]["new_model_id"] == "claude-sonnet-5-5" and "llmarchive bridge run" in received[0]["text"]
    assert len(records.read(paths, "generation_bridge")) == 1, "the bridge is raised once"


def test_a_pending_bridge_whose_old_model_leaves_is_incomplete(paths):
    with FakeProvider(models=BASELINE) as fake:
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        fake.set_models(BASELINE + ["claude-sonnet-5-5"])
        watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
        fake.set_models(["claude-haiku-5", "claude-sonnet-4-5", "claude-sonnet-5-5"])
        out = watch(paths, "2026-11-03", CONFIG, base_url=fake.base_url)
    incomplete = kinds(out, "bridge_incomplete")[0]
    assert incomplete["old_model_id"] == "claude-sonnet-5" and "permanent discontinuity" in incomplete["reason"]
    assert kinds(out, "series_closed")[0]["model_id"] == "claude-sonnet-5"
    assert open_bridges(paths) == [] and out.alarms == []


def test_an_unreachable_provider_is_a_provider_outage_and_the_alarm_still_repeats(paths):
    with FakeProvider(models=BASELINE) as fake:
        watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
        fake.set_models(BASELINE + ["claude-sonnet-5-5"])
        watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
        fake.models_script.append(Fault.status(529))
        out = watch(paths, "2026-11-03", CONFIG, base_url=fake.base_url, max_attempts=1)
    assert "still failing" in out.outage
    skip = kinds(out, "skip")[0]
    assert (skip["job"], skip["cause"], skip["condition"]) == ("model_watch", "provider_outage",
                                                               "provider_unreachable")
    assert len(out.alarms) == 1 and [a["date"] for a in records.read(paths, "bridge_alarm")][-1] == "2026-11-03"


def test_the_cli_reports_and_never_crashes_on_an_outage(paths, capsys):
    with FakeProvider(models=BASELINE) as fake:
        assert main(["watch", "--base-url", fake.base_url, "--date", "2026-11-01"]) == 0
        fake.models_script.append(Fault.drop())
        code = main(["watch", "--base-url", fake.base_url, "--date", "2026-11-02", "--max-attempts", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "provider unreachable" in out and "recorded: provider_outage" in out


def test_subject_models_yaml_names_the_family_and_only_two_declaration_sources():
    import yaml

    from llmarchive.succession.subject_models import SUBJECT_MODELS_FILE, SubjectModelsError, parse_subject_models

    assert (CONFIG.model_family, CONFIG.pattern, CONFIG.active_model) == ("claude-sonnet", "claude-sonnet-*",
                                                                         "claude-sonnet-5")
    assert (CONFIG.tier, CONFIG.effort, CONFIG.protocol_series) == ("sonnet-class", "disabled", "v0")
    assert CONFIG.in_family("claude-sonnet-6") and not CONFIG.in_family("claude-opus-6")
    data = yaml.safe_load(SUBJECT_MODELS_FILE.read_text())
    with pytest.raises(SubjectModelsError, match="only models_endpoint_field and deprecation_snapshots"):
        parse_subject_models({**data, "successor_declaration": {"naming_pattern": "claude-sonnet-*"}})
    with pytest.raises(SubjectModelsError, match="does not match the family's pattern"):
        parse_subject_models({**data, "active_model": "claude-opus-5"})
    with pytest.raises(SubjectModelsError, match="missing effort"):
        parse_subject_models({k: v for k, v in data.items() if k != "effort"})


@pytest.mark.parametrize("variable", ["LLMARCHIVE_WEBHOOK_URL", "LLMARCHIVE_WATCH_WEBHOOK"])
def test_the_watch_pages_the_archives_one_webhook_and_still_reads_its_older_name(paths, monkeypatch, capsys,
                                                                                 variable):
    """The lease, Dagster's alert sensors and the watch page one webhook, named by one variable.

    An owner who set the watch's older name before the two were made one is still paged: a renamed variable
    must not turn a bridge alarm into one that reaches no one.
    """
    from assets.definitions_builder import default_resources

    for name in ("LLMARCHIVE_WEBHOOK_URL", "LLMARCHIVE_WATCH_WEBHOOK"):
        monkeypatch.delenv(name, raising=False)
    with FakeProvider(models=BASELINE) as fake, webhook_server() as (url, received):
        monkeypatch.setenv(variable, url)
        assert main(["watch", "--base-url", fake.base_url, "--date", "2026-11-01"]) == 0
        fake.set_models(BASELINE + ["claude-sonnet-5-5"])
        assert main(["watch", "--base-url", fake.base_url, "--date", "2026-11-02"]) == 0
        assert default_resources()["webhook"].url() == url, "Dagster's sensors page the same webhook"
    assert [r["new_model_id"] for r in received] == ["claude-sonnet-5-5"]
    assert "ALARM:" in capsys.readouterr().err
