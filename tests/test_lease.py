"""The lease on life: dead-man alert after 36 h without a daily cycle, dormant after 180 days without a run."""
from datetime import datetime, timezone


from llmarchive.archive import record_logs as records, write_json
from llmarchive.cli import main
from llmarchive.schedule.coverage import compute, gather
from llmarchive.schedule.lease import check, record_state
from tests.instrument_helpers import webhook_server

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)


def beat(paths, at: str) -> None:
    records.append(paths, "runtime_fingerprint", {
        "date": at[:10], "status": "pass", "digest": "d" * 64, "expected_digest": "d" * 64, "model_sha256": "m" * 64,
        "template_sha256": "t" * 64, "llama_cpp_version": "0.3.36", "runner_arch": "x86_64-linux",
        "n_threads": 1, "n_batch": 512, "seed": 0}, recorded_at=at)


def run_on(paths, run_date: str, run_id: str = "r1") -> None:
    write_json(paths.run_dir(run_id) / "run.json", {"run_id": run_id, "run_date": run_date,
                                                    "protocol_id": "p", "series": "commercial"})
    write_json(paths.run_dir(run_id) / "measurement.json", {"run_id": run_id})


def test_alive_when_the_cycle_ran_today_and_a_run_is_recent(paths):
    beat(paths, "2026-11-29T06:00:00Z")
    run_on(paths, "2026-11-02")
    state = check(paths, NOW)
    assert state.state == "alive" and not state.deadman and state.coverage_cause is None
    assert state.hours_since_cycle == 6.0 and state.days_since_run == 27
    assert record_state(paths, state) is None


def test_no_daily_cycle_for_36_hours_fires_the_dead_man_alert(paths):
    beat(paths, "2026-11-27T23:00:00Z")        # 37 h before NOW
    run_on(paths, "2026-11-02")
    state = check(paths, NOW)
    assert state.deadman and state.state == "deadman"
    assert "DEAD-MAN ALERT: no daily cycle completed for 37 h" in state.reason
    assert state.coverage_cause == "human_absent"
    beat(paths, "2026-11-28T01:00:00Z")        # 35 h: not yet
    assert not check(paths, NOW).deadman


def test_an_archive_whose_cycle_never_ran_is_in_alert(paths):
    state = check(paths, NOW)
    assert state.deadman and "no daily cycle has ever completed" in state.reason


def test_vacation_then_dormant_by_days_without_a_run(paths):
    beat(paths, "2026-11-29T06:00:00Z")
    run_on(paths, "2026-09-10")                # 80 days
    assert check(paths, NOW).state == "vacation"
    run_on(paths, "2026-05-20", "r0")          # the latest run decides: still 80 days
    assert check(paths, NOW).state == "vacation"


def test_dormant_after_180_days_with_its_coverage_cause(paths):
    beat(paths, "2026-11-29T06:00:00Z")
    run_on(paths, "2026-05-20")                # 193 days
    state = check(paths, NOW)
    assert state.state == "dormant" and state.coverage_cause == "dormant"
    assert "dormant: 193 days without a run" in state.reason
    recorded = record_state(paths, state)
    assert (recorded["state"], recorded["coverage_cause"]) == ("dormant", "dormant")
    assert record_state(paths, check(paths, NOW)) is None, "once a day per state"
    protocols = [{"protocol_id": "p", "lane": "open", "status": "admitted", "series": "v0",
                  "rewording_type": "wording", "admitted_on": "2026-01-01"}]
    rows = compute(paths, "2026-11-29", facts=gather(paths, protocols=protocols), jobs=("full_sweep",),
                   now=NOW).rows
    assert {r["period"]: r["cause"] for r in rows}["2026-11"] == "dormant"


def test_a_provider_silent_for_seven_days_is_a_degraded_source(paths):
    beat(paths, "2026-11-29T06:00:00Z")
    run_on(paths, "2026-11-20")
    records.append(paths, "model_observed", {"date": "2026-11-20", "provider": "anthropic",
                                             "model_id": "claude-sonnet-5", "in_family": True},
                   recorded_at="2026-11-20T06:00:00Z")
    state = check(paths, NOW)
    assert state.state == "alive" and state.source_degraded and "source degraded" in state.reason


def test_the_cli_exits_1_records_and_posts_an_alert(paths, capsys):
    with webhook_server() as (url, received):
        assert main(["lease", "--webhook", url]) == 1
    out = capsys.readouterr().out
    assert "DEAD-MAN ALERT" in out
    assert records.read(paths, "lease")[0]["state"] == "deadman"
    assert received and received[0]["kind"] == "lease" and received[0]["state"] == "deadman"


def test_the_webhook_is_told_on_a_change_again_once_a_day_and_on_recovery_never_hourly(paths):
    from datetime import timedelta

    from llmarchive.schedule.lease import deliver

    beat(paths, "2026-11-27T23:00:00Z")        # dead from 2026-11-29 11:00
    run_on(paths, "2026-11-02")
    with webhook_server() as (url, received):
        def at(hours: float):
            return deliver(paths, check(paths, NOW + timedelta(hours=hours)), url)

        assert at(0)[0]["event"] == "alert"
        assert [at(h) for h in (1, 2, 23.9)] == [None, None, None]           # still dead: not every hour
        assert at(24)[0]["event"] == "reminder" and at(25) is None         # once a day while it lasts
        beat(paths, "2026-11-30T13:00:00Z")
        assert at(26)[0]["event"] == "recovered" and at(27) is None         # alive: said once, then quiet
        assert at(200)[0]["state"] == "deadman"                            # a new absence is a new alert
    assert [(r["event"], r["state"]) for r in received] == [
        ("alert", "deadman"), ("reminder", "deadman"), ("recovered", "alive"), ("alert", "deadman")]
    assert received[1]["since"] == received[0]["since"] == "2026-11-29T12:00:00Z"


def test_the_webhook_comes_from_the_environment_when_no_flag_names_one(paths, monkeypatch, capsys):
    with webhook_server() as (url, received):
        monkeypatch.setenv("LLMARCHIVE_WEBHOOK_URL", url)
        assert main(["lease"]) == 1
    assert [(r["event"], r["state"]) for r in received] == [("alert", "deadman")]
    assert "alert (deadman) posted to the webhook: sent (HTTP 204)" in capsys.readouterr().err


def test_a_webhook_that_is_no_url_is_refused_in_one_line_that_does_not_repeat_it_and_writes_nothing(paths, capsys):
    assert main(["lease", "--webhook", "hooks.example.invalid/T0KEN-SECRET"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a usable http(s) URL" in err and "T0KEN" not in err
    assert records.read(paths, "lease") == []


def test_a_dead_daemon_during_a_vacation_is_paged_at_once_not_at_the_next_daily_reminder(paths):
    from datetime import timedelta

    from llmarchive.schedule.lease import deliver

    beat(paths, "2026-11-29T06:00:00Z")
    run_on(paths, "2026-09-10")                # 80 days: vacation, the daily cycle alive
    with webhook_server() as (url, received):
        assert deliver(paths, check(paths, NOW), url)[0]["state"] == "vacation"
        assert deliver(paths, check(paths, NOW + timedelta(hours=12)), url) is None
        paged = deliver(paths, check(paths, NOW + timedelta(hours=43)), url)    # 49 h since the last cycle
    assert paged[0]["event"] == "alert" and paged[0]["deadman"] and "DEAD-MAN ALERT" in paged[0]["text"]
    assert [r["deadman"] for r in received] == [False, True]
