"""The CLI speaks one dialect: every reporting command has ``--json``, a shared option has one default.

The parser is walked as ``llmarchive.cli.build_parser()`` builds it, so a
subcommand added later is checked without editing this file (unless it
reports, in which case it joins REPORTING).
"""
import argparse
import json
import re
from pathlib import Path

import pytest

from llmarchive.cli import build_parser, main

# Every command that prints a status, a list or a table.
REPORTING = [
    ("status",),
    ("panels", "list"),
    ("panels", "check"),
    ("panels", "design"),
    ("prereg", "check"),
    ("budget", "show"),
    ("budget", "plan"),
    ("coverage",),
    ("lease",),
    ("instrument", "status"),
    ("instrument", "apply-marks"),
    ("bridge", "status"),
    ("watch",),
    ("review", "list"),
    ("verify",),
]

# Options several subcommands share: declared once, in llmarchive/cli/_options.py.
SHARED = ("--subject", "--model", "--model-path", "--model-sha256", "--max-tokens", "--concurrency",
          "--run-id", "--date", "--json")

CLI = Path(__file__).resolve().parent.parent / "llmarchive" / "cli"


def commands(parser: argparse.ArgumentParser, path: tuple = ()):
    """(path, parser) for every subcommand, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,), sub
                yield from commands(sub, path + (name,))


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


@pytest.fixture(scope="module")
def tree() -> dict[tuple, argparse.ArgumentParser]:
    return dict(commands(build_parser()))


def test_every_reporting_command_exists_and_has_json(tree):
    missing = [" ".join(path) for path in REPORTING if path not in tree]
    assert missing == [], f"REPORTING names commands the CLI does not have: {missing}"
    without = [" ".join(path) for path in REPORTING if "--json" not in options(tree[path])]
    assert without == [], f"reporting commands without --json: {without}"


def test_json_is_a_plain_switch_everywhere(tree):
    for path, parser in tree.items():
        action = options(parser).get("--json")
        if action is not None:
            assert isinstance(action, argparse._StoreTrueAction) and action.dest == "json", " ".join(path)


def test_each_shared_option_has_one_default_everywhere_it_appears(tree):
    seen: dict[str, dict] = {flag: {} for flag in SHARED}
    for path, parser in tree.items():
        for flag, action in options(parser).items():
            if flag in seen:
                seen[flag].setdefault(repr(action.default), []).append(" ".join(path))
    disagreeing = {flag: defaults for flag, defaults in seen.items() if len(defaults) > 1}
    assert disagreeing == {}, f"shared options with more than one default: {disagreeing}"
    # The walk did find them: a check over nothing proves nothing.
    assert all(seen[flag] for flag in SHARED)


def test_open_weights_and_run_agree_on_the_reference_model_options(tree):
    run, open_weights = options(tree[("run",)]), options(tree[("open-weights",)])
    for flag in ("--model", "--model-path", "--model-sha256", "--max-tokens", "--threads", "--batch", "--workers"):
        assert run[flag].default == open_weights[flag].default, flag


def test_shared_options_are_declared_only_in_the_options_module():
    declared = re.compile(r"add_argument\(\s*[\"'](" + "|".join(re.escape(f) for f in SHARED) + r")[\"']")
    offenders = [f"{file.name}: {match.group(1)}" for file in sorted(CLI.glob("*.py")) if file.name != "_options.py"
                 for match in declared.finditer(file.read_text(encoding="utf-8"))]
    assert offenders == [], f"declare these through llmarchive/cli/_options.py: {offenders}"


@pytest.mark.parametrize("argv, expected_type, expected_status", [
    (["panels", "list", "--json"], list, 0),
    (["bridge", "status", "--json"], list, 0),
    (["review", "list", "--json"], list, 0),
    (["coverage", "--json", "--dry-run", "--date", "2026-11-03"], dict, 0),
    (["instrument", "status", "--json", "--date", "2026-11-03"], dict, 1),
    (["lease", "--json"], dict, 1),
])
def test_a_reporting_command_prints_one_json_document(tmp_path, monkeypatch, capsys, argv, expected_type,
                                                      expected_status):
    monkeypatch.setenv("LLMARCHIVE_HOME", str(tmp_path / "home"))
    if argv[0] == "panels":      # reading protocols never builds them
        assert main(["panels", "build"]) == 0
        capsys.readouterr()
    status = main(argv)
    out = capsys.readouterr().out
    document = json.loads(out)         # the whole of stdout is one document
    assert isinstance(document, expected_type)
    assert status == expected_status


def test_panels_list_json_names_every_built_protocol(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMARCHIVE_HOME", str(tmp_path / "home"))
    assert main(["panels", "build"]) == 0
    capsys.readouterr()
    assert main(["panels", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == 24 and all(row["status"] == "candidate" for row in listed)
    assert {"protocol_id", "lane", "panel_sha256", "protocol_sha256"} <= set(listed[0])
