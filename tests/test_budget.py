"""The budget: the file, the ledger, the ladder, the pools, and the CLI gate."""
import json
import re
from pathlib import Path

import pytest

import llmarchive
from llmarchive import budget as B
from llmarchive.archive import ArchivePaths, cause_for, dates, record_logs as records, skip_condition
from llmarchive.cli import main
from measure.schema import GAP_CAUSES
from panels.build import all_protocol_ids
from panels.lanes import planned_lane
from tests.protocol_fixtures import header_for, make_protocol

# general pool = 110 - 5 - 5 = 100, so one euro is one per cent of it
BUDGET = B.Budget(110.0, 5.0, 5.0, {"scenario": 0.001, "fingerprint": 0.0001})


@pytest.fixture
def paths(paths):
    """The shared empty archive, plus this module's budget."""
    B.write_budget(paths, BUDGET)
    return paths


def spend(paths, euros: float, job: str = "manual", run_id: str = "filler") -> None:
    """Ledger entries worth ``euros`` (one euro each) charged by ``job``."""
    category, pool = B.JOBS[job]
    meter = B.SpendMeter(paths, B.Authorization(job, category, pool, 1.0), run_id, "anthropic", "m")
    start = len(meter.keys)
    for i in range(int(euros)):
        meter.charge([(f"call-{start + i}", {"answered": True})])


def v0_headers() -> list[dict]:
    out = []
    for pid in all_protocol_ids():
        if pid.endswith("__v0"):
            lane, twin = planned_lane(pid)
            out.append(header_for(pid, lane, twin))
    return out


# -- budget.json ---------------------------------------------------------------------

def test_the_budget_file_round_trips_and_computes_the_general_pool(paths):
    assert B.load_budget(paths) == BUDGET
    assert BUDGET.general_pool_eur == 100.0


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("monthly_ceiling_eur"), "'monthly_ceiling_eur' must be a number"),
    (lambda d: d.update(bridge_reserve_eur=200), "nothing is left for the sweep"),
    (lambda d: d["rates_eur_per_call"].pop("fingerprint"), "rates_eur_per_call: 'fingerprint'"),
    (lambda d: d.update(ladder=[{"at_pct": 80, "max_protocols": 4, "lanes": None},
                                {"at_pct": 60, "max_protocols": 6, "lanes": None}]), "increasing at_pct"),
    (lambda d: d.update(ceiling=3), "unknown field"),
    (lambda d: d.update(heartbeat_reserve_eur=-1), "'heartbeat_reserve_eur' must be a number"),
])
def test_a_bad_budget_file_is_refused_naming_the_field(paths, edit, message):
    data = json.loads(paths.budget_file.read_text())
    edit(data)
    paths.budget_file.write_text(json.dumps(data))
    with pytest.raises(B.BudgetError, match=message) as err:
        B.load_budget(paths)
    assert "budget.json" in str(err.value)


# -- the ladder ------------------------------------------------------------------------

@pytest.mark.parametrize("euros, allowed", [(0, 12), (59, 12), (60, 6), (79, 6), (80, 4), (94, 4), (95, 0)])
def test_the_ladder_cuts_the_sweep_at_60_80_and_95_percent(paths, euros, allowed):
    spend(paths, euros)
    plan = B.allowed_protocols(paths, v0_headers(), "sweep", month=dates.utc_month(), date="2026-11-02")
    assert len(plan.allowed) == allowed
    assert len(plan.skipped) == 12 - allowed
    skips = records.read(paths, "skip")
    assert len(skips) == 12 - allowed
    assert all(s["cause"] == "budget_halted" and s["job"] == "full_sweep" for s in skips)


def test_at_60_percent_the_six_kept_are_both_open_protocols_their_twins_and_one_of_each_other_type(paths):
    spend(paths, 60)
    plan = B.allowed_protocols(paths, v0_headers(), record_skips=False)
    assert sorted(plan.allowed) == sorted([
        "base_rate_neglect__wording__v0", "risky_choice_framing__wording__v0",
        "base_rate_neglect__anchoring__v0", "risky_choice_framing__anchoring__v0",
        "base_rate_neglect__order__v0", "base_rate_neglect__default__v0"])


def test_at_80_percent_only_four_guard_protocols_run_one_per_type(paths):
    spend(paths, 80)
    plan = B.allowed_protocols(paths, v0_headers(), record_skips=False)
    lanes = {h["protocol_id"]: h["lane"] for h in v0_headers()}
    assert len(plan.allowed) == 4 and {lanes[p] for p in plan.allowed} == {"guard"}
    assert sorted(p.split("__")[1] for p in plan.allowed) == ["anchoring", "default", "order", "wording"]


