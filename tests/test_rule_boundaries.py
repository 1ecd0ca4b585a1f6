"""The library's rules held at their exact boundaries, as the estimator's thresholds are (tests/test_thresholds.py).

Each rule is read through its public function on real components (the
ledger and the meter, the record logs, the lease check, the manifests and
their OpenTimestamps proofs), with the value *at* the boundary and the
nearest achievable value on each side:

* **the pools** — a run whose whole cost is exactly what its pool has left
  runs, one call more does not; which job may reach which pool (the general
  pool for the sweep and a manual run, the bridge reserve for a bridge
  alone, the heartbeat reserve for the subject fingerprint alone, after the
  general pool), each reservation filling its pool to the cent and the next
  one refused; the programme cut (method §9's order) only on 120 measured
  calls and only when it costs more than the pool, the quarterly sweep's months;
* **the day verdict and the latch** — every fingerprint status against
  every state of the alarm log (none, the same day, earlier and open,
  acknowledged before, on or after the day, a later alarm), with the
  acknowledgement's day itself the boundary;
* **the rotation** — the day a cycle starts and ends (the day before the
  epoch included), and which earlier result is the accepted baseline (a
  result of the same day never is);
* **the lease** — the dead-man alert at exactly 36 hours, each run-clock
  state at exactly its number of days, the degraded source at exactly 7 days;
* **the pre-registration guard** — each hash of the triple, the proof, and
  a second manifest that lists the protocol correctly after one that does not.

The ladder's rungs (60, 80, 95 % at one euro either side) are pinned in
tests/test_budget.py and not repeated here.  A comparison flipped in any of
these rules (``<`` for ``<=``, a boundary moved, a pool or a status added to
the wrong side) fails at least one test below; /tmp/team/flips.py flips
each in a private copy to show which.
"""
import hashlib
from datetime import datetime, timedelta, timezone
from typing import Optional

import pytest
from opentimestamps.core.notary import PendingAttestation
from opentimestamps.core.op import OpSHA256
from opentimestamps.core.serialize import StreamSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

from llmarchive import budget as B
from llmarchive.archive import dates, record_logs as records, write_json
from llmarchive.instrument import ALARM_VERDICTS, CORE_CHANGE, day_verdict, latched_alarm, raise_alarm, suspect_value
from llmarchive.instrument.acknowledge import acknowledge
from llmarchive.instrument.rotation import ROTATION_EPOCH, VERDICTS, previous_result, scheduled_protocol
from llmarchive.protocols import prereg
from llmarchive.schedule import paid_run
from llmarchive.schedule.lease import check as lease_check
from tests.protocol_fixtures import header_for

CLOCK = "2026-11-15T12:00:00Z"   # the ledger's month is the clock's: these tests hold it mid-month


# ==========================================================================
# the pools
# ==========================================================================

# general pool = 110 - 5 - 5 = 100, and €0.25 a call is exact in binary.  Its one rung is never reached (the pool
# cannot be more than 100 % used), so a refusal here is the pool's alone, never the ladder's.
POOLS = B.Budget(110.0, 5.0, 5.0, {"scenario": 0.25, "fingerprint": 1.0}, ladder=(B.Rung(101, 0, ()),))
HEADER = header_for("risky_choice_framing__wording__v0", "open", "risky_choice_framing__anchoring__v0")


def spent(paths, euros: int, job: str) -> None:
    """``euros`` whole euros charged to ``job``'s pool this month (one euro a call, flat)."""
    category, pool = B.JOBS[job]
    meter = B.SpendMeter(paths, B.Authorization(job, category, pool, 1.0), f"filler-{job}", "anthropic", "m")
    meter.charge([(f"call-{i}", {"answered": True}) for i in range(euros)])


