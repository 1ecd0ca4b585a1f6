"""A new daily self-check is one row of the job table (and the module that does the check), and nothing else.

The toy check below exists in this file alone: one
:class:`~llmarchive.archive.jobs.JobSpec` row with its ``check`` function,
registered by a fixture and taken out again after each test.  No asset is
written for it: Dagster's is built from the row (``assets/selfchecks.py``).
Everything the job table drives must see it: the record
kinds (``record_logs.KINDS``) and the logs coverage reads, the cadence
check, the coverage rows of a day (ran, unavailable, step missing), the
morning status and its line, ``llmarchive instrument checks``, the
Dagster definitions (the daily instrument job, its tag, the coverage asset's
deps), and publication: ``archive.db``'s instrument table and its ``kind``
column's description, ``status.json``'s instrument part and the site's
glossary.  A place that kept a list of its own would miss ``toy_check`` and a
test here fails;
:func:`test_no_module_writes_the_daily_kinds_out` catches a list of the daily
record kinds written out again in the source.
"""
import ast
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from llmarchive.archive import jobs, read_yaml, record_logs as records
from llmarchive.archive.cadence import CADENCE_FILE, CadenceError, load_cadence, parse_document
from llmarchive.cli import main
from llmarchive.cli.status import _instrument_lines
from llmarchive.schedule import coverage_conditions
from llmarchive.schedule.coverage import compute, gather
from llmarchive.schedule.status import instrument_part
from publish.data import sources
from publish.site import pages

ROOT = Path(__file__).resolve().parents[1]


def toy_check(paths, day):
    """The toy check's work: one toy record for the day, and the materialisation's metadata."""
    if (paths.home / "toy_broken").exists():
        raise records.RecordError("the toy reader is broken")
    records.append(paths, "toy_check", {"date": day, "status": "pass", "reading": 7})
    return {"status": "pass", "reading": 7, "readings": [7]}


TOY = jobs.JobSpec(
    "toy_check", True,
    record=jobs.Record("toy_check", ("date", "status", "reading")),
    covered=jobs.Covered(unavailable="status", detail="toy reading {reading}"),
    self_check=True, asset="toy_check", shown=jobs.Shown("toy", ("status",)), says="toy check",
    published=("archive.db", "status.json"),
    public=jobs.Public(("date", "status", "reading"), "A toy daily check that only a test registers.",
                       status="status"),
    check="tests.test_extending_selfcheck:toy_check")
RUNTIME = {"status": "pass", "digest": "d", "expected_digest": "d", "model_sha256": "m", "template_sha256": "t",
           "llama_cpp_version": "v", "runner_arch": "x86_64", "n_threads": 1, "n_batch": 1, "seed": 0}


@pytest.fixture
def toy():
    """The toy row in the table for one test, and out of it after."""
    unregister = jobs.register(TOY)
    try:
        yield TOY
    finally:
        unregister()
    assert "toy_check" not in records.KINDS


def toy_cadence():
    """The repository's cadence with the line a new check adds to ``cadence.yaml``."""
    return parse_document({**read_yaml(CADENCE_FILE, CadenceError), "toy_check": "1d"})


def test_the_row_declares_the_record_kind_and_the_logs_coverage_reads(toy, paths):
    assert records.KINDS["toy_check"] == ("date", "status", "reading")
    assert "toy_check" in jobs.record_kinds(self_check=True) and "toy_check" in coverage_conditions.log_kinds()
    records.append(paths, "toy_check", {"date": "2026-11-01", "status": "pass", "reading": 7})
    with pytest.raises(records.RecordError, match="a toy_check record needs reading"):
        records.append(paths, "toy_check", {"date": "2026-11-01", "status": "pass"})
    with pytest.raises(jobs.JobTableError):
        jobs.register(TOY)


