"""The method document, the README, the help texts and the Croissant metadata say what the code does (issue 17 §3)."""
import argparse
import json
import re
from pathlib import Path

import pytest

from llmarchive.archive import record_logs as records
from llmarchive.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
METHOD = (REPO / "docs" / "method.md").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")
CONSTANT = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")     # an internal constant's name, e.g. MEASUREMENT_FIELDS


def section(number: str) -> str:
    """The text of method §``number`` (``"7.4"`` or ``"8"``), up to the next heading of the same or a higher level."""
    level = "###" if "." in number else "##"
    start = re.search(rf"^{level} {re.escape(number)}[ .]", METHOD, re.M)
    assert start, f"method §{number} not found"
    rest = METHOD[start.end():]
    end = re.search(r"^#{2,%d} " % len(level), rest, re.M)
    return rest[: end.start()] if end else rest


def every_parser():
    """(command path, parser) for the root and every subcommand."""
    todo = [((), build_parser())]
    while todo:
        path, parser = todo.pop()
        yield path, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(path + (name,), sub) for name, sub in action.choices.items()]


def test_no_help_text_prints_rst_markup_or_its_default_twice():
    offenders = []
    for path, parser in every_parser():
        text = parser.format_help()
        if "``" in text or re.search(r":(mod|func|class|data):`", text):
            offenders.append((" ".join(path), "RST markup"))
        for action in parser._actions:
            if (action.help or "").count("default: today") > 1:
                offenders.append((" ".join(path), action.option_strings))
    assert offenders == []


def test_run_help_says_what_retries_end_in_and_offers_no_refused_job():
    run = dict(every_parser())[("run",)]
    text = " ".join(run.format_help().split())
    assert "blocked_upstream" not in text        # a call that outlasts its retries is unanswered, not blocked
    assert "unanswered" in text
    assert "{manual,full_sweep,sweep}" in text


def test_instrument_help_and_the_site_compare_the_rotation_with_the_accepted_baseline():
    from publish.site.pages import GLOSSARY

    instrument = " ".join(dict(every_parser())[("instrument",)].format_help().split())
    assert "previous result" not in instrument and "last accepted baseline" in instrument
    site = GLOSSARY["Instrument and succession records"]["guard_rotation"]
    assert "accepted baseline" in site and "last result" not in site


def test_method_8_names_exactly_the_lease_states_the_code_uses():
    from llmarchive.schedule import lease

    text = section("8")
    states = ["alive", "deadman"] + [name for name, _ in lease.RUN_STATES]
    assert [s for s in states if f"`{s}`" not in text] == []
    assert "`active`" not in text
    assert "state `deadman_alert`" not in text and "states `active`" not in text
    assert "`source_degraded`" in text and "beside the state" in text   # a signal reported beside it, not a state


def test_method_7_4_and_the_code_agree_that_a_missing_fingerprint_fails_its_day_only(paths):
    from llmarchive.instrument import day_verdict, latched_alarm

    latching = section("7.4").split("**latches**")[0]
    assert "missing fingerprint" not in latching, "§7.4 lists a missing fingerprint among the alarms that latch"
    assert "no fingerprint ran at all" in section("7.4")
    fields = {"status": "pass", "digest": "d", "expected_digest": "d", "model_sha256": "m", "template_sha256": "t",
              "llama_cpp_version": "v", "runner_arch": "x86_64", "n_threads": 1, "n_batch": 512, "seed": 0}
    records.append(paths, "runtime_fingerprint", {"date": "2026-11-02", **fields})
    records.append(paths, "runtime_fingerprint", {"date": "2026-11-04", **fields})
    assert not day_verdict(paths, "2026-11-03").passing            # the day without one fails…
    assert day_verdict(paths, "2026-11-04").passing                # …alone: nothing latched
    assert latched_alarm(paths) is None and records.read(paths, "instrument_alarm") == []


def test_the_readme_verifies_the_published_copy_where_the_archive_keeps_it_and_promotes_both_twins():
    from panels.lanes import planned_lane

    public = re.findall(r"llmarchive verify --public (\S+)", README)
    assert public and all(p.rstrip("/") == "var/public" for p in public)
    promoted = re.findall(r"llmarchive panels promote (\S+)", README)
    twins = {planned_lane(pid)[1] for pid in promoted} - {None}
    assert promoted and twins <= set(promoted), f"the README promotes {promoted} but not their twins {twins}"


@pytest.mark.time_machine("2026-12-03T06:00:00Z")
def test_croissant_describes_coverage_csv_and_names_no_internal_constant(paths, built):
    import mlcroissant as mlc

    from llmarchive.schedule.coverage import record_coverage
    from publish import publish_all
    from publish.data import csvs

    records.append(paths, "subject_model", {"date": "2026-11-30", "model_family": "claude-sonnet",
                                            "model_id": "claude-sonnet-5", "previous_model_id": None,
                                            "declared_by": "test"})
    record_coverage(paths, "2026-12-02", since="2026-11-30")
    publish_all(paths, build_time="2026-12-03T00:00:00Z")
    document = json.loads((paths.public / "croissant.json").read_text(encoding="utf-8"))
    files = {d["@id"]: d for d in document["distribution"]}
    assert "coverage.csv" in files
    fields = {rs["@id"]: [f["name"] for f in rs["field"]] for rs in document["recordSet"]}
    assert fields["coverage"] == list(csvs.COVERAGE_FIELDS)
    rows = (paths.public / "coverage.csv").read_text(encoding="utf-8").splitlines()[1:]
    assert rows
    assert len(list(mlc.Dataset(jsonld=paths.public / "croissant.json").records(record_set="coverage"))) == len(rows)

    def descriptions(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "description" and isinstance(value, str):
                    yield value
                else:
                    yield from descriptions(value)
        elif isinstance(node, list):
            for item in node:
                yield from descriptions(item)

    assert [d for d in descriptions(document) if CONSTANT.search(d)] == []


def test_every_command_reads_its_dates_with_the_one_parser():
    """No command, publication entry point or asset keeps a date pattern of its own (llmarchive.archive.dates is the one)."""
    own = re.compile(r"strptime|fromisoformat|\\d\{4\}")
    files = (sorted((REPO / "llmarchive" / "cli").glob("*.py")) + sorted((REPO / "assets").glob("*.py"))
             + sorted((REPO / "scripts").glob("*.py"))
             + [REPO / "publish" / name for name in ("__init__.py", "data/croissant.py", "pipeline/release.py")])
    offenders = [f"{f.relative_to(REPO)}:{n}" for f in files
                 for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if own.search(line)]
    assert offenders == []
    from llmarchive.cli._options import DATE_OPTIONS

    declared = {action.dest for _, parser in every_parser() for action in parser._actions
                if any(flag in ("--date", "--run-date", "--since", "--month", "--build-time")
                       for flag in action.option_strings)}
    assert declared <= set(DATE_OPTIONS)      # each is checked by main before its command runs
