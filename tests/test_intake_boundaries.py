"""The intake's acceptance conditions and the guard rotation's alarms, at their exact boundaries.

A comparison submission is read through :func:`llmarchive.comparison.intake.submit`,
the function ``llmarchive comparison submit`` calls, into a real admitted
archive.  Its trials are a real run of the open protocol made by the
archive's own runner in an outsider's home (a scripted subject answers, so
the run takes no model and no network), then edited one value at a time:
each cap is met exactly (accepted) and passed by one (refused, the
condition named) — the response's characters, the submitter's name, the run
id, the model id, the number of trials, the file's bytes — and the model id
is read against the alias rule at each edge of its pattern.

The rotation's alarms are read through :func:`llmarchive.instrument.rotation.guard_rotation`
on a real built guard protocol: a stability that rises is an alarm as much
as one that falls.
"""
import json
import shutil

import pytest

from llmarchive.archive import ArchivePaths, MODEL_ID_MAX, record_logs as records
from llmarchive.cli import main
from llmarchive.comparison.intake import SubmissionRejected, submit
from llmarchive.comparison.submission import (MAX_LINE_BYTES, MAX_SUBMISSION_BYTES, RESPONSE_CHARS_PER_TOKEN,
                                        SUBMITTED_BY_MAX)
from llmarchive.instrument import day_verdict, guard_rotation
from llmarchive.protocols import registry
from llmarchive.run import RunSettings, run_protocol
from tests.instrument_helpers import SEED, ScriptedSubject
from tests.panels_helpers import built_paths

OPEN = "risky_choice_framing__wording__v0"
GUARD = "risky_choice_framing__anchoring__v0"
MODEL = "outside-lab-model-2026-11"
LINE_PAD = 256 * 1024 - 1          # a blank line of this many spaces and its newline: 256 KiB


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """An archive with the open protocol and its guard twin admitted, and an outsider's complete run of the open one."""
    root = tmp_path_factory.mktemp("intake-boundaries")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMARCHIVE_HOME", str(root / "archive"))
        paths = built_paths(mp, SEED)
        paths.ensure()
        for pid, lane in ((OPEN, "open"), (GUARD, "guard")):
            assert main(["panels", "promote", pid, "--lane", lane, "--human-reviewed", "--reviewer", "T"]) == 0
        protocol = registry.load_protocol(paths, OPEN)
        outsider = ArchivePaths(root / "outsider").ensure()
        subject = ScriptedSubject(lambda p: "I choose the sure plan.\nDECISION: A" if "B" in p[:40] else
                                  "DECISION: B", protocol["generation"]["max_tokens"], name=MODEL)
        run = run_protocol(outsider, protocol, subject, RunSettings(run_id="outside-run", run_date="2026-11-10",
                                                                    concurrency=1))
        assert run.measurement is not None
        trials = [json.loads(line) for line in (outsider.run_dir("outside-run") / "trials.jsonl").read_text()
                  .splitlines()]
    return root / "archive", protocol, [{k: v for k, v in t.items() if k not in ("prev_sha256", "record_sha256")}
                                        for t in trials]


@pytest.fixture
def intake(template, archive_home, monkeypatch):
    """A fresh copy of the template archive, its trials (unchained, so one value can be edited) and the protocol."""
    home, protocol, trials = template
    shutil.copytree(home, archive_home)
    monkeypatch.setenv("LLMARCHIVE_PANEL_SEED", SEED)
    return ArchivePaths.from_env(), protocol, [dict(t) for t in trials]


