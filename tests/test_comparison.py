"""Comparison points: a comparison run's trials.jsonl is accepted as it is; every rejection reason is named."""
import json
import shutil

import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.protocols import registry
from llmarchive.budget import unbudgeted
from llmarchive.cli import main
from llmarchive.comparison.intake import EXPLORATORY_NOTE, SubmissionRejected, submit
from llmarchive.comparison.run import EXPLORATORY_NOTE as COMPARISON_RUN_NOTE
from llmarchive.instrument import due_protocol
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.anthropic import AnthropicSubject
from measure.measurement import build
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.instrument_helpers import admitted_archive

OPEN = "risky_choice_framing__wording__v0"
GUARD = "risky_choice_framing__anchoring__v0"
MODEL = "outside-lab-model-2026-11"


def comparison_run_settings(run_id: str, run_date: str) -> RunSettings:
    """What ``llmarchive comparison run`` gives the runner (llmarchive.comparison.run): an outsider's run made here."""
    return RunSettings(run_id=run_id, run_date=run_date, concurrency=8, exploratory=COMPARISON_RUN_NOTE,
                       extra={"comparison_run": {"panel_file": f"{OPEN}.json", "api": "anthropic"}})


@pytest.fixture(scope="module")
def twin_runs_template(tmp_path_factory):
    """An admitted archive with one complete comparison run of the open protocol (made here with the settings
    ``llmarchive comparison run`` uses) and one run of its guard twin."""
    home = tmp_path_factory.mktemp("comparison") / "archive"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMARCHIVE_HOME", str(home))
        mp.setenv("ANTHROPIC_API_KEY", "fake-credential-outside")
        mp.setenv("NO_PROXY", "127.0.0.1")
        paths = admitted_archive(mp)
        with FakeProvider(decide_by_hash()) as fake:
            for pid, run_id in ((OPEN, "open-run"), (GUARD, "guard-run")):
                protocol = registry.load_protocol(paths, pid)
                subject = AnthropicSubject(MODEL, protocol["generation"]["max_tokens"], base_url=fake.base_url)
                settings = (comparison_run_settings(run_id, "2026-11-10") if pid == OPEN else
                            RunSettings(run_id=run_id, run_date="2026-11-10", concurrency=8))
                run_protocol(paths, protocol, subject, settings, authorization=unbudgeted())
    return home


@pytest.fixture
def paths(twin_runs_template, archive_home, monkeypatch):
    """A fresh copy of ``twin_runs_template`` (with its guard seed set) for one test."""
    shutil.copytree(twin_runs_template, archive_home)
    monkeypatch.setenv("LLMARCHIVE_PANEL_SEED", "issue six seed number one")
    return ArchivePaths.from_env()


def trials_of(paths, run_id):
    return [json.loads(line) for line in (paths.run_dir(run_id) / "trials.jsonl").read_text().splitlines()]


def write(tmp_path, lines, name="submission.jsonl"):
    file = tmp_path / name
    file.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return file


def unchained(trials):
    return [{k: v for k, v in t.items() if k not in ("prev_sha256", "record_sha256")} for t in trials]


def nothing_stored(paths):
    assert records.read(paths, "comparison_point") == []
    assert not paths.comparison_points.exists() or list(paths.comparison_points.iterdir()) == []


def test_a_comparison_runs_trial_log_is_accepted_as_it_is_and_recomputed_here(paths):
    experiments_before = sorted(p.name for p in paths.experiments.iterdir())
    due_before = due_protocol(paths, "2026-11-20")
    file = paths.run_dir("open-run") / "trials.jsonl"
    accepted = submit(paths, file, submitted_by="a test lab", today="2026-11-12")
    record, m = accepted.record, accepted.record["measurement"]
    trials = trials_of(paths, "open-run")
    started = min(t["started_at"] for t in trials)[:10]      # a trial log carries no run_date: when it started
    assert (record["protocol_id"], record["model_id"], record["submitted_by"], record["run_date"]) == (
        OPEN, MODEL, "a test lab", started)
    header = registry.header(registry.load_protocol(paths, OPEN))
    expected = build(header, trials, {"run_id": "open-run", "run_date": started,
                                      "subject_model_id": MODEL, "series": None, "model_family": "third_party",
                                      "returned_model_id": MODEL, "api_surface_sha": None,
                                      "condition_profile": "third-party submission", "replicate_index": 0,
                                      "exploratory": EXPLORATORY_NOTE})
    assert m == expected
    assert "exploratory" in m["flags"] and m["on_curve"] is False, "never on a curve"
    assert m["panel_sha256"] == header["panel_sha256"] and m["grammar_version"] == 1 and m["n"] == 30
    assert (paths.comparison_points / f"{accepted.comparison_id}.jsonl").read_bytes() == file.read_bytes()
    # read-only: no run, no schedule change, nothing else recorded
    assert sorted(p.name for p in paths.experiments.iterdir()) == experiments_before
    assert due_protocol(paths, "2026-11-20") == due_before
    for kind in ("coverage", "skip", "guard_rotation", "instrument_alarm", "revalidation"):
        assert records.read(paths, kind) == []
    again = submit(paths, file, submitted_by="a test lab")
    assert again.already and len(records.read(paths, "comparison_point")) == 1


