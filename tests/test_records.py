"""What comes out of the store is a typed record, checked against the schema, exactly as written."""
import copy
import json
import pickle

import pytest

from llmarchive.archive import RecordFileError, store
from measure import chain
from measure.records import Measurement, MeasurementRecordError, Trial
from measure.schema import (LATER_MEASUREMENT_FIELDS, MEASUREMENT_FIELD_NAMES, TRIAL_FIELD_NAMES, TrialError)
from tests.publish_helpers import protocol, write_run

OPEN = "risky_choice_framing__wording__v0"


@pytest.fixture
def folder(archive):
    write_run(archive, protocol(archive, OPEN), "r1", "2026-11-02")
    return archive.run_dir("r1")


def _rewrite_trial(folder, index: int, **changes) -> None:
    """Change one trial and re-chain the log, so only the schema (not the chain) can catch it."""
    lines = store.trial_log(folder).read_text(encoding="utf-8").splitlines()
    records = [{k: v for k, v in json.loads(line).items() if k not in ("prev_sha256", "record_sha256")}
               for line in lines]
    records[index].update(changes)
    prev, out = chain.GENESIS, []
    for record in records:
        linked = chain.link(record, prev)
        prev = linked["record_sha256"]
        out.append(chain.to_line(linked))
    store.trial_log(folder).write_text("".join(out), encoding="utf-8")


def test_a_loaded_run_gives_typed_trials_and_measurement_equal_to_the_records_as_written(folder):
    loaded = store.load_run(folder)
    written = [json.loads(line) for line in store.trial_log(folder).read_text(encoding="utf-8").splitlines()]
    assert all(isinstance(t, Trial) for t in loaded.trials) and isinstance(loaded.measurement, Measurement)
    assert loaded.trials == written, "the typed trial is the record as written, key for key"
    assert chain.verify(loaded.trials) == len(written), "so the hash chain verifies over it"
    first = loaded.trials[0]
    assert (first.item_id, first.version, first.outcome, first.trial_index) == ("s01", "A", "valid", 0)
    assert first.retry_causes is None, "a field the record lacks reads as None, it is not invented"
    assert "retry_causes" not in first
    assert loaded.measurement.run_id == "r1" and loaded.measurement.stability_pct == loaded.measurement["stability_pct"]


def test_every_schema_field_is_an_attribute_of_its_record_type():
    """The types take their fields from the schema's one list: a field added there is readable here."""
    assert Trial.FIELD_NAMES == TRIAL_FIELD_NAMES
    assert Measurement.FIELD_NAMES == MEASUREMENT_FIELD_NAMES
    assert all(isinstance(getattr(Trial, n), property) for n in TRIAL_FIELD_NAMES)
    assert all(isinstance(getattr(Measurement, n), property) for n in MEASUREMENT_FIELD_NAMES)


def test_a_record_read_from_the_archive_cannot_be_changed_but_a_copy_can(folder):
    trial = store.load_run(folder).trials[0]
    for change in (lambda t: t.__setitem__("token", "B"), lambda t: t.pop("token"), lambda t: t.update(token="B"),
                   lambda t: t.setdefault("x", 1), lambda t: t.clear(), lambda t: t.__delitem__("token")):
        with pytest.raises(TypeError, match="cannot be changed"):
            change(trial)
    assert trial["token"] == "A"
    for duplicate in (dict(trial), copy.copy(trial), copy.deepcopy(trial), pickle.loads(pickle.dumps(trial))):
        assert type(duplicate) is dict and duplicate == trial
        duplicate["token"] = "B"
    assert json.loads(json.dumps(trial, sort_keys=True)) == dict(trial)


def test_a_trial_that_breaks_the_schema_is_refused_on_read_naming_log_record_and_field(folder):
    """Before the typed store, ``load_run`` handed such a trial to the estimator unread."""
    _rewrite_trial(folder, 5, replicate_index="0")
    with pytest.raises(RecordFileError, match=r"trials\.jsonl, record 6: field 'replicate_index' should be "
                                              r"a non-negative integer, got a string '0'"):
        store.load_run(folder)


def test_a_trial_without_a_field_the_estimator_reads_is_refused(folder):
    lines = store.trial_log(folder).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    del records[0]["outcome"]
    with pytest.raises(TrialError, match="the trial has no 'outcome'"):
        Trial(records[0], "here")


def test_a_trial_keeps_keys_the_schema_does_not_know_since_only_a_writer_may_refuse_them(folder):
    record = dict(store.load_run(folder).trials[0], later_field="kept")
    assert Trial(record, "here")["later_field"] == "kept"


def test_a_measurement_that_breaks_the_schema_is_refused_on_read(folder):
    path = store.measurement_file(folder)
    good = json.loads(path.read_text(encoding="utf-8"))
    for bad, problem in (({**good, "n": -1}, "field 'n' should be count"),
                         ({**good, "surprise": 1}, "fields no measurement has: surprise"),
                         ({k: v for k, v in good.items() if k != "gap_pct"}, "missing gap_pct"),
                         ({**good, "record_type": "trial"}, "record_type is 'trial'")):
        path.write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(RecordFileError, match=f"measurement\\.json: not a measurement of this schema: {problem}"):
            store.load_run(folder)
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(RecordFileError, match="a measurement must be a JSON object, got a list"):
        store.read_measurement(folder)


def test_a_measurement_written_before_the_later_fields_reads_whole_and_unchanged(folder):
    path = store.measurement_file(folder)
    old = {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items() if k not in LATER_MEASUREMENT_FIELDS}
    path.write_text(json.dumps(old), encoding="utf-8")
    read = store.read_measurement(folder)
    assert read == old and not any(name in read for name in LATER_MEASUREMENT_FIELDS)
    assert read.replicate_agreement_pct is None


def test_the_measurement_type_names_where_a_non_object_came_from():
    with pytest.raises(MeasurementRecordError, match="^somewhere: a measurement must be a JSON object, got null"):
        Measurement(None, "somewhere")


def test_publication_refuses_a_measurement_whose_field_has_the_wrong_type(folder, archive):
    """Before the typed store, publication checked only the measurement's keys: a ``gap_pct`` of "12.5"
    would have been published as text."""
    from publish.errors import PublishError
    from publish.data import gather

    path = store.measurement_file(folder)
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), "gap_pct": "12.5"}), encoding="utf-8")
    with pytest.raises(PublishError, match=r"r1/measurement\.json: not a measurement of this schema: field 'gap_pct'"):
        gather(archive)
