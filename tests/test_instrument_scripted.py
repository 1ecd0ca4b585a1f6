"""A scripted reference engine stands in for llama.cpp only by name, and every record it makes says so.

``make drill`` runs two simulated years of daily checks on the drill's
scripted engine (``scripted:scripts.drill_engine:REFERENCE``, chosen by the
reference model's name in the Dagster resource).  These tests hold the
injection to its one rule: a record made on a scripted engine is never
mistaken for one made on the reference model — the runtime fingerprint's
record carries ``scripted``, the guard rotation's record and run folder keep
a runtime that names it — and a name that does not import is an alarm
(``unavailable``), never a silent fallback.
"""
import pytest

from assets.resources import ReferenceModelResource
from llmarchive.archive import load_run, record_logs as records
from llmarchive.instrument import default_engine_factory, runtime_fingerprint
from llmarchive.instrument.rotation import due_protocol, guard_rotation, instrument_paths
from llmarchive.protocols import registry
from llmarchive.instrument.scripted import ScriptedEngineError, is_scripted, load
from scripts.drill_engine import REFERENCE

NAME = "scripted:scripts.drill_engine:REFERENCE"


@pytest.fixture(autouse=True)
def unchanged_engine():
    REFERENCE.changes.clear()
    yield
    REFERENCE.changes.clear()


def test_a_fingerprint_made_on_a_scripted_engine_says_so_in_its_record(paths):
    outcome = runtime_fingerprint(paths, "2026-11-01", default_engine_factory(NAME))
    assert outcome.status == "established"
    assert outcome.record["scripted"] == NAME
    assert records.read(paths, "runtime_fingerprint")[-1]["scripted"] == NAME


def test_the_reference_model_records_no_scripted_field(paths):
    from tests.test_instrument import PromptEngine

    outcome = runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    assert "scripted" not in outcome.record


def test_the_scripted_fingerprint_changes_on_the_scripts_day_and_alarms(paths):
    runtime_fingerprint(paths, "2026-11-01", default_engine_factory(NAME))
    REFERENCE.changes.append("2000-01-01")       # a change already in force on any day the test runs
    outcome = runtime_fingerprint(paths, "2026-11-02", default_engine_factory(NAME))
    assert outcome.status == "fail" and outcome.alarm is not None
    assert outcome.record["scripted"] == NAME


def test_a_scripted_name_that_does_not_import_is_an_unavailable_fingerprint_not_a_fallback(paths):
    outcome = runtime_fingerprint(paths, "2026-11-01", default_engine_factory("scripted:no.such.module:X"))
    assert outcome.status == "unavailable" and outcome.alarm is not None
    assert "scripted:no.such.module:X" in outcome.record["reason"]


def test_a_guard_rotation_on_a_scripted_subject_keeps_the_scripted_runtime(admitted):
    max_tokens = registry.load_protocol(admitted, due_protocol(admitted, "2026-11-01"))["generation"]["max_tokens"]
    record = guard_rotation(admitted, "2026-11-01", ReferenceModelResource(model=NAME).subject(max_tokens))
    assert record["verdict"] == "baseline"
    assert record["runtime"]["scripted"] == NAME
    run = load_run(instrument_paths(admitted).run_dir(record["run_id"])).run
    assert run["runtime"]["scripted"] == NAME and run["subject"]["scripted"] == NAME


def test_only_the_scripted_prefix_selects_a_scripted_engine():
    assert is_scripted(NAME) and not is_scripted("smollm2-135m") and not is_scripted(None)
    with pytest.raises(ScriptedEngineError, match="scripted:<module>:<attribute>"):
        load("scripted:scripts.drill_engine")
