"""An instrument alarm latches until a human ``core_change`` acknowledges it (method §7, issue 12).

The fingerprint outcomes come from the small in-test engine of
``test_instrument.py``; runs go through the real runner and ``llmarchive run``
against the fake provider; the guard rotation uses the real built guard
protocols with a scripted local subject; publication is the real build.
"""
from pathlib import Path
import csv
import io
import json
import sqlite3

import pytest

from llmarchive.archive import ArchivePaths, load_run, record_logs as records
from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.instrument import day_verdict, due_protocol, guard_rotation, suspect_value
from llmarchive.instrument.acknowledge import AcknowledgeError, acknowledge
from llmarchive.instrument.fingerprint import candidates_dir, expectations_dir, runtime_fingerprint
from llmarchive.instrument.verdict import latched_alarm, read_core_changes
from measure import chain
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.instrument_helpers import ScriptedSubject
from tests.test_instrument import PromptEngine

NEW_RUNTIME = {"llama_cpp_version": "0.3.40"}


def _clean_start(paths):
    runtime_fingerprint(paths, "2026-11-01", lambda: PromptEngine())
    assert runtime_fingerprint(paths, "2026-11-02", lambda: PromptEngine()).status == "pass"


def test_an_alarm_survives_the_next_clean_day(paths):
    _clean_start(paths)
    assert latched_alarm(paths) is None and day_verdict(paths, "2026-11-02").passing
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp05", 1)))
    clean = runtime_fingerprint(paths, "2026-11-04", lambda: PromptEngine())
    assert clean.status == "pass", "the daily cycle keeps running and recording"
    verdict = day_verdict(paths, "2026-11-04")
    assert verdict.suspect and "latched since 2026-11-03" in verdict.reason and "fp05" in verdict.reason
    latch = latched_alarm(paths)
    assert latch["since"] == "2026-11-03" and latch["source"] == "runtime_fingerprint" and latch["alarm_count"] == 1
    assert "fp05" in latch["reason"]
    assert str(suspect_value(paths, "2026-11-04")).startswith("instrument: instrument_alarm latched since 2026-11-03")
    # the days before the alarm keep their verdict
    assert day_verdict(paths, "2026-11-02").passing


def test_a_measurement_made_on_a_clean_day_of_a_latch_is_published_off_the_curve(archive_home, monkeypatch, capsys):
    from publish import publish_all
    from tests.panels_helpers import built_paths

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    paths = built_paths(monkeypatch, None)
    _clean_start(paths)

    def run(fake, day):
        assert main(["run", "base_rate_neglect__wording__v0", "--subject", "openai", "--model", "local",
                     "--base-url", fake.base_url, "--unbudgeted", "--run-id", f"run-{day}", "--run-date", day,
                     "--quiet", "--concurrency", "8"]) == 0

    with FakeProvider(decide_by_hash()) as fake:
        run(fake, "2026-11-02")
        runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp02", 0)))
        runtime_fingerprint(paths, "2026-11-04", lambda: PromptEngine())
        run(fake, "2026-11-04")
    capsys.readouterr()
    latched = load_run(paths.run_dir("run-2026-11-04")).measurement
    assert "instrument_suspect" in latched["flags"] and latched["on_curve"] is False
    assert "latched since 2026-11-03" in latched["flag_reasons"]["instrument_suspect"]

    publish_all(paths, build_time="2026-11-05T00:00:00Z")
    rows = {r["run_id"]: r for r in csv.DictReader(io.StringIO((paths.public / "stability.csv").read_text()))}
    assert rows["run-2026-11-04"]["on_curve"].lower() in ("false", "0")
    assert "instrument_suspect" in rows["run-2026-11-04"]["flags"]
    assert "instrument_suspect" not in rows["run-2026-11-02"]["flags"], "the day before the alarm is untouched"
    db = sqlite3.connect(paths.public / "archive.db")
    assert db.execute("select on_curve from measurements where run_id = 'run-2026-11-04'").fetchone()[0] == 0
    status = json.loads((paths.public / "status.json").read_text())
    assert status["instrument_alarm"]["since"] == "2026-11-03"
    assert status["instrument_alarm"]["source"] == "runtime_fingerprint"
    assert status["instrument_alarm"]["alarm_count"] == 1 and "fp02" in status["instrument_alarm"]["reason"]