def test_the_cadence_check_asks_for_the_rows_key(toy):
    with pytest.raises(CadenceError, match="missing key.*toy_check"):
        load_cadence()
    assert toy_cadence().every("toy_check").days == 1


def test_coverage_rows_of_a_day_come_from_the_row(toy, paths):
    for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
        records.append(paths, "runtime_fingerprint", {"date": day, **RUNTIME}, recorded_at=f"{day}T04:00:00Z")
    records.append(paths, "toy_check", {"date": "2026-11-01", "status": "pass", "reading": 7})
    records.append(paths, "toy_check", {"date": "2026-11-02", "status": "unavailable", "reading": None})
    facts = gather(paths, protocols=[], cadence=toy_cadence())
    result = compute(paths, "2026-11-03", facts=facts, jobs=("toy_check",), today="2026-11-04",
                     now=datetime(2026, 11, 4, 5, tzinfo=timezone.utc))
    rows = {row["period"]: row for row in result.rows}
    assert [row["job"] for row in result.rows] == ["toy_check"] * 3 and result.unexplained == []
    assert (rows["2026-11-01"]["status"], rows["2026-11-01"]["detail"]) == ("ran", "toy reading 7")
    assert rows["2026-11-01"]["series"] is None
    assert rows["2026-11-02"]["condition"] == "instrument_unavailable"
    assert rows["2026-11-03"]["condition"] == "cycle_step_missing"
    # and coverage accounts for it when no job list is given
    everything = compute(paths, "2026-11-03", facts=facts, today="2026-11-04",
                         now=datetime(2026, 11, 4, 5, tzinfo=timezone.utc))
    assert "toy_check" in {row["job"] for row in everything.rows}


def test_status_and_its_line_show_the_rows_field(toy, paths):
    records.append(paths, "toy_check", {"date": "2026-11-01", "status": "pass", "reading": 7})
    part = instrument_part(paths, "2026-11-01")
    assert part["toy_check"] == "pass" and list(part)[-1] == "latched_alarm"
    [line, *_] = _instrument_lines(part)
    assert line.endswith("fingerprint not run; rotation not run; toy pass")
    assert "toy not run" in _instrument_lines(instrument_part(paths, "2026-11-02"))[0]