def test_a_header_line_may_declare_the_fields_and_must_agree(paths, tmp_path):
    trials = trials_of(paths, "open-run")
    header = {"record_type": "comparison_submission", "protocol_id": OPEN, "model_id": MODEL, "grammar_version": 1,
              "n": 30, "panel_sha256": registry.load_protocol(paths, OPEN)["panel_sha256"],
              "run_date": "2026-11-10", "submitted_by": "lab in the header", "model_family": "outside-family"}
    accepted = submit(paths, write(tmp_path, [header] + trials))
    assert accepted.record["submitted_by"] == "lab in the header"
    assert accepted.record["measurement"]["model_family"] == "outside-family"


def mutate_panel(trials, header):
    trials[5]["prompt_sha256"] = "0" * 64


def mutate_grammar_declared(trials, header):
    header["grammar_version"] = 2


def mutate_grammar_extraction(trials, header):
    t = next(t for t in trials if t["outcome"] == "valid")
    t["token"] = "B" if t["token"] == "A" else "A"


def mutate_n(trials, header):
    trials.pop(7)


def mutate_versions(trials, header):
    trials[:] = [t for t in trials if t["version"] != "C"]


def mutate_outcomes(trials, header):
    del trials[3]["outcome"]


def mutate_two_models(trials, header):
    trials[0]["returned_model_id"] = "another-model"


def mutate_alias(trials, header):
    for t in trials:
        t["returned_model_id"] = "claude-sonnet-latest"


def mutate_no_submitter(trials, header):
    header.pop("submitted_by")


@pytest.mark.parametrize("mutate,condition,words", [
    (mutate_panel, "panel_sha256", "not this panel's"),
    (mutate_grammar_declared, "grammar_version", "declared 2"),
    (mutate_grammar_extraction, "grammar_version", "do not re-extract"),
    (mutate_n, "n", "exactly n = 30"),
    (mutate_versions, "versions", "C missing"),
    (mutate_outcomes, "outcome_distribution", "closed list"),
    (mutate_two_models, "model_id", "2 models"),
    (mutate_alias, "model_id", "not an exact model id"),
    (mutate_no_submitter, "submitted_by", "name who submits"),
])
def test_each_rejection_reason_is_named_and_nothing_is_stored(paths, tmp_path, mutate, condition, words):
    trials = unchained(trials_of(paths, "open-run"))
    header = {"record_type": "comparison_submission", "submitted_by": "a test lab"}
    mutate(trials, header)
    with pytest.raises(SubmissionRejected) as info:
        submit(paths, write(tmp_path, [header] + trials))
    reasons = info.value.reasons
    assert any(c == condition and words in message for c, message in reasons), reasons
    nothing_stored(paths)


def test_a_guard_protocol_is_refused_because_its_panel_is_not_public(paths):
    with pytest.raises(SubmissionRejected) as info:
        submit(paths, paths.run_dir("guard-run") / "trials.jsonl", submitted_by="a test lab")
    assert ("protocol", f"{GUARD} is in the guard lane; comparison points are accepted only on open panels") \
        in info.value.reasons
    nothing_stored(paths)


def test_every_reason_is_reported_at_once(paths, tmp_path):
    trials = trials_of(paths, "open-run")
    header = {"record_type": "comparison_submission", "grammar_version": 2, "model_id": "gpt-*"}
    next(t for t in trials if t["version"] == "B")["prompt_sha256"] = "1" * 64    # also breaks the chain
    trials = [t for t in trials if not (t["version"] == "A_prime")]
    with pytest.raises(SubmissionRejected) as info:
        submit(paths, write(tmp_path, [header] + trials))
    conditions = {c for c, _ in info.value.reasons}
    assert conditions >= {"panel_sha256", "grammar_version", "versions", "model_id", "submitted_by", "chain"}
    file = tmp_path / "submission.jsonl"
    lines = str(info.value).split("\n")
    count = len(info.value.reasons)
    assert lines[0] == f"{file}: submission rejected, nothing stored ({count} reasons):"
    assert lines[1:] == [f"{file}: {c}: {m}" for c, m in info.value.reasons], "one line per reason, naming the file"
    nothing_stored(paths)