@pytest.mark.time_machine(CLOCK)
@pytest.mark.parametrize("job, general, bridge, calls, runs", [
    ("manual", 70, 0, 120, True),          # 120 × €0.25 = €30 = exactly what the general pool has left
    ("manual", 70, 0, 121, False),         # one call more
    ("full_sweep", 70, 0, 120, True),
    ("full_sweep", 70, 0, 121, False),
    ("manual", 70, 5, 120, True),          # the bridge's spend is not the general pool's
    ("manual", 100, 0, 1, False),          # the general pool is spent: the heartbeat reserve's €5 are not its
    ("bridge", 100, 0, 20, True),          # 20 × €0.25 = €5 = the whole bridge reserve, the general pool spent
    ("bridge", 100, 0, 21, False),
    ("bridge", 0, 4, 4, True),             # €1 left in the reserve, exactly four calls
    ("bridge", 0, 4, 5, False),            # … and the general pool's €100 are not the bridge's
], ids=["manual-exact", "manual-one-over", "sweep-exact", "sweep-one-over", "manual-beside-bridge-spend",
        "manual-never-heartbeat", "bridge-exact", "bridge-one-over", "bridge-rest-exact", "bridge-never-general"])
def test_a_run_whose_whole_cost_is_what_its_pool_has_left_runs_and_one_call_more_does_not(
        paths, job, general, bridge, calls, runs):
    B.write_budget(paths, POOLS)
    if general:
        spent(paths, general, "manual")
    if bridge:
        spent(paths, bridge, "bridge")
    today = dates.utc_today()
    if runs:
        auth = B.authorize_run(paths, POOLS, HEADER, job, calls, date=today)
        assert (auth.pool, auth.rate_eur_per_call) == (B.JOBS[job][1], 0.25)
        assert records.read(paths, "skip") == []
    else:
        pool = "bridge reserve" if job == "bridge" else "general pool"
        with pytest.raises(B.BudgetHalted, match=f"left in the {pool} for "):
            B.authorize_run(paths, POOLS, HEADER, job, calls, date=today)
        assert [s["cause"] for s in records.read(paths, "skip")] == ["budget_halted"]


@pytest.mark.time_machine(CLOCK)
@pytest.mark.parametrize("job, general, bridge, n, runs", [
    ("full_sweep", 70, 0, 30, True), ("full_sweep", 70, 0, 31, False),     # 4 × n calls: €30, then €31
    ("bridge", 100, 0, 5, True), ("bridge", 100, 0, 6, False),             # €5, then €6 of a €5 reserve
    ("bridge", 0, 1, 4, True), ("bridge", 0, 1, 5, False),
], ids=["sweep-exact", "sweep-one-over", "bridge-exact", "bridge-one-over", "bridge-rest-exact",
        "bridge-rest-one-over"])
def test_the_months_plan_admits_a_protocol_that_exactly_fits_its_pool_and_not_one_euro_more(
        paths, job, general, bridge, n, runs):
    B.write_budget(paths, POOLS)
    if general:
        spent(paths, general, "manual")
    if bridge:
        spent(paths, bridge, "bridge")
    header = dict(HEADER, n=n)
    plan = B.allowed_protocols(paths, [header], job, date=dates.utc_today(), record_skips=False)
    assert plan.allowed == ([header["protocol_id"]] if runs else [])


def _reserve_until_refused(paths, job: str, limit: int = 12) -> list[str]:
    """The pool of each one-euro reservation ``job``'s meter makes, then ``"refused"`` (before anything is sent)."""
    category, pool = B.JOBS[job]
    meter = B.SpendMeter(paths, B.Authorization(job, category, pool, 1.0), f"run-{job}", "anthropic", "m",
                         budget=POOLS)
    pools = []
    for i in range(limit):
        try:
            pools.append(meter.reserve(f"s{i:02d}/A/0", "s1", 1, prompt_bytes=10, max_tokens=8)["pool"])
        except B.BudgetHalted:
            return pools + ["refused"]
    return pools


