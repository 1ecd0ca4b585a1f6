"""A copy told from a reproduction (issue 36 §9 and §4).

A submission is a filed point or one of the archive's own runs only when
most of its trials *are* theirs as recorded — the same answer to the same
prompt at the same recorded time of the call — pooled over every source at
once; another model, or the same deterministic model run again, that gives
the same words is filed, and the words it shares are disclosed on the point
(how many, which point or run) and in its published reading.  The issue's
own try runs two simulated readers with Inspect on the published task.
"""
import hashlib
import shutil
from collections import Counter
from datetime import datetime, timedelta, timezone

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.cli import main
from llmarchive.budget import unbudgeted
from llmarchive.protocols import registry
from llmarchive.run import run_protocol
from llmarchive.subjects.anthropic import AnthropicSubject
from measure.schema import VERSIONS
from panels import readers
from publish.words import numbers
from tests.fake_provider import FakeProvider
from tests.inspect_helpers import reader_run as inspect_reader_run
from tests.test_comparison import (OPEN, comparison_run_settings, paths, trials_of,  # noqa: F401
                                   twin_runs_template, unchained, write)
from tests.test_comparison_intake import OWN_MODEL, own_run, own_words, reasons_of
from llmarchive.comparison import submit

TERSE = "Decided after one reading."


def reader_trials(paths, reader: str, model: str, run_id: str, start: str, sentence: str = TERSE) -> list[dict]:
    """A complete run of the open panel by one of the simulated readers, as a runner records it: every trial
    with its prompt's hash, ``sentence`` then the decision line, and the times of its call (one a second)."""
    protocol = registry.load_protocol(paths, OPEN)
    texts = {(item["item_id"], v): item["versions"][v] for item in protocol["panel"] for v in VERSIONS}
    clock = datetime.fromisoformat(start.replace("Z", "+00:00")).astimezone(timezone.utc)
    out = []
    for index, trial in enumerate(readers.trials(reader, protocol)):
        began = clock + timedelta(seconds=index, milliseconds=index * 7 % 1000)
        ended = began + timedelta(milliseconds=300 + index % 50)
        out.append({**trial, "response_text": f"{sentence}\nDECISION: {trial['token']}", "run_id": run_id,
                    "trial_index": index, "returned_model_id": model,
                    "prompt_sha256": hashlib.sha256(texts[(trial["item_id"], trial["version"])].encode()).hexdigest(),
                    "started_at": began.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "finished_at": ended.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "latency_ms": 300 + index % 50})
    return out


def header(model: str, who: str = "a test lab") -> dict:
    return {"record_type": "comparison_submission", "model_id": model, "submitted_by": who}


def test_two_models_that_write_the_same_short_answers_are_two_runs_and_the_shared_answers_are_disclosed(
        paths, tmp_path):
    first = reader_trials(paths, "normative", "terse-model-a", "terse-a-1", "2026-11-20T10:00:00.000Z")
    second = reader_trials(paths, "biased", "terse-model-b", "terse-b-1", "2026-11-21T14:30:00.000Z")
    differ = sum(a["token"] != b["token"] for a, b in zip(first, second))
    assert 0 < differ < len(first) // 2           # another model: other decisions on part of the panel
    filed = submit(paths, write(tmp_path, [header("terse-model-a")] + first, name="a.jsonl"), today="2026-11-22")
    other = submit(paths, write(tmp_path, [header("terse-model-b")] + second, name="b.jsonl"), today="2026-11-22")
    assert not other.already and other.comparison_id != filed.comparison_id
    same_words = sum((Counter((t["prompt_sha256"], t["token"]) for t in first)
                      & Counter((t["prompt_sha256"], t["token"]) for t in second)).values())
    assert same_words < len(second)
    assert other.record["coinciding_answers"] == [
        {"source": "comparison_point", "id": filed.comparison_id, "answers": same_words, "trials": 0,
         "of": len(second), "record_sha256": filed.record["record_sha256"]}]
    assert f"answers shared: {same_words} of 120 answers word for word those of comparison point " \
           f"point-{filed.record['record_sha256'][:16]}" in numbers.point_columns(other.record)["reading"]
    # the first reader's run itself, under the second's names, is still the first's: refused, naming it
    copy = [dict(t, run_id="terse-b-2", returned_model_id="terse-model-b") for t in first]
    reasons = reasons_of(paths, write(tmp_path, [header("terse-model-b")] + copy, name="copy.jsonl"))
    assert [c for c, _ in reasons] == ["already_filed"] and filed.comparison_id in reasons[0][1], reasons


