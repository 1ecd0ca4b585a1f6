"""needs_review on the fake provider: an undeclared new model's bridge runs stay off every curve until decided."""
import json
import shutil
import sqlite3

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths, bridge_run_id, record_logs as records
from llmarchive.schedule.bridge import bridge_runs, open_bridges, run_bridge, run_folder
from llmarchive.cli import main
from llmarchive.succession import (ReviewError, active_model, held_paths, load_subject_models, resolve, review_of,
                                   reviews)
from llmarchive.run import RunHalted
from llmarchive.subjects import list_models, make_subject
from llmarchive.schedule.watch import watch
from measure import chain
from tests.fake_provider import Fault, FakeProvider, decide_by_hash
from tests.instrument_helpers import paid_archive

CONFIG = load_subject_models()
OLD, NEW = "claude-sonnet-5", "claude-sonnet-5-5"
BUDGET = budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.005, "fingerprint": 0.001})
KEY = "fake-credential-review"


def factory(fake):
    return lambda model, max_tokens: make_subject("anthropic", max_tokens=max_tokens, model=model,
                                                  base_url=fake.base_url)


def listed(fake):
    return lambda: [m["id"] for m in list_models("anthropic", fake.base_url)]


def beat(paths, day):
    """A passing runtime fingerprint for ``day``, so the bridge's measurements are not instrument_suspect."""
    records.append(paths, "runtime_fingerprint", {
        "date": day, "status": "pass", "digest": "d" * 64, "expected_digest": "d" * 64, "model_sha256": "m" * 64,
        "template_sha256": "t" * 64, "llama_cpp_version": "0.3.36", "runner_arch": "x86_64-linux", "n_threads": 1,
        "n_batch": 512, "seed": 0})


def raise_undeclared_bridge(paths, fake):
    watch(paths, "2026-11-01", CONFIG, base_url=fake.base_url)
    fake.set_models([OLD, NEW])
    watch(paths, "2026-11-02", CONFIG, base_url=fake.base_url)
    (bridge,) = open_bridges(paths)
    return bridge


@pytest.fixture(scope="module")
def bridged_template(tmp_path_factory):
    """An archive whose undeclared bridge claude-sonnet-5 → claude-sonnet-5-5 ran to completion (960 calls)."""
    home = tmp_path_factory.mktemp("review") / "archive"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLMARCHIVE_HOME", str(home))
        paths = paid_archive(mp, BUDGET, KEY)
        with FakeProvider(decide_by_hash(), models=[OLD]) as fake:
            raise_undeclared_bridge(paths, fake)
            beat(paths, "2026-11-03")
            outcome = run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake),
                                 concurrency=8)
        assert outcome.status == "complete" and outcome.calls == 960
    return home


@pytest.fixture
def paths(bridged_template, archive_home, monkeypatch):
    """A fresh copy of ``bridged_template`` (with its key set) for one test."""
    shutil.copytree(bridged_template, archive_home)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    return ArchivePaths.from_env()


def bridge_of(paths):
    return next(r for r in records.read(paths, "generation_bridge") if r["status"] == "pending")


def published_measurements(paths):
    from publish.data import gather

    return gather(paths).measurements


def the_review(paths):
    (review,) = reviews(paths)
    return review


