"""Publication reads the store as it is, or refuses (issue 24 §2).

* a complete run whose trial log is not the one its record describes
  (a torn line, a trial cut off, one too many) is refused by name, by
  ``llmarchive publish`` and named by ``llmarchive status``; an honest open
  run (a torn line left by a killed writer) is not;
* an unreadable file — random bytes in a measurement, a run record or a
  line of a record log — is one line naming the file for ``publish``,
  ``status``, ``verify`` and ``coverage``, never a traceback;
* a period that ended with neither output nor a cause refuses the
  publication from the CLI and from the Dagster asset.
"""
import json

import pytest

from llmarchive.archive import record_logs as records, write_json
from llmarchive.cli import main
from tests import publish_helpers as ph
from tests.dagster_helpers import failure_text, resources, run as materialize_assets
from tests.fake_provider import FakeProvider, decide_by_hash

BUILD = "2026-12-03T00:00:00Z"
OPEN = "risky_choice_framing__wording__v0"
GUARD = "risky_choice_framing__anchoring__v0"
GARBAGE = bytes(range(128, 256)) * 3           # not UTF-8, not JSON: what a bad sector or a bad copy leaves


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def measured(archive, capsys):
    """The publication archive with one complete run made by the real runner (its run.json counts its trials)."""
    with FakeProvider(decide_by_hash()) as fake:
        assert main(["--home", str(archive.home), "run", OPEN, "--subject", "openai", "--model", "local",
                     "--base-url", fake.base_url, "--unbudgeted", "--run-id", "r1", "--run-date", "2026-11-02",
                     "--quiet", "--concurrency", "8"]) == 0
    capsys.readouterr()
    return archive


def _cut_last_line(log, torn: bool) -> None:
    data = log.read_bytes()
    body = data[:data.rstrip(b"\n").rfind(b"\n") + 1]
    log.write_bytes(body + (data[len(body):len(body) + 40] if torn else b""))


def _one_more(log) -> None:
    from measure import chain

    lines = log.read_bytes().splitlines()
    last = json.loads(lines[-1])
    extra = {k: v for k, v in last.items() if k not in ("prev_sha256", "record_sha256")}
    extra.update(trial_index=len(lines), replicate_index=99)
    log.write_bytes(log.read_bytes() + chain.to_line(chain.link(extra, last["record_sha256"])).encode("utf-8"))


@pytest.mark.parametrize("damage,words", [
    (lambda log: _cut_last_line(log, torn=True), "ends in a torn line"),
    (lambda log: _cut_last_line(log, torn=False), "holds 119 trials where run.json records 120"),
    (_one_more, "holds 121 trials where run.json records 120"),
], ids=["torn-line", "a-trial-cut-off", "one-trial-too-many"])
def test_a_trial_log_that_disagrees_with_its_record_is_refused_and_named(measured, capsys, damage, words):
    home = str(measured.home)
    damage(measured.run_dir("r1") / "trials.jsonl")
    code, _, err = cli(capsys, "--home", home, "publish", "--build-time", BUILD)
    assert code == 2 and err.startswith("error: refusing to publish: trial_log_chains: run folder r1: its trial log")
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (measured.public / "stability.csv").exists(), "nothing is published"
    code, out, _ = cli(capsys, "--home", home, "status", "--date", "2026-12-03")
    assert code == 0 and "1 that publication refuses" in out and f"REFUSED run folder r1: its trial log" in out


def test_an_honest_open_run_with_a_torn_line_is_not_refused(measured, capsys):
    folder = measured.run_dir("r1")
    run = json.loads((folder / "run.json").read_text())
    (folder / "measurement.json").unlink()
    write_json(folder / "run.json", {**run, "status": "interrupted", "finished_at": None})
    _cut_last_line(folder / "trials.jsonl", torn=True)        # a writer killed mid-line
    code, _, err = cli(capsys, "--home", str(measured.home), "publish", "--build-time", BUILD)
    assert code == 0, err
    assert "r1" not in (measured.public / "stability.csv").read_text(), "an open run is never published"