@pytest.mark.time_machine(CLOCK)
@pytest.mark.parametrize("job, general, bridge, heartbeat, expected", [
    ("manual", 98, 0, 0, ["general", "general", "refused"]),            # 99, exactly 100, then no further
    ("full_sweep", 98, 0, 0, ["general", "general", "refused"]),
    ("manual", 100, 0, 0, ["refused"]),                                 # never the heartbeat reserve
    ("full_sweep", 100, 0, 0, ["refused"]),
    ("bridge", 0, 3, 0, ["bridge", "bridge", "refused"]),               # 4, exactly 5, then no further
    ("bridge", 0, 5, 0, ["refused"]),                                   # never the general pool's €100
    ("subject_fingerprint", 98, 0, 0, ["general", "general"] + ["heartbeat"] * 5 + ["refused"]),
    ("subject_fingerprint", 100, 0, 4, ["heartbeat", "refused"]),       # the reserve's last euro, then no further
    ("subject_fingerprint", 100, 0, 5, ["refused"]),                    # both spent: the ceiling is hard for it too
], ids=["manual", "sweep", "manual-general-spent", "sweep-general-spent", "bridge", "bridge-spent",
        "fingerprint-general-then-heartbeat", "fingerprint-last-heartbeat-euro", "fingerprint-both-spent"])
def test_each_job_reserves_from_its_own_pools_to_the_last_euro_and_is_refused_one_call_later(
        paths, job, general, bridge, heartbeat, expected):
    if general:
        spent(paths, general, "manual")
    if bridge:
        spent(paths, bridge, "bridge")
    if heartbeat:
        # the general pool is full, so the fingerprint's own charges land in the heartbeat reserve
        meter = B.SpendMeter(paths, B.Authorization("subject_fingerprint", "fingerprint", "general", 1.0),
                             "filler-heartbeat", "anthropic", "m", budget=POOLS)
        assert {e["pool"] for e in meter.charge([(f"hb-{i}", {"answered": True}) for i in range(heartbeat)])} == {
            "heartbeat"}
    assert _reserve_until_refused(paths, job) == expected


@pytest.mark.time_machine(CLOCK)
def test_the_subject_fingerprint_is_charged_to_the_general_pool_up_to_its_last_euro_then_to_the_heartbeat(paths):
    spent(paths, 98, "manual")
    meter = B.SpendMeter(paths, B.Authorization("subject_fingerprint", "fingerprint", "general", 1.0),
                         "fp", "anthropic", "m", budget=POOLS)
    pools = [meter.charge([(f"item-{i}", {"answered": True})])[0]["pool"] for i in range(3)]
    assert pools == ["general", "general", "heartbeat"], "€99, exactly €100, then the reserve"
    state = B.ladder_state(paths, POOLS)
    assert (state.spent_eur["general"], state.spent_eur["heartbeat"]) == (100.0, 1.0)


def test_only_the_subject_fingerprint_job_is_paid_from_the_heartbeat_reserve():
    """The job table: which pool each paid job is charged to first, and which job a paid run may be."""
    assert B.JOBS == {"full_sweep": ("scenario", "general"), "subject_fingerprint": ("fingerprint", "general"),
                      "manual": ("scenario", "general"), "bridge": ("scenario", "bridge")}
    assert paid_run.PAID_RUN_POOLS == {"manual": "general", "full_sweep": "general", "bridge": "bridge"}
    for job in ("subject_fingerprint", "runtime_fingerprint", "guard_margin_rotation"):
        with pytest.raises(paid_run.PaidRunError):
            paid_run.check_job(job)
    with pytest.raises(paid_run.PaidRunError, match="bridge is refused here"):
        paid_run.check_job("bridge")


# --------------------------------------------------------------------------
# the degradation (method §9's order of cuts): decided on at least 120 measured calls, and only above the pool
# --------------------------------------------------------------------------

def measured(paths, budget, calls: int) -> Optional[float]:
    """``calls`` answered, usage-charged scenario calls this month; return the mean euros a call as measured."""
    meter = B.SpendMeter(paths, B.Authorization("full_sweep", "scenario", "general", 0.001), "measured",
                         "anthropic", "m", budget)
    meter.charge([(f"c{i}", {"answered": True, "input_tokens": 10_000, "output_tokens": 0}) for i in range(calls)])
    rate = B.measured_rate(paths, "scenario", dates.utc_today()[:7])
    return rate[0] if rate else None


