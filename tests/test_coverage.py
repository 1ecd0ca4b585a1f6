"""Coverage: one pure mapping from observed condition to cause, and rows for every job and period."""
from datetime import date, datetime, timedelta, timezone

import pytest

from llmarchive import budget as budget_mod
from llmarchive import records
from llmarchive.coverage import (CONDITIONS, DEFAULT_CONDITION, PRECEDENCE, UnexplainedGap, cause_for, compute,
                                 gather, record_coverage, record_skip)
from llmarchive.jsonio import write_json
from llmarchive.paths import ArchivePaths
from measure.schema import GAP_CAUSES
from publish.csvs import coverage_rows

P_OPEN = "risky_choice_framing__wording__v0"
P_GUARD = "risky_choice_framing__anchoring__v0"
PROTOCOLS = [
    {"protocol_id": P_OPEN, "rewording_type": "wording", "lane": "open", "status": "admitted", "series": "v0",
     "twin_id": P_GUARD, "n": 30, "admitted_on": "2026-09-20"},
    {"protocol_id": P_GUARD, "rewording_type": "anchoring", "lane": "guard", "status": "admitted", "series": "v0",
     "twin_id": P_OPEN, "n": 30, "admitted_on": "2026-09-20"},
]


@pytest.fixture
def paths(archive_home):
    return ArchivePaths.from_env().ensure()


def beat(paths, day: str, hour: int = 6, status: str = "pass") -> None:
    """A daily cycle's heartbeat: a runtime_fingerprint record written at ``day``T``hour``."""
    records.append(paths, "runtime_fingerprint", {
        "date": day, "status": status, "digest": "d" * 64, "expected_digest": "d" * 64, "model_sha256": "m" * 64,
        "template_sha256": "t" * 64, "llama_cpp_version": "0.3.36", "runner_arch": "x86_64-linux", "n_threads": 1,
        "n_batch": 512, "seed": 0}, recorded_at=f"{day}T{hour:02d}:00:00Z")


def beat_days(paths, first: str, last: str, skip=()) -> None:
    d = date.fromisoformat(first)
    while d <= date.fromisoformat(last):
        if d.isoformat() not in skip:
            beat(paths, d.isoformat())
        d += timedelta(days=1)


def complete_run(paths, run_id: str, run_date: str, protocol_id: str = P_OPEN, series: str = "commercial",
                 job: str = "sweep") -> None:
    folder = paths.run_dir(run_id)
    write_json(folder / "run.json", {"run_id": run_id, "run_date": run_date, "protocol_id": protocol_id,
                                     "series": series, "subject_model_id": "claude-sonnet-5", "job": job,
                                     "status": "complete"})
    write_json(folder / "measurement.json", {"run_id": run_id})


def rows_by(result, job):
    return {(r["period"], r["protocol_id"]): r for r in result.rows if r["job"] == job}


NOW = datetime(2026, 12, 2, 12, tzinfo=timezone.utc)


# --------------------------------------------------------------------------
# the pure mapping: one test per cause
# --------------------------------------------------------------------------

@pytest.mark.parametrize("condition,cause", [
    ("period_before_archive_start", "before_archive_start"),
    ("budget_refused", "budget_halted"),
    ("archive_dormant", "dormant"),
    ("provider_unreachable", "provider_outage"),
    ("not_preregistered", "protocol_confounded"),
    ("no_daily_cycle", "human_absent"),
    ("series_closed_without_successor", "generation_retired_early"),
    ("bridge_preempts_sweep", "generation_bridge"),
])
def test_each_cause_of_the_closed_list_has_an_observed_condition_mapping_to_it(condition, cause):
    assert cause_for([condition]) == cause


def test_the_mapping_covers_exactly_the_closed_list_and_nothing_else():
    assert set(CONDITIONS.values()) == set(GAP_CAUSES)
    assert set(DEFAULT_CONDITION) == set(GAP_CAUSES)
    assert cause_for(["protocol_content_mismatch"]) == "protocol_confounded"
    assert cause_for(["provider_refused_request"]) == "human_absent"