def test_status_json_has_a_null_instrument_alarm_when_nothing_is_latched(built):
    from publish import publish_all

    paths = built.ensure()     # publication reads the protocols; it never builds them
    _clean_start(paths)
    publish_all(paths, build_time="2026-11-03T00:00:00Z")
    status = json.loads((paths.public / "status.json").read_text())
    assert "instrument_alarm" in status and status["instrument_alarm"] is None


def test_status_json_reads_the_acknowledgement_from_the_core_change_log(paths):
    from publish.data import sources, status

    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp02", 0)))
    alarms = records.read(paths, "instrument_alarm")
    inputs = sources.Inputs(measurements=[], runs=[], open_runs=[], headers=[], texts=None,
                            records={"instrument_alarm": alarms})
    assert status.instrument_alarm(inputs)["since"] == "2026-11-03"
    acknowledge(paths, "a tampered logprob in a test", "T", date="2026-11-04")
    inputs.records["core_change"] = read_core_changes(paths)
    assert status.instrument_alarm(inputs) is None


def test_the_published_alarm_clears_once_a_person_has_acknowledged_it(built):
    from publish import publish_all

    paths = built.ensure()     # publication reads the protocols; it never builds them
    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp02", 0)))
    publish_all(paths, build_time="2026-11-03T12:00:00Z")
    assert json.loads((paths.public / "status.json").read_text())["instrument_alarm"]["since"] == "2026-11-03"
    acknowledge(paths, "a tampered logprob in a test", "T", date="2026-11-04")
    publish_all(paths, build_time="2026-11-04T12:00:00Z")
    assert json.loads((paths.public / "status.json").read_text())["instrument_alarm"] is None


def test_a_new_runtime_key_latches_and_the_acknowledgement_establishes_its_expectation(paths, capsys):
    _clean_start(paths)
    first = runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(runtime=NEW_RUNTIME))
    assert first.status == "fail" and first.alarm is not None
    assert runtime_fingerprint(paths, "2026-11-04", lambda: PromptEngine(runtime=NEW_RUNTIME)).status == "fail"
    assert latched_alarm(paths)["alarm_count"] == 2
    assert len(list(candidates_dir(paths).glob("*.json"))) == 1

    assert main(["instrument", "acknowledge", "--core-change", "llama-cpp-python 0.3.40, upgraded on purpose",
                 "--reviewer", "Ada", "--date", "2026-11-05"]) == 0
    out = capsys.readouterr().out
    assert "core_change recorded" in out and "new fingerprint expectation" in out
    assert latched_alarm(paths) is None
    [ack] = read_core_changes(paths)
    assert ack["reviewer"] == "Ada" and ack["acknowledged_alarms"] == 2 and ack["latched_since"] == "2026-11-03"
    assert ack["accepted_expectations"][0]["digest"] == first.record["digest"]
    chain.verify(read_core_changes(paths))
    assert len(list(expectations_dir(paths).glob("*.json"))) == 2 and not list(candidates_dir(paths).glob("*.json"))

    after = runtime_fingerprint(paths, "2026-11-05", lambda: PromptEngine(runtime=NEW_RUNTIME))
    assert after.status == "pass" and after.alarm is None
    assert day_verdict(paths, "2026-11-05").passing and suspect_value(paths, "2026-11-05") is False
    # history keeps its verdict: the days of the latch stay suspect
    assert day_verdict(paths, "2026-11-04").suspect


def test_an_alarm_after_the_acknowledgement_latches_again(paths):
    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp01", 0)))
    acknowledge(paths, "reviewed: the changed digest is the new normal", "Ada", date="2026-11-03")
    assert latched_alarm(paths) is None
    # the acknowledgement accepted the difference that persisted: it is now the expectation
    assert runtime_fingerprint(paths, "2026-11-04", lambda: PromptEngine(tamper=("fp01", 0))).status == "pass"
    assert day_verdict(paths, "2026-11-04").passing
    runtime_fingerprint(paths, "2026-11-05", lambda: PromptEngine(tamper=("fp09", 2)))
    latch = latched_alarm(paths)
    assert latch["since"] == "2026-11-05" and latch["alarm_count"] == 1
    runtime_fingerprint(paths, "2026-11-06", lambda: PromptEngine(tamper=("fp01", 0)))
    assert day_verdict(paths, "2026-11-06").suspect