@pytest.mark.time_machine(CLOCK)
@pytest.mark.parametrize("calls, pool_over_projection, cut", [
    (B.MIN_MEASURED_CALLS - 1, -1.0, False),     # too few calls measured: nothing is decided, however dear
    (B.MIN_MEASURED_CALLS, -0.01, True),         # enough, and the programme costs a cent more than the pool
    (B.MIN_MEASURED_CALLS, 0.0, False),          # the programme costs exactly the pool: no cut
    (B.MIN_MEASURED_CALLS, 0.01, False),
], ids=["119-calls", "a-cent-over", "exactly-the-pool", "a-cent-under"])
def test_the_programme_is_cut_only_on_120_measured_calls_and_only_when_it_costs_more_than_the_pool(
        paths, calls, pool_over_projection, cut):
    priced = B.Budget(1000.0, 0.0, 0.0, {"scenario": 0.001, "fingerprint": 0.001},
                      prices_eur_per_mtok={"input": 1.0, "output": 1.0})
    rate = measured(paths, priced, calls)
    scenario_eur = rate if rate is not None else 0.01
    projected = B.projected_month_eur(B.LEVELS[0], 120, scenario_eur, priced.rate("fingerprint"))
    budget = B.Budget(projected + pool_over_projection, 0.0, 0.0, priced.rates_eur_per_call,
                      prices_eur_per_mtok=priced.prices_eur_per_mtok)
    assert budget.general_pool_eur == projected + pool_over_projection
    cuts = B.review_degradation(paths, budget, dates.utc_today(), 120)
    assert [c["to_level"] for c in cuts][:1] == ([1] if cut else [])


@pytest.mark.parametrize("level, due_months", [
    (0, range(1, 13)), (1, range(1, 13)), (2, range(1, 13)), (3, (1, 4, 7, 10)), (4, ()),
], ids=["12-monthly", "8-monthly", "6-monthly", "6-quarterly", "tier-drop"])
def test_a_quarterly_sweep_is_due_in_each_quarters_first_month_only(level, due_months):
    due = [m for m in range(1, 13) if B.sweep_due(B.LEVELS[level], f"2027-{m:02d}")]
    assert due == list(due_months)


# ==========================================================================
# the instrument's day verdict and the latch
# ==========================================================================

DAY = "2026-11-10"
BEFORE, EARLIER, AFTER = "2026-11-08", "2026-11-09", "2026-11-11"


def fingerprint(paths, day: str, status: str) -> None:
    """A ``runtime_fingerprint`` record of ``day`` with ``status`` (the verdict reads the log, nothing else)."""
    records.append(paths, "runtime_fingerprint", {
        "date": day, "status": status, "digest": "d" * 64, "expected_digest": "d" * 64, "model_sha256": "m" * 64,
        "template_sha256": "t" * 64, "llama_cpp_version": "0.3.36", "runner_arch": "x86_64-linux",
        "n_threads": 1, "n_batch": 512, "seed": 0})


def alarm(paths, day: str) -> None:
    raise_alarm(paths, day, "guard_rotation", f"a planted alarm of {day}", protocol_id="g")


def ack(paths, day: str) -> None:
    assert acknowledge(paths, "reviewed: the planted alarm", "Ada", date=day).record is not None


# Each alarm history: the steps in the order they happen, whether DAY is then clear of every alarm, and whether an
# alarm of an earlier day still stood on DAY (its verdict then names the latch, not only the day's own alarm).
HISTORIES = {
    "no-alarm": ([], True, False),
    "alarm-that-day": ([(alarm, DAY)], False, False),
    "alarm-before-open": ([(alarm, EARLIER)], False, True),
    "alarm-before-acked-before": ([(alarm, BEFORE), (ack, EARLIER)], True, False),
    "alarm-before-acked-that-day": ([(alarm, EARLIER), (ack, DAY)], True, False),   # the acknowledgement's day is clear
    "alarm-that-day-acked-that-day": ([(alarm, DAY), (ack, DAY)], True, False),
    "alarm-before-acked-after": ([(alarm, EARLIER), (ack, AFTER)], False, True),   # on DAY it was still latched
    "alarm-after": ([(alarm, AFTER)], True, False),                                 # a later alarm leaves DAY alone
    "acked-then-new-alarm-before": ([(alarm, BEFORE), (ack, BEFORE), (alarm, EARLIER)], False, True),
}
STATUSES = {"pass": True, "fail": False, "established": False, "unavailable": False, None: False}