def test_a_file_that_is_not_a_submission_is_refused_cleanly(paths, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("my model scored 100%\n")
    with pytest.raises(SubmissionRejected) as info:
        submit(paths, bad, submitted_by="x")
    assert ("format", "line 1 is not JSON (Expecting value)") in info.value.reasons
    with pytest.raises(SubmissionRejected, match="cannot be read"):
        submit(paths, tmp_path / "missing.jsonl", submitted_by="x")
    nothing_stored(paths)


def test_the_cli_accepts_and_refuses(paths, tmp_path, capsys):
    file = paths.run_dir("open-run") / "trials.jsonl"
    assert main(["comparison", "submit", str(file)]) == 2
    assert "submitted_by: name who submits" in capsys.readouterr().err
    assert main(["comparison", "submit", str(file), "--submitted-by", "a test lab"]) == 0
    out = capsys.readouterr().out
    assert "accepted: comparison point cp-" in out and "not a ranking" in out


# --------------------------------------------------------------------------
# bad input: one line per reason naming the file and the condition, never a traceback (issues 14, 24)
# --------------------------------------------------------------------------

OTHER_OPEN = "base_rate_neglect__wording__v0"


def refused_reason_by_reason(paths, file, capsys, *words):
    """The CLI refuses ``file`` with exit 2 (bad input, like every other): a first line naming it and how many
    reasons, then one line per reason, each naming the file; each of ``words`` is in one of them.  Returns the
    reason lines joined by newlines."""
    code = main(["comparison", "submit", str(file), "--submitted-by", "a test lab"])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2 and captured.out == ""
    assert lines[0].startswith(f"error: {file}: submission rejected, nothing stored ("), lines[0]
    count = int(lines[0].rsplit("(", 1)[1].split()[0])
    assert len(lines) == 1 + count and all(line.startswith(f"{file}: ") for line in lines[1:]), lines
    for word in words:
        assert any(word in line for line in lines[1:]), (word, lines)
    nothing_stored(paths)
    return "\n".join(lines[1:])


def test_a_file_that_is_not_utf8_is_refused_reason_by_reason_naming_the_file(paths, tmp_path, capsys):
    good = (paths.run_dir("open-run") / "trials.jsonl").read_bytes()
    first_newline = good.index(b"\n") + 1
    bad = tmp_path / "latin1.jsonl"
    prefix = b'{"record_type": "trial", "response_text": "caf'
    bad.write_bytes(good[:first_newline] + prefix + b'\xe9"}\n')          # Latin-1 é
    at = first_newline + len(prefix)
    refused_reason_by_reason(paths, bad, capsys, f"format: the file is not UTF-8 text (byte {at}, line 2)")


def test_a_truncated_last_line_is_refused_reason_by_reason_naming_the_line(paths, tmp_path, capsys):
    good = (paths.run_dir("open-run") / "trials.jsonl").read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(good[:-40])                     # a transfer that stopped inside the last record
    refused_reason_by_reason(paths, cut, capsys, "format: line 120 is cut off: the file ends in the middle of a record")


def test_many_lines_that_are_not_json_are_summarised_in_the_one_line(paths, tmp_path, capsys):
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(trials_of(paths, "open-run")[0], indent=2) + "\n")
    line = refused_reason_by_reason(paths, pretty, capsys, "line 2 is not JSON", "more line(s) that are not JSON",
                               "holds no trial record")
    assert line.count("is not JSON (") == 3