def test_an_undeclared_models_bridge_runs_are_comparison_points_and_on_no_curve(paths):
    bridge = bridge_of(paths)
    new_runs = sorted(bridge_run_id(OLD, NEW, p, "new") for p in bridge["protocol_ids"])
    old_runs = sorted(bridge_run_id(OLD, NEW, p, "old") for p in bridge["protocol_ids"])
    # Where they live: the old model's on the family's series, the new model's held for review.
    assert sorted(p.name for p in paths.experiments.iterdir()) == old_runs
    assert sorted(p.name for p in held_paths(paths).experiments.iterdir()) == new_runs
    assert [r["status"] for r in records.read(paths, "generation_bridge")] == ["pending", "complete"]
    # What is filed: one comparison point per new-model run, never on a curve.
    review = the_review(paths)
    assert review.state == "pending" and review.held == new_runs
    points = records.read(paths, "comparison_point")
    assert sorted(c["run_id"] for c in points) == new_runs
    for c in points:
        m = c["measurement"]
        assert c["model_id"] == NEW and c["needs_review"] == review.review_id and c["source"] == "generation_bridge"
        assert m["on_curve"] is False and "exploratory" in m["flags"] and "needs_review" in m["flag_reasons"]["exploratory"]
        held = json.loads((held_paths(paths).run_dir(c["run_id"]) / "measurement.json").read_text())
        assert {k: v for k, v in m.items() if k not in ("flags", "flag_reasons", "on_curve")} == \
            {k: v for k, v in held.items() if k not in ("flags", "flag_reasons", "on_curve")}, \
            "the same numbers as the run's own measurement, only flagged"
    # What publication reads: no measurement of the new model anywhere, the points in their own table.
    published = published_measurements(paths)
    assert {m["subject_model_id"] for m in published} == {OLD}
    from publish.data import comparison_rows
    from publish.data import gather

    rows = comparison_rows(gather(paths))
    assert sorted((r["model_id"], r["protocol_id"]) for r in rows) == sorted((NEW, p) for p in bridge["protocol_ids"])
    assert active_model(paths, CONFIG) == OLD


def test_resolved_as_successor_the_bridge_joins_the_curve_with_its_switch_record(paths, capsys):
    review = the_review(paths)
    points = [c["record_sha256"] for c in records.read(paths, "comparison_point")]
    assert main(["review", "resolve", review.review_id[:12], "--successor", "--reviewer", "Ada Lovelace",
                 "--date", "2026-11-06", "--note", "provider changelog names it"]) == 0
    out = capsys.readouterr().out
    assert "resolved as successor by Ada Lovelace on 2026-11-06" in out and f"{OLD} → {NEW}" in out

    resolution = records.read(paths, "needs_review")[-1]
    assert (resolution["resolves"], resolution["resolution"], resolution["reviewer"], resolution["date"]) == (
        review.review_id, "successor", "Ada Lovelace", "2026-11-06")
    assert sorted(resolution["comparison_points_withdrawn"]) == sorted(points)
    chain.verify(records.read(paths, "needs_review"))
    switch = records.read(paths, "subject_model")[-1]
    assert (switch["model_id"], switch["previous_model_id"], switch["date"]) == (NEW, OLD, "2026-11-06")
    assert "Ada Lovelace" in switch["declared_by"] and review.review_id[:12] in switch["declared_by"]
    assert active_model(paths, CONFIG) == NEW

    bridge = bridge_of(paths)
    assert list(held_paths(paths).experiments.iterdir()) == []
    new_measurements = [m for m in published_measurements(paths) if m["subject_model_id"] == NEW]
    assert sorted(m["protocol_id"] for m in new_measurements) == sorted(bridge["protocol_ids"])
    for m in new_measurements:
        assert (m["series"], m["model_family"], m["run_date"]) == ("commercial", "claude-sonnet", "2026-11-03")
        assert "exploratory" not in m["flags"] and "instrument_suspect" not in m["flags"], \
            "on the family's curve, judged by its own gates only"
    # A decision is not taken back.
    with pytest.raises(ReviewError, match="already resolved as successor on 2026-11-06 by Ada Lovelace"):
        resolve(paths, review.review_id, "not_successor", "Someone Else", "2026-11-07")


def test_resolved_as_not_successor_the_runs_stay_comparison_points(paths):
    review = the_review(paths)
    before = records.read(paths, "comparison_point")
    done = resolve(paths, review.review_id, "not_successor", "Grace Hopper", "2026-11-06")
    assert done.switch is None and done.joined_curve == [] and done.comparison_points == []
    assert records.read(paths, "comparison_point") == before
    assert (done.record["resolution"], done.record["reviewer"]) == ("not_successor", "Grace Hopper")
    assert active_model(paths, CONFIG) == OLD
    assert {m["subject_model_id"] for m in published_measurements(paths)} == {OLD}
    assert len(the_review(paths).held) == 4


