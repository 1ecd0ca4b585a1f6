"""The open panels as an Inspect AI task: published beside each panel file, needing nothing of this archive.

Publication writes ``panels/<protocol_id>.py`` next to ``panels/<protocol_id>.json``
(:mod:`publish.tasks.inspect_task`).  Run with Inspect's own ``inspect eval`` against
the simulated readers' OpenAI-compatible server on 127.0.0.1, it must send
the panel exactly as the archive does — one sample per scenario × version,
the published text alone, ``n_per_scenario`` epochs whose scores are never
merged, the panel's ``max_tokens`` and no other setting — and it must refuse
a panel file that is not the published one before any call.
"""
import ast
import copy
import hashlib
import importlib.util
import json
import shutil

import pytest

from llmarchive.comparison import ReaderServer
from llmarchive.protocols import open_panels
from measure.canonical import canonical_sha256
from measure.schema import VERSIONS
from panels import readers
from publish.tasks import inspect_task
from publish.data.panels import task_file_problems
from tests.inspect_helpers import OPEN, SERVICE, reader_run

FRAMING = readers.simulated_model_id(readers.FRAMING_SENSITIVE)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The three readers run once with the published task (tests.inspect_helpers.reader_run, shared)."""
    return reader_run(tmp_path_factory)


@pytest.fixture(scope="module")
def published(run):
    """The ``panels/`` folder exactly as publication writes it, for the admitted test archive."""
    return run.panels


def load_task_module(file):
    """The published task file as Python imports it (Inspect does the same with the file it is given)."""
    spec = importlib.util.spec_from_file_location(f"published_task_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rehashed(doc):
    """``doc`` with every hash recomputed, so the file verifies against itself (an edit made to look whole)."""
    doc = copy.deepcopy(doc)
    doc["panel_sha256"] = canonical_sha256(doc["panel"])
    doc["prompt_sha256"] = {i["item_id"]: {v: open_panels.prompt_sha256(i["versions"][v]) for v in VERSIONS}
                            for i in doc["panel"]}
    doc["protocol_sha256"] = canonical_sha256(open_panels.hashed_part(doc))
    return doc


def test_publication_writes_a_task_file_beside_each_open_panel_rendered_from_that_panel_alone(published):
    jsons = sorted(p.stem for p in published.glob("*.json"))
    assert jsons and sorted(p.stem for p in published.glob("*.py")) == jsons
    for stem in jsons:
        doc = open_panels.load_panel_file(published / f"{stem}.json")
        text = (published / f"{stem}.py").read_text(encoding="utf-8")
        assert text == inspect_task.task_file_text(copy.deepcopy(doc)), "the same panel renders the same bytes"
        ast.parse(text)
        for pinned in (doc["protocol_id"], doc["panel_sha256"], doc["protocol_sha256"]):
            assert repr(pinned) in text
        # nothing of this repository: only the standard library and Inspect are imported
        imported = {n.names[0].name.split(".")[0] if isinstance(n, ast.Import) else n.module.split(".")[0]
                    for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))}
        assert imported == {"hashlib", "json", "unicodedata", "pathlib", "inspect_ai"}
        assert "/work" not in text and "/tmp" not in text and "/home" not in text
    assert task_file_problems(published.parent, set(jsons)) == []


def test_an_edited_or_missing_task_file_is_a_publication_problem(published, tmp_path):
    public = tmp_path / "public"
    shutil.copytree(published.parent, public)
    wanted = {p.stem for p in published.glob("*.json")}
    task = public / "panels" / f"{OPEN}.py"
    task.write_text(task.read_text(encoding="utf-8").replace("reducer=[]", 'reducer="mean"'), encoding="utf-8")
    (public / "panels" / "base_rate_neglect__wording__v0.py").unlink()
    (public / "panels" / "some_guard_protocol__v0.py").write_text("", encoding="utf-8")
    assert task_file_problems(public, wanted) == [
        f"panels/{OPEN}.py: not the task its panel file renders (edited, or of another panel)",
        "panels/some_guard_protocol__v0.py: protocol some_guard_protocol__v0 is not in the open lane; only open "
        "panels have a task",
        "panels/base_rate_neglect__wording__v0.py: missing; the open panel base_rate_neglect__wording__v0 is "
        "published with its Inspect task"]


def test_the_task_checks_its_panel_file_by_the_archives_own_verify_rule(published):
    """The standalone check (standard library only) finds exactly what ``panels verify`` finds, edit by edit."""
    module = load_task_module(published / f"{OPEN}.py")
    doc = open_panels.load_panel_file(published / f"{OPEN}.json")

    def edit(change):
        changed = copy.deepcopy(doc)
        change(changed)
        return changed

    edits = [
        lambda d: None,
        lambda d: d["panel"][2]["versions"].update(B="Note: " + d["panel"][2]["versions"]["B"]),
        lambda d: d["prompt_sha256"]["s04"].update(C="0" * 64),
        lambda d: d.update(n=d["n"] + 1),
        lambda d: d.update(lane="guard"),
        lambda d: d["how_to_send"].update(max_tokens=4096),
        lambda d: d["generation"].update(max_tokens=4096),
        lambda d: d["item_ids"].reverse(),
        lambda d: d["prompt_sha256"].update(s99={"A": "1" * 64}),
        lambda d: d["panel"][0]["versions"].pop("A_prime"),
        lambda d: d.update(status="retired"),        # outside both hashes: still verifies
    ]
    outcomes = []
    for change in edits:
        changed = edit(change)
        assert module.panel_problems(changed) == open_panels.verify_panel_file(changed)
        outcomes.append(bool(module.panel_problems(changed)))
    assert outcomes == [False] + [True] * 9 + [False]


def test_a_panel_edited_and_rehashed_is_refused_by_the_hashes_the_task_was_published_with(published, tmp_path):
    module = load_task_module(published / f"{OPEN}.py")
    doc = open_panels.load_panel_file(published / f"{OPEN}.json")
    assert module.load_panel(published / f"{OPEN}.json")["protocol_sha256"] == doc["protocol_sha256"]
    doc["panel"][0]["versions"]["A"] = "Note: " + doc["panel"][0]["versions"]["A"]
    forged = rehashed(doc)
    assert open_panels.verify_panel_file(forged) == [], "the edit verifies against itself"
    file = tmp_path / f"{OPEN}.json"
    file.write_text(open_panels.panel_file_text(forged), encoding="utf-8")
    with pytest.raises(module.PanelFileError) as refused:
        module.load_panel(file)
    message = str(refused.value)
    assert message.startswith(f"{OPEN}.json: refused, not the published panel (2 problems): panel_sha256: the file ")
    assert f"this task was published for '{published_hash(published)}'" in message
    with pytest.raises(module.PanelFileError, match="not found beside this task file"):
        module.load_panel(tmp_path / "absent.json")


def published_hash(folder):
    return open_panels.load_panel_file(folder / f"{OPEN}.json")["protocol_sha256"]


@pytest.fixture
def server(published, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with ReaderServer([published / f"{OPEN}.json"]) as running:
        yield running


def test_inspect_refuses_an_edited_panel_file_before_any_call(published, server, tmp_path, monkeypatch):
    """Inspect's own eval loads the task file beside an edited panel file: refused, and no call reaches the server."""
    from inspect_ai import eval as inspect_eval

    folder = tmp_path / "download"
    shutil.copytree(published, folder)
    panel = folder / f"{OPEN}.json"
    doc = json.loads(panel.read_text(encoding="utf-8"))
    doc["panel"][3]["versions"]["B"] = doc["panel"][3]["versions"]["B"].replace("DECISION", "DECISION ")
    panel.write_text(open_panels.panel_file_text(doc), encoding="utf-8")
    monkeypatch.chdir(folder)      # the task file is given as the user types it, by its name in its folder
    monkeypatch.setenv(f"{SERVICE.upper()}_BASE_URL", server.base_url)
    monkeypatch.setenv(f"{SERVICE.upper()}_API_KEY", "unused")
    with pytest.raises(Exception) as refused:
        inspect_eval(f"{OPEN}.py", model=f"openai-api/{SERVICE}/{FRAMING}", display="none",
                     log_dir=str(tmp_path / "logs"))
    message = str(refused.value)
    assert type(refused.value).__name__ == "PanelFileError"
    assert message.startswith(f"{OPEN}.json: refused, not the published panel (")
    assert "prompt_sha256.s04.B: the file says" in message and "panel_sha256: the file says" in message
    assert server.book._counts == {}, "no call was sent"


