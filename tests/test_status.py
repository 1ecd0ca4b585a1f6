"""``llmarchive status``: the morning check reads every part from a real scratch archive.

The archive is written by the real modules: fingerprints (the in-test
engine), the model watch against the fake provider (a bridge and a
needs_review), a budget, coverage, and a publication.
"""
import json

from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.cli import main
from llmarchive.schedule.coverage import record_coverage
from llmarchive.instrument import runtime_fingerprint
from llmarchive.succession import load_subject_models
from llmarchive.schedule.watch import watch
from publish import publish_all
from tests.fake_provider import FakeProvider
from tests.instrument_helpers import admitted_archive
from tests.test_instrument import PromptEngine


def _status(capsys, *extra) -> dict:
    capsys.readouterr()
    assert main(["status", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_status_json_on_an_empty_archive_names_every_part_and_exits_0(archive_home, capsys):
    shown = _status(capsys, "--date", "2026-11-02")
    assert shown["instrument"]["passing"] is False and shown["instrument"]["latched_alarm"] is None
    assert shown["pending_bridges"] == [] and shown["needs_review"] == []
    assert shown["budget"] is None and shown["coverage"]["archive_start"] is None
    assert shown["publication"]["published"] is False
    assert main(["status", "--date", "2026-11-02"]) == 0
    assert "never published" in capsys.readouterr().out


def test_status_reports_alarm_bridge_review_budget_coverage_and_a_stale_publication(archive_home, monkeypatch,
                                                                                    capsys):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-status")
    paths = admitted_archive(monkeypatch)
    budget_mod.write_budget(paths, budget_mod.Budget(40.0, 6.5, 1.0, {"scenario": 0.004, "fingerprint": 0.0005}))
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine(tamper=("fp03", 1)))
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine())
    config = load_subject_models()
    with FakeProvider(lambda request: None, models=["claude-sonnet-5"]) as fake:
        watch(paths, "2026-11-01", config, base_url=fake.base_url)
        fake.set_models(["claude-sonnet-5", "claude-sonnet-5-5"])
        watch(paths, "2026-11-03", config, base_url=fake.base_url)
    record_coverage(paths, "2026-11-03", jobs=("runtime_fingerprint",))
    publish_all(paths)

    shown = _status(capsys, "--date", "2026-11-03")
    inst = shown["instrument"]
    assert inst["runtime_fingerprint"] == "pass" and inst["passing"] is False, "a clean day inside a latch"
    assert inst["latched_alarm"]["since"] == "2026-11-02" and inst["latched_alarm"]["alarm_count"] == 1
    [bridge] = shown["pending_bridges"]
    assert (bridge["old_model_id"], bridge["new_model_id"]) == ("claude-sonnet-5", "claude-sonnet-5-5")
    assert [r["model_id"] for r in shown["needs_review"]] == ["claude-sonnet-5-5"]
    assert shown["budget"]["month"] == "2026-11" and shown["budget"]["used_pct"] == 0.0
    assert shown["budget"]["rung"] is None and shown["budget"]["general_pool_eur"] == 32.5
    assert shown["coverage"]["month"] == "2026-11" and shown["coverage"]["ran"] >= 3
    assert shown["publication"]["published"] is True and shown["publication"]["current"] is True
    assert shown["publication"]["instrument_alarm_published"]["since"] == "2026-11-02"

    records.append(paths, "instrument_alarm", {"date": "2026-11-03", "source": "guard_rotation", "reason": "x"})
    stale = _status(capsys, "--date", "2026-11-03")
    assert stale["publication"]["current"] is False
    assert stale["instrument"]["latched_alarm"]["alarm_count"] == 2

    assert main(["status", "--date", "2026-11-03"]) == 0
    text = capsys.readouterr().out
    assert "latched since 2026-11-02" in text and "claude-sonnet-5-5" in text and "STALE" in text
    assert len(text.splitlines()) <= 25, "one screen"


def test_status_shows_the_dead_man_the_pages_owed_and_never_the_webhooks_token(archive_home, monkeypatch, capsys):
    """The issue's morning: a latched alarm, 40 h without a daily cycle, a webhook answering 500 for two hours."""
    from datetime import datetime, timedelta, timezone

    import time_machine

    from llmarchive.schedule import outbox
    from tests.webhook_receiver import Receiver

    paths = ArchivePaths.from_env().ensure()
    day1 = datetime(2027, 2, 1, 4, 0, tzinfo=timezone.utc)
    with time_machine.travel(day1, tick=False):
        runtime_fingerprint(paths, "2027-02-01", lambda: PromptEngine())
    with time_machine.travel(day1 + timedelta(days=1), tick=False):
        runtime_fingerprint(paths, "2027-02-02", lambda: PromptEngine(tamper=("fp03", 1)))
    with Receiver() as hook:
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", hook.url + "?token=T0KEN")
        hook.set("error")
        now = day1 + timedelta(days=1, hours=40)                                      # 40 h after the last cycle
        failed = now - timedelta(hours=2)
        outbox.record(paths, [outbox.Page("run|r1", "run_failure", "FAILED RUN r1 needs a person")], now=failed)
        outbox.send(paths, hook.url, now=failed)
        with time_machine.travel(now, tick=False):
            shown = _status(capsys, "--date", "2027-02-03")
            assert main(["status", "--date", "2027-02-03"]) == 0
            text = capsys.readouterr().out
    life = shown["lifeline"]
    assert life["lease"]["deadman"] is True and life["lease"]["hours_since_cycle"] == 40.0
    assert life["owed"] == 1 and "the oldest for 2.0 h" in life["broken"] and "HTTP 500" in life["broken"]
    assert shown["instrument"]["latched_alarm"]["since"] == "2027-02-02"
    assert "DEAD-MAN" in text and "DEAD-MAN ALERT: no daily cycle completed for 40 h" in text
    assert "PAGES        NOT GETTING THROUGH: 1 page(s) owed" in text
    assert "T0KEN" not in text and "T0KEN" not in json.dumps(shown)
    assert len(text.splitlines()) <= 25, "still one screen"


def test_status_digests_the_publications_inputs_as_a_build_does_and_sees_one_changed_trial_line(archive):
    """``status`` asks whether the publication is current with the publisher's digest over only what it digests
    (:func:`publish.data.sources.digest_inputs`): every measurement, the open lane's trial lines, each record
    log's chain head — the same hash as a whole build's reading, and a changed open-lane trial is seen."""
    from llmarchive.archive import store
    from llmarchive.cli.status import publication_inputs_current
    from publish.data import sources, status as published
    from tests import publish_helpers as ph

    ph.populate(archive)
    whole = sources.gather(archive)
    assert whole.open_runs and len(whole.measurements) > len(whole.open_runs), "both lanes are in the archive"
    assert published.inputs_digest(sources.digest_inputs(archive)) == published.inputs_digest(whole)
    publish_all(archive)
    assert publication_inputs_current(archive) is True

    log = store.trial_log(archive.run_dir(whole.open_runs[0].run_id))
    lines = log.read_bytes().splitlines(keepends=True)
    trial = max(i for i, line in enumerate(lines) if b'"record_type":"trial"' in line)
    lines[trial] = lines[trial].replace(b'"trial_index":', b'"trial_index": ', 1)   # one byte more, same record
    log.write_bytes(b"".join(lines))
    assert publication_inputs_current(archive) is False