def test_several_conditions_give_exactly_one_cause_by_a_fixed_precedence():
    assert cause_for(["provider_unreachable", "budget_refused", "no_daily_cycle"]) == "budget_halted"
    assert cause_for(["no_daily_cycle", "archive_dormant"]) == "dormant"
    assert cause_for(["bridge_preempts_sweep", "not_preregistered"]) == "generation_bridge"
    assert cause_for(list(PRECEDENCE)) == "before_archive_start"


def test_no_condition_is_an_error_never_a_silent_hole_and_an_unknown_one_is_refused():
    with pytest.raises(UnexplainedGap):
        cause_for([])
    with pytest.raises(ValueError, match="unknown condition"):
        cause_for(["the_intern_forgot"])


def test_a_skip_record_gets_its_cause_from_the_mapping(paths):
    skip = record_skip(paths, "2026-11-02", "sweep", P_OPEN, "not_preregistered", "not_preregistered: no manifest")
    assert skip["cause"] == "protocol_confounded" and skip["condition"] == "not_preregistered"


# --------------------------------------------------------------------------
# rows from the archive's records: each cause observed for real
# --------------------------------------------------------------------------

def test_jobs_that_ran_are_ran_rows(paths):
    beat_days(paths, "2026-11-01", "2026-11-03")
    complete_run(paths, "sweep-nov", "2026-11-02")
    result = compute(paths, "2026-11-03", facts=gather(paths, protocols=PROTOCOLS[:1]),
                     jobs=("runtime_fingerprint", "full_sweep"), now=NOW)
    fp = rows_by(result, "runtime_fingerprint")
    assert [fp[(d, None)]["status"] for d in ("2026-11-01", "2026-11-02", "2026-11-03")] == ["ran"] * 3
    assert fp[("2026-11-01", None)]["series"] == "open_weights"
    sweep = rows_by(result, "full_sweep")[("2026-11", P_OPEN)]
    assert (sweep["status"], sweep["cause"], sweep["run_id"], sweep["series"]) == ("ran", None, "sweep-nov",
                                                                                  "commercial")


def test_before_archive_start(paths):
    beat_days(paths, "2026-10-03", "2026-10-05")
    result = compute(paths, "2026-10-05", since="2026-09-29", facts=gather(paths, protocols=PROTOCOLS[:1]),
                     jobs=("runtime_fingerprint", "full_sweep"), now=NOW)
    fp = rows_by(result, "runtime_fingerprint")
    assert fp[("2026-09-30", None)]["cause"] == "before_archive_start"
    assert fp[("2026-10-02", None)]["cause"] == "before_archive_start"
    assert fp[("2026-10-03", None)]["status"] == "ran"
    assert rows_by(result, "full_sweep")[("2026-09", P_OPEN)]["cause"] == "before_archive_start"
    assert ("full_sweep", "2026-10", P_OPEN) in result.pending   # October is not over


