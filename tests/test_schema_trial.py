"""The trial as a schema: measure.schema.TRIAL_FIELDS, its one validator, and what derives from them."""
import json

import pytest

from llmarchive.archive import read_jsonl
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects.http import RetryPolicy
from llmarchive import budget as budget_mod
from measure.errors import ArchiveError
from measure.schema import (
    TRIAL_CHAIN_FIELDS,
    TRIAL_DESCRIPTIONS,
    TRIAL_FIELD_LABELS,
    TRIAL_FIELD_NAMES,
    TRIAL_WRITTEN_FIELDS,
    TYPE_LABELS,
    TrialError,
    check_trial,
    trial_problems,
)
from tests.fake_provider import Reply
from tests.protocol_fixtures import make_protocol

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)
KEY = "fake-credential-schema-trial"


@pytest.fixture
def paths(paths, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return paths


def run(paths, protocol, fake, run_id="r1"):
    subject = AnthropicSubject("claude-test-1", 64, base_url=fake.base_url, retry=FAST, sleep=lambda s: None)
    return run_protocol(paths, protocol, subject, RunSettings(run_id=run_id, run_date="2026-11-01"),
                        authorization=budget_mod.unbudgeted("manual"), budget=None, progress=None)


def a_trial() -> dict:
    """One trial as the runner writes it (values of the schema's types)."""
    return {
        "record_type": "trial", "schema_version": 2, "run_id": "r1", "protocol_id": "p_v0", "item_id": "s01",
        "n_items": 15, "version": "A", "replicate_index": 0, "trial_index": 0, "prompt_sha256": "ab" * 32,
        "outcome": "valid", "token": "A", "reason": None, "response_text": "DECISION: A", "stop_reason": "end_turn",
        "returned_model_id": "m-1", "input_tokens": 10, "output_tokens": 3, "latency_ms": 12, "attempts": 1,
        "retry_causes": [], "unknown_attempts": 0, "answered": True, "session": "s0",
        "started_at": "2026-11-01T00:00:00Z", "finished_at": "2026-11-01T00:00:01Z", "system_fingerprint": None,
    }


def test_every_trial_field_has_a_known_label_a_nullability_and_a_description():
    assert len(set(TRIAL_FIELD_NAMES)) == len(TRIAL_FIELD_NAMES)
    assert set(TRIAL_FIELD_LABELS.values()) <= set(TYPE_LABELS)
    assert all(TRIAL_DESCRIPTIONS[n].strip() for n in TRIAL_FIELD_NAMES)
    assert TRIAL_WRITTEN_FIELDS + TRIAL_CHAIN_FIELDS == TRIAL_FIELD_NAMES
    assert list(a_trial()) == list(TRIAL_WRITTEN_FIELDS)
    assert trial_problems(a_trial(), TRIAL_WRITTEN_FIELDS, closed=True) == []


def test_the_runner_writes_the_schema_trial_field_for_field_in_its_order(paths, fake):
    result = run(paths, make_protocol(n_items=2, n_per_scenario=1), fake)
    assert result.complete and result.trials
    for trial in result.trials:
        assert list(trial) == list(TRIAL_FIELD_NAMES)          # the runner's fields, then the chain's
        check_trial(trial, "a recorded trial", needs=TRIAL_FIELD_NAMES, closed=True)
    for trial in read_jsonl(result.run_dir / "trials.jsonl"):
        assert set(trial) == set(TRIAL_FIELD_NAMES)


def test_a_call_whose_answer_breaks_the_schema_is_not_written_as_a_trial(paths, fake):
    """A provider reporting a negative token count: the old runner logged it; now no such trial is durable."""
    fake.script(*[Reply.text("DECISION: A", output_tokens=-5)] * 8)
    with pytest.raises(ArchiveError) as info:
        run(paths, make_protocol(n_items=2, n_per_scenario=1), fake)
    assert "\n" not in str(info.value) and "output_tokens" in str(info.value), str(info.value)
    log = paths.run_dir("r1") / "trials.jsonl"
    written = read_jsonl(log) if log.exists() else []
    assert not [t for t in written if t.get("output_tokens") == -5]


@pytest.mark.parametrize("field,value,words", [
    ("outcome", None, "field 'outcome' should be a string, got null"),
    ("replicate_index", -1, "field 'replicate_index' should be a non-negative integer, got an integer -1"),
    ("replicate_index", True, "field 'replicate_index' should be a non-negative integer, got a boolean True"),
    ("answered", "yes", "field 'answered' should be true or false, got a string 'yes'"),
    ("retry_causes", "timeout", "field 'retry_causes' should be a list or an object, got a string 'timeout'"),
    ("token", 5, "field 'token' should be a string or null, got an integer 5"),
    ("latency_ms", 1.5, "field 'latency_ms' should be a non-negative integer, got a number 1.5"),
])
def test_the_validator_names_the_place_the_field_and_the_problem_in_one_line(field, value, words):
    trial = {**a_trial(), field: value}
    with pytest.raises(TrialError) as info:
        check_trial(trial, "trials.jsonl, line 3")
    assert str(info.value) == f"trials.jsonl, line 3: {words}"
    assert isinstance(info.value, ArchiveError)


def test_what_a_reader_needs_must_be_there_and_what_it_does_not_read_may_be_absent():
    trial = a_trial()
    del trial["session"], trial["unknown_attempts"]        # trials recorded before these fields existed
    check_trial(trial, "old run", needs=("item_id", "version", "replicate_index", "outcome", "token"))
    del trial["outcome"]
    with pytest.raises(TrialError, match=r"^old run: the trial has no 'outcome'$"):
        check_trial(trial, "old run", needs=("outcome",))
    with pytest.raises(TrialError, match="'colour' that no trial has"):
        check_trial({**a_trial(), "colour": "red"}, "writer", closed=True)


def test_the_published_trial_columns_are_schema_fields_with_the_schema_labels():
    from publish.data.database import TABLE_BY_NAME

    columns = TABLE_BY_NAME["open_lane_trials"].columns
    assert [c.name for c in columns][-1] == "transport"
    for column in columns[:-1]:
        assert column.label == TRIAL_FIELD_LABELS[column.name], column.name


def test_croissant_describes_the_open_lane_trials_with_the_schema_descriptions():
    from publish.data import open_lane

    described = [n for n in TRIAL_FIELD_NAMES if open_lane.describe(n) != open_lane.GENERIC_DESCRIPTION]
    assert described and all(open_lane.describe(n) == TRIAL_DESCRIPTIONS[n] for n in described)
    assert open_lane.describe("not_a_field") == open_lane.GENERIC_DESCRIPTION


def test_a_published_trial_with_a_field_of_the_wrong_type_is_refused_by_verify():
    from publish.errors import PublishError
    from publish.readback.files import typed_trial as reader_check

    with pytest.raises(PublishError, match=r"^open-lane/2026.jsonl, line 4: field 'attempts' should be a "
                                           r"non-negative integer, got a string '1'$"):
        reader_check({**a_trial(), "attempts": "1"}, "open-lane/2026.jsonl, line 4")
    assert reader_check(json.loads(json.dumps(a_trial())), "open-lane/2026.jsonl, line 4") == a_trial()