def test_an_acknowledgement_covers_only_the_alarms_it_names(paths):
    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp01", 0)))
    acknowledge(paths, "reviewed", "Ada", date="2026-11-03")
    assert latched_alarm(paths) is None
    # an alarm log replaced behind the archive's back (same length, another alarm) is not acknowledged.  The
    # replacement is written by another process, as it would be: this process remembers what it appended, and a
    # new file that happens to reuse the old inode is (rightly) refused as a log whose records were removed.
    import subprocess
    import sys

    paths.record_log("instrument_alarm").unlink()
    subprocess.run([sys.executable, "-c", "import sys; from llmarchive.archive import record_logs as records; "
                    "from pathlib import Path; from llmarchive.archive.paths import ArchivePaths; records.append(ArchivePaths(Path(sys.argv[1])), "
                    "'instrument_alarm', {'date': '2026-11-04', 'source': 'guard_rotation', 'reason': 'y'})",
                    str(paths.home)], check=True, cwd=Path(__file__).resolve().parent.parent)
    latch = latched_alarm(paths)
    assert latch is not None and latch["since"] == "2026-11-04" and latch["reason"] == "y"


def test_a_transient_difference_is_not_accepted_by_the_acknowledgement(paths):
    _clean_start(paths)
    expected = runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp04", 0))).record
    assert runtime_fingerprint(paths, "2026-11-04", lambda: PromptEngine()).status == "pass"
    assert not list(candidates_dir(paths).glob("*.json")), "a passing day discards the candidate"
    record = acknowledge(paths, "one flaky morning", "Ada", date="2026-11-04").record
    assert record["accepted_expectations"] == []
    assert runtime_fingerprint(paths, "2026-11-05", lambda: PromptEngine()).status == "pass"
    assert expected["expected_digest"] == runtime_fingerprint(paths, "2026-11-06", lambda: PromptEngine()).record[
        "digest"]


def test_a_run_resumed_during_a_latch_is_suspect_though_it_started_on_a_clean_day(paths):
    from llmarchive.archive import write_json

    _clean_start(paths)
    write_json(paths.run_dir("started-clean") / "run.json", {"run_date": "2026-11-02"})
    assert suspect_value(paths, None, "started-clean") is False
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp03", 0)))
    assert "latched since 2026-11-03" in str(suspect_value(paths, None, "started-clean"))


def test_an_acknowledgement_needs_a_core_change_and_a_reviewer(paths, capsys):
    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp01", 0)))
    assert main(["instrument", "acknowledge", "--core-change", "  ", "--reviewer", "Ada"]) == 2
    assert "--core-change is required and may not be empty" in capsys.readouterr().err
    assert main(["instrument", "acknowledge", "--core-change", "a new CPU", "--reviewer", ""]) == 2
    assert "--reviewer is required and may not be empty" in capsys.readouterr().err
    with pytest.raises(AcknowledgeError):
        acknowledge(paths, "a new CPU", None)
    assert read_core_changes(paths) == [] and latched_alarm(paths) is not None


def test_acknowledging_with_nothing_latched_says_so_and_records_nothing(paths, capsys):
    _clean_start(paths)
    assert main(["instrument", "acknowledge", "--core-change", "nothing really", "--reviewer", "Ada"]) == 0
    assert "nothing to acknowledge" in capsys.readouterr().out
    assert read_core_changes(paths) == []


def test_the_status_command_shows_the_latch(paths, capsys):
    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp01", 0)))
    runtime_fingerprint(paths, "2026-11-04", lambda: PromptEngine())
    assert main(["instrument", "status", "--date", "2026-11-04", "--json"]) == 1
    shown = json.loads(capsys.readouterr().out)
    assert shown["passing"] is False and shown["latched_alarm"]["since"] == "2026-11-03"


# --------------------------------------------------------------------------
# the guard rotation compares with the last accepted baseline
# --------------------------------------------------------------------------


