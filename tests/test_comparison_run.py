"""`llmarchive comparison run`: from a published open-panel file alone, in an empty home, to an accepted point.

The outsider's side runs against the fake provider over real HTTP on
127.0.0.1 (its OpenAI chat-completions route, and its Anthropic route),
from a copy of a published ``panels/`` folder in an ``LLMARCHIVE_HOME`` that
does not exist yet; the archive's side is an admitted archive that takes the
file with ``llmarchive comparison submit`` unchanged.
"""
import hashlib
import json
import shutil
import threading
from pathlib import Path

import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.protocols import registry
from llmarchive.cli import main
from llmarchive.protocols.open_panels import hashed_part, panel_file_text, prompt_sha256
from measure.canonical import canonical_sha256
from measure.schema import VERSIONS
from tests.fake_provider import Fault, FakeProvider, decide_by_hash
from tests.instrument_helpers import admitted_archive

OPEN = "risky_choice_framing__wording__v0"
MODEL = "outside-lab-model-2026-11"
CALLS = 120     # 4 versions × 15 scenarios × 2 replicates


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(the admitted archive's home, a published folder with ``panels/*.json`` exactly as publication writes them)."""
    root = tmp_path_factory.mktemp("comparison-run")
    home = root / "archive"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMARCHIVE_HOME", str(home))
        paths = admitted_archive(mp)
        public = root / "public"
        from publish.data.panels import files     # the publisher's own bytes for public/panels/

        for name, data in files(paths, registry.list_protocols(paths)).items():
            (public / name).parent.mkdir(parents=True, exist_ok=True)
            (public / name).write_bytes(data)
        assert (public / "panels" / f"{OPEN}.json").exists()
    return home, public


@pytest.fixture
def outsider(published, tmp_path, monkeypatch):
    """An empty home (not even created) and a copy of the published folder: all an outsider has."""
    home = tmp_path / "outsider-home"
    monkeypatch.setenv("LLMARCHIVE_HOME", str(home))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    copy = tmp_path / "downloaded-public"
    shutil.copytree(published[1], copy)
    return home, copy / "panels" / f"{OPEN}.json"


def use_archive(published, tmp_path, monkeypatch) -> ArchivePaths:
    """Switch to a fresh copy of the admitted archive (the side that receives the file)."""
    home = tmp_path / "archive-copy"
    shutil.copytree(published[0], home)
    monkeypatch.setenv("LLMARCHIVE_HOME", str(home))
    return ArchivePaths.from_env()


def comparison_run(panel: Path, fake: FakeProvider, out: Path, *extra: str, model: str = MODEL) -> int:
    return main(["comparison", "run", "--panel", str(panel), "--base-url", fake.base_url, "--model", model,
                 "--out", str(out), "--max-attempts", "1", "--quiet", *extra])


def lines_of(file: Path) -> list[dict]:
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]


def verify_submission(tmp_path, submission: Path, measurement: dict, header: dict) -> int:
    """`llmarchive verify --trials SUBMISSION --measurement … --protocol …`: the file as submitted, recomputed."""
    m, h = tmp_path / "v-measurement.json", tmp_path / "v-protocol.json"
    m.write_text(json.dumps(measurement), encoding="utf-8")
    h.write_text(json.dumps(header), encoding="utf-8")
    return main(["verify", "--trials", str(submission), "--measurement", str(m), "--protocol", str(h), "--json"])


class FlakyServer:
    """Answers by the prompt's hash, except that after ``good`` answers every call gets a 503 until healed."""

    def __init__(self, good: int) -> None:
        self.good, self.served, self.healed = good, 0, False
        self.decide = decide_by_hash()
        self.lock = threading.Lock()      # the fake answers each request in its own thread

    def __call__(self, request):
        with self.lock:
            if not self.healed and self.served >= self.good:
                return Fault.status(503)
            self.served += 1
        return self.decide(request)


