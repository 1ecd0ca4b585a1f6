"""Guard rotation: the fixed ten-day order, and the change rule against the previous result.

The protocols are the real built v0 guard protocols, promoted through the
human gate; the answers come from a scripted local subject so that a
change can be provoked on purpose (the embedded model's own rotation is in
test_instrument_reference.py).
"""
from datetime import date, timedelta


from llmarchive import records
from llmarchive import registry
from llmarchive.instrument import day_verdict
from llmarchive.instrument.rotation import (ROTATION_EPOCH, due_protocol, guard_rotation, instrument_paths,
                                            rotation_order)
from llmarchive.subjects.base import SubjectError
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
