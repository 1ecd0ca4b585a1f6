"""The store owns the run-folder layout, and a run folder it cannot read is never skipped."""
import ast
from datetime import datetime, timezone
from pathlib import Path

import pytest

from llmarchive.archive import UnexplainedGap, store
from llmarchive.schedule.coverage import compute, gather, record_coverage
from measure.schema import MEASUREMENT_FIELD_NAMES
from tests.test_coverage import PROTOCOLS, P_GUARD, P_OPEN, beat_days, complete_run, rows_by

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 12, 2, 12, tzinfo=timezone.utc)
LAYOUT = {"run.json", "measurement.json", "trials.jsonl"}


def _corrupt(paths, run_id: str) -> None:
    folder = paths.run_dir(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text('{"run_id": "' + run_id + '", "run_date": "2026-11-0', encoding="utf-8")
    (folder / "trials.jsonl").write_text("", encoding="utf-8")


def test_no_module_but_the_store_spells_a_file_name_of_the_run_folder_layout():
    """Code strings only: a docstring may describe the layout, only the store may open it."""
    spelled = []
    for package in ("llmarchive", "publish", "assets", "panels", "measure"):
        for module in sorted((ROOT / package).rglob("*.py")):
            if module == ROOT / "llmarchive" / "archive" / "store.py":
                continue
            tree = ast.parse(module.read_text(encoding="utf-8"))
            docs = {id(n.body[0].value) for n in ast.walk(tree)
                    if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
                    and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                    hits = [name for name in LAYOUT if name in node.value]
                    if hits and not node.value.startswith(("usage", "help")):
                        spelled.append(f"{module.relative_to(ROOT)}:{node.lineno} {', '.join(hits)}")
    assert spelled == [], "only llmarchive/archive/store.py may name the run-folder files:\n" + "\n".join(spelled)


def test_a_corrupt_run_record_is_listed_as_unreadable_not_skipped(paths):
    complete_run(paths, "sweep_2026-11_" + P_OPEN + "_claude-sonnet-5", "2026-11-02")
    _corrupt(paths, "sweep_2026-11_" + P_GUARD + "_claude-sonnet-5")
    found = store.archive_scan(paths)
    assert [r.run_id for r in found.complete] == ["sweep_2026-11_" + P_OPEN + "_claude-sonnet-5"]
    assert [u.run_id for u in found.unreadable] == ["sweep_2026-11_" + P_GUARD + "_claude-sonnet-5"]
    assert "run.json" in found.unreadable[0].problem
    with pytest.raises(ValueError, match="run.json"):
        found.refuse(ValueError)


def test_a_corrupt_sweep_run_is_its_own_condition_in_coverage_where_it_was_skipped(paths):
    """Before the store, coverage skipped the folder and called the month ``paid_job_not_started``
    (nobody started it) — while publication refused the same folder."""
    beat_days(paths, "2026-11-01", "2026-12-01")
    complete_run(paths, "sweep_2026-11_" + P_OPEN + "_claude-sonnet-5", "2026-11-02")
    _corrupt(paths, "sweep_2026-11_" + P_GUARD + "_claude-sonnet-5")
    result = compute(paths, "2026-12-01", facts=gather(paths, protocols=PROTOCOLS), jobs=("full_sweep",), now=NOW)
    row = rows_by(result, "full_sweep")[("2026-11", P_GUARD)]
    assert row["status"] == "gap" and row["cause"] == "provider_outage"
    assert row["detail"].startswith("run_record_unreadable: run folder sweep_2026-11_" + P_GUARD)
    assert rows_by(result, "full_sweep")[("2026-11", P_OPEN)]["status"] == "ran"
    assert result.unreadable == []


def test_an_unreadable_run_folder_no_period_claims_fails_coverage_after_writing_its_rows(paths):
    from llmarchive.archive import record_logs as records

    beat_days(paths, "2026-11-01", "2026-11-03")
    _corrupt(paths, "a_manual_run")
    with pytest.raises(UnexplainedGap, match="a_manual_run") as info:
        record_coverage(paths, "2026-11-03", facts=gather(paths, protocols=PROTOCOLS), now=NOW)
    assert info.value.gaps == [("run_record_unreadable", "a_manual_run", None)]
    assert records.read(paths, "coverage"), "the explained rows are written first"


def test_publication_refuses_an_unreadable_run_folder_even_an_open_one(paths, built):
    from publish.errors import PublishError
    from publish.data import gather as publish_gather

    _corrupt(paths, "a_manual_run")
    with pytest.raises(PublishError, match="a_manual_run"):
        publish_gather(paths)


def _measurement(gap_pct: float) -> dict:
    """A measurement record of the schema (every field null but the ones the test looks at)."""
    return {**{name: None for name in MEASUREMENT_FIELD_NAMES}, "record_type": "measurement", "run_id": "r1",
            "gap_pct": gap_pct}


def test_a_measurement_is_written_once(paths):
    folder = paths.run_dir("r1")
    folder.mkdir(parents=True)
    store.write_measurement(folder, _measurement(1.0))
    store.write_measurement(folder, _measurement(1.0))   # the same record again: a no-op
    with pytest.raises(store.StoreError, match="written once"):
        store.write_measurement(folder, _measurement(2.0))
    assert store.read_measurement(folder) == _measurement(1.0)
    assert store.read_measurement(folder).gap_pct == 1.0


def test_a_record_that_is_not_a_measurement_is_never_written(paths):
    folder = paths.run_dir("r1")
    folder.mkdir(parents=True)
    with pytest.raises(store.StoreError, match=r"measurement\.json: not a measurement of this schema: .*gap_pct"):
        store.write_measurement(folder, {**_measurement(1.0), "gap_pct": "1.0"})
    assert not store.is_complete(folder)


def test_the_producers_of_runs_never_import_the_auditor():
    """Coverage judges what the producers left; it is not their run index (their queries come from the store),
    and the month's coverage rows after a whole-month sweep are written by the use case
    (llmarchive.schedule.month_sweep), not by the sweep."""
    producers = ("schedule/sweep", "schedule/bridge", "instrument/revalidate", "schedule/lease", "run/runner",
                 "run/plan", "run/calls", "schedule/open_weights", "schedule/paid_run", "archive/store")
    importing = []
    for name in producers:
        tree = ast.parse((ROOT / "llmarchive" / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llmarchive.schedule.coverage"):
                importing += [f"{name}:{node.lineno} {a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module == "llmarchive.schedule":
                importing += [f"{name}:{node.lineno} coverage" for a in node.names if a.name.startswith("coverage")]
            elif isinstance(node, ast.Import):
                importing += [f"{name}:{node.lineno} {a.name}" for a in node.names
                              if a.name.startswith("llmarchive.schedule.coverage")]
    assert importing == []


def test_an_unreadable_run_held_for_review_fails_coverage_and_refuses_publication(paths, built):
    """Held runs (review) live outside experiments/; a torn record there is named, never left out."""
    from publish.errors import PublishError
    from publish.data import gather as publish_gather

    beat_days(paths, "2026-11-01", "2026-11-03")
    held = store.held_root(paths) / "bridge_2026-11-05_risky_claude-sonnet-5-5"
    held.mkdir(parents=True)
    (held / "run.json").write_text('{"run_id": "bridge_2026-11-05_risky', encoding="utf-8")
    with pytest.raises(UnexplainedGap, match="bridge_2026-11-05_risky"):
        record_coverage(paths, "2026-11-03", facts=gather(paths, protocols=PROTOCOLS), now=NOW)
    with pytest.raises(PublishError, match="bridge_2026-11-05_risky"):
        publish_gather(paths)
