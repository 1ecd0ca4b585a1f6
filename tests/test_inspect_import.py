"""Inspect AI eval logs become comparison points: ``llmarchive comparison import LOG --panel FILE --out FILE``.

The logs are real: the published task run by Inspect's own ``inspect eval``
against the simulated readers' server (tests.inspect_helpers.reader_run).
Imported and submitted, each known-answer reader's point must come back
with the reader's known figures — the whole outsider route through a
harness (prompts as published, HTTP, Inspect, import, grammar, estimator,
intake) is the positive control.  A tampered log is made from a real one
with Inspect's own API (``read_eval_log`` / ``write_eval_log``) and must be
refused, every reason listed at once, nothing written.
"""
import json
import shutil
import sys

import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.cli import main
from llmarchive.comparison import harness_import
from llmarchive.comparison.inspect_log import InspectLogError, submission_from_inspect_log
from llmarchive.comparison.log_submission import LogImportRefused
from llmarchive.comparison.reader_server import SYSTEM_FINGERPRINT
from llmarchive.protocols import open_panels
from measure.schema import VERSIONS
from panels import readers
from tests.inspect_helpers import OPEN, reader_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reader_run(tmp_path_factory)


@pytest.fixture(scope="module")
def panel(run):
    return run.panels / f"{OPEN}.json"


