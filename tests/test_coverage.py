"""Coverage: one pure mapping from observed condition to cause, and rows for every job and period."""
from datetime import date, datetime, timedelta, timezone

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import (CONDITIONS, DEFAULT_CONDITION, PRECEDENCE, UnexplainedGap, cause_for,
                                record_logs as records, record_skip, write_json)
from llmarchive.schedule.coverage import compute, gather, record_coverage
from measure.schema import GAP_CAUSES
from publish.data.csvs import coverage_rows

P_OPEN = "risky_choice_framing__wording__v0"
P_GUARD = "risky_choice_framing__anchoring__v0"
PROTOCOLS = [
    {"protocol_id": P_OPEN, "rewording_type": "wording", "lane": "open", "status": "admitted", "series": "v0",
     "twin_id": P_GUARD, "n": 30, "admitted_on": "2026-09-20"},
    {"protocol_id": P_GUARD, "rewording_type": "anchoring", "lane": "guard", "status": "admitted", "series": "v0",
     "twin_id": P_OPEN, "n": 30, "admitted_on": "2026-09-20"},
]


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


def fingerprint_record(paths, day: str) -> None:
    """The day's subject fingerprint record: it ran."""
    records.append(paths, "subject_fingerprint", {"date": day, "subject_model_id": "claude-sonnet-5",
                                                  "returned_model_id": "claude-sonnet-5", "correct": 24,
                                                  "total": 24, "items": []})


def fingerprint_spend(paths, day: str) -> None:
    """Spend charged for one item of the day's subject fingerprint, through the real meter and ledger."""
    meter = budget_mod.SpendMeter(paths, budget_mod.Authorization("subject_fingerprint", "fingerprint", "general",
                                                                  0.001),
                                  f"subject_fingerprint_{day}_claude-sonnet-5@s1", "anthropic", "claude-sonnet-5")
    meter.charge([(f"subject_fingerprint/{day}/sf01", {"answered": True})])


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
    assert cause_for(["provider_refused_request"]) == "human_absent"
    assert cause_for(["run_left_interrupted"]) == "provider_outage"
    assert cause_for(["budget_cut"]) == "budget_halted"
    with pytest.raises(ValueError, match="unknown condition"):
        cause_for(["protocol_content_mismatch"])   # nothing observed it: removed, not kept as a dead row


