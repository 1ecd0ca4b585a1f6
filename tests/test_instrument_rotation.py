"""Guard rotation: the fixed ten-day order, and the change rule against the previous result.

The protocols are the real built v0 guard protocols, promoted through the
human gate; the answers come from a scripted local subject so that a
change can be provoked on purpose (the embedded model's own rotation is in
test_instrument_reference.py).
"""
from datetime import date, timedelta

import pytest

from llmarchive.archive import record_logs as records
from llmarchive.protocols import registry
from llmarchive.instrument import ALARM_VERDICTS, day_verdict
from llmarchive.instrument.rotation import (ROTATION_EPOCH, due_protocol, guard_rotation, instrument_paths,
                                            rotation_order)
from llmarchive.subjects import SubjectError
from tests.instrument_helpers import ScriptedSubject


def test_ten_guard_protocols_rotate_in_a_fixed_order_one_a_day(admitted):
    order = rotation_order(registry.list_protocols(admitted), "v0")
    assert len(order) == 10 and order == sorted(order)
    assert set(order) == set(registry.guard_protocol_ids(admitted)) - {p for p in registry.guard_protocol_ids(admitted)
                                                                    if not p.endswith("__v0")}
    assert not set(order) & set(registry.open_protocol_ids(admitted))
    days = [(ROTATION_EPOCH + timedelta(days=i)).isoformat() for i in range(20)]
    due = [due_protocol(admitted, d) for d in days]
    assert due[:10] == order and due[10:] == order, "a ten-day cycle, every guard protocol once"
    assert due_protocol(admitted, "2026-11-29") == order[(date(2026, 11, 29) - ROTATION_EPOCH).days % 10]


def _texts(protocol, version):
    return {item["versions"][version] for item in protocol["panel"]}


def test_baseline_then_flat_then_a_regression_raises_an_alarm(admitted):
    day1 = "2026-11-01"
    pid = due_protocol(admitted, day1)
    protocol = registry.load_protocol(admitted, pid)
    steady = ScriptedSubject(lambda p: "DECISION: A", protocol["generation"]["max_tokens"])
    first = guard_rotation(admitted, day1, steady, protocol_id=pid)
    assert first["verdict"] == "baseline" and first["stability_pct"] == 100.0 and first["previous_run_id"] is None
    assert instrument_paths(admitted).run_dir(first["run_id"]).is_dir() and not admitted.run_dir(first["run_id"]).exists()

    second = guard_rotation(admitted, "2026-11-11", steady, protocol_id=pid)
    assert second["verdict"] == "flat" and second["previous_run_id"] == first["run_id"]
    assert records.read(admitted, "instrument_alarm") == []

    b_texts = _texts(protocol, "B")
    swayed = ScriptedSubject(lambda p: "DECISION: B" if p in b_texts else "DECISION: A",
                             protocol["generation"]["max_tokens"])
    third = guard_rotation(admitted, "2026-11-21", swayed, protocol_id=pid)
    assert third["verdict"] == "regressed" and third["stability_pct"] == 0.0
    assert third["previous"]["stability_pct"] == 100.0
    alarms = records.read(admitted, "instrument_alarm")
    assert [(a["date"], a["source"], a["protocol_id"]) for a in alarms] == [("2026-11-21", "guard_rotation", pid)]
    assert "regressed" in alarms[0]["reason"]
    assert day_verdict(admitted, "2026-11-21").suspect


def test_a_result_is_compared_only_with_the_same_model_file(admitted):
    pid = due_protocol(admitted, "2026-11-01")
    max_tokens = registry.load_protocol(admitted, pid)["generation"]["max_tokens"]
    guard_rotation(admitted, "2026-11-01", ScriptedSubject(lambda p: "DECISION: A", max_tokens), protocol_id=pid)
    other = ScriptedSubject(lambda p: "DECISION: B", max_tokens, model_sha256="6" * 64)
    assert guard_rotation(admitted, "2026-11-11", other, protocol_id=pid)["verdict"] == "baseline"


class Broken(ScriptedSubject):
    def call(self, prompt, key=""):
        raise SubjectError("llama.cpp: failed to load model")


def test_a_rotation_that_cannot_run_is_unavailable_and_an_alarm(admitted):
    day = "2026-11-02"
    record = guard_rotation(admitted, day, Broken(lambda p: "", 256))
    assert record["verdict"] == "unavailable" and "failed to load model" in record["reason"]
    assert record["protocol_id"] == due_protocol(admitted, day)
    assert day_verdict(admitted, day).suspect


def test_the_cli_shows_which_protocol_is_due(admitted, capsys):
    from llmarchive.cli import main

    assert main(["instrument", "rotation", "--show-schedule", "--date", "2026-09-21"]) == 0
    assert capsys.readouterr().out.strip() == rotation_order(registry.list_protocols(admitted), "v0")[0]


def test_a_protocol_that_can_no_longer_be_measured_raises_an_alarm(admitted):
    pid = due_protocol(admitted, "2026-11-01")
    max_tokens = registry.load_protocol(admitted, pid)["generation"]["max_tokens"]
    guard_rotation(admitted, "2026-11-01", ScriptedSubject(lambda p: "DECISION: A", max_tokens), protocol_id=pid)
    mute = ScriptedSubject(lambda p: "I would rather not decide.", max_tokens)
    record = guard_rotation(admitted, "2026-11-11", mute, protocol_id=pid)
    assert record["verdict"] == "unmeasurable" and record["stability_pct"] is None
    assert "can no longer be measured" in records.read(admitted, "instrument_alarm")[0]["reason"]