def test_a_run_from_the_published_file_alone_resumes_after_an_interruption_and_is_accepted(
        published, outsider, tmp_path, monkeypatch, capsys):
    home, panel = outsider
    doc = json.loads(panel.read_text(encoding="utf-8"))
    out = tmp_path / "submission.jsonl"
    flaky = FlakyServer(good=47)
    with FakeProvider(flaky) as fake:
        # 1. interrupted mid-way: the server stops answering; nothing is written for the open slots, no submission
        assert comparison_run(panel, fake, out, "--submitted-by", "a test lab") == 1
        assert "interrupted" in capsys.readouterr().err
        assert not out.exists()
        folder = ArchivePaths.from_env().run_dir(f"comparison_{OPEN}_openai_{MODEL}")
        first = lines_of(folder / "trials.jsonl")
        assert 47 <= len(first) < CALLS and flaky.served == len(first), "a call with no answer is not a trial"
        # 2. resumed: only the missing slots are sent
        flaky.healed = True
        sent_before = flaky.served
        assert comparison_run(panel, fake, out, "--submitted-by", "a test lab") == 0
        printed = capsys.readouterr().out
        assert f"{CALLS - len(first)} called now, {len(first)} already recorded" in printed
        assert flaky.served - sent_before == CALLS - len(first)
        bodies = [r.body for r in fake.chat_requests]
    # every answered call: the panel's prompt exactly, fresh, with the panel's max_tokens and nothing else
    texts = {(i["item_id"], v): i["versions"][v] for i in doc["panel"] for v in VERSIONS}
    assert all(set(b) == {"model", "messages", "max_tokens"} and b["max_tokens"] == doc["generation"]["max_tokens"]
               and len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in bodies)
    assert all(b["messages"][0]["content"] in texts.values() for b in bodies)
    lines = lines_of(out)
    header, trials = lines[0], lines[1:]
    identities = [(t["item_id"], t["version"], t["replicate_index"]) for t in trials]
    assert len(trials) == CALLS and len(set(identities)) == CALLS, "no duplicate, nothing lost"
    assert all(t["prompt_sha256"] == prompt_sha256(texts[(t["item_id"], t["version"])]) for t in trials)
    assert header == {"record_type": "comparison_submission", "protocol_id": OPEN, "model_id": MODEL,
                      "requested_model_id": MODEL, "panel_sha256": doc["panel_sha256"],
                      "protocol_sha256": doc["protocol_sha256"], "grammar_version": doc["grammar_version"],
                      "n": doc["n"], "run_date": header["run_date"], "submitted_by": "a test lab",
                      "explicitly_set": {"model": MODEL, "max_tokens": doc["generation"]["max_tokens"]}}
    assert out.read_bytes().endswith((folder / "trials.jsonl").read_bytes()), "the trial log exactly as written"
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "complete" and run["exploratory"] and len(run["sessions"]) == 2

    # 3. the archive takes the file unchanged, recomputes it with its own estimator, and publishes it
    paths = use_archive(published, tmp_path, monkeypatch)
    assert main(["comparison", "submit", str(out)]) == 0
    assert "accepted: comparison point cp-" in capsys.readouterr().out
    (point,) = records.read(paths, "comparison_point")
    m = point["measurement"]
    assert (point["model_id"], point["submitted_by"], point["explicitly_set"]) == (
        MODEL, "a test lab", header["explicitly_set"])
    assert m["on_curve"] is False and "exploratory" in m["flags"]
    assert m["run_id"] == trials[0]["run_id"] and m["n"] == 30
    assert verify_submission(tmp_path, out, m, registry.header(registry.load_protocol(paths, OPEN))) == 0
    assert json.loads(capsys.readouterr().out) == [], "llmarchive verify recomputes the same measurement"
    from publish.data import comparison_rows
    from publish.data import gather

    (row,) = comparison_rows(gather(paths))
    assert (row["model_id"], row["stability_pct"], row["panel_sha256"]) == (MODEL, m["stability_pct"],
                                                                          doc["panel_sha256"])