def _code_strings(path) -> set[str]:
    """Every string literal of a module's code: docstrings and comments are prose, not observation."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings}


def observed_conditions() -> set[str]:
    """The conditions some code outside the mapping names as a value: written on a record or found by coverage.

    ``skips.py`` is left out — it holds the mapping itself, so searching it
    would find every condition — and so are docstrings (coverage's table).
    """
    from pathlib import Path

    import llmarchive

    found: set[str] = set()
    for module in Path(llmarchive.__file__).parent.rglob("*.py"):
        if module.name != "skips.py":
            found |= _code_strings(module)
    return found


def test_every_condition_of_the_mapping_is_one_some_code_observes():
    missing = sorted(set(CONDITIONS) - observed_conditions())
    assert missing == [], f"nothing observes {', '.join(missing)}"


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
    assert fp[("2026-11-01", None)]["series"] is None, "the instrument's job, not the open-weights series"
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
    before = subject[("2026-10-12", None)]      # before the close: a paid job nobody started
    assert before["cause"] == "human_absent" and before["detail"].startswith("paid_job_not_started")


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
    detail = sweep[("2026-11", P_OPEN)]["detail"]
    assert "the general pool had no room for it in 2026-11" in detail and "€" not in detail
    assert all("€" in s["reason"] for s in records.read(paths, "skip")), "the owner's skip log keeps the amounts"


def test_protocol_confounded_when_not_preregistered(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    record_skip(paths, "2026-11-02", "sweep", P_OPEN, "not_preregistered", "not_preregistered: no manifest lists it")
    complete_run(paths, "guard-nov", "2026-11-02", protocol_id=P_GUARD)
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")
    assert sweep[("2026-11", P_OPEN)]["cause"] == "protocol_confounded"
    assert sweep[("2026-11", P_GUARD)]["status"] == "ran"


@pytest.mark.parametrize("stored_job", ["sweep", "full_sweep"])
def test_a_sweep_skip_explains_its_month_under_the_old_job_name_and_the_new(paths, stored_job):
    beat_days(paths, "2026-11-01", "2026-12-01")
    record_skip(paths, "2026-11-02", stored_job, P_OPEN, "provider_refused_request", "the run stopped: HTTP 401")
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")
    assert sweep[("2026-11", P_OPEN)]["cause"] == "human_absent"
    assert sweep[("2026-11", P_GUARD)]["cause"] == "human_absent", "a stop of the sweep stops it for the rest"


def test_a_failed_subject_fingerprint_day_is_a_provider_outage_not_a_missed_step(paths):
    beat_days(paths, "2026-11-01", "2026-11-04")
    record_skip(paths, "2026-11-02", "subject_fingerprint", None, "provider_unreachable",
                "1 of the 24 calls got no answer (malformed): no fingerprint for a partial day")
    result = compute(paths, "2026-11-04", facts=gather(paths, protocols=PROTOCOLS[:1]),
                     jobs=("subject_fingerprint",), now=NOW)
    row = rows_by(result, "subject_fingerprint")[("2026-11-02", None)]
    assert (row["status"], row["cause"]) == ("gap", "provider_outage")


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


def test_a_paid_job_nobody_started_is_human_absent_once_its_day_is_over(paths):
    beat_days(paths, "2026-11-01", "2026-11-03")       # the cycle ran every day …
    records.append(paths, "subject_fingerprint", {"date": "2026-11-01", "subject_model_id": "claude-sonnet-5",
                                                  "returned_model_id": "claude-sonnet-5", "correct": 24,
                                                  "total": 24, "items": []})
    result = record_coverage(paths, "2026-11-03", facts=gather(paths, protocols=PROTOCOLS[:1]),
                             jobs=("runtime_fingerprint", "subject_fingerprint"), now=NOW)
    row = rows_by(result, "subject_fingerprint")[("2026-11-02", None)]   # … but nobody started the paid one
    assert (row["status"], row["cause"]) == ("gap", "human_absent")
    assert row["detail"].startswith("paid_job_not_started") and "created stopped" in row["detail"]
    assert result.unexplained == [] and ("subject_fingerprint", "2026-11-03", None) in result.pending


def test_a_daily_cycle_missed_for_less_than_36_hours_is_human_absent(paths):
    beat(paths, "2026-11-01", hour=22)
    beat(paths, "2026-11-03", hour=4)                  # 30 h without a cycle: no dead-man alert, still a gap
    result = compute(paths, "2026-11-04", facts=gather(paths, protocols=PROTOCOLS[:1]),
                     jobs=("runtime_fingerprint",), now=NOW)
    row = rows_by(result, "runtime_fingerprint")[("2026-11-02", None)]
    assert (row["status"], row["cause"]) == ("gap", "human_absent")
    assert row["detail"].startswith("no_daily_cycle") and "30 h apart" in row["detail"]
    assert result.unexplained == []


def test_a_step_missing_from_a_cycle_that_ran_is_human_absent(paths):
    beat_days(paths, "2026-11-01", "2026-11-03")
    records.append(paths, "guard_rotation", {"date": "2026-11-01", "protocol_id": P_GUARD, "run_id": "r1",
                                             "previous_run_id": None, "verdict": "baseline"})
    guard_only = [p for p in PROTOCOLS if p["lane"] == "guard"]
    result = compute(paths, "2026-11-03", facts=gather(paths, protocols=guard_only),
                     jobs=("guard_margin_rotation",), now=NOW)
    row = rows_by(result, "guard_margin_rotation")[("2026-11-02", P_GUARD)]
    assert (row["cause"], row["detail"].split(":")[0]) == ("human_absent", "cycle_step_missing")
    assert result.pending == [("guard_margin_rotation", "2026-11-03", P_GUARD)]


def test_the_rest_of_a_halted_sweep_takes_the_halts_cause(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    record_skip(paths, "2026-11-02", "sweep", P_OPEN, "provider_refused_request", "the run stopped: HTTP 401")
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")
    assert sweep[("2026-11", P_OPEN)]["cause"] == "human_absent"
    rest = sweep[("2026-11", P_GUARD)]                  # never reached: the sweep stopped at P_OPEN
    assert rest["cause"] == "human_absent" and rest["detail"].startswith("provider_refused_request")
    assert "the sweep stopped there" in rest["detail"]


def open_run(paths, run_id: str, run_date: str, status: str, protocol_id: str = P_OPEN,
             condition: str = None) -> None:
    """A run folder without a measurement, as the runner leaves it (``interruption`` as runner.py writes it)."""
    run = {"run_id": run_id, "run_date": run_date, "protocol_id": protocol_id, "series": "commercial",
           "subject_model_id": "claude-sonnet-5", "job": "sweep", "status": status,
           "n_trials_recorded": 57, "n_trials_planned": 120}
    if condition is not None:
        run["interruption"] = {"cause": {"provider_unreachable": "provider_outage", "budget_refused": "budget_halted"
                                         }.get(condition, "write_failed"),
                               "condition": condition, "at": f"{run_date}T06:10:00Z", "detail": "HTTP 529 x6",
                               "slot": "s01/A/0"}
    write_json(paths.run_dir(run_id) / "run.json", run)


def test_a_month_that_ends_with_slots_open_in_an_interrupted_run_is_provider_outage(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    open_run(paths, "sweep_2026-11_open", "2026-11-02", "interrupted", condition="provider_unreachable")
    facts = lambda: gather(paths, protocols=PROTOCOLS)  # noqa: E731
    during = compute(paths, "2026-11-20", facts=facts(), jobs=("full_sweep",), now=NOW)
    assert set(during.pending) == {("full_sweep", "2026-11", P_OPEN), ("full_sweep", "2026-11", P_GUARD)}
    after = compute(paths, "2026-12-01", facts=facts(), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(after, "full_sweep")
    own, rest = sweep[("2026-11", P_OPEN)], sweep[("2026-11", P_GUARD)]
    assert own["cause"] == "provider_outage" and "57/120 trials" in own["detail"]
    assert rest["cause"] == "provider_outage" and "the sweep stopped there" in rest["detail"]


@pytest.mark.parametrize("status,stop,condition,cause", [
    ("halted", None, "provider_refused_request", "human_absent"),
    ("running", None, "run_abandoned", "human_absent"),             # its process died mid-run
    ("interrupted", None, "run_abandoned", "human_absent"),         # Ctrl-C, nothing recorded about why
    ("interrupted", "budget_refused", "budget_refused", "budget_halted"),
])
def test_a_run_left_open_at_the_months_end_takes_the_cause_of_its_stop(paths, status, stop, condition, cause):
    beat_days(paths, "2026-11-01", "2026-12-01")
    open_run(paths, "sweep_2026-11_open", "2026-11-02", status, condition=stop)
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS[:1]), jobs=("full_sweep",),
                     now=NOW)
    row = rows_by(result, "full_sweep")[("2026-11", P_OPEN)]
    assert row["cause"] == cause and row["detail"].startswith(condition)


def twelve_v0_headers() -> list[dict]:
    from panels.build import all_protocol_ids, parse_protocol_id

    out = []
    for pid in all_protocol_ids():
        family, kind, series = parse_protocol_id(pid)
        if series != "v0":
            continue
        is_open = kind == "wording" and family in ("risky_choice_framing", "base_rate_neglect")
        out.append({"protocol_id": pid, "rewording_type": kind, "lane": "open" if is_open else "guard",
                    "status": "admitted", "series": "v0", "n": 30, "admitted_on": "2026-09-20",
                    "twin_id": f"{family}__anchoring__v0" if is_open else None})
    return out


def test_dated_budget_cuts_show_in_coverage_as_budget_halted(paths):
    from llmarchive import budget as budget_mod
    from llmarchive.archive.jsonio import append_record

    beat_days(paths, "2026-10-25", "2027-02-01")
    complete_run(paths, "oct", "2026-10-26")
    for level, day in ((1, "2026-11-01"), (3, "2026-12-05")):   # 12 → 8 protocols, then 6 and quarterly
        target = budget_mod.LEVELS[level]
        append_record(paths.record_log("budget_cut"), {
            "record_type": "budget_cut", "date": day, "month": day[:7], "from_level": level - 1, "to_level": level,
            "step": target.step, "protocols": target.protocols, "frequency": target.frequency,
            "tier_drop": target.tier_drop, "reason": f"measured cost too high: cut to {target.describe()}"})
    headers = twelve_v0_headers()
    result = compute(paths, "2027-02-01", facts=gather(paths, protocols=headers), jobs=("full_sweep",), now=NOW)
    sweep = rows_by(result, "full_sweep")

    def causes(month):
        return [sweep[(month, h["protocol_id"])]["cause"] for h in headers]

    november = [sweep[("2026-11", h["protocol_id"])] for h in headers]
    cut = [r for r in november if r["cause"] == "budget_halted"]
    assert len(cut) == 4 and all("not among the 8 protocols kept" in r["detail"] for r in cut)
    assert causes("2026-12") == ["budget_halted"] * 12
    assert "no sweep is due in 2026-12" in sweep[("2026-12", headers[0]["protocol_id"])]["detail"]
    assert causes("2027-01").count("budget_halted") == 6          # a quarter's month: 6 protocols are due


def test_gap_rows_are_coverage_gap_records_and_a_months_rows_are_one_batch_append(paths, monkeypatch):
    beat_days(paths, "2026-11-01", "2026-11-08", skip=("2026-11-04",))
    writes = []
    real = records.append_records
    monkeypatch.setattr(records, "append_records", lambda path, rows: writes.append(len(rows)) or real(path, rows))
    monkeypatch.setattr(records, "append", lambda *a, **k: pytest.fail("one row at a time"))
    result = record_coverage(paths, "2026-11-08", facts=gather(paths, protocols=PROTOCOLS[:1]),
                             jobs=("runtime_fingerprint",), now=NOW)
    logged = records.read(paths, "coverage")
    assert writes == [len(logged)] == [len(result.rows)] == [8]
    gap = [r for r in logged if r["status"] == "gap"]
    assert [(r["period"], r["record_type"]) for r in gap] == [("2026-11-04", "coverage_gap")]
    assert {r["record_type"] for r in logged if r["status"] == "ran"} == {"coverage"}
    assert [r["status"] for r in coverage_rows(logged)].count("gap") == 1


def test_an_unexplained_period_still_raises_after_writing_every_explained_row(paths, monkeypatch):
    from llmarchive.schedule import coverage

    beat_days(paths, "2026-11-01", "2026-11-03", skip=("2026-11-02",))
    real = coverage._Observer.conditions
    # Only a bug could leave a period with no condition at all; simulate one for runtime_fingerprint.
    monkeypatch.setattr(coverage._Observer, "conditions", lambda self, job, first, last, pid, kind="month": (
        {} if job.name == "runtime_fingerprint" else real(self, job, first, last, pid, kind)))
    with pytest.raises(UnexplainedGap) as info:
        record_coverage(paths, "2026-11-03", facts=gather(paths, protocols=PROTOCOLS[:1]),
                        jobs=("runtime_fingerprint",), now=NOW)
    assert info.value.gaps == [("runtime_fingerprint", "2026-11-02", None)]
    assert "runtime_fingerprint 2026-11-02" in str(info.value)
    assert {r["period"] for r in records.read(paths, "coverage")} == {"2026-11-01", "2026-11-03"}


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


def test_the_cli_records_the_rows_with_their_causes(paths, capsys):
    from llmarchive.cli import main

    beat_days(paths, "2026-11-01", "2026-11-03")
    records.append(paths, "subject_fingerprint", {"date": "2026-11-01", "subject_model_id": "claude-sonnet-5",
                                                  "returned_model_id": "claude-sonnet-5", "correct": 24,
                                                  "total": 24, "items": []})
    assert main(["coverage", "--date", "2026-11-03", "--dry-run"]) == 0
    assert records.read(paths, "coverage") == []
    assert main(["coverage", "--date", "2026-11-03", "--since", "2026-10-30"]) == 0
    out = capsys.readouterr().out
    assert "2026-11-02 subject_fingerprint: human_absent — paid_job_not_started" in out
    logged = {(r["job"], r["period"]): r["cause"] for r in records.read(paths, "coverage")}
    assert logged[("runtime_fingerprint", "2026-10-30")] == "before_archive_start"
    assert logged[("runtime_fingerprint", "2026-11-02")] is None
    assert logged[("subject_fingerprint", "2026-11-02")] == "human_absent"


def test_the_cli_exits_1_naming_an_unexplained_period(paths, capsys, monkeypatch):
    from llmarchive.schedule import coverage
    from llmarchive.cli import main

    beat_days(paths, "2026-11-01", "2026-11-03")
    monkeypatch.setattr(coverage._Observer, "conditions", lambda *a, **k: {})
    assert main(["coverage", "--date", "2026-11-03"]) == 1
    err = capsys.readouterr().err
    assert "subject_fingerprint 2026-11-02" in err and "no output and no observed condition" in err


# --------------------------------------------------------------------------
# issue 17 §2: coverage names what happened
# --------------------------------------------------------------------------

def test_an_instrument_job_that_could_not_run_is_a_gap_not_a_run(paths):
    beat_days(paths, "2026-11-01", "2026-11-03", skip=("2026-11-02",))
    beat(paths, "2026-11-02", status="unavailable")      # the cycle ran; the fingerprint could not
    for day, verdict in (("2026-11-01", "baseline"), ("2026-11-02", "unavailable")):
        records.append(paths, "guard_rotation", {"date": day, "protocol_id": P_GUARD, "run_id": None,
                                                 "previous_run_id": None, "verdict": verdict,
                                                 "reason": "the reference model would not load"})
    guard_only = [p for p in PROTOCOLS if p["lane"] == "guard"]
    result = compute(paths, "2026-11-03", facts=gather(paths, protocols=guard_only),
                     jobs=("runtime_fingerprint", "guard_margin_rotation"), now=NOW)
    fp = rows_by(result, "runtime_fingerprint")
    assert fp[("2026-11-01", None)]["status"] == "ran"
    assert (fp[("2026-11-02", None)]["status"], fp[("2026-11-02", None)]["cause"]) == ("gap", "provider_outage")
    assert fp[("2026-11-02", None)]["detail"].startswith("instrument_unavailable")
    rotation = rows_by(result, "guard_margin_rotation")[("2026-11-02", P_GUARD)]
    assert (rotation["status"], rotation["cause"]) == ("gap", "provider_outage")
    assert rotation["detail"].startswith("instrument_unavailable")
    assert "would not load" not in rotation["detail"], "the record's reason stays private"


@pytest.mark.parametrize("stop", [
    {"cause": "write_failed", "condition": "storage_write_failed"},   # as the runner records it now
    {"cause": "write_failed", "condition": None},                     # as it was recorded before
])
def test_a_sweep_stopped_by_a_failed_write_is_its_own_condition_not_human_absent(paths, stop):
    beat_days(paths, "2026-11-01", "2026-12-01")
    open_run(paths, "sweep_2026-11_open", "2026-11-02", "interrupted")
    run_file = paths.run_dir("sweep_2026-11_open") / "run.json"
    from llmarchive.archive import read_json
    run = read_json(run_file)
    run["interruption"] = {**stop, "at": "2026-11-02T06:10:00Z", "detail": "trial log: OSError: [Errno 28] "
                           "No space left on device", "slot": "s01/A/0"}
    write_json(run_file, run)
    facts = lambda: gather(paths, protocols=PROTOCOLS)  # noqa: E731
    during = compute(paths, "2026-11-20", facts=facts(), jobs=("full_sweep",), now=NOW)
    assert ("full_sweep", "2026-11", P_OPEN) in during.pending, "a failed write can still be resumed this month"
    sweep = rows_by(compute(paths, "2026-12-01", facts=facts(), jobs=("full_sweep",), now=NOW), "full_sweep")
    own, rest = sweep[("2026-11", P_OPEN)], sweep[("2026-11", P_GUARD)]
    assert own["cause"] == "provider_outage" and own["detail"].startswith("storage_write_failed")
    assert "No space left" not in own["detail"], "the stop's detail stays in run.json"
    assert rest["cause"] == "provider_outage" and rest["detail"].startswith("storage_write_failed")
    assert "the sweep stopped there" in rest["detail"]


def _run_folder(paths, run_id: str, run_date: str, **fields) -> None:
    run = {"run_id": run_id, "run_date": run_date, "protocol_id": P_OPEN, "series": "commercial",
           "subject_model_id": "claude-sonnet-5", "job": "full_sweep", "status": "complete", "exploratory": False}
    run.update(fields)
    write_json(paths.run_dir(run_id) / "run.json", run)
    write_json(paths.run_dir(run_id) / "measurement.json", {"run_id": run_id})


@pytest.mark.parametrize("fields", [
    {"job": "manual"},                                                       # `llmarchive run` by hand
    {"exploratory": "not pre-registered: no stamped manifest lists it"},     # an exploratory run
    {"subject_model_id": "claude-sonnet-9"},                                 # a model nobody declared
], ids=["manual", "exploratory", "undeclared-model"])
def test_only_the_sweeps_own_run_is_the_months_sweep(paths, fields):
    beat_days(paths, "2026-11-01", "2026-12-01")
    _run_folder(paths, "not-the-sweep", "2026-11-05", **fields)
    row = rows_by(compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS[:1]), jobs=("full_sweep",),
                          now=NOW), "full_sweep")[("2026-11", P_OPEN)]
    assert row["status"] == "gap" and row["run_id"] is None
    _run_folder(paths, "sweep_2026-11", "2026-11-06")
    row = rows_by(compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS[:1]), jobs=("full_sweep",),
                          now=NOW), "full_sweep")[("2026-11", P_OPEN)]
    assert (row["status"], row["run_id"]) == ("ran", "sweep_2026-11")


def test_a_sweep_run_that_left_no_measurement_and_no_cause_is_an_unexplained_gap(paths):
    beat_days(paths, "2026-11-01", "2026-12-01")
    _run_folder(paths, "sweep_2026-11_open", "2026-11-02")
    # The guard protocol's sweep run says complete, but its measurement never appeared and nothing says why.
    write_json(paths.run_dir("sweep_2026-11_guard") / "run.json", {
        "run_id": "sweep_2026-11_guard", "run_date": "2026-11-02", "protocol_id": P_GUARD, "series": "commercial",
        "subject_model_id": "claude-sonnet-5", "job": "full_sweep", "status": "complete",
        "n_trials_recorded": 120, "n_trials_planned": 120})
    with pytest.raises(UnexplainedGap) as info:
        record_coverage(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    assert info.value.gaps == [("full_sweep", "2026-11", P_GUARD)]
    logged = {(r["period"], r["protocol_id"]): r["status"] for r in records.read(paths, "coverage")}
    assert logged == {("2026-11", P_OPEN): "ran"}, "every explained row is still written"


def test_a_subject_fingerprint_day_that_spent_money_but_left_nothing_is_an_unexplained_gap(paths):
    beat_days(paths, "2026-11-01", "2026-11-04")
    for day in ("2026-11-01", "2026-11-03"):
        fingerprint_record(paths, day)
    fingerprint_spend(paths, "2026-11-02")
    facts = lambda: gather(paths, protocols=PROTOCOLS[:1])  # noqa: E731
    with pytest.raises(UnexplainedGap) as info:
        record_coverage(paths, "2026-11-04", facts=facts(), jobs=("subject_fingerprint",), now=NOW)
    assert info.value.gaps == [("subject_fingerprint", "2026-11-02", None)]
    # a day nothing was spent on is the paid job nobody started, as before
    fingerprint_record(paths, "2026-11-02")
    assert record_coverage(paths, "2026-11-04", facts=facts(), jobs=("subject_fingerprint",), now=NOW).unexplained == []


# --------------------------------------------------------------------------
# issue 35: the month just ended is judged on the 1st, by one rule
# --------------------------------------------------------------------------

def _untended_november(paths) -> None:
    """The daily cycle ran every day through 2026-11-30; nobody started a paid job in November."""
    beat_days(paths, "2026-10-25", "2026-11-30")
    complete_run(paths, "oct", "2026-10-26")


def test_a_month_judged_on_the_next_day_is_over_its_last_day_and_its_monthly_rows_included(paths):
    _untended_november(paths)
    facts = lambda: gather(paths, protocols=PROTOCOLS[:1])  # noqa: E731
    jobs = ("full_sweep", "subject_fingerprint")
    on_the_last_day = compute(paths, "2026-11-30", facts=facts(), jobs=jobs, now=NOW)
    assert {("full_sweep", "2026-11", P_OPEN), ("subject_fingerprint", "2026-11-30", None)} \
        <= set(on_the_last_day.pending), "on its last day the month is still running"
    on_the_first = compute(paths, "2026-11-30", facts=facts(), jobs=jobs, now=NOW, today="2026-12-01")
    assert on_the_first.pending == [] and on_the_first.unexplained == []
    assert rows_by(on_the_first, "full_sweep")[("2026-11", P_OPEN)]["cause"] == "human_absent"
    assert rows_by(on_the_first, "subject_fingerprint")[("2026-11-30", None)]["cause"] == "human_absent"


def test_the_coverage_partition_of_the_month_just_ended_writes_on_the_1st_what_the_cli_writes(paths, tmp_path):
    import shutil

    from llmarchive.archive import ArchivePaths
    from llmarchive.schedule import record_month

    _untended_november(paths)
    twin = ArchivePaths(tmp_path / "twin")
    shutil.copytree(paths.home, twin.home)
    result, unexplained = record_month(paths, "2026-11", date(2026, 12, 1),
                                       facts=gather(paths, protocols=PROTOCOLS), now=NOW)
    assert unexplained is None and result.pending == [] and result.through == "2026-11-30"
    record_coverage(twin, "2026-12-01", facts=gather(twin, protocols=PROTOCOLS), now=NOW)   # what the CLI does

    def said(home):
        return sorted((r["period"], r["job"], str(r["protocol_id"]), r["status"], str(r["cause"]), r["detail"])
                      for r in records.read(home, "coverage"))
    assert said(paths) == said(twin)
    assert {r["period"] for r in records.read(paths, "coverage") if r["job"] == "full_sweep"} >= {"2026-11"}


def test_the_running_month_is_judged_through_today_and_a_month_not_started_is_refused(paths):
    from llmarchive.schedule import record_month
    from measure.errors import ArchiveError

    _untended_november(paths)
    result, _ = record_month(paths, "2026-11", date(2026, 11, 20), facts=gather(paths, protocols=PROTOCOLS),
                             now=NOW)
    assert result.through == "2026-11-20" and ("full_sweep", "2026-11", P_OPEN) in result.pending
    assert ("subject_fingerprint", "2026-11-20", None) in result.pending
    with pytest.raises(ArchiveError, match="2026-12 has not started yet"):
        record_month(paths, "2026-12", date(2026, 11, 30))
    with pytest.raises(ValueError, match="cannot be judged on 2026-11-29"):
        compute(paths, "2026-11-30", today="2026-11-29")
