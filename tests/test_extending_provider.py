"""A new provider is one module and one row of the provider table, and nothing else.

The toy provider below exists in this file alone: one module-level subject
class (the OpenAI dialect under its own name and its own key variable) and
one :class:`~llmarchive.subjects.registry.Provider` row, registered by a
fixture and taken out again after each test.  Every place that offers,
checks or reads a provider must see it: the CLI's choices and help, the key
variable the Dagster resource checks, ``subject_models.yaml``'s accepted
providers, the stop reasons, the run id of a comparison run, and a real call
over HTTP on 127.0.0.1 (the fake provider's chat-completions route).  A place
that kept a list of its own would not offer ``toy`` and a test here fails;
:func:`test_no_module_spells_the_provider_list_out` catches a list or a key
variable written out again in the source.
"""
import argparse
import ast
import json
import shutil
from pathlib import Path

import pytest

from llmarchive.archive import ArchivePaths
from llmarchive.archive.run_ids import comparison_run_id, parse
from llmarchive.cli import build_parser, main
from llmarchive.cli._extras import needed_modules
from llmarchive.protocols import registry as protocols
from llmarchive.subjects import (Provider, SubjectSettingsError, base, check_api_settings, make_subject, register,
                                 registry, subject_kinds)
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from llmarchive.succession.subject_models import SubjectModelsError, parse_subject_models
from tests.fake_provider import FakeProvider, Reply, decide_by_hash
from tests.instrument_helpers import admitted_archive

ROOT = Path(__file__).resolve().parents[1]
OPEN = "risky_choice_framing__wording__v0"
KEY_ENV = "LLMARCHIVE_TOY_KEY"
KEY = "toy-credential-for-tests"
MODEL = "toy-model-1"


class ToySubject(OpenAICompatSubject):
    """The toy provider's subject: chat completions, recorded as ``toy``, its key from :data:`KEY_ENV`."""

    provider = "toy"


TOY = Provider(name="toy", title="Toy", make=ToySubject.from_options, key_env=KEY_ENV, key_required=True,
               stop_reasons={"stop": None, "length": "truncated", "toy_declined": "refused"},
               comparison=True, says="reads {key_env}")


@pytest.fixture
def toy():
    """The toy row in the table for one test, and out of it after."""
    unregister = register(TOY)
    try:
        yield TOY
    finally:
        unregister()
    assert registry.find("toy") is None


def choices(parser: argparse.ArgumentParser, words: tuple[str, ...], flag: str) -> tuple:
    """The choices of ``flag`` under the subcommand ``words`` of the CLI's own parser."""
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    action = next(a for a in parser._actions if flag in a.option_strings)
    return tuple(action.choices)