def write(tmp_path, lines, name="submission.jsonl", pad_to=None):
    """The submission file; ``pad_to`` bytes in all, made up with blank lines (which the reader skips)."""
    data = "".join(json.dumps(x) + "\n" for x in lines).encode("utf-8")
    if pad_to is not None:
        rest = pad_to - len(data)
        assert rest >= 1
        data += (b" " * LINE_PAD + b"\n") * (rest // (LINE_PAD + 1))
        tail = rest % (LINE_PAD + 1)
        data += b" " * (tail - 1) + b"\n" if tail else b""
        assert len(data) == pad_to
    file = tmp_path / name
    file.write_bytes(data)
    return file


def outcome(paths, file, submitted_by="a test lab"):
    """``"accepted"``, or every refused condition's ``(condition, words)``."""
    try:
        submit(paths, file, submitted_by=submitted_by, today="2026-11-12")
    except SubmissionRejected as refused:
        return refused.reasons
    assert len(records.read(paths, "comparison_point")) == 1
    return "accepted"


def conditions(found) -> set:
    return {"accepted"} if found == "accepted" else {c for c, _ in found}


# --------------------------------------------------------------------------
# the caps, met exactly and passed by one
# --------------------------------------------------------------------------

@pytest.mark.parametrize("extra, accepted", [(0, True), (1, False)], ids=["exactly-the-cap", "one-over"])
def test_a_response_may_be_exactly_64_characters_per_token_of_the_panels_max_tokens(intake, tmp_path, extra,
                                                                                      accepted):
    paths, protocol, trials = intake
    assert RESPONSE_CHARS_PER_TOKEN == 64 and protocol["generation"]["max_tokens"] == 256
    limit = 16_384
    ending = "\nDECISION: A"
    trials[7].update(response_text="y" * (limit + extra - len(ending)) + ending, outcome="valid", token="A")
    assert len(trials[7]["response_text"]) == limit + extra
    found = outcome(paths, write(tmp_path, trials))
    assert conditions(found) == ({"accepted"} if accepted else {"size"}), found


@pytest.mark.parametrize("length, accepted", [(200, True), (201, False)], ids=["exactly-the-cap", "one-over"])
@pytest.mark.parametrize("where", ["argument", "header"])
def test_the_submitter_may_be_named_in_exactly_200_characters(intake, tmp_path, length, accepted, where):
    paths, _, trials = intake
    assert SUBMITTED_BY_MAX == 200
    name = "n" * length
    if where == "header":
        found = outcome(paths, write(tmp_path, [{"record_type": "comparison_submission", "submitted_by": name}]
                                     + trials), submitted_by=None)
    else:
        found = outcome(paths, write(tmp_path, trials), submitted_by=name)
    # the header's strings are capped as it is read (a format reason); the argument's by its condition
    refused = "format" if where == "header" else "submitted_by"
    assert conditions(found) == ({"accepted"} if accepted else {refused}), found
    if not accepted:
        assert any(f"{length} characters long; at most 200" in words for _, words in found), found


@pytest.mark.parametrize("length, accepted", [(200, True), (201, False)], ids=["exactly-the-cap", "one-over"])
def test_a_run_id_may_be_exactly_200_characters(intake, tmp_path, length, accepted):
    paths, _, trials = intake
    for t in trials:
        t["run_id"] = "r" * length
    found = outcome(paths, write(tmp_path, trials))
    assert conditions(found) == ({"accepted"} if accepted else {"run_id"}), found


@pytest.mark.parametrize("length, accepted", [(200, True), (201, False)], ids=["exactly-the-cap", "one-over"])
def test_a_model_id_may_be_exactly_200_characters(intake, tmp_path, length, accepted):
    paths, _, trials = intake
    assert MODEL_ID_MAX == 200
    for t in trials:
        t["returned_model_id"] = "m" * length
    found = outcome(paths, write(tmp_path, trials))
    assert conditions(found) == ({"accepted"} if accepted else {"model_id"}), found


@pytest.mark.parametrize("model_id, accepted", [
    ("claude-sonnet-latest", False), ("claude_sonnet_latest", False), ("claude.sonnet.latest", False),
    ("latest", False), ("claude-*", False), ("claude-sonnet-4?", False), ("claude-[45]", False),
    ("claude-sonnet-latest-2", True), ("claude-sonnetlatest", True), ("claude-latest.v2", True),
    ("claude-sonnet-4-5-20250929", True),
], ids=lambda v: str(v))
def test_an_alias_or_a_pattern_is_refused_as_model_id_and_an_exact_id_is_not(intake, tmp_path, model_id, accepted):
    paths, _, trials = intake
    for t in trials:
        t["returned_model_id"] = model_id
    found = outcome(paths, write(tmp_path, trials))
    assert conditions(found) == ({"accepted"} if accepted else {"model_id"}), found
    if not accepted:
        assert any("not an exact model id" in words for _, words in found), found


@pytest.mark.parametrize("edit, accepted", [
    ("complete", True), ("one-short", False), ("one-repeated", False), ("one-replaced", False),
])
def test_a_submission_is_exactly_four_times_n_trials_each_slot_once(intake, tmp_path, edit, accepted):
    paths, protocol, trials = intake
    assert len(trials) == 4 * protocol["n"]
    if edit == "one-short":
        trials = trials[:-1]
    elif edit == "one-repeated":
        trials = trials + [dict(trials[-1])]
    elif edit == "one-replaced":          # still 4 × n lines, but one slot twice and another missing
        trials = trials[:-1] + [dict(trials[-2])]
    found = outcome(paths, write(tmp_path, trials))
    assert conditions(found) == ({"accepted"} if accepted else {"n"}), found
    words = {"complete": None, "one-short": "a short run: 119 of the 120 trials",
             "one-repeated": "appears more than once", "one-replaced": "appears more than once"}[edit]
    if words:
        assert any(words in w for _, w in found), found


@pytest.mark.parametrize("extra, accepted", [(0, True), (1, False)], ids=["exactly-16-MiB", "one-byte-more"])
def test_a_submission_file_may_be_exactly_16_mib(intake, tmp_path, extra, accepted):
    paths, _, trials = intake
    assert MAX_SUBMISSION_BYTES == 16 * 1024 * 1024
    found = outcome(paths, write(tmp_path, trials, pad_to=MAX_SUBMISSION_BYTES + extra))
    assert conditions(found) == ({"accepted"} if accepted else {"size"}), found


@pytest.mark.parametrize("size, accepted", [(MAX_LINE_BYTES, True), (MAX_LINE_BYTES + 1, False)],
                         ids=["exactly-256-KiB", "one-byte-more"])
def test_one_line_may_hold_exactly_256_kib_before_its_newline(intake, tmp_path, size, accepted):
    paths, _, trials = intake
    assert MAX_LINE_BYTES == 256 * 1024
    file = write(tmp_path, trials)
    lines = file.read_bytes().splitlines(keepends=True)
    body = lines[5][:-2] + b" " * (size - len(lines[5]) + 1) + b"}"      # JSON's own whitespace, before the }
    assert len(body) == size and json.loads(body) == trials[5]
    lines[5] = body + b"\n"
    file.write_bytes(b"".join(lines))
    found = outcome(paths, file)
    if accepted:
        assert found == "accepted", found
    else:   # the line is not read, so the run is also one trial short
        assert any(c == "format" and w.startswith("line 6 is ") and f"may be at most {MAX_LINE_BYTES:,} bytes" in w
                   for c, w in found), found


# --------------------------------------------------------------------------
# the rotation: a move either way is an alarm
# --------------------------------------------------------------------------

def test_a_rotation_whose_stability_rises_is_an_improved_verdict_and_an_alarm(intake):
    paths, _, _ = intake
    protocol = registry.load_protocol(paths, GUARD)
    max_tokens = protocol["generation"]["max_tokens"]
    b_texts = {item["versions"]["B"] for item in protocol["panel"]}
    swayed = ScriptedSubject(lambda p: "DECISION: B" if p in b_texts else "DECISION: A", max_tokens)
    first = guard_rotation(paths, "2026-11-01", swayed, protocol_id=GUARD)
    assert first["verdict"] == "baseline" and first["stability_pct"] == 0.0
    steady = ScriptedSubject(lambda p: "DECISION: A", max_tokens)
    record = guard_rotation(paths, "2026-11-11", steady, protocol_id=GUARD)
    assert (record["verdict"], record["change_rule"], record["stability_pct"]) == ("improved", "improved", 100.0)
    [alarm] = records.read(paths, "instrument_alarm")
    assert (alarm["date"], alarm["source"], alarm["protocol_id"]) == ("2026-11-11", "guard_rotation", GUARD)
    assert "improved on the reference model" in alarm["reason"]
    assert day_verdict(paths, "2026-11-11").suspect
