"""Daily revalidation: ten historical measurements a day, rotating, recomputed; a difference fails loudly."""
import json
import math
from datetime import date, timedelta

import pytest

from llmarchive.archive import ArchivePaths, record_logs as records
from llmarchive.budget import unbudgeted
from llmarchive.cli import main
from llmarchive.instrument.revalidate import RevalidationFailed, choose, historical_runs, revalidate
from llmarchive.run import RunSettings, run_protocol
from llmarchive.subjects.openai_compat import OpenAICompatSubject
from tests.fake_provider import FakeProvider, decide_by_hash
from tests.protocol_fixtures import make_protocol

RUNS = [f"run-{i:02d}" for i in range(12)]


@pytest.fixture(scope="module")
def twelve_runs_template(tmp_path_factory):
    """Twelve real runs (12 calls each) through the runner and the fake provider, made once."""
    home = tmp_path_factory.mktemp("revalidate") / "archive"
    paths = ArchivePaths(home).ensure()
    protocol = make_protocol(n_items=3, n_per_scenario=1, max_tokens=32, status="admitted", lane="open")
    with FakeProvider(decide_by_hash()) as fake:
        subject = OpenAICompatSubject("local-model", 32, base_url=fake.base_url)
        for i, run_id in enumerate(RUNS):
            day = (date(2026, 11, 1) + timedelta(days=i)).isoformat()
            run_protocol(paths, protocol, subject, RunSettings(run_id=run_id, run_date=day, concurrency=3),
                         authorization=unbudgeted())
    return home


@pytest.fixture
def paths(twelve_runs_template, archive_home, monkeypatch):
    """A fresh copy of ``twelve_runs_template`` for one test."""
    import shutil
    shutil.copytree(twelve_runs_template, archive_home)
    return ArchivePaths.from_env()


def test_the_days_choice_is_deterministic_rotating_and_visits_every_measurement():
    ids = [f"r{i:02d}" for i in range(25)]
    assert choose(ids, "2026-11-20", 10) == choose(ids, "2026-11-20", 10)
    assert choose(ids, "2026-11-20", 10) != choose(ids, "2026-11-21", 10)
    seen = set()
    for i in range(math.ceil(25 / 10)):
        seen |= set(choose(ids, (date(2026, 11, 20) + timedelta(days=i)).isoformat(), 10))
    assert seen == set(ids)
    assert choose(ids[:4], "2026-11-20", 10) == ids[:4] and choose([], "2026-11-20", 10) == []


def test_ten_historical_measurements_are_recomputed_and_recorded_ok(paths, capsys):
    assert historical_runs(paths, "2026-11-13") == RUNS
    assert historical_runs(paths, "2026-11-03") == RUNS[:2], "only runs dated before the day"
    outcome = revalidate(paths, "2026-11-20")
    assert len(outcome.chosen) == 10 and outcome.differing == []
    logged = records.read(paths, "revalidation")
    assert [(r["run_id"], r["status"], r["differences"]) for r in logged] == [(r, "ok", []) for r in outcome.chosen]
    assert main(["revalidate", "--date", "2026-11-21"]) == 0
    assert capsys.readouterr().out.count(" ok\n") == 10


def test_an_edited_measurement_fails_loudly_and_is_recorded_as_differs(paths, capsys):
    target = choose(RUNS, "2026-11-20", 10)[3]
    file = paths.run_dir(target) / "measurement.json"
    m = json.loads(file.read_text())
    m["stability_pct"] = round(m["stability_pct"] + 1.5, 6) if m["stability_pct"] is not None else 50.0
    file.write_text(json.dumps(m))
    with pytest.raises(RevalidationFailed) as info:
        revalidate(paths, "2026-11-20")
    assert "REVALIDATION FAILED" in str(info.value) and target in str(info.value)
    (bad,) = [r for r in records.read(paths, "revalidation") if r["status"] == "differs"]
    assert bad["run_id"] == target and any(d["field"] == "stability_pct" for d in bad["differences"])
    assert main(["revalidate", "--date", "2026-11-20"]) == 1
    err = capsys.readouterr().err
    assert f"DIFFERS {target}" in err and "stability_pct" in err


def test_an_edited_trial_breaks_the_chain_and_the_extraction(paths):
    target = RUNS[0]
    log = paths.run_dir(target) / "trials.jsonl"
    lines = log.read_text().splitlines()
    trial = json.loads(lines[0])
    trial["response_text"] = "DECISION: " + ("B" if trial["token"] == "A" else "A")
    lines[0] = json.dumps(trial, separators=(",", ":"), sort_keys=True)
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(RevalidationFailed) as info:
        revalidate(paths, "2026-11-20", run_ids=[target])
    fields = {d["field"] for d in info.value.differing[0]["differences"]}
    assert "chain" in fields and any(f.startswith("trial ") for f in fields)


def test_nothing_historical_is_nothing_to_do(archive_home):
    outcome = revalidate(ArchivePaths.from_env().ensure(), "2026-11-20")
    assert outcome.chosen == [] and outcome.records == []
