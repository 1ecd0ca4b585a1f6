"""The demo's own steps, each on its own (the whole demo runs the model for half an hour: not here).

* the known-answer step: three simulated readers filed through the outsider
  route on a small admitted home, each recovered, and filed once however
  often the demo runs;
* the closing block: what was measured, what is on or off the curve and why,
  the known-answer table, where to look;
* the console: an expected check failure is one line saying why, and a
  step that runs the model reports its progress;
* the instrument step on the real model: the first fingerprint only
  establishes the expectation, so it is run once more and compared, and the
  day's verdict passes on that comparison.
"""
import pytest

from scripts import demo_console as console
from scripts.demo import fingerprint_step, known_answers_step
from assets.reporting import gate_check_results
from llmarchive.archive import record_logs as records
from llmarchive.protocols import registry
from scripts.demo_archive import KNOWN_ANSWER_PROTOCOL, admit_demo_protocols, closing_block
from llmarchive.instrument import day_verdict, due_protocol, guard_rotation
from llmarchive.run import LogLines
from measure.measurement import build
from panels import readers
from tests.dagster_helpers import resources, today
from tests.instrument_helpers import ScriptedSubject


@pytest.fixture
def demo_home(paths, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    admit_demo_protocols(paths)
    return paths


def mostly_unreadable(protocol, readable_every: int = 8) -> dict:
    """A measurement like the embedded model's: one answer in ``readable_every`` in the format, the rest not."""
    trials = readers.trials("normative", protocol)
    for index, trial in enumerate(trials):
        if index % readable_every:
            trial.update(outcome="unparseable", token=None, reason="no_decision_line", response_text="I think so.")
    run = {"run_id": "ow-test", "run_date": "2026-12-02", "subject_model_id": "SmolLM2-135M-Instruct.Q4_1.gguf",
           "series": "open_weights", "model_family": "smollm2", "returned_model_id": "SmolLM2-135M-Instruct.Q4_1.gguf",
           "api_surface_sha": None, "condition_profile": "reference", "replicate_index": 0,
           "instrument_suspect": False, "exploratory": False}
    return build(protocol, trials, run)


def test_the_known_answer_step_files_three_recovered_points_once_and_the_closing_block_says_what_it_all_means(
        demo_home, capsys):
    day = today()
    points = known_answers_step(demo_home, day)
    said = capsys.readouterr().out
    assert [p.model_id for p in points] == [readers.simulated_model_id(n) for n in readers.KNOWN_ANSWER_READERS]
    assert all(p.problems == [] and p.called == 120 and not p.already for p in points)
    assert said.count("known answer recovered") == 3 and "NOT RECOVERED" not in said
    filed = records.read(demo_home, "comparison_point")
    assert sorted(r["model_id"] for r in filed) == sorted(p.model_id for p in points)
    assert all(r["submitted_by"].startswith("make demo") and r["protocol_id"] == KNOWN_ANSWER_PROTOCOL for r in filed)
    assert not list((demo_home.experiments).glob("comparison_*")), "the outsider's runs live in its own home"

    again = known_answers_step(demo_home, day)
    assert all(p.already and p.called == 0 for p in again), "a second demo run resumes: nothing sent, nothing refiled"
    assert len(records.read(demo_home, "comparison_point")) == 3

    own = [mostly_unreadable(registry.load_protocol(demo_home, KNOWN_ANSWER_PROTOCOL))]
    block = closing_block(points, own, model="smollm2-135m", day=day, instrument="passing", public=demo_home.public)
    readable = sum(v["valid"] for v in own[0]["outcomes"].values())
    assert f"{readable} of 120 answers readable; off the curve (" in block and "honest result for smollm2-135m" in block
    header = next(line for line in block.splitlines() if "expected" in line and "95% interval" in line)
    assert header.split() == ["reader", "expected", "measured", "gap", "95%", "interval", "flags"]
    rows = {line.split()[0]: line for line in block.splitlines() if line.strip().startswith("simulated-reader-")}
    protocol = registry.load_protocol(demo_home, KNOWN_ANSWER_PROTOCOL)
    framing = readers.known_answer(readers.FRAMING_SENSITIVE, protocol)["figures"]["gap_ab_pct"]
    assert f"an A↔B gap of {framing:.1f} points" in rows["simulated-reader-framing-sensitive"]
    assert "not_reading" in rows["simulated-reader-ignores-question"]
    assert "at the noise floor" in rows["simulated-reader-invariant"]
    assert "3 of 3 known answers recovered" in block
    assert "index.html" in block and "comparison_points" in block and "never on a curve" in block


def test_an_expected_check_failure_is_one_line_saying_why_and_an_unexpected_one_is_not_excused(demo_home):
    protocol = registry.load_protocol(demo_home, KNOWN_ANSWER_PROTOCOL)
    own = mostly_unreadable(protocol)
    lines = console.check_lines(gate_check_results("open_weights_measurements", [own]), [own], model="smollm2-135m")
    failed = [line for line in lines if "failed" in line]
    assert failed and all("failed as expected: smollm2-135m rarely answers in the format" in line for line in failed)
    assert all("answers readable" in line for line in failed) and not any("FAILED" in line for line in lines)
    assert any("check drop_bound failed as expected" in line and "the losses alone could explain any gap" in line
               for line in lines)

    blind = readers.measure_reader(readers.CONSTANT, protocol)      # every answer readable, C moves nothing
    plain = console.check_lines(gate_check_results("open_weights_measurements", [blind]), [blind])
    assert any(line.startswith("   check positive_control failed: ") for line in plain), plain
    assert not any("as expected" in line for line in plain), "every answer readable: a failure is not excused"


def test_the_guard_rotation_reports_progress_with_readable_counts(admitted):
    day = "2026-11-01"
    pid = due_protocol(admitted, day)
    protocol = registry.load_protocol(admitted, pid)
    max_tokens = protocol["generation"]["max_tokens"]
    subject = ScriptedSubject(lambda p: "DECISION: A" if len(p) % 3 else "no idea", max_tokens)
    lines: list[str] = []
    guard_rotation(admitted, day, subject, protocol_id=pid, progress=LogLines(lines.append, every=40))
    assert [line.split(":")[1].split()[0] for line in lines] == ["40/120", "80/120", "120/120"]
    assert all(line.startswith(pid) and "readable" in line and "of the" in line for line in lines)


@pytest.mark.slow
def test_the_demo_checks_a_new_fingerprint_once_more_so_the_days_verdict_rests_on_a_comparison(paths, instance, capsys):
    day = today()
    statuses = fingerprint_step(instance, resources(paths), day)
    assert statuses == ["established", "pass"]
    assert [r["status"] for r in records.read(paths, "runtime_fingerprint") if r["date"] == day] == statuses
    assert day_verdict(paths, day).passing, day_verdict(paths, day).reason
    said = capsys.readouterr().out
    assert "runtime fingerprint: established" in said and "checked once more against it" in said
    logged = [entry.user_message for run in instance.get_runs() for entry in instance.all_logs(run.run_id)]
    assert any("runtime fingerprint: 12/12 prompts" in message for message in logged), "progress while the model runs"
    assert any("the day's instrument verdict: passing" in message for message in logged)