def test_a_declaration_seen_later_resolves_the_review_and_the_runs_join_the_curve(paths):
    with FakeProvider(models=[{"id": OLD, "successor": NEW}, NEW]) as fake:
        out = watch(paths, "2026-11-05", CONFIG, base_url=fake.base_url)
    resolution = next(r for r in out.written if r["record_type"] == "needs_review")
    assert resolution["resolution"] == "successor" and "models endpoint field 'successor'" in resolution["reviewer"]
    assert [r["model_id"] for r in records.read(paths, "subject_model")].count(NEW) == 1, "one switch record"
    assert the_review(paths).state == "successor" and list(held_paths(paths).experiments.iterdir()) == []
    assert NEW in {m["subject_model_id"] for m in published_measurements(paths)}


def test_the_review_list_shows_ids_state_and_held_runs(paths, capsys):
    review = the_review(paths)
    assert main(["review", "list"]) == 0
    out = capsys.readouterr().out
    assert f"{review.review_id[:12]}  2026-11-02  claude-sonnet: {NEW}  pending" in out
    assert "held off the curve: 4 run(s); comparison points filed: 4" in out
    assert main(["review", "list", "--json"]) == 0
    (listed_review,) = json.loads(capsys.readouterr().out)
    assert (listed_review["review_id"], listed_review["state"], len(listed_review["held_runs"])) == (
        review.review_id, "pending", 4)
    assert main(["review", "resolve", "abc", "--successor", "--reviewer", "X"]) == 2
    assert "at least 8 characters" in capsys.readouterr().err
    assert main(["review", "resolve", review.review_id, "--not-successor", "--reviewer", " "]) == 2
    assert "name the reviewer" in capsys.readouterr().err
    assert the_review(paths).state == "pending", "a refused resolution records nothing"


def test_the_dagster_review_job_resolves_with_its_config(paths, instance):
    from assets.definitions_builder import build_definitions
    from assets.resources import ArchiveResource

    review = the_review(paths)
    job = build_definitions({"archive": ArchiveResource(home=str(paths.home))}).get_job_def("review_job")
    result = job.execute_in_process(instance=instance, run_config={"ops": {"resolve_needs_review": {"config": {
        "review_id": review.review_id[:16], "decision": "successor", "reviewer": "Dagster Operator"}}}})
    assert result.success
    assert the_review(paths).state == "successor" and active_model(paths, CONFIG) == NEW
    again = job.execute_in_process(instance=instance, raise_on_error=False, run_config={"ops": {
        "resolve_needs_review": {"config": {"review_id": review.review_id, "decision": "not_successor",
                                            "reviewer": "Dagster Operator"}}}})
    assert not again.success


def test_a_review_resolved_mid_bridge_moves_the_partial_run_and_resumes_it_without_a_repeated_call(
        archive_home, monkeypatch):
    paths = paid_archive(monkeypatch, BUDGET, KEY)
    with FakeProvider(decide_by_hash(), models=[OLD]) as fake:
        bridge = raise_undeclared_bridge(paths, fake)
        answered = {"new": 0}

        def new_stops(request):
            if request.body["model"] == NEW:
                if answered["new"] >= 50:
                    return Fault.status(401)
                answered["new"] += 1
            return decide_by_hash()(request)

        fake.responder = new_stops
        with pytest.raises(RunHalted):
            run_bridge(paths, "2026-11-03", CONFIG, subject_factory=factory(fake), listed=listed(fake))
        first_new = bridge["protocol_ids"][0]
        partial = held_paths(paths).run_dir(bridge_run_id(OLD, NEW, first_new, "new"))
        assert (partial / "trials.jsonl").exists() and not (partial / "measurement.json").exists()

        resolve(paths, review_of(paths, "claude-sonnet", NEW).review_id, "successor", "Ada Lovelace", "2026-11-04")
        assert run_folder(paths, bridge, first_new, "new") == paths.run_dir(partial.name), "moved onto the curve"
        fake.responder = decide_by_hash()
        outcome = run_bridge(paths, "2026-11-04", CONFIG, subject_factory=factory(fake), listed=listed(fake))
    assert outcome.status == "complete" and outcome.held == []
    new_requests = [r for r in fake.chat_requests if r.body["model"] == NEW]
    failed = len(new_requests) - outcome.calls - answered["new"]
    assert outcome.calls + answered["new"] == 480 and failed >= 1, "every recorded slot called once, no more"
    runs = bridge_runs(paths, bridge)
    assert {r["run_date"] for r in runs.values()} == {"2026-11-03"}
    assert all(paths.run_dir(bridge_run_id(OLD, NEW, p, "new")).is_dir() for p in bridge["protocol_ids"])
    assert records.read(paths, "comparison_point") == [], "resolved before any new run completed: none filed"