def test_the_cli_lists_the_row(toy, capsys):
    capsys.readouterr()
    assert main(["instrument", "checks", "--json"]) == 0
    listed = {row["job"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed["toy_check"]["self_check"] is True and listed["toy_check"]["record_kind"] == "toy_check"
    assert main(["instrument", "checks"]) == 0
    assert "toy_check" in capsys.readouterr().out


def test_a_toy_record_is_published_in_the_instrument_table_status_json_and_the_site(toy, paths, built, tmp_path,
                                                                                  monkeypatch):
    from llmarchive.archive import cadence
    from publish import publish_all

    # Publication refuses an archive whose coverage it cannot compute: the toy check's line is in cadence.yaml.
    with_toy = tmp_path / "cadence.yaml"
    with_toy.write_text(CADENCE_FILE.read_text(encoding="utf-8") + "toy_check: 1d\n", encoding="utf-8")
    monkeypatch.setattr(cadence, "CADENCE_FILE", with_toy)
    records.append(paths, "toy_check", {"date": "2026-11-01", "status": "pass", "reading": 7},
                   recorded_at="2026-11-01T04:00:00Z")
    records.append(paths, "toy_check", {"date": "2026-11-02", "status": "unavailable", "reading": None,
                                        "reason": "/private/path: the reader failed"},
                   recorded_at="2026-11-02T04:00:00Z")
    publish_all(paths, build_time="2026-11-03T00:00:00Z")
    db = sqlite3.connect(paths.public / "archive.db")
    rows = db.execute("select date, status, detail from instrument where kind = 'toy_check' order by date").fetchall()
    assert [(day, status) for day, status, _ in rows] == [("2026-11-01", "pass"), ("2026-11-02", "unavailable")]
    assert json.loads(rows[0][2]) == {"reading": 7}, "the status field is its own column, not repeated in detail"
    assert "reason" not in json.loads(rows[1][2]), "a check that could not run keeps its error's text private"
    instrument = json.loads((paths.public / "status.json").read_text())["instrument"]
    assert instrument["toy_check"] == {"date": "2026-11-02", "status": "unavailable", "reading": None}
    site = (paths.public / "index.html").read_text(encoding="utf-8")
    assert '<dt id="g-toy_check"><code>toy_check</code></dt><dd>A toy daily check that only a test registers.' in site
    assert "Coverage of its daily jobs (runtime fingerprint, guard rotation, revalidation, toy check)" in site
    # archive.db's column descriptions are the Datasette metadata it is served with (`publish --metadata`)
    assert main(["publish", "--metadata", str(tmp_path / "metadata.yml")]) == 0
    served = read_yaml(tmp_path / "metadata.yml", AssertionError)["databases"]["archive"]["tables"]
    assert "toy_check" in served["instrument"]["columns"]["kind"], "a row registered after import is described"


def test_an_unregistered_row_reaches_nothing():
    assert "toy_check" not in records.KINDS and "toy_check" not in jobs.assets()
    assert "toy_check" not in {job.name for job in coverage_conditions.coverage_jobs()}
    assert "toy_check" not in sources.read_kinds() and "toy_check" not in pages.glossary_terms()
    with pytest.raises(jobs.UnknownJob):
        jobs.canonical("toy_check")


# The Dagster graph is built at import, so the toy row is put in a fresh interpreter first.  No asset is
# written for it: the definitions must build it from the row, and running it must call the row's check.
DAGSTER_CHILD = textwrap.dedent('''
    import json
    import os
    from datetime import date, timedelta

    from dagster import AssetKey, AssetsDefinition, DagsterInstance

    from llmarchive.archive import jobs
    from llmarchive.archive import record_logs as records
    from llmarchive.archive.paths import ArchivePaths
    from tests.test_extending_selfcheck import TOY

    jobs.register(TOY)
    import assets.coverage
    import assets.instrument
    import assets.selfchecks
    from assets.definitions_builder import build_definitions
    from assets.jobs import RUNS, RUNS_TAG
    from tests.dagster_helpers import materialization_metadata, refusals, today

    paths = ArchivePaths.from_env().ensure()
    defs = build_definitions()
    built = defs.resolve_assets_def("toy_check")
    key = AssetKey("toy_check")
    job = defs.resolve_job_def("daily_instrument_job")
    coverage_deps = {k.to_user_string() for k in assets.coverage.coverage.dependency_keys}
    instance = DagsterInstance.ephemeral()

    def run(day, raise_on_error=True):
        return job.execute_in_process(partition_key=day, asset_selection=[key], instance=instance,
                                      raise_on_error=raise_on_error)

    ran = run(today())
    yesterday = (date.fromisoformat(today()) - timedelta(days=1)).isoformat()
    past = run(yesterday, raise_on_error=False)
    (paths.home / "toy_broken").write_text("")
    broken = run(today(), raise_on_error=False)
    print(json.dumps({
        "job_assets": sorted(k.to_user_string() for k in job.asset_layer.selected_asset_keys),
        "runs": RUNS["daily_instrument_job"], "tag": job.tags[RUNS_TAG], "description": job.description,
        "coverage_deps": sorted(coverage_deps),
        "hand_written": isinstance(getattr(assets.instrument, "toy_check", None), AssetsDefinition),
        "from_the_factory": built.node_def is assets.selfchecks.built(TOY).node_def,
        "group": built.group_names_by_key[key], "partitioned": built.partitions_def is not None,
        "asset_description": built.descriptions_by_key.get(key),
        "ran": ran.success, "metadata": materialization_metadata(ran, "toy_check"),
        "records": [(r["date"], r["status"], r["reading"]) for r in records.read(paths, "toy_check")],
        "past": [(said, facts["refusal"]) for said, facts in refusals(past)], "past_ok": past.success,
        "broken": [said for said, _ in refusals(broken)], "broken_ok": broken.success, "today": today(),
    }))
''')


def test_dagster_definitions_build_the_rows_asset(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": os.environ.get("DAGSTER_HOME", "/tmp"),
           "LLMARCHIVE_HOME": str(tmp_path / "archive")}
    done = subprocess.run([sys.executable, "-c", DAGSTER_CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "toy_check" in seen["job_assets"] and "runtime_fingerprint" in seen["job_assets"]
    assert seen["runs"][-1] == "toy_check" and seen["tag"].endswith("+toy_check")
    assert seen["description"].startswith("The free daily checks: runtime fingerprint, guard rotation, "
                                          "revalidation, toy check.")
    assert "toy_check" in seen["coverage_deps"]
    # the asset is the factory's, built from the row: nobody wrote one
    assert seen["hand_written"] is False and seen["from_the_factory"] is True
    assert seen["group"] == "instrument" and seen["partitioned"] is True
    assert seen["asset_description"].startswith("Toy check: a daily self-check")
    # today's partition runs the row's check: its record written, its mapping the materialisation's metadata
    assert seen["ran"] is True and seen["metadata"] == {"status": "pass", "reading": 7, "readings": [7]}
    assert seen["records"] == [[seen["today"], "pass", 7]]
    # another day is refused as the other instrument assets refuse it, and runs nothing
    [(said, kind)] = seen["past"]
    assert seen["past_ok"] is False and kind == "not_today" and "never a backfill" in said
    # the check's error fails the day with its one line
    assert seen["broken_ok"] is False and seen["broken"] == ["the toy reader is broken"]


def daily_names() -> set[str]:
    """The daily jobs' record kinds and job names: two of them in one literal is a list of them written out."""
    return {name for job in jobs.table() if job.record for name in (job.record.kind, job.name)}


# Where the kinds may still be written out, and why.
ALLOWED = {
    "llmarchive/archive/jobs.py": "the job table itself",
    "llmarchive/archive/cadence.py": "method §8's list of every cadence.yaml key, jobs among them (tests/test_jobs.py)",
    "assets/instrument.py": "each alarm check's own description, written beside the asset it checks",
}


def test_no_module_writes_the_daily_kinds_out():
    names = daily_names()
    found = []
    for folder in ("llmarchive", "assets", "publish"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            if where in ALLOWED:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            # A face's __all__ lists the names of functions (some named like their kind), not the kinds.
            exports = {id(n.value) for n in tree.body
                       if isinstance(n, ast.Assign) and [getattr(x, "id", None) for x in n.targets] == ["__all__"]
                       or isinstance(n, ast.AugAssign) and getattr(n.target, "id", None) == "__all__"}
            for node in ast.walk(tree):
                if id(node) in exports:
                    continue
                items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else \
                    node.keys if isinstance(node, ast.Dict) else []
                named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in names}
                if len(named) >= 2:
                    found.append(f"{where}:{node.lineno} {sorted(named)}")
    assert found == [], "the daily kinds written out again (derive them from llmarchive.archive.jobs):\n" + \
        "\n".join(found)


def test_a_row_names_its_check_by_reference_and_a_wrong_reference_is_refused_naming_it():
    """The row lives on the ground floor and its check above it, so the row names the check, never imports it."""
    from dataclasses import replace

    from assets import selfchecks

    assert selfchecks.resolve(TOY) is toy_check
    for wrong in ("tests.test_extending_selfcheck:no_such_check", "no.such.module:check",
                  "tests.test_extending_selfcheck"):
        with pytest.raises(ValueError, match=f"job 'toy_check': its check '{wrong}' names no function"):
            selfchecks.resolve(replace(TOY, check=wrong))