def tampered(run, tmp_path, change, reader=readers.FRAMING_SENSITIVE):
    """A copy of a real log changed through Inspect's own API (read, change the EvalLog, write)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(run.logs[reader]), resolve_attachments=True)
    change(log)
    out = tmp_path / f"tampered-{len(list(tmp_path.glob('tampered-*')))}.eval"
    write_eval_log(log, str(out))
    return out


def refusal(log_file, panel, out):
    """The reasons an import of ``log_file`` is refused with; checks nothing was written."""
    doc = open_panels.load_panel_file(panel)
    with pytest.raises(LogImportRefused) as refused:
        harness_import.import_log(log_file, panel, out)
    assert not out.exists(), "a refused log writes nothing"
    lines = str(refused.value).splitlines()
    assert lines[0] == f"{log_file}: import refused, nothing written ({len(lines) - 1} reason" + \
        ("s):" if len(lines) != 2 else "):")
    assert doc["protocol_id"] == OPEN
    return [line.removeprefix(f"{log_file}: ") for line in lines[1:]]


def sample_at(log, sample_id, epoch):
    return next(s for s in log.samples if s.id == sample_id and s.epoch == epoch)


def test_an_edited_input_is_refused_naming_the_sample(run, panel, tmp_path):
    def edit(log):
        sample = sample_at(log, "s02.A_prime", 1)
        sample.input = sample.input.replace("DECISION", "Decision", 1)

    reasons = refusal(tampered(run, tmp_path, edit), panel, tmp_path / "out.jsonl")
    assert len(reasons) == 1 and reasons[0].startswith(
        "sample s02.A_prime epoch 1: the input does not hash to the panel's prompt_sha256 for s02 A_prime (")
    assert reasons[0].endswith("…): the prompt was edited")
    print("\nedited input:\n  " + "\n  ".join(reasons))


def test_a_missing_epoch_is_refused_as_incomplete_naming_the_slot(run, panel, tmp_path):
    def drop(log):
        log.samples = [s for s in log.samples if not (s.id == "s07.C" and s.epoch == 2)]

    reasons = refusal(tampered(run, tmp_path, drop), panel, tmp_path / "out.jsonl")
    assert reasons == ["incomplete: 1 of 120 slots (scenario/version/epoch) have no answer: s07/C/2; the panel "
                       "needs 120 answers, one per slot"]
    print("\nmissing epoch:\n  " + "\n  ".join(reasons))


def test_a_temperature_set_in_the_generation_config_is_refused(run, panel, tmp_path):
    def warm(log):
        log.plan.config.temperature = 0.7

    reasons = refusal(tampered(run, tmp_path, warm), panel, tmp_path / "out.jsonl")
    assert reasons == ["the generation config sets temperature=0.7: the panel sets nothing but max_tokens (no "
                       "sampling parameter, no system message, no cache); run the task again without them"]
    print("\ntemperature set:\n  " + "\n  ".join(reasons))


def test_an_errored_sample_makes_the_log_incomplete_and_says_to_retry(run, panel, tmp_path):
    from inspect_ai.log import EvalError

    def fail(log):
        sample = sample_at(log, "s11.B", 2)
        sample.error = EvalError(message="ConnectionError: the server went away", traceback="", traceback_ansi="")
        log.status = "error"

    reasons = refusal(tampered(run, tmp_path, fail), panel, tmp_path / "out.jsonl")
    assert reasons == ["the eval's status is 'error', not 'success': the run did not finish",
                       "incomplete: 1 sample(s) errored or were halted, so they are not trials: s11/B/2; run "
                       "`inspect eval-retry` on this log and import the new one"]
    print("\nerrored sample:\n  " + "\n  ".join(reasons))


def test_every_reason_is_listed_at_once_and_the_command_exits_2(run, panel, tmp_path, capsys):
    def everything(log):
        sample_at(log, "s02.A_prime", 1).input += " "
        log.samples = [s for s in log.samples if not (s.id == "s07.C" and s.epoch == 2)]
        log.plan.config.temperature = 0.7
        log.plan.config.seed = 42
        sample_at(log, "s09.A", 1).output.model = "another-model-v2"

    log_file, out = tampered(run, tmp_path, everything), tmp_path / "out.jsonl"
    assert main(["comparison", "import", str(log_file), "--panel", str(panel), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("import refused, nothing written (4 reasons):") and len(err) == 5
    starts = ["sample s02.A_prime epoch 1: the input does not hash", "incomplete: 1 of 120 slots",
              "the generation config sets seed=42, temperature=0.7:", "the server reported 2 model ids (another-"]
    assert all(line.split(": ", 1)[1].startswith(start) for line, start in zip(err[1:], starts)), err
    assert not out.exists()


@pytest.mark.parametrize("value", [float("nan"), float("inf")], ids=["NaN", "Infinity"])
def test_a_generation_setting_that_is_not_a_finite_number_is_refused_in_one_line_naming_its_field(
        run, panel, tmp_path, capsys, value):
    """Issue 36, item 3: NaN in plan.config.temperature crashed the import in the canonical JSON encoder."""
    from inspect_ai.log import read_eval_log, write_eval_log

    as_json = tmp_path / "log.json"
    write_eval_log(read_eval_log(str(run.logs[readers.FRAMING_SENSITIVE])), str(as_json), format="json")
    document = json.loads(as_json.read_text(encoding="utf-8"))
    document["plan"]["config"]["temperature"] = value
    as_json.write_text(json.dumps(document), encoding="utf-8")     # NaN / Infinity, as Python's json writes them
    out = tmp_path / "out.jsonl"
    assert main(["comparison", "import", str(as_json), "--panel", str(panel), "--out", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {as_json}: import refused, nothing written (1 reason):",
        f"{as_json}: plan.config.temperature: a number that is not finite (NaN or infinity), which JSON cannot carry"]
    assert not out.exists()


def test_an_import_is_held_to_the_checks_of_a_submitted_header_and_writes_nothing_they_refuse(
        run, panel, tmp_path, capsys):
    """What `comparison submit` would refuse as malformed is refused at the import, not written for submit to refuse."""
    log_file, out = run.logs[readers.INVARIANT], tmp_path / "out.jsonl"
    assert main(["comparison", "import", str(log_file), "--panel", str(panel), "--out", str(out),
                 "--submitted-by", "x" * 201]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {log_file}: import refused, nothing written (1 reason):",
        f"{log_file}: the header's submitted_by is 201 characters long; at most 200 are accepted"]
    assert not out.exists()


def test_the_import_says_what_to_install_when_inspect_is_missing(run, panel, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(InspectLogError, match=r"needs Inspect AI, which is not installed: pip install inspect-ai$"):
        submission_from_inspect_log(run.logs[readers.INVARIANT], open_panels.load_panel_file(panel))
    stray = tmp_path / "notes.txt"
    stray.write_text("not a log", encoding="utf-8")
    with pytest.raises(harness_import.LogKindError, match="cannot tell which harness wrote this log"):
        harness_import.import_log(stray, panel, tmp_path / "out.jsonl")


def test_three_known_answer_readers_run_with_inspect_imported_and_submitted_recover_their_known_figures(
        run, panel, tmp_path, capsys):
    home = tmp_path / "archive"
    shutil.copytree(run.home, home)
    protocol = open_panels.protocol_from_panel_file(open_panels.load_panel_file(panel))
    points, rows = {}, []
    for name, log_file in run.logs.items():
        model, out = readers.simulated_model_id(name), tmp_path / f"{name}.jsonl"
        assert main(["comparison", "import", str(log_file), "--panel", str(panel), "--out", str(out),
                     "--submitted-by", "an outside lab"]) == 0
        lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        header, trials = lines[0], lines[1:]
        assert header["model_id"] == model and header["explicitly_set"] == {"model": model, "max_tokens": 256}
        assert len(trials) == 4 * protocol["n"] and {t["returned_model_id"] for t in trials} == {model}
        assert {t["system_fingerprint"] for t in trials} == {SYSTEM_FINGERPRINT}
        assert sorted((t["item_id"], t["version"], t["replicate_index"]) for t in trials) == sorted(
            (i, v, r) for i in protocol["item_ids"] for v in VERSIONS for r in range(protocol["n_per_scenario"]))
        assert main(["--home", str(home), "comparison", "submit", str(out), "--known-answer"]) == 0
        [point] = [p for p in records.read(ArchivePaths(home), "comparison_point") if p["model_id"] == model]
        points[name] = m = point["measurement"]
        known = readers.known_answer(name, protocol)
        assert m["gap_pct"] == pytest.approx(known["figures"]["gap_ab_pct"]), name
        assert m["gap_positive_pct"] == pytest.approx(known["figures"]["gap_ac_pct"]), name
        assert "exploratory" in m["flags"] and m["run_id"] == trials[0]["run_id"]
        rows.append((name, readers.KNOWN_ANSWER_WORDS[name], m))
    invariant, framing, blind = (points[n] for n in readers.KNOWN_ANSWER_READERS)
    assert invariant["gap_pct"] == 0 and invariant["at_noise_floor"] is True and "not_reading" not in invariant["flags"]
    gap = readers.known_answer(readers.FRAMING_SENSITIVE, protocol)["figures"]["gap_ab_pct"]
    assert gap > 20 and 100 - framing["ci_high_pct"] <= gap <= 100 - framing["ci_low_pct"]
    assert "not_reading" in blind["flags"] and "not_reading" not in framing["flags"]
    with capsys.disabled():
        print("\nknown answers through Inspect (reader | expected | A-B gap, A-C gap | stability interval | flags):")
        for name, words, m in rows:
            print(f"  {name} | {words} | {m['gap_pct']:.1f}, {m['gap_positive_pct']:.1f} (floor "
                  f"{m['null_floor_pct']:.1f}) | {m['ci_low_pct']:.1f}-{m['ci_high_pct']:.1f} | {', '.join(m['flags'])}")


def test_an_answer_longer_than_a_submissions_bound_is_refused_naming_its_slot(run, panel, tmp_path):
    """Issue 36, item 1: the text of one answer is held to the intake's bound (64 characters per token of the
    panel's max_tokens) when the log is read, not first at submission."""
    def ramble(log):
        sample_at(log, "s04.B", 2).output.completion = "x" * 20_000 + "\nDECISION: A"

    reasons = refusal(tampered(run, tmp_path, ramble), panel, tmp_path / "out.jsonl")
    assert reasons == ["1 answer(s) are longer than 16,384 characters (64 per token of the panel's max_tokens, a "
                       "submission's bound): s04/B/2 (20,012)"]
