"""The comparison intake files each outside run exactly once (issue 24 §3).

A run is its trials — each prompt (by hash) and its answer — not the file
that carries them: the same run under another header, note, submitter,
run id or extra key is refused, naming the earlier point; the archive's own
runs (the curve's, the held ones, the instrument's, the published open lane)
are refused however they are relabelled, while a run made here with
``llmarchive comparison run`` stays acceptable.  The repeat check and the
write share one lock; a refused submission writes nothing; outside text is
escaped on the terminal and refused in ids; the caps are named when they
refuse.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmarchive.archive import record_logs as records, store
from llmarchive.protocols import registry
from llmarchive.budget import unbudgeted
from llmarchive.cli import main
from llmarchive.comparison.intake import SubmissionRejected, submit
from llmarchive.comparison.submission import MAX_LINE_BYTES, MAX_SUBMISSION_BYTES
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.anthropic import AnthropicSubject
from tests.fake_provider import FakeProvider, Reply
from tests.test_comparison import (OPEN, nothing_stored, paths, trials_of, twin_runs_template,  # noqa: F401
                                   unchained, write)

OWN_MODEL = "claude-sonnet-5"


def own_words(request) -> Reply:
    """The archive's own subject: a different wording from the outsider's, a decision by the prompt's length."""
    letter = "AB"[len(request.prompt or "") % 2]
    return Reply.text(f"The tracked model reads the case through once more.\nDECISION: {letter}")


