"""cadence.yaml and parse_cadence: method §8's keys and values; only <n>d / <n>h are schedules."""
from datetime import timedelta

import pytest
import yaml

from llmarchive.archive.cadence import (CADENCE_FILE, POLICY_KEYS, SCHEDULE_KEYS, CadenceError, load_cadence,
                                        parse_cadence, parse_document)

SPEC_VALUES = {
    "subject_fingerprint": "1d", "full_sweep": "30d", "open_weights_series": "on_new_generation",
    "sealed_scan": "on_new_generation", "runtime_fingerprint": "1d", "guard_margin_rotation": "1d",
    "revalidation_daily": 10, "generation_bridge_protocols": 4, "bridge_trigger": "any_new_model_id_in_family",
    "active_switch": "provider_declared_successor", "bridge_reserve_monthly": 2.80, "retirement_threshold": 4,
    "declassify_after": 4, "human_review": "30d", "checkpoint_sign": "30d", "coverage_publish": "30d",
    "release_publish": "90d", "strategy_review": "90d", "self_revision": "180d", "integrity_declaration": "365d",
    "source_degraded_after": "7d", "deadman_alert": "36h", "vacation_after": "75d", "dormant_after": "180d",
    "succession_offer": "365d", "concluded_after": "730d",
}


def test_the_repository_cadence_has_exactly_specs_keys_and_values():
    raw = yaml.safe_load(CADENCE_FILE.read_text())
    assert raw == SPEC_VALUES
    cadence = load_cadence()
    assert set(cadence.schedules) == set(SCHEDULE_KEYS) and set(cadence.policy) == set(POLICY_KEYS)
    assert cadence.every("deadman_alert") == timedelta(hours=36)
    assert cadence.every("full_sweep") == timedelta(days=30)
    assert cadence.count("revalidation_daily") == 10 and cadence.count("generation_bridge_protocols") == 4


def test_the_seven_other_shaped_keys_of_spec_are_policy_constants_nothing_counts_down_to():
    cadence = load_cadence()
    for key in ("open_weights_series", "sealed_scan", "generation_bridge_protocols", "active_switch",
                "bridge_reserve_monthly", "retirement_threshold", "declassify_after"):
        assert key in cadence.policy
        with pytest.raises(CadenceError, match="policy constant"):
            cadence.every(key)


@pytest.mark.parametrize("value,expected", [("1d", timedelta(days=1)), ("36h", timedelta(hours=36)),
                                            ("730d", timedelta(days=730)), ("1h", timedelta(hours=1))])
def test_parse_cadence_accepts_days_and_hours(value, expected):
    assert parse_cadence(value) == expected


@pytest.mark.parametrize("value", ["0d", "1w", "1 d", "d", "1.5d", "-1d", "1D", "01d", " 1d", "1d ",
                                   "on_new_generation", 1, 2.8, None, True, "30m", "1dh"])
def test_parse_cadence_refuses_every_other_shape(value):
    with pytest.raises(CadenceError, match="<n>d or <n>h"):
        parse_cadence(value, "some_key")


def test_a_malformed_schedule_missing_or_unknown_key_is_refused_naming_it():
    data = dict(SPEC_VALUES)
    data["deadman_alert"] = "1.5 days"
    data.pop("full_sweep")
    data["my_new_timer"] = "2d"
    with pytest.raises(CadenceError) as info:
        parse_document(data, "cadence.yaml")
    message = str(info.value)
    assert "deadman_alert" in message and "missing key(s) full_sweep" in message and "my_new_timer" in message


def test_a_policy_key_written_as_a_schedule_is_refused():
    data = dict(SPEC_VALUES, declassify_after="4d")
    with pytest.raises(CadenceError, match="declassify_after: is a policy constant"):
        parse_document(data)


def test_load_cadence_names_a_missing_or_broken_file(tmp_path):
    with pytest.raises(CadenceError, match="no such file"):
        load_cadence(tmp_path / "cadence.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("full_sweep: [1d\n")
    with pytest.raises(CadenceError, match="not valid YAML"):
        load_cadence(broken)