def test_inspect_runs_the_published_task_as_the_archive_sends_it_with_every_epoch_kept(run):
    from inspect_ai.log import read_eval_log

    doc = open_panels.load_panel_file(run.panels / f"{OPEN}.json")
    per, items = doc["n_per_scenario"], doc["n_items"]
    for name, file in run.logs.items():
        log = read_eval_log(str(file), resolve_attachments=True)
        assert log.status == "success" and len(log.samples) == items * len(VERSIONS) * per == 4 * doc["n"]
        assert {(s.id, s.epoch) for s in log.samples} == {
            (f"{i}.{v}", e) for i in doc["item_ids"] for v in VERSIONS for e in range(1, per + 1)}
        for sample in log.samples:
            item_id, version = sample.id.split(".")
            want = doc["prompt_sha256"][item_id][version]
            assert isinstance(sample.input, str) and hashlib.sha256(sample.input.encode()).hexdigest() == want
            [call] = [e for e in sample.events if e.event == "model"]
            assert [m.role for m in call.input] == ["user"], "no system message, nothing added"
            sent = {k for k, v in call.call.request.items() if v is not None}
            assert sent == {"model", "messages", "max_tokens", "extra_headers"}, sent
            assert sample.output.model == readers.simulated_model_id(name)
        # the panel's max_tokens and nothing else; n_per_scenario epochs and no reducer: no score merged
        assert log.plan.config.model_dump(exclude_none=True) == {"max_tokens": doc["generation"]["max_tokens"]}
        assert log.eval.config.epochs == per and log.eval.config.epochs_reducer == [] and not log.reductions
        [score] = log.results.scores
        assert score.reducer is None and score.scored_samples == len(log.samples)
        print(f"\nInspect on the reader server: {name}: {len(log.samples) // per} samples x {per} epochs = "
              f"{len(log.samples)} calls; model id as logged: {log.eval.model} -> output.model "
              f"{log.samples[0].output.model}")
    assert run.calls == len(run.logs) * 4 * doc["n"], "every call reached the server once"
    print(f"one `inspect eval` for the three readers: {run.calls} calls, {run.seconds:.1f} s wall")