def test_the_ladder_never_runs_a_protocol_the_general_pool_cannot_pay_for_in_full(paths):
    budget = B.Budget(110.0, 5.0, 5.0, {"scenario": 0.05, "fingerprint": 0.0001})  # 6 € per protocol
    B.write_budget(paths, budget)
    spend(paths, 40)  # 60 € left: room for 10 of the 12, n is never reduced to squeeze in more
    plan = B.allowed_protocols(paths, v0_headers(), record_skips=False)
    assert len(plan.allowed) == 10
    assert all("costs about €6.00" in reason for _, reason in plan.skipped)


def test_the_state_reports_spend_per_pool(paths):
    spend(paths, 30)
    spend(paths, 3, job="bridge", run_id="bridge-run")
    state = B.ladder_state(paths, BUDGET)
    assert state.spent_eur == {"general": 30.0, "bridge": 3.0, "heartbeat": 0.0}
    assert state.used_pct == 30.0 and state.rung is None
    assert state.bridge_left_eur == 2.0


# -- the pools --------------------------------------------------------------------------

def test_a_scenario_run_never_reaches_into_the_reserves(paths):
    spend(paths, 50)
    header = header_for("risky_choice_framing__wording__v0", "open", "risky_choice_framing__anchoring__v0")
    # 50 € left in the general pool: 60 000 calls at 0.001 € do not fit, although the reserves hold 10 €
    with pytest.raises(B.BudgetHalted, match="left in the general pool"):
        B.authorize_run(paths, BUDGET, header, "manual", 60_000)
    assert records.read(paths, "skip")[-1]["cause"] == "budget_halted"
    auth = B.authorize_run(paths, BUDGET, header, "manual", 120)
    assert (auth.pool, auth.category, auth.rate_eur_per_call) == ("general", "scenario", 0.001)


def test_a_budget_refusal_records_its_condition_and_takes_its_cause_from_skips(paths):
    """Both ways the budget refuses work — the month's plan and one run's permission — write the skip through
    llmarchive.archive.skips, so the skip names the condition coverage reads and its cause is the mapping's."""
    spend(paths, 96)  # past the 95 % rung: no scenario protocol may run (the spend lands in this month)
    today = dates.utc_today()
    B.allowed_protocols(paths, v0_headers(), month=dates.utc_month(), date=today)
    header = header_for("risky_choice_framing__wording__v0", "open", "risky_choice_framing__anchoring__v0")
    with pytest.raises(B.BudgetHalted):
        B.authorize_run(paths, BUDGET, header, "manual", 120, date=today)
    written = records.read(paths, "skip")
    assert len(written) == 13
    assert {(s["condition"], s["cause"]) for s in written} == {("budget_refused", cause_for(["budget_refused"]))}
    assert {skip_condition(s) for s in written} == {"budget_refused"}


def test_no_library_module_writes_a_skip_or_its_cause_by_hand():
    """llmarchive.archive.skips says a cause is never written by hand: only it appends a skip record."""
    root = Path(llmarchive.__file__).parent.parent
    appends_a_skip = re.compile(r"""append(?:_many)?\(\s*\w+\s*,\s*["']skip["']""")
    literal_cause = re.compile(r"""["']cause["']\s*:\s*["'](?:%s)["']""" % "|".join(GAP_CAUSES))
    sources = [*(root / "llmarchive").rglob("*.py"), *(root / "assets").rglob("*.py")]
    by_hand = sorted(str(path.relative_to(root)) for path in sources
                     if path != root / "llmarchive" / "archive" / "skips.py"
                     and (appends_a_skip.search(path.read_text()) or literal_cause.search(path.read_text())))
    assert by_hand == [], "record skips with llmarchive.archive.skips.record_skip"


def test_the_bridge_draws_only_on_its_reserve(paths):
    spend(paths, 99)  # the general pool is exhausted: the sweep is cut to nothing
    header = header_for("risky_choice_framing__wording__v0", "open")
    with pytest.raises(B.BudgetHalted):
        B.authorize_run(paths, BUDGET, header, "manual", 120)
    auth = B.authorize_run(paths, BUDGET, header, "bridge", 120)
    assert auth.pool == "bridge"
    spend(paths, 4, job="bridge", run_id="bridge-run")
    assert B.ladder_state(paths, BUDGET).used_pct == 99.0, "bridge spend is not general spend"
    with pytest.raises(B.BudgetHalted, match="left in the bridge reserve"):
        B.authorize_run(paths, BUDGET, header, "bridge", 1500)  # 1.5 € > 1 € left in the reserve