@pytest.mark.parametrize("history", list(HISTORIES))
@pytest.mark.parametrize("status", list(STATUSES), ids=lambda s: f"fingerprint-{s or 'missing'}")
def test_a_day_passes_only_with_a_passing_fingerprint_and_no_alarm_open_on_it(paths, status, history):
    steps, clear, latched_before = HISTORIES[history]
    if status is not None:
        fingerprint(paths, DAY, status)
    for step, day in steps:
        step(paths, day)
    verdict = day_verdict(paths, DAY)
    assert verdict.passing is (STATUSES[status] and clear)
    assert verdict.latched is not clear
    assert (verdict.instrument_suspect() is False) is verdict.passing
    fingerprint_reasons = [r for r in verdict.public_reasons if "runtime fingerprint" in r]
    assert len(fingerprint_reasons) == (0 if STATUSES[status] else 1)
    assert [r for r in verdict.public_reasons if "latched since" in r] == (
        [f"instrument_alarm latched since {EARLIER} (from guard_rotation; 1 alarm(s) unacknowledged)"]
        if latched_before else [])
    assert [r for r in verdict.public_reasons if r.startswith("instrument_alarm from")] == (
        [f"instrument_alarm from guard_rotation (g) on {DAY}"] if history == "alarm-that-day" else [])
    if status not in ("pass", None):
        assert f"status: {status}" in fingerprint_reasons[0]
    assert len(verdict.public_reasons) == len(verdict.reasons)


@pytest.mark.parametrize("history", list(HISTORIES))
def test_the_latch_as_it_stood_on_the_day_is_what_the_verdict_counts(paths, history):
    steps, clear, _ = HISTORIES[history]
    for step, day in steps:
        step(paths, day)
    latch = latched_alarm(paths, on=DAY)
    assert (latch is None) is clear
    if latch is not None:
        assert latch["since"] <= DAY and latch["last_date"] <= DAY


def test_one_passing_fingerprint_of_the_day_is_enough(paths):
    """The first day of an archive: the fingerprint establishes, then runs again and passes."""
    cases = ((["established", "pass"], True), (["fail", "pass"], True), (["pass", "fail"], True),
             (["established", "fail"], False), (["unavailable", "unavailable"], False))
    for number, (statuses, passing) in enumerate(cases, start=1):
        day = f"2026-10-{number:02d}"
        for status in statuses:
            fingerprint(paths, day, status)
        assert day_verdict(paths, day).passing is passing, statuses


def test_an_acknowledgement_covers_the_alarms_logged_when_it_was_made_and_not_one_more(paths):
    fingerprint(paths, DAY, "pass")
    alarm(paths, BEFORE)
    alarm(paths, EARLIER)
    ack(paths, EARLIER)                          # covers both
    assert day_verdict(paths, DAY).passing and latched_alarm(paths) is None
    [record] = records.read(paths, CORE_CHANGE)
    assert record["acknowledged_alarms"] == 2
    alarm(paths, EARLIER)                        # logged after it, though dated the same day
    assert not day_verdict(paths, DAY).passing
    assert latched_alarm(paths)["alarm_count"] == 1


def test_a_clean_day_is_suspect_for_a_run_made_while_an_alarm_is_latched_now(paths):
    fingerprint(paths, DAY, "pass")
    assert suspect_value(paths, DAY) is False
    alarm(paths, AFTER)                           # a later alarm: DAY's own verdict is clean …
    assert day_verdict(paths, DAY).passing
    assert str(suspect_value(paths, DAY)).startswith("instrument: instrument_alarm latched since 2026-11-11")
    ack(paths, AFTER)                             # … and once acknowledged, a run dated DAY is clean again
    assert suspect_value(paths, DAY) is False