def test_dormant_after_180_days_without_a_run(paths):
    complete_run(paths, "last-run", "2026-01-10")
    early = [dict(PROTOCOLS[0], admitted_on="2025-12-01")]
    result = compute(paths, "2026-09-01", facts=gather(paths, protocols=early), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")
    assert sweep[("2026-01", P_OPEN)]["status"] == "ran"
    assert sweep[("2026-06", P_OPEN)]["cause"] == "human_absent"   # no daily cycle, not yet 180 days
    assert sweep[("2026-08", P_OPEN)]["cause"] == "dormant"
    assert "180 days" in sweep[("2026-08", P_OPEN)]["detail"]


def test_generation_retired_early_after_the_series_closed(paths):
    beat_days(paths, "2026-10-10", "2026-10-20")
    records.append(paths, "subject_fingerprint", {"date": "2026-10-14", "subject_model_id": "claude-sonnet-5",
                                                  "returned_model_id": "claude-sonnet-5", "correct": 24,
                                                  "total": 24, "items": []})
    records.append(paths, "series_closed", {"date": "2026-10-15", "model_family": "claude-sonnet",
                                            "model_id": "claude-sonnet-5", "reason": "gone, no successor"})
    result = compute(paths, "2026-10-20", facts=gather(paths, protocols=PROTOCOLS[:1]),
                     jobs=("subject_fingerprint",), now=NOW)
    subject = rows_by(result, "subject_fingerprint")
    assert subject[("2026-10-14", None)]["status"] == "ran"
    assert subject[("2026-10-16", None)]["cause"] == "generation_retired_early"
    assert ("subject_fingerprint", "2026-10-12", None) in result.unexplained   # before the close: no cause at all


def test_generation_bridge_takes_that_months_sweep(paths):
    beat_days(paths, "2026-10-25", "2026-12-01")
    complete_run(paths, "oct", "2026-10-26")
    records.append(paths, "generation_bridge", {"date": "2026-11-03", "model_family": "claude-sonnet",
                                                "old_model_id": "claude-sonnet-5", "new_model_id": "claude-sonnet-6",
                                                "protocol_ids": [P_OPEN], "status": "pending"})
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")
    assert sweep[("2026-11", P_OPEN)]["cause"] == "generation_bridge"
    assert sweep[("2026-11", P_GUARD)]["cause"] == "generation_bridge"


def test_budget_halted_from_the_budget_ladders_own_skip_records(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    complete_run(paths, "oct", "2026-10-30", protocol_id=P_GUARD)
    budget = budget_mod.Budget(12.0, 1.0, 1.0, {"scenario": 1.0, "fingerprint": 0.01})
    plan = budget_mod.allowed_protocols(paths, PROTOCOLS, job="sweep", date="2026-11-02", budget=budget)
    assert plan.allowed == [] and len(plan.skipped) == 2     # 120 € a protocol, 10 € in the pool
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")
    assert sweep[("2026-11", P_OPEN)]["cause"] == "budget_halted"
    assert "general pool" in sweep[("2026-11", P_OPEN)]["detail"]


def test_protocol_confounded_when_not_preregistered(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    record_skip(paths, "2026-11-02", "sweep", P_OPEN, "not_preregistered", "not_preregistered: no manifest lists it")
    complete_run(paths, "guard-nov", "2026-11-02", protocol_id=P_GUARD)
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")
    assert sweep[("2026-11", P_OPEN)]["cause"] == "protocol_confounded"
    assert sweep[("2026-11", P_GUARD)]["status"] == "ran"


def test_provider_outage_seen_by_the_model_watch_explains_the_subject_fingerprint(paths):
    beat_days(paths, "2026-11-01", "2026-11-04")
    for d in ("2026-11-01", "2026-11-03"):
        records.append(paths, "subject_fingerprint", {"date": d, "subject_model_id": "claude-sonnet-5",
                                                      "returned_model_id": "claude-sonnet-5", "correct": 24,
                                                      "total": 24, "items": []})
    record_skip(paths, "2026-11-02", "model_watch", None, "provider_unreachable", "models list still failing")
    result = compute(paths, "2026-11-04", facts=gather(paths, protocols=PROTOCOLS[:1]),
                     jobs=("subject_fingerprint",), now=NOW)
    row = rows_by(result, "subject_fingerprint")[("2026-11-02", None)]
    assert (row["status"], row["cause"]) == ("gap", "provider_outage")


def test_human_absent_when_no_daily_cycle_completed_for_36_hours(paths):
    beat_days(paths, "2026-11-01", "2026-11-08", skip=("2026-11-04", "2026-11-05"))
    result = compute(paths, "2026-11-08", facts=gather(paths, protocols=PROTOCOLS[:1]),
                     jobs=("runtime_fingerprint",), now=NOW)
    fp = rows_by(result, "runtime_fingerprint")
    assert fp[("2026-11-04", None)]["cause"] == "human_absent"
    assert "72 h" in fp[("2026-11-05", None)]["detail"]
    assert fp[("2026-11-06", None)]["status"] == "ran"


def test_a_period_with_no_output_and_no_cause_raises_after_writing_every_explained_row(paths):
    beat_days(paths, "2026-11-01", "2026-11-03")       # the cycle ran every day …
    records.append(paths, "subject_fingerprint", {"date": "2026-11-01", "subject_model_id": "claude-sonnet-5",
                                                  "returned_model_id": "claude-sonnet-5", "correct": 24,
                                                  "total": 24, "items": []})
    with pytest.raises(UnexplainedGap) as info:        # … but the subject fingerprint left no trace on the 2nd
        record_coverage(paths, "2026-11-03", facts=gather(paths, protocols=PROTOCOLS[:1]),
                        jobs=("runtime_fingerprint", "subject_fingerprint"), now=NOW)
    assert info.value.gaps == [("subject_fingerprint", "2026-11-02", None)]
    assert "subject_fingerprint 2026-11-02" in str(info.value)
    written = records.read(paths, "coverage")
    assert {(r["job"], r["period"]) for r in written} >= {("runtime_fingerprint", "2026-11-02"),
                                                         ("subject_fingerprint", "2026-11-01")}
    assert all(r["status"] == "ran" for r in written)


def test_rows_are_appended_only_when_they_change_and_the_latest_wins(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    record_skip(paths, "2026-11-02", "sweep", P_OPEN, "provider_unreachable", "still failing")
    facts = lambda: gather(paths, protocols=PROTOCOLS[:1])  # noqa: E731
    record_coverage(paths, "2026-12-01", facts=facts(), jobs=("full_sweep",), now=NOW)
    record_coverage(paths, "2026-12-01", facts=facts(), jobs=("full_sweep",), now=NOW)
    assert len(records.read(paths, "coverage")) == 1
    complete_run(paths, "late", "2026-11-20")
    record_coverage(paths, "2026-12-01", facts=facts(), jobs=("full_sweep",), now=NOW)
    logged = records.read(paths, "coverage")
    assert [r["status"] for r in logged] == ["gap", "ran"]
    assert [r["status"] for r in coverage_rows(logged)] == ["ran"]


def test_the_guard_rotation_row_names_the_protocol_that_was_due(paths):
    beat_days(paths, "2026-11-01", "2026-11-02")
    records.append(paths, "guard_rotation", {"date": "2026-11-01", "protocol_id": P_GUARD, "run_id": "r1",
                                             "previous_run_id": None, "verdict": "baseline"})
    result = compute(paths, "2026-11-02", facts=gather(paths, protocols=PROTOCOLS),
                     jobs=("guard_margin_rotation",), now=NOW)
    row = rows_by(result, "guard_margin_rotation")[("2026-11-01", P_GUARD)]
    assert row["status"] == "ran" and row["run_id"] == "r1" and "baseline" in row["detail"]
    assert result.pending == [("guard_margin_rotation", "2026-11-02", P_GUARD)]


def test_the_cli_records_the_rows_and_exits_1_on_an_unexplained_period(paths, capsys):
    from llmarchive.cli import main

    beat_days(paths, "2026-11-01", "2026-11-03")
    records.append(paths, "subject_fingerprint", {"date": "2026-11-01", "subject_model_id": "claude-sonnet-5",
                                                  "returned_model_id": "claude-sonnet-5", "correct": 24,
                                                  "total": 24, "items": []})
    assert main(["coverage", "--date", "2026-11-03", "--dry-run"]) == 1
    assert records.read(paths, "coverage") == []
    assert main(["coverage", "--date", "2026-11-03", "--since", "2026-10-30"]) == 1
    err = capsys.readouterr().err
    assert "subject_fingerprint 2026-11-02" in err and "no output and no observed condition" in err
    logged = {(r["job"], r["period"]): r["cause"] for r in records.read(paths, "coverage")}
    assert logged[("runtime_fingerprint", "2026-10-30")] == "before_archive_start"
    assert logged[("runtime_fingerprint", "2026-11-02")] is None