@pytest.mark.parametrize("where,key,value,words", [
    ("trial", "replicate_index", "0", "replicate_index that is not a non-negative integer (line 2: a string"),
    ("trial", "replicate_index", -1, "replicate_index that is not a non-negative integer (line 2: an integer"),
    ("trial", "replicate_index", True, "replicate_index that is not a non-negative integer (line 2: a boolean"),
    ("trial", "version", ["A"], "version that is not a string (line 2: a list"),
    ("trial", "item_id", 7, "item_id that is not a string (line 2: an integer"),
    ("trial", "outcome", {"valid": 1}, "outcome that is not a string (line 2: an object"),
    ("trial", "token", 5, "token that is not a string or null (line 2: an integer"),
    ("trial", "response_text", 3.5, "response_text that is not a string or null (line 2: a number"),
    ("trial", "returned_model_id", ["m"], "returned_model_id that is not a string or null (line 2: a list"),
    ("trial", "prompt_sha256", 0, "prompt_sha256 that is not a string (line 2: an integer"),
    ("header", "n", "30", "the header's n must be an integer, got a string"),
    ("header", "grammar_version", "1", "the header's grammar_version must be an integer, got a string"),
    ("header", "protocol_id", [OPEN], "the header's protocol_id must be a string, got a list"),
    ("header", "model_id", 5, "the header's model_id must be a string, got an integer"),
    ("header", "run_date", 20261110, "the header's run_date must be a string, got an integer"),
])
def test_a_field_of_the_wrong_type_is_named_reason_by_reason(paths, tmp_path, capsys, where, key, value, words):
    trials = unchained(trials_of(paths, "open-run"))
    header = {"record_type": "comparison_submission", "run_date": "2026-11-10"}
    (trials[0] if where == "trial" else header)[key] = value
    expected = ("format: 1 trial(s) carry " if where == "trial" else "format: ") + words
    refused_reason_by_reason(paths, write(tmp_path, [header] + trials), capsys, expected)


def test_a_null_outcome_is_a_format_problem_because_every_real_trial_has_one(paths, tmp_path):
    """The schema's reconciled nullability: a trial's outcome is never null (the old intake let null through)."""
    trials = unchained(trials_of(paths, "open-run"))
    trials[2]["outcome"] = None
    with pytest.raises(SubmissionRejected) as info:
        submit(paths, write(tmp_path, trials), submitted_by="a test lab")
    assert ("format", "1 trial(s) carry outcome that is not a string (line 3: null)") in info.value.reasons
    nothing_stored(paths)


@pytest.mark.parametrize("key,value,words", [
    ("latency_ms", "12", "latency_ms that is not a non-negative integer (line 1: a string)"),
    ("answered", 1, "answered that is not true or false (line 1: an integer)"),
    ("retry_causes", "timeout", "retry_causes that is not a list or an object (line 1: a string)"),
])
def test_every_schema_field_a_submission_carries_is_judged_by_the_schema_type(paths, tmp_path, key, value, words):
    trials = unchained(trials_of(paths, "open-run"))
    trials[0][key] = value
    with pytest.raises(SubmissionRejected) as info:
        submit(paths, write(tmp_path, trials), submitted_by="a test lab")
    assert ("format", f"1 trial(s) carry {words}") in info.value.reasons
    nothing_stored(paths)


def test_no_field_of_any_json_type_makes_a_traceback(paths, tmp_path):
    """Every judged field of a trial and of the header, set to each JSON type: accepted or refused, nothing else."""
    from llmarchive.comparison.intake import HEADER_TYPES
    from measure.schema import TRIAL_FIELD_NAMES

    base = unchained(trials_of(paths, "open-run"))
    values = [None, True, -3, 2.5, "x", [], ["A"], {}, {"a": 1}]
    for where, keys in (("trial", TRIAL_FIELD_NAMES), ("header", HEADER_TYPES)):
        for key in keys:
            for value in values:
                trials = [dict(t) for t in base]
                header = {"record_type": "comparison_submission", "run_date": "2026-11-10"}
                target = trials[4] if where == "trial" else header
                target[key] = value
                file = write(tmp_path, [header] + trials, name=f"{where}-{key}.jsonl")
                try:
                    submit(paths, file, submitted_by="a fuzzing lab")
                except SubmissionRejected as exc:
                    assert all(line.startswith(f"{file}: ") for line in str(exc).split("\n"))


def test_a_header_from_another_protocol_is_refused_reason_by_reason(paths, tmp_path, capsys):
    other = registry.load_protocol(paths, OTHER_OPEN)
    header = {"record_type": "comparison_submission", "protocol_id": OTHER_OPEN,
              "panel_sha256": other["panel_sha256"], "n": other["n"], "grammar_version": other["grammar_version"]}
    refused_reason_by_reason(paths, write(tmp_path, [header] + trials_of(paths, "open-run")), capsys,
                        f"protocol: the header names {OTHER_OPEN} but the trials are of {OPEN}",
                        "panel_sha256:")