def test_an_independent_rerun_of_a_deterministic_own_run_is_filed_and_shown_as_its_reproduction(
        paths, tmp_path, monkeypatch):
    run_id = own_run(paths, monkeypatch)
    protocol = registry.load_protocol(paths, OPEN)
    with FakeProvider(own_words) as fake:       # the same deterministic model, run again by someone else
        subject = AnthropicSubject(OWN_MODEL, protocol["generation"]["max_tokens"], base_url=fake.base_url)
        run_protocol(paths, protocol, subject, comparison_run_settings("rerun-1", "2026-11-21"),
                     authorization=unbudgeted())
    rerun = trials_of(paths, "rerun-1")
    own = {(t["prompt_sha256"], t["response_text"]) for t in trials_of(paths, run_id)}
    assert all((t["prompt_sha256"], t["response_text"]) in own for t in rerun)      # the very same words
    accepted = submit(paths, paths.run_dir("rerun-1") / "trials.jsonl", submitted_by="a rerunning lab")
    assert accepted.record["coinciding_answers"] == [
        {"source": "own_run", "id": run_id, "answers": 120, "trials": 0, "of": 120, "reproduction": True}]
    words = numbers.point_columns(accepted.record)["reading"]
    assert f"120 of 120 answers word for word those of the archive's run {run_id} (a reproduction of it)" in words
    # the own run itself, relabelled, is still refused
    relabelled = [dict(t, run_id="mallory-1", returned_model_id="mallory-7")
                  for t in unchained(trials_of(paths, run_id))]
    reasons = reasons_of(paths, write(tmp_path, [header("mallory-7")] + relabelled, name="own.jsonl"))
    assert [c for c, _ in reasons] == ["own_run"] and run_id in reasons[0][1]


def test_a_submission_stitched_from_filed_points_and_an_own_run_is_refused_naming_every_source(
        paths, tmp_path, monkeypatch):
    run_id = own_run(paths, monkeypatch)
    one = reader_trials(paths, "normative", "lab-model-1", "lab-1", "2026-11-20T10:00:00.000Z", "Lab one read it.")
    two = reader_trials(paths, "biased", "lab-model-2", "lab-2", "2026-11-21T10:00:00.000Z", "Lab two read it.")
    p1 = submit(paths, write(tmp_path, [header("lab-model-1")] + one, name="one.jsonl"), today="2026-11-22")
    p2 = submit(paths, write(tmp_path, [header("lab-model-2")] + two, name="two.jsonl"), today="2026-11-22")
    fresh = reader_trials(paths, "normative", "new-model", "new-1", "2026-11-23T10:00:00.000Z", "A new lab read it.")
    own = {(t["item_id"], t["version"], t["replicate_index"]): t for t in trials_of(paths, run_id)}

    def stitched(sources: list[list[dict]]) -> list[dict]:
        """Each slot from the sources in turn (40 trials each of three), relabelled as one new run."""
        out = []
        for i, t in enumerate(fresh):
            slot = (t["item_id"], t["version"], t["replicate_index"])
            pick = sources[i % len(sources)]
            taken = own[slot] if pick is None else next(
                s for s in pick if (s["item_id"], s["version"], s["replicate_index"]) == slot)
            out.append({k: v for k, v in dict(taken, run_id="stitched-1", returned_model_id="new-model",
                                               trial_index=i).items() if k not in ("prev_sha256", "record_sha256")})
        return out

    # two filed points and a new third: no one source holds half, together they hold 80 of 120
    reasons = reasons_of(paths, write(tmp_path, [header("new-model")] + stitched([one, two, fresh]), name="s.jsonl"))
    assert [c for c, _ in reasons] == ["already_filed"], reasons
    assert "80 of its 120 trials" in reasons[0][1]
    assert p1.comparison_id in reasons[0][1] and p2.comparison_id in reasons[0][1]
    # an own run and a filed point together: refused as the archive's own, naming both
    reasons = reasons_of(paths, write(tmp_path, [header("new-model")] + stitched([None, one, fresh]),
                                      name="t.jsonl"))
    assert [c for c, _ in reasons] == ["own_run"], reasons
    assert run_id in reasons[0][1] and p1.comparison_id in reasons[0][1] and "80 of its 120 trials" in reasons[0][1]
    assert len(records.read(paths, "comparison_point")) == 2


def test_two_readers_inspect_logs_with_the_same_short_sentence_are_two_runs(tmp_path_factory, tmp_path):
    """The issue's own try: two simulated readers run with Inspect on the published task, each answer given as
    the same short sentence and its decision line (as terse models write), under two model names; both logs
    imported with ``comparison import`` and submitted."""
    from inspect_ai.log import read_eval_log, write_eval_log

    run = inspect_reader_run(tmp_path_factory)
    home = tmp_path / "archive"
    shutil.copytree(run.home, home)
    files = {}
    for reader, model in ((readers.INVARIANT, "terse-model-a"), (readers.FRAMING_SENSITIVE, "terse-model-b")):
        log = read_eval_log(str(run.logs[reader]), resolve_attachments=True)
        for sample in log.samples:
            letter = sample.output.completion.rsplit(" ", 1)[-1]
            sample.output.completion = f"{TERSE}\nDECISION: {letter}"
            sample.output.model = model
        write_eval_log(log, str(tmp_path / f"{model}.eval"))
        files[model] = tmp_path / f"{model}.jsonl"
        assert main(["comparison", "import", str(tmp_path / f"{model}.eval"), "--panel",
                     str(run.panels / f"{OPEN}.json"), "--out", str(files[model]), "--submitted-by", "a lab"]) == 0
    assert main(["--home", str(home), "comparison", "submit", str(files["terse-model-a"])]) == 0
    assert main(["--home", str(home), "comparison", "submit", str(files["terse-model-b"])]) == 0
    first, second = records.read(ArchivePaths(home), "comparison_point")
    assert (first["model_id"], second["model_id"]) == ("terse-model-a", "terse-model-b")
    [shared] = second["coinciding_answers"]
    assert shared["id"] == first["comparison_id"] and 0 < shared["answers"] < 120
    assert shared["trials"] < 60          # at most a chance call at the very same millisecond
