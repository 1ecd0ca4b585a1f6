"""Bad input writes nothing (issue 17 §3): the command, its one-line error, and the archive's tree unchanged.

Each test runs the CLI in-process, takes a snapshot of the archive home —
every folder and every file's bytes — before and after, and compares them.
A mistake of ours (a missing key, a malformed URL, a date that does not
exist, a path of the wrong kind, an empty reviewer) exits 2 with one line on
stderr and leaves the tree exactly as it was.  Every date here is fixed.
"""
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import load_run, record_logs as records
from llmarchive.cli import main
from llmarchive.schedule.coverage import compute

OPEN = "risky_choice_framing__wording__v0"
DAY = "2026-11-03"
# The clock stands on DAY for every test here (admissions, spend and runs are stamped with it): nothing
# depends on the day the suite runs.
pytestmark = pytest.mark.time_machine(f"{DAY}T06:00:00Z")


def tree(home: Path) -> dict[str, Optional[bytes]]:
    """Every folder (None) and file (its bytes) under ``home``, by relative path; empty when it does not exist."""
    if not home.exists():
        return {}
    out: dict[str, Optional[bytes]] = {".": None if home.is_dir() else home.read_bytes()}
    if home.is_dir():
        for path in sorted(home.rglob("*")):
            out[str(path.relative_to(home))] = None if path.is_dir() else path.read_bytes()
    return out


def refused(argv: list[str], home: Path, capsys, *words: str) -> str:
    """Run ``argv``; assert exit 2, exactly one stderr line naming ``words``, nothing on stdout, ``home`` unchanged."""
    before = tree(home)
    capsys.readouterr()
    status = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2, (status, captured.err)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for word in words:
        assert word in lines[0], lines[0]
    assert captured.out == ""
    after = tree(home)
    assert sorted(set(after) - set(before)) == [] and sorted(set(before) - set(after)) == []
    assert [k for k in before if before[k] != after[k]] == []
    return lines[0]


# --------------------------------------------------------------------------
# a mistake of ours is not the provider's outage
# --------------------------------------------------------------------------

def test_a_sweep_without_a_key_stops_before_anything_is_recorded_and_the_month_is_human_absent(
        paid_paths, archive_home, monkeypatch, capsys):
    records.append(paid_paths, "subject_model", {"date": "2026-11-01", "model_family": "claude-sonnet",
                                                 "model_id": "claude-sonnet-5", "previous_model_id": None,
                                                 "declared_by": "test"})
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    refused(["sweep", "--date", DAY, "--base-url", "http://127.0.0.1:9"], archive_home, capsys,
            "ANTHROPIC_API_KEY is not set")
    assert records.read(paid_paths, "skip") == [] and records.read(paid_paths, "coverage") == []
    # The month then passes with no sweep: a person did not start it, as for a sweep never started.
    later = datetime(2026, 12, 2, tzinfo=timezone.utc)
    rows = [r for r in compute(paid_paths, "2026-12-01", jobs=("full_sweep",), now=later).rows
            if r["period"] == "2026-11"]
    assert rows and {r["cause"] for r in rows} == {"human_absent"}


def test_the_sweep_library_refuses_a_keyless_subject_before_recording_a_skip(paid_paths, monkeypatch):
    from llmarchive.succession import load_subject_models
    from llmarchive.subjects import SubjectSettingsError, make_subject
    from llmarchive.schedule.sweep import sweep

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    before = tree(paid_paths.home)

    def factory(model: str, max_tokens: int):
        return make_subject("anthropic", max_tokens=max_tokens, model=model, base_url="http://127.0.0.1:9")

    with pytest.raises(SubjectSettingsError, match="ANTHROPIC_API_KEY"):
        sweep(paid_paths, DAY, load_subject_models(), subject_factory=factory,
              provider_check=lambda: make_subject("anthropic", max_tokens=1, model="m").list_models())
    assert tree(paid_paths.home) == before