def _answering_b_in(protocol, items):
    """A rule answering B to every version of the scenarios in ``items``, A everywhere else."""
    prompts = {text for item in protocol["panel"] if item["item_id"] in items for text in item["versions"].values()}
    return lambda p: "DECISION: B" if p in prompts else "DECISION: A"


@pytest.mark.parametrize("moved", [1, 4])
def test_scenarios_that_change_in_every_version_raise_an_alarm_though_the_change_rule_says_flat(admitted, moved):
    pid = due_protocol(admitted, "2026-11-01")
    protocol = registry.load_protocol(admitted, pid)
    max_tokens = protocol["generation"]["max_tokens"]
    first = guard_rotation(admitted, "2026-11-01", ScriptedSubject(lambda p: "DECISION: A", max_tokens),
                           protocol_id=pid)
    assert first["verdict"] == "baseline"
    items = [item["item_id"] for item in protocol["panel"]][-moved:]
    swayed = ScriptedSubject(_answering_b_in(protocol, set(items)), max_tokens)
    record = guard_rotation(admitted, "2026-11-11", swayed, protocol_id=pid)
    # Every version moved alike: the stability, and so the statistical verdict, did not move.
    assert record["stability_pct"] == first["stability_pct"] and record["change_rule"] == "flat"
    assert record["verdict"] == "changed"
    assert record["verdict"] in ALARM_VERDICTS, "the CLI and the Dagster asset report an alarm by this set"
    n_per = protocol["n_per_scenario"]
    expected = [f"{item}/{version}/{r}" for item in sorted(items) for version in sorted(protocol["panel"][0]["versions"])
                for r in range(n_per)]
    assert sorted(c["slot"] for c in record["slots_changed"]) == sorted(expected)
    assert all((c["baseline"], c["now"]) == ("A", "B") for c in record["slots_changed"])
    assert record["slots_compared"] == 4 * protocol["n"]
    [alarm] = records.read(admitted, "instrument_alarm")
    assert (alarm["date"], alarm["source"], alarm["protocol_id"]) == ("2026-11-11", "guard_rotation", pid)
    assert f"{len(expected)} of {4 * protocol['n']} slots decided differently" in alarm["reason"]
    assert all(f"{slot} A→B" in alarm["reason"] for slot in expected)
    assert f"run {first['run_id']}" in alarm["reason"] and "change rule alone says flat" in alarm["reason"]
    assert day_verdict(admitted, "2026-11-11").suspect


def test_a_rotation_that_repeats_every_slot_is_flat_and_says_so(admitted):
    pid = due_protocol(admitted, "2026-11-01")
    max_tokens = registry.load_protocol(admitted, pid)["generation"]["max_tokens"]
    steady = ScriptedSubject(lambda p: "DECISION: A", max_tokens)
    guard_rotation(admitted, "2026-11-01", steady, protocol_id=pid)
    record = guard_rotation(admitted, "2026-11-11", steady, protocol_id=pid)
    assert record["verdict"] == "flat" and record["slots_changed"] == [] and record["slots_compared"] == 120
    assert record["verdict"] not in ALARM_VERDICTS
    assert "all 120 slots decided exactly as in the baseline" in record["reason"]
    assert records.read(admitted, "instrument_alarm") == []


def test_a_changed_rotation_accepted_by_a_core_change_is_the_new_baseline(admitted):
    from llmarchive.instrument.acknowledge import acknowledge

    pid = due_protocol(admitted, "2026-11-01")
    protocol = registry.load_protocol(admitted, pid)
    max_tokens = protocol["generation"]["max_tokens"]
    guard_rotation(admitted, "2026-11-01", ScriptedSubject(lambda p: "DECISION: A", max_tokens), protocol_id=pid)
    swayed = ScriptedSubject(_answering_b_in(protocol, {"s15"}), max_tokens)
    changed = guard_rotation(admitted, "2026-11-11", swayed, protocol_id=pid)
    assert changed["verdict"] == "changed"
    ack = acknowledge(admitted, "llama.cpp rebuilt; s15 now answers B", "T", date="2026-11-12")
    assert ack.record["accepted_rotations"] == [changed["run_id"]]
    again = guard_rotation(admitted, "2026-11-21", swayed, protocol_id=pid)
    assert again["verdict"] == "flat" and again["previous_run_id"] == changed["run_id"]


def test_a_baseline_whose_trials_cannot_be_read_makes_the_rotation_unavailable_before_any_call(admitted):
    pid = due_protocol(admitted, "2026-11-01")
    max_tokens = registry.load_protocol(admitted, pid)["generation"]["max_tokens"]
    first = guard_rotation(admitted, "2026-11-01", ScriptedSubject(lambda p: "DECISION: A", max_tokens),
                           protocol_id=pid)
    (instrument_paths(admitted).run_dir(first["run_id"]) / "trials.jsonl").unlink()
    later = ScriptedSubject(lambda p: "DECISION: A", max_tokens)
    record = guard_rotation(admitted, "2026-11-11", later, protocol_id=pid)
    assert record["verdict"] == "unavailable" and "cannot be compared exactly" in record["reason"]
    assert later.calls == 0
    assert day_verdict(admitted, "2026-11-11").suspect