# ==========================================================================
# the rotation
# ==========================================================================

def test_the_verdicts_that_raise_an_alarm_are_every_verdict_but_baseline_and_flat():
    assert ALARM_VERDICTS == frozenset(VERDICTS) - {"baseline", "flat"}


ORDER = ["g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9", "g10"]


@pytest.mark.parametrize("day, due", [
    ("2026-09-10", "g10"), ("2026-09-11", "g1"), ("2026-09-20", "g10"),     # the cycle runs back before the epoch
    ("2026-09-21", "g1"), ("2026-09-22", "g2"), ("2026-09-30", "g10"),      # the epoch: the day v0 froze
    ("2026-10-01", "g1"), ("2026-10-02", "g2"), ("2026-12-29", "g10"), ("2026-12-30", "g1"),
])
def test_the_rotation_cycle_turns_on_2026_09_21_and_every_len_order_days_either_side(day, due):
    assert ROTATION_EPOCH.isoformat() == "2026-09-21"
    assert scheduled_protocol(ORDER, day) == due
    offset = (datetime.fromisoformat(day).date() - ROTATION_EPOCH).days
    assert scheduled_protocol(ORDER[:3], day) == ORDER[offset % 3]
    assert scheduled_protocol([], day) is None


def rotation(paths, day: str, verdict: str, run_id: str, **changes) -> None:
    fields = {"date": day, "protocol_id": "g1", "run_id": run_id, "previous_run_id": None, "verdict": verdict,
              "protocol_sha256": "p" * 64, "model_sha256": "m" * 64, "generation_override": None,
              "stability_pct": 90.0, "ci_low_pct": 80.0, "ci_high_pct": 95.0, "drop_bound_pct_ab": 0.0}
    fields.update(changes)
    records.append(paths, "guard_rotation", fields)


def baseline_for(paths, before: str = DAY, **changes):
    asked = {"protocol_id": "g1", "protocol_sha256": "p" * 64, "model_sha256": "m" * 64, "override": None}
    asked.update(changes)
    found = previous_result(paths, asked["protocol_id"], asked["protocol_sha256"], asked["model_sha256"], before,
                            asked["override"])
    return None if found is None else found["run_id"]


@pytest.mark.parametrize("planted, asked, found", [
    (("baseline", EARLIER, {}), {}, "r"),
    (("baseline", DAY, {}), {}, None),                                   # a result of the same day never is
    (("baseline", AFTER, {}), {}, None),
    (("flat", EARLIER, {}), {}, None),                                   # flat results never move the baseline
    (("regressed", EARLIER, {}), {}, None),                              # an alarmed result, not accepted
    (("baseline", EARLIER, {"model_sha256": "n" * 64}), {}, None),       # another model file
    (("baseline", EARLIER, {"protocol_sha256": "q" * 64}), {}, None),    # another protocol content
    (("baseline", EARLIER, {"generation_override": 16}), {}, None),      # a trial of the machinery
    (("baseline", EARLIER, {"generation_override": 16}), {"override": 16}, "r"),
    (("baseline", EARLIER, {"stability_pct": None}), {}, None),          # nothing to compare with
], ids=["earlier", "same-day", "later", "flat", "alarmed", "other-model", "other-protocol", "override",
        "same-override", "unmeasured"])
def test_the_accepted_baseline_is_an_earlier_baseline_on_the_same_model_protocol_and_override(
        paths, planted, asked, found):
    verdict, day, changes = planted
    rotation(paths, day, verdict, "r", **changes)
    assert baseline_for(paths, **asked) == found


def test_an_alarmed_result_is_the_baseline_once_a_core_change_accepts_it_and_the_latest_accepted_wins(paths):
    rotation(paths, BEFORE, "baseline", "r0")
    rotation(paths, EARLIER, "changed", "r1")
    rotation(paths, EARLIER, "flat", "r2")
    assert baseline_for(paths) == "r0"
    records.append(paths, "instrument_alarm", {"date": EARLIER, "source": "guard_rotation", "reason": "r1 changed"})
    ack(paths, EARLIER)
    assert baseline_for(paths) == "r1"
    assert baseline_for(paths, before=EARLIER) == "r0", "not on the day it was made"