def _subjects(paths, pid):
    protocol = registry.load_protocol(paths, pid)
    max_tokens = protocol["generation"]["max_tokens"]
    b_texts = {item["versions"]["B"] for item in protocol["panel"]}
    steady = ScriptedSubject(lambda p: "DECISION: A", max_tokens)
    swayed = ScriptedSubject(lambda p: "DECISION: B" if p in b_texts else "DECISION: A", max_tokens)
    return steady, swayed


def test_the_rotation_never_compares_with_a_result_that_raised_an_alarm(admitted):
    paths = admitted
    pid = due_protocol(paths, "2026-11-01")
    steady, swayed = _subjects(paths, pid)
    base = guard_rotation(paths, "2026-11-01", steady, protocol_id=pid)
    moved = guard_rotation(paths, "2026-11-11", swayed, protocol_id=pid)
    assert moved["verdict"] == "regressed"
    back = guard_rotation(paths, "2026-11-21", steady, protocol_id=pid)
    assert back["verdict"] == "flat" and back["previous_run_id"] == base["run_id"]
    assert len(records.read(paths, "instrument_alarm")) == 1, "returning to the baseline raises nothing new"
    again = guard_rotation(paths, "2026-12-01", swayed, protocol_id=pid)
    assert again["verdict"] == "regressed" and again["previous_run_id"] == base["run_id"]


def test_an_acknowledged_rotation_result_becomes_the_baseline(admitted):
    paths = admitted
    pid = due_protocol(paths, "2026-11-01")
    steady, swayed = _subjects(paths, pid)
    guard_rotation(paths, "2026-11-01", steady, protocol_id=pid)
    moved = guard_rotation(paths, "2026-11-11", swayed, protocol_id=pid)
    record = acknowledge(paths, "the reference model file was replaced on purpose", "Ada", date="2026-11-12").record
    assert record["accepted_rotations"] == [moved["run_id"]]
    later = guard_rotation(paths, "2026-11-21", swayed, protocol_id=pid)
    assert later["verdict"] == "flat" and later["previous_run_id"] == moved["run_id"]
    assert latched_alarm(paths) is None


# --------------------------------------------------------------------------
# the Dagster job
# --------------------------------------------------------------------------

def test_the_dagster_acknowledge_job_records_the_core_change(paths):
    from assets.instrument import acknowledge_instrument_job
    from assets.resources import ArchiveResource

    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(runtime=NEW_RUNTIME))
    resources = {"archive": ArchiveResource(home=str(paths.home))}

    def config(change, reviewer):
        return {"ops": {"acknowledge_instrument_alarm": {"config": {"core_change": change, "reviewer": reviewer}}}}

    refused = acknowledge_instrument_job.execute_in_process(run_config=config("", "Ada"), resources=resources,
                                                            raise_on_error=False)
    assert not refused.success and read_core_changes(paths) == []
    result = acknowledge_instrument_job.execute_in_process(
        run_config=config("llama-cpp-python upgraded", "Ada"), resources=resources)
    assert result.success and result.output_for_node("acknowledge_instrument_alarm") is True
    [ack] = read_core_changes(paths)
    assert ack["core_change"] == "llama-cpp-python upgraded" and ack["reviewer"] == "Ada"
    assert latched_alarm(paths) is None
    idle = acknowledge_instrument_job.execute_in_process(run_config=config("again", "Ada"), resources=resources)
    assert idle.success and idle.output_for_node("acknowledge_instrument_alarm") is False
    assert len(read_core_changes(paths)) == 1


def test_the_acknowledge_job_served_by_the_definitions_runs_with_their_resources(paths):
    from assets.definitions_builder import build_definitions
    from assets.resources import ArchiveResource

    _clean_start(paths)
    runtime_fingerprint(paths, "2026-11-03", lambda: PromptEngine(tamper=("fp06", 0)))
    served = build_definitions({"archive": ArchiveResource(home=str(paths.home))})
    job = served.get_job_def("acknowledge_instrument_job")
    result = job.execute_in_process(run_config={"ops": {"acknowledge_instrument_alarm": {
        "config": {"core_change": "container image rebuilt", "reviewer": "Ada"}}}})
    assert result.success and latched_alarm(paths) is None
    assert read_core_changes(paths)[0]["core_change"] == "container image rebuilt"