def test_subject_fingerprint_is_never_gated_and_falls_back_on_the_heartbeat_reserve(paths):
    spend(paths, 99)
    auth = B.authorize_run(paths, BUDGET, {"protocol_id": "subject_fingerprint"}, "subject_fingerprint", 24)
    assert auth.category == "fingerprint" and auth.rate_eur_per_call == 0.0001
    meter = B.SpendMeter(paths, B.Authorization("subject_fingerprint", "fingerprint", "general", 0.6),
                         "fp-1", "anthropic", "m", budget=BUDGET)
    pools = [meter.charge([(f"item-{i}", {"answered": True})])[0]["pool"] for i in range(3)]
    assert pools == ["general", "heartbeat", "heartbeat"]


def test_a_call_is_charged_once_even_across_meters_and_only_when_answered(paths):
    auth = B.Authorization("manual", "scenario", "general", 0.5)
    first = B.SpendMeter(paths, auth, "run-x", "anthropic", "m")
    second = B.SpendMeter(paths, auth, "run-x", "anthropic", "m")   # e.g. another process
    assert first.charge([("s01/A/0", {"answered": True})]) != []
    assert second.charge([("s01/A/0", {"answered": True})]) == []
    assert second.charge([("s01/B/0", {"answered": False})])[0]["cost_eur"] == 0.0
    assert first.charge([("s01/B/0", {"answered": True})]) == []
    assert first.run_cost() == 0.5 and len(B.ledger(paths)) == 2


# -- the CLI gate ---------------------------------------------------------------------------