# ==========================================================================
# the lease
# ==========================================================================

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)


def beat(paths, at: datetime) -> None:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    records.append(paths, "runtime_fingerprint", {
        "date": stamp[:10], "status": "fail", "digest": None, "expected_digest": None, "model_sha256": "m" * 64,
        "template_sha256": "t" * 64, "llama_cpp_version": "0.3.36", "runner_arch": "x86_64-linux",
        "n_threads": 1, "n_batch": 512, "seed": 0}, recorded_at=stamp)


def run_on(paths, run_date: str, run_id: str = "r1") -> None:
    write_json(paths.run_dir(run_id) / "run.json", {"run_id": run_id, "run_date": run_date,
                                                    "protocol_id": "p", "series": "commercial"})
    write_json(paths.run_dir(run_id) / "measurement.json", {"run_id": run_id})


@pytest.mark.parametrize("ago, deadman", [
    (timedelta(hours=36) - timedelta(seconds=1), False),
    (timedelta(hours=36), True),
    (timedelta(hours=36) + timedelta(seconds=1), True),
], ids=["35h59m59s", "exactly-36h", "36h00m01s"])
def test_the_dead_man_alert_fires_at_exactly_36_hours_without_a_daily_cycle(paths, ago, deadman):
    beat(paths, NOW - timedelta(days=9))       # an older heartbeat: the latest one counts
    beat(paths, NOW - ago)
    run_on(paths, "2026-11-20")
    state = lease_check(paths, NOW)
    assert state.deadman is deadman
    assert state.state == ("deadman" if deadman else "alive")
    assert state.coverage_condition == ("no_daily_cycle" if deadman else None)


@pytest.mark.parametrize("days, state", [
    (74, "alive"), (75, "vacation"), (179, "vacation"), (180, "dormant"), (364, "dormant"),
    (365, "succession_offer"), (729, "succession_offer"), (730, "concluded"),
])
def test_each_run_clock_state_begins_on_exactly_its_day(paths, days, state):
    beat(paths, NOW - timedelta(hours=1))
    run_on(paths, (NOW.date() - timedelta(days=days)).isoformat())
    run_on(paths, (NOW.date() - timedelta(days=days + 400)).isoformat(), "r0")   # an older run: the latest counts
    found = lease_check(paths, NOW)
    assert (found.state, found.days_since_run, found.deadman) == (state, days, False)
    dormant = state in ("dormant", "succession_offer", "concluded")
    assert found.coverage_condition == ("archive_dormant" if dormant else None)


@pytest.mark.parametrize("ago, degraded", [
    (timedelta(days=7) - timedelta(seconds=1), False), (timedelta(days=7), True),
], ids=["6d23h59m59s", "exactly-7d"])
def test_the_source_is_degraded_after_exactly_seven_days_without_an_answer(paths, ago, degraded):
    beat(paths, NOW - timedelta(hours=1))
    run_on(paths, "2026-11-20")
    for when in (NOW - timedelta(days=20), NOW - ago):
        records.append(paths, "model_observed", {"date": when.date().isoformat(), "provider": "anthropic",
                                                 "model_id": "claude-sonnet-5", "in_family": True},
                       recorded_at=when.strftime("%Y-%m-%dT%H:%M:%SZ"))
    state = lease_check(paths, NOW)
    assert state.source_degraded is degraded and state.state == "alive"


# ==========================================================================
# the pre-registration guard
# ==========================================================================

PROTOCOL = {"protocol_id": "fixture_family__wording__v0", "panel_sha256": "a" * 64, "protocol_sha256": "b" * 64,
            "status": "admitted"}
OTHER = {"protocol_id": "fixture_family__order__v0", "panel_sha256": "c" * 64, "protocol_sha256": "d" * 64,
         "status": "admitted"}