@pytest.mark.parametrize("base_url, key, words", [
    (None, None, ("ANTHROPIC_API_KEY is not set",)),
    ("not-a-url", "fake-credential-watch", ("--base-url 'not-a-url' is not a URL",)),
    ("http://", "fake-credential-watch", ("is not a URL",)),
    ("https://user:pw@example.org", "fake-credential-watch", ("carries credentials",)),
])
def test_a_watch_with_no_key_or_a_malformed_url_records_no_outage(paths, archive_home, monkeypatch, capsys,
                                                                   base_url, key, words):
    if key is None:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    else:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    argv = ["watch", "--date", DAY] + (["--base-url", base_url] if base_url else [])
    line = refused(argv, archive_home, capsys, *words)
    assert "user:pw" not in line          # a credential in the URL is never echoed back
    assert records.read(paths, "skip") == []


def test_a_sweep_or_watch_into_a_home_that_does_not_exist_creates_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    home = tmp_path / "never-made"
    for command in ("sweep", "watch"):
        refused(["--home", str(home), command, "--date", DAY], home, capsys, "ANTHROPIC_API_KEY")
    assert not home.exists()


# --------------------------------------------------------------------------
# dates are calendar dates
# --------------------------------------------------------------------------

def test_a_run_dated_on_a_day_that_does_not_exist_creates_no_run_and_spends_nothing(paid_paths, archive_home,
                                                                                    fake, capsys):
    refused(["run", OPEN, "--subject", "anthropic", "--model", "claude-sonnet-5", "--base-url", fake.base_url,
             "--run-date", "2026-13-01", "--quiet"], archive_home, capsys, "--run-date", "2026-13-01")
    assert fake.chat_requests == [] and budget_mod.ledger(paid_paths) == []
    assert not list(paid_paths.experiments.glob("2026-13-01*"))


def test_a_publication_at_a_build_time_that_does_not_exist_is_refused(paths, archive_home, capsys):
    refused(["publish", "--build-time", "2026-13-01T00:00:00Z"], archive_home, capsys, "--build-time")
    assert not (paths.public / "croissant.json").exists()


@pytest.mark.parametrize("argv, words", [
    (["budget", "show", "--month", "2026-13"], ("--month", "2026-13")),
    (["budget", "plan", "--month", "26-1"], ("--month", "YYYY-MM", "26-1")),
    (["budget", "plan", "--series", "v9"], ("--series", "v9", "v0")),
    (["coverage", "--since", "2026-11-04", "--date", DAY], ("--since 2026-11-04 is after --date 2026-11-03",)),
    (["coverage", "--since", "2026-11-31", "--date", DAY], ("--since", "2026-11-31", "not a calendar date")),
    (["status", "--date", ""], ("--date",)),
])
def test_a_bad_day_month_or_series_is_refused_naming_its_option(paid_paths, archive_home, capsys, argv, words):
    line = refused(argv, archive_home, capsys, *words)
    if argv[0] == "coverage" and "--since" in argv:
        assert "--date 2026-11-31" not in line and "--date '2026-11-31'" not in line


# --------------------------------------------------------------------------
# no traceback for a path of the wrong kind
# --------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["coverage", "--date", DAY], ["publish"], ["status", "--date", DAY],
                                     ["budget", "show"], ["run", OPEN, "--subject", "reference"]])
def test_a_home_that_is_a_file_is_refused_as_not_a_folder(tmp_path, capsys, command):
    home = tmp_path / "README.md"
    home.write_text("not an archive\n")
    refused(["--home", str(home)] + command, home, capsys, "is not a folder", str(home))


def test_publish_metadata_into_a_folder_and_release_with_a_folder_as_spec_are_one_line(paths, archive_home,
                                                                                      tmp_path, capsys):
    folder = tmp_path / "somewhere"
    folder.mkdir()
    refused(["publish", "--metadata", str(folder)], archive_home, capsys, "--metadata", "is a folder")
    assert list(folder.iterdir()) == []
    refused(["release", "1.0.0", "--spec", str(folder), "--out", str(tmp_path / "rel")], archive_home, capsys,
            "--spec", "is a folder")
    assert not (tmp_path / "rel").exists()


# --------------------------------------------------------------------------
# read-only commands write nothing
# --------------------------------------------------------------------------