def help_of(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> str:
    for word in words:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
    return " ".join(parser.format_help().split())


def test_the_cli_offers_the_toy_wherever_a_provider_is_offered(toy):
    parser = build_parser()
    assert choices(parser, ("run",), "--subject") == ("reference", "anthropic", "openai", "toy")
    for words in (("sweep",), ("bridge", "run"), ("instrument", "subject-fingerprint")):
        assert choices(parser, words, "--subject") == ("anthropic", "openai", "toy"), words
    assert choices(parser, ("comparison", "run"), "--api") == ("openai", "anthropic", "toy")
    assert f"toy reads {KEY_ENV}" in help_of(parser, ("run",))
    assert f"{KEY_ENV} for --api toy" in help_of(parser, ("comparison", "run"))
    assert "toy" in subject_kinds()


def test_the_table_is_read_when_asked_so_an_unregistered_row_is_offered_nowhere():
    parser = build_parser()
    assert "toy" not in choices(parser, ("run",), "--subject")
    assert "toy" not in choices(parser, ("comparison", "run"), "--api")
    with pytest.raises(SubjectSettingsError, match="unknown subject 'toy'; known: reference, anthropic, openai"):
        make_subject("toy", max_tokens=8, model=MODEL)


def test_the_key_variable_stop_reasons_and_run_id_come_from_the_row(toy, monkeypatch):
    from assets.resources import SubjectResource

    monkeypatch.delenv(KEY_ENV, raising=False)
    resource = SubjectResource(provider="toy", base_url="http://127.0.0.1:9")
    assert resource.key_variable == KEY_ENV
    assert resource.configured() == (False, f"{KEY_ENV} is not set: the commercial series is paid work and stays off")
    with pytest.raises(SubjectSettingsError, match=f"{KEY_ENV} is not set: the toy subject reads its key"):
        check_api_settings("toy", "http://127.0.0.1:9")
    monkeypatch.setenv(KEY_ENV, KEY)
    assert resource.configured() == (True, "configured")
    check_api_settings("toy", "http://127.0.0.1:9")
    # the stop reasons: the row's, under the name its calls are recorded with
    assert base.STOP_REASONS["toy"]["toy_declined"] == "refused"
    assert base.stop_outcome("toy", "toy_declined") == "refused" and base.stop_outcome("toy", "stop") is None
    # the comparison run's id names the provider, and reads back
    run_id = comparison_run_id(OPEN, MODEL, "toy")
    assert run_id == f"comparison_{OPEN}_toy_{MODEL}"
    assert (parse(run_id).suffix, parse(run_id).model, parse(run_id).protocol_id) == ("toy", MODEL, OPEN)
    # subject_models.yaml may name it; the modules a run of it needs are the row's (none)
    yaml = {"model_family": "toy", "provider": "toy", "pattern": "toy-*", "active_model": MODEL, "tier": "t",
            "effort": "e", "auto_bridge": "true", "protocol_series": "v0", "successor_declaration": {}}
    assert parse_subject_models(yaml).provider == "toy"
    with pytest.raises(SubjectModelsError, match="provider must be anthropic, openai or toy, got 'nope'"):
        parse_subject_models({**yaml, "provider": "nope"})
    assert needed_modules(("run",), argparse.Namespace(subject="toy")) == ()
    assert needed_modules(("run",), argparse.Namespace(subject="reference")) == ("llama_cpp",)


def test_a_toy_subject_calls_a_server_on_localhost_with_its_key_and_classifies_by_its_row(toy, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with FakeProvider(require_key=KEY) as fake:
        fake.script(Reply.text("DECISION: B"), Reply.max_tokens())
        subject = make_subject("toy", max_tokens=16, model=MODEL, base_url=fake.base_url, max_attempts=1)
        assert isinstance(subject, ToySubject) and subject.config()["key_env"] == KEY_ENV
        first, second = subject.call("Pick A or B."), subject.call("Pick A or B.")
        assert fake.chat_requests[0].headers.get("authorization") == f"Bearer {KEY}"
    assert first.provider == "toy" and base.classify(first, ["A", "B"], 1).token == "B"
    assert base.classify(second, ["A", "B"], 1).outcome == "truncated"
    assert KEY not in json.dumps(subject.config())


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """An admitted archive's published ``panels/`` folder, as publication writes it."""
    root = tmp_path_factory.mktemp("toy-provider")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMARCHIVE_HOME", str(root / "archive"))
        paths = admitted_archive(mp)
        from publish.data.panels import files

        for name, data in files(paths, protocols.list_protocols(paths)).items():
            (root / "public" / name).parent.mkdir(parents=True, exist_ok=True)
            (root / "public" / name).write_bytes(data)
    return root / "public" / "panels" / f"{OPEN}.json"


def test_comparison_run_with_api_toy_runs_over_http_into_the_toys_run_folder(toy, published, tmp_path, monkeypatch):
    monkeypatch.setenv("LLMARCHIVE_HOME", str(tmp_path / "outsider"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv(KEY_ENV, KEY)
    panel = tmp_path / published.name
    shutil.copy(published, panel)
    out = tmp_path / "submission.jsonl"
    with FakeProvider(decide_by_hash(), require_key=KEY) as fake:
        assert main(["comparison", "run", "--api", "toy", "--panel", str(panel), "--base-url", fake.base_url,
                     "--model", MODEL, "--out", str(out), "--max-attempts", "1", "--quiet"]) == 0
    folder = ArchivePaths.from_env().run_dir(f"comparison_{OPEN}_toy_{MODEL}")
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert run["subject"]["kind"] == "toy" and run["subject"]["key_env"] == KEY_ENV
    assert run["comparison_run"]["api"] == "toy"
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[0])["model_id"] == MODEL


def _literal_lists(tree: ast.AST, names: set) -> list[int]:
    """Line numbers of a tuple, list or set literal, or a dict's keys, holding two provider names or more."""
    def elements(node: ast.AST) -> list:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return node.elts
        return [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else []
    return [node.lineno for node in ast.walk(tree)
            if sum(isinstance(e, ast.Constant) and e.value in names for e in elements(node)) >= 2]


def test_no_module_spells_the_provider_list_out():
    """Outside the table, no literal list of provider names and no key variable spelled as a string."""
    rows = registry.providers()
    names = {p.name for p in rows} | {p.records_as for p in rows}
    keys = {p.key_env for p in rows if p.key_env}
    found = []
    for folder in ("llmarchive", "publish", "assets"):
        for file in sorted((ROOT / folder).rglob("*.py")):
            if file == ROOT / "llmarchive" / "subjects" / "providers.py":
                continue
            tree = ast.parse(file.read_text(encoding="utf-8"))
            found += [f"{file.relative_to(ROOT)}:{line} lists providers" for line in _literal_lists(tree, names)]
            found += [f"{file.relative_to(ROOT)}:{node.lineno} spells {node.value}" for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and node.value in keys]
    assert found == [], "read the provider table (llmarchive.subjects.registry) instead:\n" + "\n".join(found)