def test_the_anthropic_route_reads_its_key_from_the_environment_and_sends_the_archives_body(
        outsider, tmp_path, monkeypatch):
    home, panel = outsider
    out = tmp_path / "anthropic.jsonl"
    with FakeProvider(decide_by_hash(), require_key="outside-key") as fake:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        assert comparison_run(panel, fake, out, "--api", "anthropic") == 2, "no key: refused before any call"
        assert fake.chat_requests == []
        monkeypatch.setenv("ANTHROPIC_API_KEY", "outside-key")
        assert comparison_run(panel, fake, out, "--api", "anthropic", "--concurrency", "8") == 0
        assert {r.path for r in fake.chat_requests} == {"/v1/messages"} and len(fake.chat_requests) == CALLS
        assert all(r.body["thinking"] == {"type": "disabled"} for r in fake.chat_requests)
    assert "outside-key" not in out.read_text() and not any(      # binary files too (the run index)
        b"outside-key" in p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert lines_of(out)[0]["explicitly_set"]["thinking"] == {"type": "disabled"}


def test_an_alias_as_model_id_is_refused_before_any_call(outsider, tmp_path, capsys):
    home, panel = outsider
    with FakeProvider(decide_by_hash()) as fake:
        assert comparison_run(panel, fake, tmp_path / "s.jsonl", model="outside-model-latest") == 2
        assert fake.requests == []
    assert "not an exact model id" in capsys.readouterr().err
    assert not (home / "private" / "experiments").exists()


def test_an_edited_panel_file_is_refused_before_any_call(outsider, tmp_path, capsys):
    home, panel = outsider
    doc = json.loads(panel.read_text(encoding="utf-8"))
    doc["panel"][3]["versions"]["B"] = doc["panel"][3]["versions"]["B"].replace("the", "a", 1)
    panel.write_text(json.dumps(doc), encoding="utf-8")
    with FakeProvider(decide_by_hash()) as fake:
        assert comparison_run(panel, fake, tmp_path / "s.jsonl") == 2
        assert fake.requests == []
    err = capsys.readouterr().err
    assert "does not verify" in err and "panel_sha256" in err and "protocol_sha256" in err
    assert not (home / "private" / "experiments").exists(), "nothing written"


def rehashed(doc: dict) -> dict:
    """``doc`` with every hash recomputed, as someone who edits a panel and fixes its hashes would make it."""
    doc["prompt_sha256"] = {i["item_id"]: {v: prompt_sha256(i["versions"][v]) for v in VERSIONS} for i in doc["panel"]}
    doc["panel_sha256"] = canonical_sha256(doc["panel"])
    doc["protocol_sha256"] = canonical_sha256(hashed_part(doc))
    return doc


def test_an_edited_panel_an_alias_a_missing_version_and_a_short_run_are_refused_at_once(
        published, outsider, tmp_path, monkeypatch, capsys):
    home, panel = outsider
    doc = json.loads(panel.read_text(encoding="utf-8"))
    for v in VERSIONS:     # one scenario "improved", every hash honestly recomputed: a panel file that verifies
        doc["panel"][0]["versions"][v] = "Please read carefully.\n\n" + doc["panel"][0]["versions"][v]
    panel.write_text(panel_file_text(rehashed(doc)), encoding="utf-8")
    out = tmp_path / "submission.jsonl"
    with FakeProvider(decide_by_hash()) as fake:
        assert comparison_run(panel, fake, out, "--submitted-by", "a test lab") == 0
    lines = lines_of(out)
    kept = [lines[0]] + [t for t in lines[1:] if t["version"] != "C"]     # a missing version, and so a short run
    alias_model(kept[0], kept[1:])                                       # and the model id made an alias
    out.write_text("".join(json.dumps(x) + "\n" for x in kept), encoding="utf-8")
    paths = use_archive(published, tmp_path, monkeypatch)
    assert main(["comparison", "submit", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 + int(err[0].rsplit("(", 1)[1].split()[0]), "a first line, then one line per reason"
    for words in ("panel_sha256: declared", "declared protocol_sha256", "were sent a prompt that is not this panel's",
                  "model_id: 'outside-lab-model-latest' is not an exact model id",
                  "versions: version(s) C missing", "n: a short run: 90 of the 120 trials"):
        assert any(words in line for line in err[1:]), (words, err)
    assert records.read(paths, "comparison_point") == []


@pytest.fixture(scope="module")
def good_submission(published, tmp_path_factory):
    """One complete submission file made by `comparison run` in an empty home (module-wide, read-only)."""
    root = tmp_path_factory.mktemp("good-submission")
    out = root / "submission.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMARCHIVE_HOME", str(root / "outsider-home"))
        mp.setenv("NO_PROXY", "127.0.0.1")
        with FakeProvider(decide_by_hash()) as fake:
            assert comparison_run(published[1] / "panels" / f"{OPEN}.json", fake, out, "--concurrency", "8") == 0
    return lines_of(out)


def edit_panel(header, trials):
    header["panel_sha256"] = "ab" * 32
    for t in trials:
        if t["item_id"] == "s01":
            t["prompt_sha256"] = hashlib.sha256(b"another wording").hexdigest()


def alias_model(header, trials):
    header["model_id"] = header["requested_model_id"] = "outside-lab-model-latest"
    for t in trials:
        t["returned_model_id"] = "outside-lab-model-latest"


def drop_version(header, trials):
    trials[:] = [t for t in trials if t["version"] != "A_prime"]


def cut_short(header, trials):
    del trials[-3:]


@pytest.mark.parametrize("mutate,words", [
    (edit_panel, "panel_sha256: declared abab"),
    (alias_model, "model_id: 'outside-lab-model-latest' is not an exact model id"),
    (drop_version, "versions: version(s) A_prime missing"),
    (cut_short, "n: a short run: 117 of the 120 trials"),
])
def test_each_refusal_reason_is_named_with_exit_2_and_nothing_stored(
        published, good_submission, tmp_path, monkeypatch, capsys, mutate, words):
    header, trials = dict(good_submission[0]), [dict(t) for t in good_submission[1:]]
    header["submitted_by"] = "a test lab"
    mutate(header, trials)
    file = tmp_path / "submission.jsonl"
    file.write_text("".join(json.dumps(x) + "\n" for x in [header] + trials), encoding="utf-8")
    paths = use_archive(published, tmp_path, monkeypatch)
    assert main(["comparison", "submit", str(file)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().split("\n")
    assert any(line.startswith(f"{file}: ") and words in line for line in lines[1:]), err
    assert lines[0].startswith(f"error: {file}: submission rejected, nothing stored ("), err
    assert records.read(paths, "comparison_point") == []


def test_the_good_submission_is_accepted_unchanged(published, good_submission, tmp_path, monkeypatch, capsys):
    """The control for the refusals above: the same file, untouched, is accepted (``--submitted-by`` named)."""
    file = tmp_path / "submission.jsonl"
    file.write_text("".join(json.dumps(x, separators=(",", ":"), sort_keys=True) + "\n"
                            for x in good_submission), encoding="utf-8")
    use_archive(published, tmp_path, monkeypatch)
    assert main(["comparison", "submit", str(file), "--submitted-by", "a test lab"]) == 0


def test_the_readme_carries_the_outsiders_recipe_command_for_command():
    """The README's recipe is :func:`llmarchive.comparison.run.recipe` (the Data page's source), piece by piece."""
    from llmarchive.comparison.run import recipe

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    joined = readme.replace(" \\\n    ", " ")         # shell line continuations, as pasted
    missing = [piece for _, command in recipe(OPEN) for piece in command.split(" && ") if piece not in joined]
    assert missing == []


def test_an_id_too_long_or_unprintable_is_refused_before_any_call_with_a_message_that_says_why(outsider, tmp_path,
                                                                                              capsys):
    """Ids are capped in length and the refusal says it is the length (issue 24), before anything is spent."""
    from llmarchive.archive import comparison_run_id
    from llmarchive.archive.paths import UnsafeId, check_id

    home, panel = outsider
    with FakeProvider(decide_by_hash()) as fake:
        for extra, model, words in (
                ((), "m" * 300, "--model is 300 characters long; at most 200 are accepted"),
                ((), "outside\u202emodel", "--model 'outside\\u202emodel' holds invisible format character(s) \\u202e"),
                ((), "outside\x1b[2Jmodel", "--model 'outside\\x1b[2Jmodel' holds control character(s) \\x1b"),
                (("--run-id", "r" * 300), MODEL, "--run-id: run_id is 300 characters long; at most 200 are accepted")):
            assert comparison_run(panel, fake, tmp_path / "s.jsonl", *extra, model=model) == 2
            err = capsys.readouterr().err
            assert words in err and "\x1b" not in err and "\u202e" not in err, err
        assert fake.requests == []
    assert not (home / "private" / "experiments").exists(), "nothing written"
    # a long (but acceptable) model id still gets a path-safe default run id, distinct per model
    ids = {comparison_run_id(OPEN, "vendor/" + "m" * 190 + suffix, "openai") for suffix in ("a", "b")}
    assert len(ids) == 2 and all(len(i) <= 200 and check_id(i, "run_id") for i in ids)
    with pytest.raises(UnsafeId, match="is 300 characters long; at most 200 are accepted"):
        check_id("r" * 300, "run_id")