# --------------------------------------------------------------------------
# issue 17 §2: the latch covers runs in flight
# --------------------------------------------------------------------------

OPEN_PROTOCOL = "base_rate_neglect__wording__v0"


def test_an_alarm_raised_while_a_same_day_run_is_calling_the_model_leaves_it_instrument_suspect(
        archive_home, monkeypatch, capsys):
    """The guard rotation alarms (here: from inside the provider's handler) while the run still has calls open."""
    from llmarchive.instrument import raise_alarm
    from tests.panels_helpers import built_paths

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    paths = built_paths(monkeypatch, None)
    _clean_start(paths)
    respond = decide_by_hash()
    seen = {"n": 0}

    def alarm_mid_run(request):
        seen["n"] += 1
        if seen["n"] == 60:     # half-way: no measurement exists yet for the alarm's marking to find
            raise_alarm(paths, "2026-11-02", "guard_rotation", "a guard protocol moved past its margin")
        return respond(request)

    with FakeProvider(alarm_mid_run) as fake:
        assert main(["run", OPEN_PROTOCOL, "--subject", "openai", "--model", "local", "--base-url", fake.base_url,
                     "--unbudgeted", "--run-id", "in-flight", "--run-date", "2026-11-02", "--quiet",
                     "--concurrency", "4"]) == 0
    capsys.readouterr()
    assert seen["n"] == 120
    folder = load_run(paths.run_dir("in-flight"))
    assert "instrument_suspect" in folder.measurement["flags"] and folder.measurement["on_curve"] is False
    assert "instrument_alarm from guard_rotation" in folder.measurement["flag_reasons"]["instrument_suspect"]
    assert "instrument_alarm from guard_rotation" in folder.run["instrument_suspect"]


@pytest.mark.parametrize("when", ["just before the measurement is written", "just after it is written"])
def test_an_alarm_landing_beside_the_measurement_write_is_never_missed(admitted, monkeypatch, when):
    """Either side of the write: the alarm's marking finds the measurement, or the run finds the alarm."""
    import threading

    from llmarchive.run import runner
    from llmarchive.archive import store
    from llmarchive.instrument import raise_alarm

    _clean_start(admitted)
    real_write = store.write_json   # the store writes every run-folder file (the runner's measurement too)
    raisers: list[threading.Thread] = []

    def alarm(): raise_alarm(admitted, "2026-11-02", "runtime_fingerprint", "a digest changed at noon")

    def write_json(path, data):
        if path.name != "measurement.json" or raisers:
            return real_write(path, data)
        if when.startswith("just before"):
            raisers.append(threading.current_thread())
            alarm()     # its marking finds no measurement yet (this run holds the folder's lock)
            return real_write(path, data)
        real_write(path, data)
        raiser = threading.Thread(target=alarm)   # another process's alarm, waiting for the run's lock
        raisers.append(raiser)
        raiser.start()

    monkeypatch.setattr(store, "write_json", write_json)
    protocol = registry.load_protocol(admitted, OPEN_PROTOCOL)
    subject = ScriptedSubject(lambda prompt: "DECISION: A", protocol["generation"]["max_tokens"])
    result = runner.run_protocol(admitted, protocol, subject,
                                 runner.RunSettings(run_id="beside-the-write", run_date="2026-11-02"))
    for raiser in raisers:
        if raiser is not threading.current_thread():
            raiser.join()
    assert result.complete and suspect_value(admitted, "2026-11-02")
    folder = load_run(admitted.run_dir("beside-the-write"))
    assert "instrument_suspect" in folder.measurement["flags"], when
    assert "instrument_alarm from runtime_fingerprint" in folder.measurement["flag_reasons"]["instrument_suspect"]


def test_the_roots_an_alarm_walks_are_every_place_a_run_folder_lives(paths):
    """The curve's, the held ones and the guard rotation's own: no run folder is outside a suspect day."""
    from llmarchive.instrument.rotation import instrument_paths
    from llmarchive.instrument import run_roots
    from llmarchive.succession import held_paths

    assert run_roots(paths) == [instrument_paths(paths).experiments, held_paths(paths).experiments,
                                paths.experiments]