def test_the_public_database_shows_comparison_points_before_and_measurements_after_the_decision(paths, tmp_path):
    """What publication reads: the held-back bridge as comparison points, after the decision as measurements."""
    from publish.data.database import build
    from publish.data import gather

    def count(db_file, sql):
        db = sqlite3.connect(db_file)
        try:
            return db.execute(sql, (NEW,)).fetchone()[0]
        finally:
            db.close()

    before = tmp_path / "before.db"
    build(before, gather(paths))
    assert count(before, "select count(*) from measurements where subject_model_id = ?") == 0
    assert count(before, "select count(*) from comparison_points where model_id = ?") == 4
    assert count(before, "select count(*) from succession where kind = 'needs_review' and model_id = ?") == 1
    resolve(paths, the_review(paths).review_id, "successor", "Ada Lovelace", "2026-11-06")
    after = tmp_path / "after.db"
    build(after, gather(paths))
    assert count(after, "select count(*) from measurements where subject_model_id = ?") == 4
    assert count(after, "select count(*) from succession where kind = 'needs_review' and model_id = ?") == 2
    assert count(after, "select count(*) from succession where kind = 'subject_model' and model_id = ?") == 1


def test_a_run_by_hand_of_an_undeclared_model_is_held_off_every_curve(paths):
    """``llmarchive run`` writes into experiments/: the hold is its exploratory flag (review.mark_held)."""
    from llmarchive.succession.review import hold_reason, mark_held

    assert "needs_review" in hold_reason(paths, NEW, "claude-sonnet", CONFIG)
    assert hold_reason(paths, NEW, "another-family", CONFIG), "naming another family does not lift the hold"
    assert hold_reason(paths, OLD, None, CONFIG) is None
    # An id of the family the watch has not even seen yet: no review, no declaration — held too.
    assert "never declared" in hold_reason(paths, "claude-sonnet-9", None, CONFIG)
    assert hold_reason(paths, "some-local-model", "some-local-model", CONFIG) is None
    assert mark_held(paths, OLD, None, False, CONFIG) is False
    assert mark_held(paths, NEW, None, "not pre-registered: x", CONFIG).startswith("not pre-registered: x; ")
    resolve(paths, the_review(paths).review_id, "successor", "Ada Lovelace", "2026-11-06")
    assert hold_reason(paths, NEW, None, CONFIG) is None, "declared by the resolution: its runs may count"


def test_a_held_run_measured_by_hand_is_not_on_the_curve(paths):
    from llmarchive.succession import mark_held
    from llmarchive.archive import measurement_run
    from measure.measurement import build
    from llmarchive.archive import load_run

    folder = held_paths(paths).run_dir(the_review(paths).held[0])
    loaded = load_run(folder)
    fields = measurement_run(loaded.run)
    fields["exploratory"] = mark_held(paths, NEW, "claude-sonnet", False, CONFIG)
    m = build(loaded.protocol_header, sorted(loaded.trials, key=lambda t: t["trial_index"]), fields)
    assert m["on_curve"] is False and "exploratory" in m["flags"]