def own_run(paths, monkeypatch, run_id: str = "sweep_2026-11-02_own") -> str:
    """A run of the open protocol made by the archive itself (as the monthly sweep makes one), complete."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-own")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    protocol = registry.load_protocol(paths, OPEN)
    with FakeProvider(own_words) as fake:
        subject = AnthropicSubject(OWN_MODEL, protocol["generation"]["max_tokens"], base_url=fake.base_url)
        run_protocol(paths, protocol, subject, RunSettings(run_id=run_id, run_date="2026-11-02", concurrency=8),
                     authorization=unbudgeted())
    return run_id


def relabelled(trials: list[dict], run_id: str = "mallory-run-1", model: str = "mallory-model-7") -> list[dict]:
    """``trials`` as someone passing them off as another run would: new run id and model, no chain, timings
    changed, an extra key, replicates swapped, lines reversed, every response re-wrapped."""
    out = []
    for t in unchained(trials):
        t = dict(t, run_id=run_id, returned_model_id=model, started_at="2026-11-20T09:00:00Z", lab_tag="m-7")
        t["replicate_index"] = 1 - t["replicate_index"]
        t["response_text"] = t["response_text"].replace("\n", "  \n ")
        out.append(t)
    return out[::-1]


def reasons_of(paths, file, **kw) -> list[tuple[str, str]]:
    with pytest.raises(SubmissionRejected) as info:
        submit(paths, file, **kw)
    return info.value.reasons


def reworded(trials: list[dict], count: int) -> list[dict]:
    """``trials`` unchained with the first ``count`` responses reworded, each keeping its decision."""
    out = unchained(trials)
    for i, t in enumerate(out[:count]):
        t["response_text"] = f"A second look, number {i}, reaches the same place.\nDECISION: {t['token']}"
    return out


# --------------------------------------------------------------------------
# identity: a run is its trials
# --------------------------------------------------------------------------

def test_the_same_run_under_another_header_note_submitter_run_id_or_extra_key_is_refused_naming_the_point(
        paths, tmp_path, capsys):
    trials = trials_of(paths, "open-run")
    first = submit(paths, paths.run_dir("open-run") / "trials.jsonl", submitted_by="a test lab", today="2026-11-12")
    cp = first.comparison_id
    header = {"record_type": "comparison_submission", "submitted_by": "a test lab"}
    variants = {
        "note": [dict(header, note="second try, same run")] + trials,
        "submitter": [dict(header, submitted_by="another lab")] + trials,
        "extra key": [header] + [dict(t, lab_tag="x") for t in unchained(trials)],
        "reordered, no chain": [header] + unchained(trials)[::-1],
        "relabelled": [dict(header, submitted_by="Mallory")] + relabelled(trials, model="outside-lab-model-2026-11"),
    }
    for name, lines in variants.items():
        reasons = reasons_of(paths, write(tmp_path, lines, name=f"{name}.jsonl"))
        assert [c for c, _ in reasons] == ["already_filed"], (name, reasons)
        assert reasons[0][1].startswith("this run is already filed: 120 of its 120 trials are, as recorded (the "
                                        "same prompts, answers and times of each call), those of comparison point "
                                        f"{cp} (filed 2026-11-12, "), reasons
    # a copy with a few answers edited is still the copy (more than half of its trials are the point's)
    reasons = reasons_of(paths, write(tmp_path, [header] + relabelled(reworded(trials, 40)), name="edited.jsonl"))
    assert reasons[0][0] == "already_filed" and "80 of its 120 trials" in reasons[0][1] and cp in reasons[0][1]
    # another run under the same run id: refused too, naming the point that has it
    other = write(tmp_path, [header] + reworded(trials, 100), name="other-run-same-id.jsonl")
    assert reasons_of(paths, other) == [("run_id", f"run_id open-run is already filed as comparison point {cp} "
                                                   "(filed 2026-11-12, outside-lab-model-2026-11); a different run "
                                                   "needs its own run id (`llmarchive comparison run --run-id …`)")]
    # the identical file again: "already filed", nothing stored, exit 0
    assert main(["comparison", "submit", str(paths.run_dir("open-run") / "trials.jsonl"),
                 "--submitted-by", "a test lab"]) == 0
    assert f"already filed as {cp}" in capsys.readouterr().out
    assert [r["comparison_id"] for r in records.read(paths, "comparison_point")] == [cp]
    assert sorted(p.name for p in paths.comparison_points.iterdir() if not p.name.startswith(".")) == [
        f"{cp}.json", f"{cp}.jsonl"]


def test_the_archives_own_runs_are_refused_however_relabelled_wherever_they_are_kept(paths, tmp_path, monkeypatch):
    run_id = own_run(paths, monkeypatch)
    log = paths.run_dir(run_id) / "trials.jsonl"
    reasons = reasons_of(paths, log, submitted_by="Mallory")
    assert [c for c, _ in reasons] == ["own_run", "run_id"], reasons
    assert reasons[0][1].startswith("120 of its 120 trials are, as recorded (the same prompts, answers and times of "
                                    f"each call), those of the archive's own measurement run {run_id} (120)")
    header = {"record_type": "comparison_submission", "submitted_by": "Mallory", "note": "my lab's run",
              "model_id": "mallory-model-7", "run_date": "2026-11-20"}
    disguised = write(tmp_path, [header] + relabelled(trials_of(paths, run_id)), name="mallory.jsonl")
    assert [c for c, _ in reasons_of(paths, disguised)] == ["own_run"]
    # the same, half reworded: still more than half the archive's own trials
    half = write(tmp_path, [header] + relabelled(reworded(trials_of(paths, run_id), 60)), name="half.jsonl")
    assert [c for c, _ in reasons_of(paths, half)] == ["own_run"]
    # held for review, or kept with the instrument's runs: the store's other run folders count the same
    for root in (store.held_root(paths), paths.private / "instrument" / "runs"):
        root.mkdir(parents=True, exist_ok=True)
        shutil.move(str(paths.run_dir(run_id)), str(root / run_id))
        assert [c for c, _ in reasons_of(paths, disguised)] == ["own_run"], root
        shutil.move(str(root / run_id), str(paths.run_dir(run_id)))
    nothing_stored(paths)
    # a run with fewer than half its answers in common is another run: the comparison run made here is accepted
    assert submit(paths, paths.run_dir("open-run") / "trials.jsonl", submitted_by="a test lab").record


def test_the_published_open_lane_is_refused_but_a_comparison_run_made_here_is_not(paths, tmp_path, monkeypatch):
    from publish.data import open_lane
    from publish.data import gather

    run_id = own_run(paths, monkeypatch)
    published = open_lane.files(gather(paths).open_runs)     # the bytes of public/open-lane/<year>.jsonl
    lines = [json.loads(line) for data in published.values() for line in data.decode("utf-8").splitlines()]
    header = {"record_type": "comparison_submission", "submitted_by": "Mallory", "model_id": "mallory-model-7"}
    own = [t for t in lines if t["run_id"] == run_id]
    assert len(own) == 120
    reasons = reasons_of(paths, write(tmp_path, [header] + relabelled(own), name="from-the-lane.jsonl"))
    assert [c for c, _ in reasons] == ["own_run"] and run_id in reasons[0][1]
    nothing_stored(paths)
    # the comparison run of this home is in the open lane too, and is still an outside run: accepted once
    ours = [t for t in lines if t["run_id"] == "open-run"]
    accepted = submit(paths, write(tmp_path, ours, name="comparison-run.jsonl"), submitted_by="a test lab")
    assert accepted.record["run_id"] == "open-run" and not accepted.already


# --------------------------------------------------------------------------
# one lock for the repeat check and the append
# --------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
STARTER = """
import sys, time
from pathlib import Path
from llmarchive.cli import main
import llmarchive.comparison.intake, llmarchive.protocols.registry, measure.measurement, llmarchive.instrument.verdict
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.0005)
sys.exit(main(sys.argv[3:]))
"""

def test_six_simultaneous_submissions_of_one_run_file_one_point(paths, tmp_path):
    trials = trials_of(paths, "open-run")
    header = {"record_type": "comparison_submission", "submitted_by": "a test lab"}
    same = write(tmp_path, [header] + trials, name="same.jsonl")
    files = [same, same, same] + [write(tmp_path, [dict(header, note=f"copy {i}")] + trials, name=f"note-{i}.jsonl")
                                  for i in range(3)]
    env = {**os.environ, "LLMARCHIVE_HOME": str(paths.home)}
    go = tmp_path / "go"
    # Each process is `llmarchive comparison submit FILE` (the CLI's main), started once every process has
    # imported the code and is ready, so the six reach the intake within a few milliseconds of one another.
    started = [subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path / f"ready-{i}"), str(go),
                                 "comparison", "submit", str(f)], env=env, cwd=str(ROOT), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for i, f in enumerate(files)]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{i}").exists() for i in range(len(files))) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    done = []
    for p in started:
        out, err = p.communicate(timeout=300)
        done.append((p.returncode, out, err))
    points = records.read(paths, "comparison_point")
    print(f"\n6 simultaneous submissions of one run: {len(points)} point(s) filed; exit codes "
          f"{[code for code, _, _ in done]}")
    assert len(points) == 1
    assert sum("accepted: comparison point" in out for _, out, _ in done) == 1
    assert all("Traceback" not in err for _, _, err in done)
    assert all(code == 0 or "already_filed: this run is already filed" in err for code, _, err in done), done
    assert [p.name for p in paths.comparison_points.glob("cp-*.jsonl")] == [f"{points[0]['comparison_id']}.jsonl"]


# --------------------------------------------------------------------------
# nothing is written for a refused submission
# --------------------------------------------------------------------------

def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_a_header_with_nan_or_deep_nesting_is_refused_naming_the_field_and_writes_nothing(paths, tmp_path, capsys):
    trials = "".join(json.dumps(t) + "\n" for t in trials_of(paths, "open-run"))
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"record_type": "comparison_submission", "submitted_by": "x", '
                   '"explicitly_set": {"max_tokens": NaN, "temperature": 1e999}}\n' + trials, encoding="utf-8")
    deep, deeper = tmp_path / "deep.jsonl", tmp_path / "deeper.jsonl"
    for file, depth in ((deep, 10), (deeper, 985)):
        file.write_text('{"record_type": "comparison_submission", "submitted_by": "x", "explicitly_set": '
                        + nested(depth) + "}\n" + trials, encoding="utf-8")
    for file, words in ((nan, "format: the header's explicitly_set.max_tokens, the header's explicitly_set."
                              "temperature: a number that is not finite (NaN or infinity), which JSON cannot carry"),
                        (deep, "format: the header's explicitly_set.a.a.a.a is nested more than 4 levels deep"),
                        (deeper, "format: line 1.explicitly_set is nested more than 64 levels deep (not read "
                                 "further)")):
        assert main(["comparison", "submit", str(file)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and f"{file}: {words}" in err.splitlines(), err
        nothing_stored(paths)
    # a trial's own unknown key is judged the same way: kept when sound, refused when not finite
    bad = unchained(trials_of(paths, "open-run"))
    bad[3]["lab_metric"] = float("inf")
    assert ("format", "line 4.lab_metric: a number that is not finite (NaN or infinity), which JSON cannot carry") in \
        reasons_of(paths, write(tmp_path, bad), submitted_by="x")
    nothing_stored(paths)


def test_every_header_problem_is_listed_at_once_one_line_each_naming_the_file_and_field(paths, tmp_path, capsys):
    header = {"record_type": "comparison_submission", "submitted_by": "x", "n": "30", "note": "n" * 2001,
              "model_id": "m" * 300, "requested_model_id": "gpt\u202e5", "explicitly_set": {"k": [[[[1]]]]}}
    file = write(tmp_path, [header] + trials_of(paths, "open-run"))
    assert main(["comparison", "submit", str(file)]) == 2
    lines = capsys.readouterr().err.strip().split("\n")
    assert lines[0] == f"error: {file}: submission rejected, nothing stored (5 reasons):"
    assert lines[1:] == [
        f"{file}: format: the header's n must be an integer, got a string",
        f"{file}: format: the header's model_id is 300 characters long; at most 200 are accepted",
        f"{file}: format: the header's requested_model_id 'gpt\\u202e5' holds invisible format character(s) \\u202e "
        "(bidi overrides, zero-width marks, separators): an id must print as it is",
        f"{file}: format: the header's note is 2001 characters long; at most 2000 are accepted",
        f"{file}: format: the header's explicitly_set.k[0][0][0] is nested more than 4 levels deep",
    ]
    nothing_stored(paths)


def test_a_failed_record_append_leaves_no_copy_behind(paths, tmp_path, capsys):
    """The record log is refused (its chain was edited): the copy renamed in beside it is removed again."""
    records.append(paths, "comparison_point", {"date": "2026-11-01", "protocol_id": OPEN, "model_id": "m",
                                               "submitted_by": "earlier", "measurement": {}})
    log = paths.record_log("comparison_point")
    log.write_text(log.read_text().replace('"earlier"', '"EARLIER"'))
    before = sorted(p.name for p in paths.comparison_points.iterdir()) if paths.comparison_points.exists() else []
    assert main(["comparison", "submit", str(paths.run_dir("open-run") / "trials.jsonl"),
                 "--submitted-by", "a test lab"]) == 2
    assert "hash chain broken" in capsys.readouterr().err
    after = sorted(p.name for p in paths.comparison_points.iterdir() if p.name != ".intake.lock")
    assert after == before == [], "no copy, no temporary file"


# --------------------------------------------------------------------------
# outside text: escaped on the terminal, refused in ids
# --------------------------------------------------------------------------

def test_hostile_text_is_escaped_on_the_terminal(paths, tmp_path, capsys):
    header = {"record_type": "comparison_submission", "submitted_by": "\x1b[2J\x1b[Hlab\x1b[31m rejected\x9b",
              "note": "\x07\x1b]0;owned\x07"}
    file = write(tmp_path, [header] + trials_of(paths, "open-run"))
    assert main(["comparison", "submit", str(file)]) == 0
    out = capsys.readouterr().out
    assert "submitted by \\x1b[2J\\x1b[Hlab\\x1b[31m rejected\\x9b" in out
    assert not any(ch in out for ch in "\x1b\x07\x9b")
    assert main(["comparison", "submit", str(file)]) == 0          # "already filed": nothing raw either
    assert "\x1b" not in capsys.readouterr().out
    # the review list and status print a provider's model id: escaped the same way
    records.append(paths, "needs_review", {"date": "2026-11-12", "model_family": "claude-sonnet",
                                           "model_id": "claude\x1b[2J-sonnet-9\u202e", "reason": "a new id"})
    for command in (["review", "list"], ["status", "--date", "2026-11-12"], ["review", "list", "--json"]):
        main(command)
        captured = capsys.readouterr()
        shown = captured.out + captured.err
        assert "claude" in shown and not any(ch in shown for ch in "\x1b\u202e"), (command, shown)


@pytest.mark.parametrize("where,value,words", [
    ("model", "gpt-5\u202e-mini", "returned_model_id 'gpt-5\\u202e-mini' holds invisible format character(s) \\u202e"),
    ("model", "gpt-5\u200b", "holds invisible format character(s) \\u200b"),
    ("model", "gpt\x1b[2J-5", "returned_model_id 'gpt\\x1b[2J-5' holds control character(s) \\x1b"),
    ("model", "m" * 5000, "returned_model_id is 5000 characters long; at most 200 are accepted"),
    ("run", "run\x1b[2J", "run_id 'run\\x1b[2J' holds control character(s) \\x1b"),
    ("run", "r" * 300, "run_id is 300 characters long; at most 200 are accepted"),
    ("run", "../../private/budget", "may use only letters, digits, '.', '_' and '-'"),
])
def test_ids_from_outside_are_refused_with_a_message_that_names_the_problem(paths, tmp_path, capsys,
                                                                             where, value, words):
    trials = unchained(trials_of(paths, "open-run"))
    for t in trials:
        t["returned_model_id" if where == "model" else "run_id"] = value
    file = write(tmp_path, trials)
    assert main(["comparison", "submit", str(file), "--submitted-by", "a test lab"]) == 2
    err = capsys.readouterr().err
    assert words in err and not any(ch in err for ch in "\x1b\u202e\u200b"), err
    nothing_stored(paths)


# --------------------------------------------------------------------------
# size caps
# --------------------------------------------------------------------------

def test_the_size_caps_refuse_a_file_a_line_and_a_response_clearly(paths, tmp_path):
    trials = unchained(trials_of(paths, "open-run"))
    big = write(tmp_path, trials, name="big.jsonl")
    with open(big, "r+b") as fh:                                   # 17 MiB on disk, read no further than its size
        fh.truncate(MAX_SUBMISSION_BYTES + 1024 * 1024)
    assert reasons_of(paths, big, submitted_by="x") == [
        ("size", f"the file is {MAX_SUBMISSION_BYTES + 1024 * 1024:,} bytes; a submission may be at most "
                 f"{MAX_SUBMISSION_BYTES:,} bytes (a complete run of the largest panel is about 1 MB)")]
    huge = [dict(t) for t in trials]
    huge[5]["response_text"] = "x" * (MAX_LINE_BYTES + 10) + "\nDECISION: A"
    reasons = reasons_of(paths, write(tmp_path, huge, name="huge-line.jsonl"), submitted_by="x")
    assert ("format", f"line 6 is {len(json.dumps(huge[5])) + 1:,} bytes; one line (one trial) may be at most "
                      f"{MAX_LINE_BYTES:,} bytes (a response at most 64 characters per token of the panel's "
                      "max_tokens)") in reasons
    long = [dict(t) for t in trials]
    long[7]["response_text"] = "y" * 20000 + "\nDECISION: " + long[7]["token"] if long[7]["token"] else "y" * 20000
    long[7]["outcome"] = "valid" if long[7]["token"] else long[7]["outcome"]
    reasons = reasons_of(paths, write(tmp_path, long, name="long-response.jsonl"), submitted_by="x")
    assert [r for r in reasons if r[0] == "size"] == [
        ("size", f"1 response(s) longer than 16,384 characters (line 8: {len(long[7]['response_text']):,}); the "
                 "panel asks for at most 256 tokens, and the cap allows 64 characters per token")]
    nothing_stored(paths)