@pytest.mark.parametrize("target", ["measurement", "run", "record-log-line"])
def test_an_unreadable_file_is_one_line_naming_it_for_every_entry_point(measured, capsys, target):
    home = str(measured.home)
    ph.add_record(measured, "runtime_fingerprint", date="2026-11-02", status="pass", digest="e" * 64,
                  expected_digest="e" * 64, model_sha256="f" * 64, template_sha256="a" * 64,
                  llama_cpp_version="0.3.36", runner_arch="x86_64", n_threads=2, n_batch=512, seed=0)
    ph.add_record(measured, "runtime_fingerprint", date="2026-11-03", status="pass", digest="e" * 64,
                  expected_digest="e" * 64, model_sha256="f" * 64, template_sha256="a" * 64,
                  llama_cpp_version="0.3.36", runner_arch="x86_64", n_threads=2, n_batch=512, seed=0)
    folder = measured.run_dir("r1")
    if target == "record-log-line":
        file = measured.record_log("runtime_fingerprint")
        lines = file.read_bytes().splitlines(keepends=True)
        file.write_bytes(lines[0] + GARBAGE + b"\n")
    else:
        file = folder / f"{target}.json"
        file.write_bytes(GARBAGE)
    named = str(file)

    code, _, err = cli(capsys, "--home", home, "publish", "--build-time", BUILD)
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err

    code, out, err = cli(capsys, "--home", home, "status", "--date", "2026-12-03")
    assert code == 0 and named in out and "Traceback" not in out + err

    code, out, err = cli(capsys, "--home", home, "coverage", "--date", "2026-12-03", "--dry-run")
    assert "Traceback" not in out + err
    if target == "measurement":
        assert code in (0, 1)                   # coverage reads no measurement: nothing to name
    else:
        assert code in (1, 2) and named in err and len(err.strip().splitlines()) == 1, err

    code, out, err = cli(capsys, "--home", home, "verify", str(folder))
    assert "Traceback" not in out + err
    if target == "record-log-line":
        assert code == 0                        # a run folder's verification reads no record log
    else:
        assert code == 2 and named in err and len(err.strip().splitlines()) == 1, err


def _unexplained_november(paths) -> None:
    """Every day of November has its daily cycle; the guard protocol's sweep run says complete but left no
    measurement, and nothing records why: the month has no output and no cause."""
    from tests.test_coverage import beat_days

    beat_days(paths, "2026-11-01", "2026-11-30")
    run_id = f"sweep_2026-11_{GUARD}_claude-sonnet-5"
    write_json(paths.run_dir(run_id) / "run.json", {
        "run_id": run_id, "run_date": "2026-11-02", "protocol_id": GUARD, "series": "commercial",
        "model_family": "claude-sonnet", "subject_model_id": "claude-sonnet-5", "job": "full_sweep",
        "status": "complete", "n_trials_recorded": 120, "n_trials_planned": 120})


def test_a_month_with_no_cause_refuses_the_publication_from_the_cli_and_from_dagster(tmp_path, capsys, instance,
                                                                                     time_machine):
    time_machine.move_to("2026-10-15T09:00:00Z")          # the protocols are admitted in October
    archive = ph.template_archive(tmp_path / "home")
    _unexplained_november(archive)
    time_machine.move_to("2026-12-03T09:00:00Z")          # November is over (the Dagster asset builds "now")
    assert records.read(archive, "coverage") == [], "whether or not the coverage job has run"
    code, _, err = cli(capsys, "--home", str(archive.home), "publish", "--build-time", BUILD)
    expected = f"coverage full_sweep 2026-11 {GUARD}: the period ended with no output and no observed condition"
    assert code == 2 and err.startswith("error: refusing to publish: coverage_gaps_have_causes: " + expected), err
    assert not (archive.public / "stability.csv").exists()

    result = materialize_assets(["public_archive"], resources(archive), instance, raise_on_error=False)
    assert not result.success
    assert ("refusing to publish: coverage_gaps_have_causes: " + expected) in failure_text(result)
    assert not (archive.public / "stability.csv").exists()