def test_two_resolutions_at_once_record_one_decision(paths, monkeypatch):
    import threading

    review = the_review(paths)
    arrived, real_append = threading.Event(), records.append
    count = {"n": 0}

    def slow_append(p, kind, fields, recorded_at=None):
        if kind == "needs_review":
            count["n"] += 1
            if count["n"] == 1:
                arrived.wait(2.0)       # the other resolution gets every chance to slip in
            else:
                arrived.set()
        return real_append(p, kind, fields, recorded_at)

    monkeypatch.setattr(records, "append", slow_append)
    outcomes = []

    def attempt(decision, who):
        try:
            resolve(paths, review.review_id, decision, who, "2026-11-06")
            outcomes.append("recorded")
        except ReviewError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=attempt, args=("successor", "Ada")),
               threading.Thread(target=attempt, args=("not_successor", "Grace"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    resolutions = [r for r in real_read_needs_review(paths) if r.get("resolves")]
    assert len(resolutions) == 1 and outcomes.count("recorded") == 1
    assert any("already resolved" in o for o in outcomes)


def real_read_needs_review(paths):
    return records.read(paths, "needs_review")


def test_a_successor_decision_that_would_overwrite_a_run_folder_records_nothing(paths):
    review = the_review(paths)
    clash = paths.run_dir(review.held[0])
    clash.mkdir(parents=True)
    with pytest.raises(ReviewError, match="nothing was recorded"):
        resolve(paths, review.review_id, "successor", "Ada Lovelace", "2026-11-06")
    assert the_review(paths).state == "pending" and records.read(paths, "subject_model")[-1]["model_id"] == OLD
    # A successor decision recorded before the folder appeared (a crash between record and move): the
    # model watch's settle step leaves the clash to a person and does not crash (the alarm must still fire).
    from llmarchive.succession.review import settle
    records.append(paths, "needs_review", {"date": "2026-11-06", "model_family": "claude-sonnet", "model_id": NEW,
                                           "reason": "test", "resolves": review.review_id,
                                           "resolution": "successor", "reviewer": "Ada"})
    assert settle(paths, "2026-11-07") == []
    assert held_paths(paths).run_dir(review.held[0]).is_dir(), "left where it was"
    with pytest.raises(ReviewError, match="unknown|no needs_review has the id"):
        resolve(paths, "0123456789abcdef", "successor", "Ada Lovelace", "2026-11-06")


def test_a_successor_decision_lists_the_comparison_points_publication_must_withdraw(paths):
    from llmarchive.archive.queries import withdrawn_points

    before = {c["record_sha256"] for c in records.read(paths, "comparison_point")}
    assert withdrawn_points(records.read(paths, "needs_review")) == set()
    resolve(paths, the_review(paths).review_id, "successor", "Ada Lovelace", "2026-11-06")
    assert withdrawn_points(records.read(paths, "needs_review")) == before and len(before) == 4


def test_a_declaration_after_a_not_successor_decision_switches_and_lifts_the_hold_for_new_runs(paths):
    from llmarchive.succession.review import hold_reason, holds

    resolve(paths, the_review(paths).review_id, "not_successor", "Grace Hopper", "2026-11-06")
    assert holds(paths, "claude-sonnet", NEW) and hold_reason(paths, NEW, None, CONFIG)
    with FakeProvider(models=[{"id": OLD, "successor": NEW}, NEW]) as fake:
        watch(paths, "2026-11-20", CONFIG, base_url=fake.base_url)
    assert active_model(paths, CONFIG) == NEW, "the provider's declaration switches the series (the sweep runs it)"
    assert not holds(paths, "claude-sonnet", NEW) and hold_reason(paths, NEW, None, CONFIG) is None
    assert the_review(paths).state == "not_successor", "the person's decision is not rewritten"
    assert len(the_review(paths).held) == 4, "the bridge runs already held stay comparison points"


def test_a_run_moved_onto_the_curve_is_published_once_not_also_as_a_comparison_point(paths):
    from publish.data import comparison_rows
    from publish.data import gather

    undecided = comparison_rows(gather(paths))
    assert len(undecided) == 4 and all(row["model_id"] == NEW for row in undecided)
    resolve(paths, the_review(paths).review_id, "successor", "Ada Lovelace", "2026-11-06")
    assert comparison_rows(gather(paths)) == [], "withdrawn points leave the comparison table"


def test_held_bridge_runs_of_an_alarm_day_are_flagged_and_stay_flagged_when_they_join_the_curve(paths, capsys):
    """Every run folder is covered by a suspect day, the held ones under private/review/runs too (issue 17 §2)."""
    from llmarchive.instrument import raise_alarm
    from llmarchive.archive import load_run

    review = the_review(paths)
    raise_alarm(paths, "2026-11-03", "guard_rotation", "a guard protocol moved past its margin")
    for run_id in review.held:
        held = load_run(held_paths(paths).run_dir(run_id))
        assert "instrument_suspect" in held.measurement["flags"], f"held run {run_id} was missed"
        assert "instrument_alarm from guard_rotation" in held.run["instrument_suspect"]
    assert main(["review", "resolve", review.review_id[:12], "--successor", "--reviewer", "Ada Lovelace",
                 "--date", "2026-11-06"]) == 0
    capsys.readouterr()
    assert list(held_paths(paths).experiments.iterdir()) == []
    joined = [m for m in published_measurements(paths) if m["subject_model_id"] == NEW]
    assert len(joined) == len(review.held)
    for m in joined:
        assert "instrument_suspect" in m["flags"] and m["on_curve"] is False
        assert "instrument_alarm from guard_rotation" in m["flag_reasons"]["instrument_suspect"]


def test_a_held_run_an_alarm_met_unreadable_files_no_comparison_point_until_its_mark_is_applied(paths):
    """A comparison point is never edited: filed from a held run whose pending suspect mark is not applied yet,
    it would carry a suspect day's measurement without the flag."""
    import dataclasses

    from llmarchive.archive import store
    from llmarchive.instrument import apply_pending, raise_alarm
    from llmarchive.succession.review import file_comparison_points, file_points
    from publish.data import comparison_rows
    from publish.errors import PublishError
    from publish.data import gather

    review = the_review(paths)
    run_id = review.held[0]
    folder = held_paths(paths).run_dir(run_id)
    original = store.run_file(folder).read_bytes()
    store.run_file(folder).write_bytes(original[:40])                       # torn when the alarm comes
    raise_alarm(paths, "2026-11-03", "guard_rotation", "a guard protocol moved past its margin")
    store.run_file(folder).write_bytes(original)                            # repaired by hand
    with pytest.raises(PublishError, match=f"{run_id}.*instrument apply-marks"):
        gather(paths)
    assert file_points(paths, "2026-11-04") == []
    unfiled = dataclasses.replace(the_review(paths), comparison_points=[])  # as if none were filed yet
    assert run_id not in {p["run_id"] for p in file_comparison_points(paths, unfiled, "2026-11-04")}, \
        "filed while its flag was still pending"
    assert main(["instrument", "apply-marks", "--date", "2026-11-05"]) == 0
    rows = {r["measurement"]["run_id"]: r for r in comparison_rows(gather(paths)) if r["model_id"] == NEW}
    assert "instrument_suspect" in rows[run_id]["flags"] and rows[run_id]["date"] == "2026-11-05"


def test_a_comparison_point_filed_before_the_days_alarm_is_published_flagged(paths, capsys):
    """The bridge filed its comparison points on 2026-11-03, then that day's alarm was raised: the points'
    measurements are as suspect as the held runs they came from, and what is published must say so."""
    from llmarchive.instrument import raise_alarm
    from publish.data import comparison_rows
    from publish.data import gather

    review = the_review(paths)
    assert {p["run_id"] for p in review.comparison_points} == set(review.held)
    assert not any("instrument_suspect" in p["measurement"]["flags"] for p in review.comparison_points)
    raise_alarm(paths, "2026-11-03", "guard_rotation", "a guard protocol moved past its margin")
    assert main(["review", "list"]) == 0
    assert (f"held off the curve: 4 run(s); comparison points filed: 4 (4 replaced by one carrying a later "
            f"suspect flag)") in capsys.readouterr().out
    resolve(paths, review.review_id, "not_successor", "Ada Lovelace", "2026-11-06")
    rows = [r for r in comparison_rows(gather(paths)) if r["model_id"] == NEW]
    assert len(rows) == len(review.held), "one row per held run: a point replaced, not added beside"
    for row in rows:
        assert "instrument_suspect" in row["flags"], row["measurement"]["run_id"]
        assert "instrument_alarm from guard_rotation" in row["measurement"]["flag_reasons"]["instrument_suspect"]