def manifest(paths, rows, day: str, proof: str = "matching"):
    """A manifest of ``rows`` (written by prereg.write_manifest) and its proof: ``matching``, ``other`` or ``none``."""
    path, written = prereg.write_manifest(paths, rows, date=day, commit="0" * 40)
    assert written
    if proof != "none":
        data = path.read_bytes() if proof == "matching" else b"another manifest"
        timestamp = Timestamp(hashlib.sha256(data).digest())
        timestamp.attestations.add(PendingAttestation("https://calendar.invalid"))
        with open(prereg.proof_path(path), "wb") as fh:
            DetachedTimestampFile(OpSHA256(), timestamp).serialize(StreamSerializationContext(fh))
    return path


@pytest.mark.parametrize("asked, listed, reason", [
    ({}, True, "is listed in a stamped pre-registration manifest"),
    ({"panel_sha256": "e" * 64}, False, "only with other hashes"),
    ({"protocol_sha256": "e" * 64}, False, "only with other hashes"),
    ({"protocol_id": "fixture_family__default__v0"}, False, "no pre-registration manifest lists"),
], ids=["the-triple", "another-panel", "another-protocol", "not-listed"])
def test_a_protocol_is_preregistered_only_by_its_exact_hash_triple(paths, asked, listed, reason):
    manifest(paths, [PROTOCOL, OTHER], "2026-10-01")
    ok, why = prereg.is_preregistered(paths, dict(PROTOCOL, **asked))
    assert (ok, reason in why) == (listed, True), why


@pytest.mark.parametrize("proof, listed, reason", [
    ("matching", True, "is listed in a stamped"),
    ("other", False, "has no timestamp proof that matches it"),
    ("none", False, "has no timestamp proof that matches it"),
])
def test_only_a_proof_that_commits_to_the_manifests_own_bytes_counts(paths, proof, listed, reason):
    manifest(paths, [PROTOCOL], "2026-10-01", proof)
    ok, why = prereg.is_preregistered(paths, PROTOCOL)
    assert ok is listed and reason in why


@pytest.mark.parametrize("first, second, listed", [
    (("other-hashes", "matching"), ("triple", "matching"), True),     # an old listing does not hide a good one
    (("triple", "matching"), ("other-hashes", "matching"), True),     # nor does a later change of other rows
    (("triple", "none"), ("triple-and-other", "matching"), True),     # an unstamped manifest beside a stamped one
    (("triple", "other"), ("other-only", "matching"), False),         # stamped, but not with the protocol
], ids=["changed-then-listed", "listed-then-changed", "unstamped-then-stamped", "badly-stamped-only"])
def test_any_one_stamped_manifest_listing_the_triple_is_enough(paths, first, second, listed):
    rows = {"triple": [PROTOCOL], "other-hashes": [dict(PROTOCOL, protocol_sha256="e" * 64)],
            "triple-and-other": [PROTOCOL, OTHER], "other-only": [OTHER]}
    manifest(paths, rows[first[0]], "2026-10-01", first[1])
    manifest(paths, rows[second[0]], "2026-10-02", second[1])
    assert prereg.is_preregistered(paths, PROTOCOL)[0] is listed


@pytest.mark.parametrize("job, outcome", [("full_sweep", "refused"), ("sweep", "refused"), ("manual", "runs"),
                                          ("bridge", "runs")])
def test_only_the_unattended_sweep_refuses_a_protocol_missing_from_every_stamped_manifest(paths, job, outcome):
    manifest(paths, [OTHER], "2026-10-01")
    if outcome == "refused":
        with pytest.raises(paid_run.PaidRunRefused) as refused:
            paid_run.preregistration_guard(paths, PROTOCOL, job, "2026-11-02")
        assert refused.value.cause == "protocol_confounded"
        assert [(s["cause"], s["protocol_id"]) for s in records.read(paths, "skip")] == [
            ("protocol_confounded", PROTOCOL["protocol_id"])]
    else:
        assert paid_run.preregistration_guard(paths, PROTOCOL, job, "2026-11-02")["listed"] is False
        assert records.read(paths, "skip") == []
    assert paid_run.preregistration_guard(paths, OTHER, job, "2026-11-02")["listed"] is True