def test_status_writes_nothing_in_an_empty_home_and_does_not_create_a_missing_one(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    before = tree(home)
    assert main(["--home", str(home), "status", "--date", DAY]) == 0
    assert "llmarchive status" in capsys.readouterr().out
    assert tree(home) == before == {".": None}
    missing = tmp_path / "missing"
    assert main(["--home", str(missing), "status", "--json", "--date", DAY]) == 0
    assert json.loads(capsys.readouterr().out)["coverage"]["archive_start"] is None
    assert not missing.exists()


# --------------------------------------------------------------------------
# a flag does what it says or is refused
# --------------------------------------------------------------------------

def test_an_unbudgeted_run_is_charged_to_no_pool_even_when_a_budget_exists(paid_paths, fake, capsys):
    assert main(["run", OPEN, "--subject", "openai", "--model", "own-server-model", "--base-url", fake.base_url,
                 "--unbudgeted", "--run-date", DAY, "--run-id", "own-server", "--quiet"]) == 0
    run = load_run(paid_paths.run_dir("own-server")).run
    assert run["budget"]["budgeted"] is False
    state = budget_mod.ladder_state(paid_paths, budget_mod.load_budget(paid_paths), DAY[:7])
    assert state.charged_eur["general"] == 0 and state.worst_case_eur["general"] == 0


@pytest.mark.parametrize("command", [["instrument", "subject-fingerprint"], ["bridge", "run"]])
def test_unbudgeted_is_refused_where_the_budget_pays_for_the_job(paid_paths, archive_home, fake, capsys, command):
    refused(command + ["--unbudgeted", "--base-url", fake.base_url, "--date", DAY], archive_home, capsys,
            "--unbudgeted", "budget.json")
    assert fake.chat_requests == []


def test_an_empty_reviewer_is_refused_and_admits_nothing(built, archive_home, capsys):
    refused(["panels", "promote", OPEN, "--lane", "open", "--human-reviewed", "--reviewer", ""], archive_home,
            capsys, "--reviewer")
    refused(["panels", "promote", OPEN, "--lane", "open", "--human-reviewed", "--reviewer", "   "], archive_home,
            capsys, "--reviewer")


def test_run_does_not_offer_the_bridge_job(capsys):
    from llmarchive.cli import build_parser

    run = next(a for a in build_parser()._actions if a.dest == "command").choices["run"]
    job = next(a for a in run._actions if a.dest == "job")
    assert "bridge" not in job.choices and "bridge run" in job.help
    with pytest.raises(SystemExit) as exit_:
        main(["run", OPEN, "--subject", "reference", "--job", "bridge"])
    assert exit_.value.code == 2


def test_budget_plan_lists_only_admitted_protocols(paid_paths, capsys):
    assert main(["budget", "plan", "--json", "--series", "v0", "--month", DAY[:7]]) == 0
    v0 = json.loads(capsys.readouterr().out)
    planned = set(v0["allowed"]) | {pid for pid, _ in v0["skipped"]}
    assert planned and all(pid.endswith("__v0") for pid in planned)
    assert main(["budget", "plan", "--json", "--series", "v1", "--month", DAY[:7]]) == 0   # built, none admitted
    v1 = json.loads(capsys.readouterr().out)
    assert v1["allowed"] == [] and v1["skipped"] == []


def test_run_passes_workers_to_the_reference_subject_and_refuses_them_for_an_api(monkeypatch, archive_home, built,
                                                                                 capsys):
    from llmarchive.cli import run as run_cli
    from measure.errors import ArchiveError

    seen: dict = {}

    class Stop(ArchiveError):
        pass

    def fake_make_subject(kind, **options):
        seen.update(options, kind=kind)
        raise Stop("stopped before loading a model")

    monkeypatch.setattr(run_cli, "make_subject", fake_make_subject)
    assert main(["run", OPEN, "--subject", "reference", "--workers", "2", "--run-date", DAY]) == 2
    assert seen["kind"] == "reference" and seen["workers"] == 2
    seen.clear()
    refused(["run", OPEN, "--subject", "openai", "--model", "m", "--workers", "2", "--run-date", DAY],
            archive_home, capsys, "--workers")
    assert seen == {}