def test_run_refuses_a_paid_subject_without_a_budget(archive_home, built, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-x")
    code = main(["run", "risky_choice_framing__wording__v0", "--subject", "anthropic", "--model", "claude-x",
                 "--base-url", "http://127.0.0.1:9"])
    assert code == 2 and "budget.json does not exist" in capsys.readouterr().err


def test_run_stops_before_any_call_when_the_ladder_says_no(paths, built, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-x")
    spend(paths, 96)                     # in this month: the month the run's date falls in
    today = dates.utc_today()
    code = main(["run", "sunk_cost_fallacy__order__v0", "--subject", "anthropic", "--model", "claude-x",
                 "--base-url", "http://127.0.0.1:9", "--run-date", today])
    assert code == 1
    assert "budget_halted" in capsys.readouterr().err
    skip = records.read(paths, "skip")[-1]
    assert (skip["protocol_id"], skip["cause"], skip["date"]) == ("sunk_cost_fallacy__order__v0", "budget_halted",
                                                                  today)
    assert not paths.experiments.exists() or not any(paths.experiments.iterdir())


def test_budget_cli_init_show_and_plan(archive_home, monkeypatch, capsys):
    from tests.instrument_helpers import admitted_archive

    admitted_archive(monkeypatch)     # the plan lists admitted protocols only: a candidate is never run
    assert main(["budget", "init", "--ceiling", "20", "--bridge-reserve", "6.5", "--heartbeat-reserve", "1",
                 "--scenario-rate", "0.0094", "--fingerprint-rate", "0.0011"]) == 0
    assert main(["budget", "init", "--ceiling", "20", "--bridge-reserve", "6.5", "--heartbeat-reserve", "1",
                 "--scenario-rate", "0.0094", "--fingerprint-rate", "0.0011"]) == 2
    capsys.readouterr()
    assert main(["budget", "show", "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["general_pool_eur"] == 12.5 and state["rung"] is None
    assert main(["budget", "plan", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert len(plan["allowed"]) == 11  # 12.5 € pays for eleven full v0 protocols at 1.128 € each


def test_the_fixture_protocol_header_is_accepted_by_the_planner(paths):
    protocol = make_protocol("fixture__wording__v0")
    plan = B.allowed_protocols(paths, [protocol], record_skips=False)
    assert plan.allowed == ["fixture__wording__v0"]


# -- charges from usage, reservations at the worst case ------------------------------------------

PRICED = B.Budget(110.0, 5.0, 5.0, {"scenario": 0.001, "fingerprint": 0.0001},
                  prices_eur_per_mtok={"input": 2.0, "output": 10.0})


def test_prices_round_trip_and_a_file_without_them_stays_readable_at_flat_rates(paths):
    B.write_budget(paths, PRICED)
    assert B.load_budget(paths) == PRICED and B.load_budget(paths).priced
    B.write_budget(paths, BUDGET)
    assert "prices_eur_per_mtok" not in json.loads(paths.budget_file.read_text())
    assert B.load_budget(paths).priced is False


@pytest.mark.parametrize("prices", [{"input": 2.0}, {"input": 2.0, "output": -1}, [2.0, 10.0],
                                    {"input": 2.0, "output": 10.0, "cached": 1.0}])
def test_bad_token_prices_are_refused_naming_the_field(paths, prices):
    data = json.loads(paths.budget_file.read_text())
    data["prices_eur_per_mtok"] = prices
    paths.budget_file.write_text(json.dumps(data))
    with pytest.raises(B.BudgetError, match="prices_eur_per_mtok"):
        B.load_budget(paths)


def test_an_unsettled_reservation_counts_at_its_worst_case_until_a_charge_settles_it(paths):
    B.write_budget(paths, PRICED)
    meter = B.SpendMeter(paths, B.Authorization("manual", "scenario", "general", 0.001), "run-r", "anthropic", "m",
                         PRICED)
    reservation = meter.reserve("s01/A/0", "s1", 1, prompt_bytes=968, max_tokens=1000)
    worst = ((968 + B.PROMPT_FRAMING_TOKENS) * 2.0 + 1000 * 10.0) / 1e6
    assert reservation["worst_case_eur"] == pytest.approx(worst)
    state = B.ladder_state(paths, PRICED)
    assert state.charged_eur["general"] == 0 and state.worst_case_eur["general"] == pytest.approx(worst)
    assert state.spent_eur["general"] == pytest.approx(worst), "the ladder counts what may have been billed"

    [charge] = meter.charge([("s01/A/0", {"answered": True, "input_tokens": 900, "output_tokens": 40,
                                         "attempts": 1, "session": "s1"})])
    assert charge["settles"] == [reservation["reservation_id"]] and charge["basis"] == "usage"
    assert charge["cost_eur"] == pytest.approx((900 * 2.0 + 40 * 10.0) / 1e6)
    state = B.ladder_state(paths, PRICED)
    assert state.worst_case_eur["general"] == 0 and state.spent_eur["general"] == pytest.approx(charge["cost_eur"])


def test_an_attempt_of_unknown_fate_is_charged_at_its_worst_case_and_an_error_answer_at_nothing(paths):
    meter = B.SpendMeter(paths, B.Authorization("manual", "scenario", "general", 0.001), "run-u", "anthropic", "m",
                         PRICED)
    for attempt in (1, 2, 3):
        meter.reserve("s02/B/0", "s1", attempt, prompt_bytes=100, max_tokens=50)
    per_attempt = ((100 + B.PROMPT_FRAMING_TOKENS) * 2.0 + 50 * 10.0) / 1e6
    # attempt 1 timed out (unknown), attempt 2 was a 503 (not billed), attempt 3 was answered
    [charge] = meter.charge([("s02/B/0", {"answered": True, "input_tokens": 120, "output_tokens": 7,
                                         "attempts": 3, "unknown_attempts": 1, "session": "s1",
                                         "prompt_bytes": 100, "max_tokens": 50})])
    assert charge["cost_eur"] == pytest.approx((120 * 2.0 + 7 * 10.0) / 1e6 + per_attempt)
    assert B.open_reservations(B.ledger_entries(paths)) == []
    settled = meter.charge_unanswered("s03/C/0", "s1", {"attempts": 2, "unknown_attempts": 0,
                                                         "prompt_bytes": 100, "max_tokens": 50})
    assert settled["cost_eur"] == 0.0 and settled["trial"] is False
    assert meter.charge_unanswered("s03/C/0", "s1", {"attempts": 2}) is None, "settled once"


def test_a_reservation_past_the_pools_cap_is_refused_before_anything_is_sent(paths):
    tight = B.Budget(10.001, 5.0, 5.0, {"scenario": 0.0001, "fingerprint": 0.0001},
                     prices_eur_per_mtok={"input": 2.0, "output": 10.0})         # general pool: €0.001
    meter = B.SpendMeter(paths, B.Authorization("sweep", "scenario", "general", 0.0001), "run-t", "anthropic", "m",
                         tight)
    meter.reserve("s01/A/0", "s1", 1, prompt_bytes=10, max_tokens=50)           # €0.000584
    with pytest.raises(B.BudgetHalted, match="stopping before it is sent"):
        meter.reserve("s01/B/0", "s1", 1, prompt_bytes=10, max_tokens=50)
    assert len(B.ledger_entries(paths)) == 1


def test_budget_show_splits_charged_worst_case_and_the_reserves(paths, capsys):
    B.write_budget(paths, PRICED)
    meter = B.SpendMeter(paths, B.Authorization("manual", "scenario", "general", 0.001), "run-s", "anthropic", "m",
                         PRICED)
    meter.reserve("s01/A/0", "s1", 1, prompt_bytes=968, max_tokens=1000)          # €0.012 worst case, open
    meter.charge([("s01/B/0", {"answered": True, "input_tokens": 1000, "output_tokens": 100})])  # €0.003
    assert main(["budget", "show"]) == 0
    out = capsys.readouterr().out
    assert "charging: reported usage" in out
    assert "general pool: €0.0030 charged + €0.0120 worst case" in out and "of €100.00" in out
    assert ("bridge reserve: €0.0000 charged + €0.0000 worst case (calls of unknown fate) = €0.0000 of €5.00"
            in out)
    # the programme's level is a cap, shown beside what is admitted (an owner read "12 protocols" as the plan)
    assert "programme: level 0, at most 12 protocols, monthly" in out
    assert "this month's sweep: the 0 admitted protocol(s) of series v0" in out
    assert main(["budget", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["charged_eur"]["general"] == pytest.approx(0.003)
    assert shown["worst_case_eur"]["general"] == pytest.approx(0.012)
    assert shown["reserves_eur"] == {"bridge": 5.0, "heartbeat": 5.0} and shown["charging"] == "usage"


def test_budget_init_takes_token_prices(archive_home, capsys):
    assert main(["budget", "init", "--ceiling", "20", "--bridge-reserve", "6.5", "--heartbeat-reserve", "1",
                 "--scenario-rate", "0.0094", "--fingerprint-rate", "0.0011", "--input-price", "2.8",
                 "--output-price", "14"]) == 0
    paths = ArchivePaths.from_env()
    assert B.load_budget(paths).prices_eur_per_mtok == {"input": 2.8, "output": 14.0}
    assert main(["budget", "init", "--force", "--ceiling", "20", "--bridge-reserve", "6.5", "--heartbeat-reserve",
                 "1", "--scenario-rate", "0.0094", "--fingerprint-rate", "0.0011", "--input-price", "2.8"]) == 2
    assert "both --input-price and --output-price" in capsys.readouterr().err


def test_the_ladder_judges_the_month_of_the_date_it_is_given(paths, time_machine):
    """A refusal dated 2026-11-02 is about November's pool, whatever month the clock is in (here December)."""
    tight = B.Budget(10.0, 6.5, 1.0, {"scenario": 0.01, "fingerprint": 0.001}, ladder=(B.Rung(99.9, 0, ()),))
    B.write_budget(paths, tight)
    time_machine.move_to("2026-11-20T12:00:00Z")
    spend(paths, 2)                              # November: 0.50 € left of a 2.50 € general pool
    time_machine.move_to("2026-12-02T12:00:00Z")
    header = header_for("risky_choice_framing__wording__v0", "open", "risky_choice_framing__anchoring__v0")
    assert B.ladder_state(paths, tight, date="2026-11-02").month == "2026-11"
    with pytest.raises(B.BudgetHalted, match=r"€0\.50 left in the general pool for 2026-11$"):
        B.authorize_run(paths, tight, header, "manual", 120, date="2026-11-02")
    plan = B.allowed_protocols(paths, v0_headers(), "sweep", date="2026-11-02", budget=tight)
    assert plan.state.month == "2026-11" and plan.allowed == []
    skips = records.read(paths, "skip")
    assert {s["month"] for s in skips} == {"2026-11"} and {s["pool"] for s in skips} == {"general"}
    assert all("for 2026-12" not in s["reason"] for s in skips)
    # December has spent nothing: the same run dated in December is allowed.
    assert B.authorize_run(paths, tight, header, "manual", 120, date="2026-12-02").pool == "general"


def test_money_is_written_one_way_for_a_person():
    from llmarchive.cli.status import _budget_lines
    assert B.eur(12.3) == "€12.30" and B.eur(0.000123456, 5) == "€0.00012"
    lines = _budget_lines({"month": "2026-11", "spent_eur": {"general": 1.5}, "general_pool_eur": 10.0, "used_pct": 15.0,
                           "rung": None, "bridge_left_eur": 2.0, "heartbeat_left_eur": 0.25})
    assert lines == ["budget       2026-11: €1.50 of €10.00 general pool used (15.0 %); rung: no cut",
                     "             bridge reserve left €2.00, heartbeat €0.25"]
