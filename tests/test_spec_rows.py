"""The specification's last rows (issue 28 §3), each pinned by a test that failed before its fix.

1. ``bridge_incomplete`` is disclosed on the curve: the stability chart marks
   the permanent discontinuity at its date and joins no line across it;
2. ``scenario_dominated`` names every scenario tied at the cutoff (the
   drawer's flag sentence, the CSV's and the database's alike);
3. the instrument's coverage rows (runtime fingerprint, guard rotation)
   carry no series label: they belong to the instrument, not to the
   open-weights control series;
4. ``returned_model_id`` is every id the provider returned, each once,
   sorted and comma-joined, and a record that says otherwise is a
   difference ``verify`` reports;
5. the heartbeat reserve: which job may draw on which pool (only the
   subject fingerprint reaches the heartbeat reserve, after the general
   pool), enforced where a run's permission is made;
6. a reference model given by path without a sha256 is pinned by the
   instrument's baseline: a file whose sha256 changed since is refused
   before it is loaded, naming both hashes.
"""
import re
import shutil

import pytest

from llmarchive import budget as B
from llmarchive.archive import record_logs as records
from llmarchive.subjects import models, returned_model_id, returned_model_id_differences
from llmarchive.instrument import Generated, day_verdict, default_engine_factory, runtime_fingerprint
from llmarchive.instrument.rotation import guard_rotation, instrument_paths
from llmarchive.schedule.coverage import compute, gather, write_rows
from measure.measurement import build
from publish.site import render as site, svg
from publish.words import numbers
from publish.data import coverage_summary
from tests.measure_helpers import RUN, protocol, set_items, trials_from, uniform


# --------------------------------------------------------------------------
# 1. bridge_incomplete on the curve
# --------------------------------------------------------------------------

FAMILY = "claude-sonnet"


def point(run_date: str, model: str, stability: float) -> dict:
    """An on-curve commercial measurement of one protocol, with what the chart reads."""
    return {"run_id": f"run-{run_date}", "run_date": run_date, "protocol_id": "risky_choice_framing__wording__v0",
            "series": "commercial", "model_family": FAMILY, "subject_model_id": model, "returned_model_id": model,
            "on_curve": True, "flags": [], "stability_pct": stability, "ci_low_pct": stability - 5,
            "ci_high_pct": min(stability + 5, 100.0), "null_floor_pct": 3.0, "entropy_a": 0.9, "entropy_b": 0.8,
            "replicate_index": 0}


BRIDGE_INCOMPLETE = {"date": "2027-03-10", "model_family": FAMILY, "old_model_id": "claude-sonnet-5",
                     "new_model_id": "claude-sonnet-6", "reason": "private: the provider removed it on a Tuesday"}


def polylines(chart: str, css: str) -> list[list[float]]:
    """The x coordinates of each ``<polyline class=css>`` of a chart, one list per line."""
    return [[float(xy.split(",")[0]) for xy in found.split()]
            for found in re.findall(rf'<polyline class="{css}"[^>]* points="([^"]*)"', chart)]


def test_the_stability_chart_marks_a_bridge_incomplete_at_its_date_and_joins_no_line_across_it():
    points = [point("2027-01-05", "claude-sonnet-5", 90), point("2027-02-05", "claude-sonnet-5", 91),
              point("2027-04-05", "claude-sonnet-6", 80), point("2027-05-05", "claude-sonnet-6", 82)]
    other_family = {**BRIDGE_INCOMPLETE, "model_family": "gpt", "date": "2027-04-20"}
    breaks = svg.curve_breaks([BRIDGE_INCOMPLETE, other_family], FAMILY)
    chart = svg.stability_chart(points, "a curve", breaks=breaks)

    marks = re.findall(r'<line class="break" data-break="bridge_incomplete" data-date="([^"]+)" x1="([\d.]+)"', chart)
    assert [date for date, _ in marks] == ["2027-03-10"], "the family's break, and only its own"
    x_break = float(marks[0][1])
    assert ("the bridge from claude-sonnet-5 to claude-sonnet-6 could not be completed before the old model left: "
            "a permanent discontinuity") in chart
    assert "private" not in chart, "a record's free-text reason is never published"
    for css in ("curve", "ceiling", "ent-a", "ent-b"):
        lines = polylines(chart, css)
        assert len(lines) == 2, f"the {css} line is cut at the discontinuity"
        assert max(lines[0]) < x_break < min(lines[1]), f"no {css} segment crosses the break"


def test_a_break_after_the_last_point_still_shows_and_one_before_the_first_is_not_this_curves():
    points = [point("2027-01-05", "claude-sonnet-5", 90), point("2027-02-05", "claude-sonnet-5", 91)]
    before = {**BRIDGE_INCOMPLETE, "date": "2026-12-01"}
    chart = svg.stability_chart(points, "a curve", breaks=svg.curve_breaks([before, BRIDGE_INCOMPLETE], FAMILY))
    assert re.findall(r'data-break="bridge_incomplete" data-date="([^"]+)"', chart) == ["2027-03-10"]
    assert len(polylines(chart, "curve")) == 1
    assert svg.stability_chart(points, "a curve") == svg.stability_chart(points, "a curve", breaks=[]), \
        "a curve without a break is drawn as before"


# --------------------------------------------------------------------------
# 2. scenario_dominated names every scenario tied at the cutoff
# --------------------------------------------------------------------------

def dominated(top: list[str], tied: list[str]) -> dict:
    """A measurement whose A-B gap sits in ``top`` (100 points each) and ``tied`` (50 points each)."""
    plan = uniform({"A": ["A", "B"], "A_prime": ["A", "B"], "B": ["A", "B"], "C": ["B", "B"]})
    set_items(plan, "A", top, ["A", "A"])
    set_items(plan, "B", top + tied, ["B", "B"])
    return build(protocol(2), trials_from(plan, 2), RUN)


def test_the_drawer_names_every_scenario_tied_at_the_cutoff_never_an_arbitrary_pick():
    m = dominated(["s03"], ["s05", "s07", "s09"])
    assert "scenario_dominated" in m["flags"] and m["scenario_concentration_pct"] == 60
    sentence = site.drawer_data([m])[m["run_id"]]["flag_sentences"]["scenario_dominated"]
    assert sentence == numbers.flag_sentences(m)["scenario_dominated"], "the drawer says what the CSV says"
    assert "s03 (100.0 points)" in sentence
    assert "s05, s07 and s09, tied at 50.0 points" in sentence
    assert "s01" not in sentence and "s11" not in sentence


def test_a_tie_for_the_largest_gap_names_all_of_it_and_a_lone_scenario_is_said_alone():
    three = dominated(["s02", "s04", "s06"], [])
    sentence = numbers.flag_sentences(three)["scenario_dominated"]
    assert "s02, s04 and s06, tied at 100.0 points" in sentence
    two = dominated(["s02", "s04"], [])
    assert "s02 and s04 (100.0 points each)" in numbers.flag_sentences(two)["scenario_dominated"]
    plan = uniform({"A": ["A", "A"], "A_prime": ["A", "A"], "B": ["A", "A"], "C": ["B", "B"]})
    set_items(plan, "B", ["s04"], ["A", "B"])                       # one stray answer: the whole gap
    lone = build(protocol(2), trials_from(plan, 2), RUN)
    assert "scenario_dominated" in lone["flags"]
    assert "s04 alone (50.0 points)" in numbers.flag_sentences(lone)["scenario_dominated"]
    assert numbers.scenarios_at_cutoff(lone) == {"named": ["s04"], "cutoff_pct": 50.0, "tied": []}


# --------------------------------------------------------------------------
# 3. the instrument's coverage rows carry no series
# --------------------------------------------------------------------------

P_GUARD = "risky_choice_framing__anchoring__v0"
COVERAGE_PROTOCOLS = [{"protocol_id": P_GUARD, "rewording_type": "anchoring", "lane": "guard", "status": "admitted",
                       "series": "v0", "twin_id": "risky_choice_framing__wording__v0", "n": 30,
                       "admitted_on": "2026-09-20"}]


def instrument_day(paths, day: str) -> None:
    records.append(paths, "runtime_fingerprint", {
        "date": day, "status": "pass", "digest": "d" * 64, "expected_digest": "d" * 64, "model_sha256": "m" * 64,
        "template_sha256": "t" * 64, "llama_cpp_version": "0.3.36", "runner_arch": "x86_64-linux", "n_threads": 1,
        "n_batch": 512, "seed": 0}, recorded_at=f"{day}T06:00:00Z")
    records.append(paths, "guard_rotation", {"date": day, "protocol_id": P_GUARD, "run_id": f"rot-{day}",
                                             "previous_run_id": None, "verdict": "baseline"},
                   recorded_at=f"{day}T06:30:00Z")


def instrument_rows(paths) -> list[dict]:
    from datetime import datetime, timezone

    result = compute(paths, "2026-11-02", facts=gather(paths, protocols=COVERAGE_PROTOCOLS),
                     jobs=("runtime_fingerprint", "guard_margin_rotation"),
                     now=datetime(2026, 11, 3, 12, tzinfo=timezone.utc))
    return result.rows


def test_the_instruments_coverage_rows_belong_to_no_series(paths):
    instrument_day(paths, "2026-11-01")
    instrument_day(paths, "2026-11-02")
    rows = instrument_rows(paths)
    assert {(r["job"], r["status"]) for r in rows} == {("runtime_fingerprint", "ran"),
                                                       ("guard_margin_rotation", "ran")}
    assert {r["series"] for r in rows} == {None}, "the instrument's checks are not the control series"
    assert coverage_summary(rows, "open_weights")["periods"] == []


def test_rows_recorded_under_the_old_label_are_written_again_under_no_series(paths):
    instrument_day(paths, "2026-11-01")
    instrument_day(paths, "2026-11-02")
    rows = instrument_rows(paths)
    records.append_many(paths, "coverage", [{**r, "series": "open_weights"} for r in rows])   # an older archive
    rewritten = write_rows(paths, rows)
    assert len(rewritten) == len(rows) and {r["series"] for r in rewritten} == {None}
    assert write_rows(paths, rows) == [], "written once, then the log agrees with the rows"


def test_home_counts_the_instruments_rows_under_the_instrument_not_the_open_weights_series(paths):
    from publish.data import Inputs

    instrument_day(paths, "2026-11-01")
    instrument_day(paths, "2026-11-02")
    inputs = Inputs(measurements=[], runs=[], open_runs=[], headers=[], texts=None, records={})
    bar = site.status_bar(site.SiteContext(inputs, instrument_rows(paths), "2026-11-03T00:00:00Z", []))
    parts = dict(re.findall(r'<div class="status-part" data-(?:series|part)="([a-z_]+)">(.*?)</div>', bar, re.S))
    assert "runs once per generation of the tracked model, not on a schedule" in parts["open_weights"]
    assert "ran" not in parts["open_weights"]
    assert ("Coverage of its daily jobs (runtime fingerprint, guard rotation, revalidation): 4 scheduled jobs from "
            "2026-11-01 to 2026-11-02: 4 ran, 0 did not.") in parts["instrument"]


# --------------------------------------------------------------------------
# 4. returned_model_id: every id, each once, sorted, comma-joined — and verify checks it
# --------------------------------------------------------------------------

def answered_by(*ids) -> list[dict]:
    return [{"record_type": "trial", "returned_model_id": i} for i in ids]


def test_returned_model_id_is_every_id_the_provider_returned_sorted_and_comma_joined():
    trials = answered_by("m-2", "m-1", "m-2", "m-2", None)
    assert returned_model_id(trials) == "m-1,m-2", "every id, not the most frequent one"
    assert returned_model_id(answered_by("m-2", "m-2")) == "m-2"
    assert returned_model_id(answered_by(None, "")) is None


def test_verify_reports_a_returned_model_id_the_trials_do_not_give_back():
    trials = answered_by("m-2", "m-1", "m-2")
    assert returned_model_id_differences({"returned_model_id": "m-1,m-2"}, trials) == []
    assert returned_model_id_differences({"returned_model_id": "m-2"}, trials) == [
        {"field": "returned_model_id", "recorded": "m-2", "recomputed": "m-1,m-2"}]
    # trials that name no model (an outside log that kept none) leave nothing to recompute it from
    assert returned_model_id_differences({"returned_model_id": "declared-id"}, answered_by(None)) == []


def test_the_published_description_of_returned_model_id_says_what_the_value_holds():
    from measure.schema import FIELD_DESCRIPTIONS
    from publish.words import PUBLISHED_DESCRIPTIONS

    words = PUBLISHED_DESCRIPTIONS["returned_model_id"]
    assert "most frequent" not in words and "sorted and joined by commas" in words
    assert list(PUBLISHED_DESCRIPTIONS) == list(FIELD_DESCRIPTIONS), "every field, in the schema's order"
    assert {k for k in FIELD_DESCRIPTIONS if PUBLISHED_DESCRIPTIONS[k] != FIELD_DESCRIPTIONS[k]} == \
        {"returned_model_id"}, "only the one sentence that misdescribes its value is replaced"


# --------------------------------------------------------------------------
# 5. the heartbeat reserve: which job may draw on which pool
# --------------------------------------------------------------------------

POOL_BUDGET = B.Budget(110.0, 5.0, 5.0, {"scenario": 1.0, "fingerprint": 1.0})   # general pool 100


@pytest.mark.parametrize("job", ["full_sweep", "sweep", "manual", "bridge", "subject_fingerprint"])
def test_a_permission_naming_another_pool_than_its_jobs_is_refused(job):
    category, pool = B.JOBS[B.job_name(job)]
    for other in sorted(set(B.POOLS) - {pool}):
        with pytest.raises(B.BudgetError, match=f"{B.job_name(job)}.*{pool}"):
            B.Authorization(job, category, other, 1.0)
    assert B.Authorization(job, category, pool, 1.0).pool == pool


def reserve_one(paths, job: str, run_id: str) -> str:
    """The pool one call of ``job`` is reserved in, or ``refused: <pool named>`` when no pool may pay for it."""
    category, pool = B.JOBS[job]
    meter = B.SpendMeter(paths, B.Authorization(job, category, pool, 1.0), run_id, "anthropic", "m", POOL_BUDGET)
    try:
        return meter.reserve("s01/A/0", "s1", 1, prompt_bytes=10, max_tokens=10)["pool"]
    except B.BudgetHalted as exc:
        return "refused: " + re.search(r"the (\w+) pool", str(exc)).group(1)


def test_only_the_subject_fingerprint_reaches_the_heartbeat_reserve_and_only_after_the_general_pool(paths):
    B.write_budget(paths, POOL_BUDGET)
    table = {job: reserve_one(paths, job, f"{job}-1") for job in ("full_sweep", "manual", "bridge",
                                                                  "subject_fingerprint")}
    assert table == {"full_sweep": "general", "manual": "general", "bridge": "bridge",
                     "subject_fingerprint": "general"}
    meter = B.SpendMeter(paths, B.Authorization("manual", "scenario", "general", 1.0), "filler", "anthropic", "m")
    meter.charge([(f"fill-{i}", {"answered": True}) for i in range(98)])       # the general pool is now full
    table = {job: reserve_one(paths, job, f"{job}-2") for job in ("full_sweep", "manual", "bridge",
                                                                  "subject_fingerprint")}
    assert table == {"full_sweep": "refused: general", "manual": "refused: general", "bridge": "bridge",
                     "subject_fingerprint": "heartbeat"}


# --------------------------------------------------------------------------
# 6. a reference model given by path alone is pinned by the instrument's baseline
# --------------------------------------------------------------------------

CUSTOM = "custom-reference"


class BaselineEngine:
    """Stands in for the reference model on the day the baseline was made: its runtime names ``sha256``."""

    def __init__(self, sha256: str, file_name: str) -> None:
        self.sha256, self.file_name = sha256, file_name

    def runtime(self) -> dict:
        return {"model_name": CUSTOM, "model_file": self.file_name, "model_sha256": self.sha256,
                "llama_cpp_version": "0.3.36", "template_sha256": "t" * 64, "runner_arch": "x86_64-linux",
                "n_threads": 1, "n_batch": 512, "n_ctx": 512, "seed": 0, "container_digest": None}

    def generate(self, prompt_id, prompt, max_tokens, top=5):
        return Generated(prompt_id, ((7, tuple((7 + k, -0.5 * (k + 1)) for k in range(top))),), "length", "x")


@pytest.fixture
def swapped_model(paths, tmp_path):
    """A baseline made on one file under a name no pin knows, then another file put at the same path."""
    model = tmp_path / "models" / "custom.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF the file the baseline was made on")
    before = models.file_sha256(model)
    assert runtime_fingerprint(paths, "2026-11-01", lambda: BaselineEngine(before, model.name)).status == "established"
    model.write_bytes(b"GGUF another file, put in its place")
    return model, before, models.file_sha256(model)


def test_a_changed_unpinned_model_file_makes_the_fingerprint_refuse_it_before_loading(paths, swapped_model):
    model, before, after = swapped_model
    outcome = runtime_fingerprint(paths, "2026-11-02", default_engine_factory(model=CUSTOM, model_path=str(model)))
    assert outcome.status == "unavailable" and outcome.record["digest"] is None
    reason = outcome.record["reason"]
    assert before in reason and after in reason and "refusing to load" in reason
    assert "runtime fingerprint expectation established on 2026-11-01" in reason
    assert outcome.alarm is not None and day_verdict(paths, "2026-11-02").suspect


def test_a_changed_unpinned_model_file_makes_the_rotation_refuse_it_before_any_call(admitted, tmp_path):
    model = tmp_path / "custom.gguf"
    model.write_bytes(b"GGUF the file the baseline was made on")
    before = models.file_sha256(model)
    runtime_fingerprint(admitted, "2026-11-01", lambda: BaselineEngine(before, model.name))
    model.write_bytes(b"GGUF another file, put in its place")
    record = guard_rotation(admitted, "2026-11-02", reference_options={"model": CUSTOM, "model_path": str(model)})
    assert record["verdict"] == "unavailable", "never a fresh baseline on a file nobody accepted"
    assert before in record["reason"] and models.file_sha256(model) in record["reason"]
    assert not instrument_paths(admitted).experiments.exists() or \
        not any(instrument_paths(admitted).experiments.iterdir()), "no call was made"
    assert [a["source"] for a in records.read(admitted, "instrument_alarm")] == ["guard_rotation"]


def test_a_subject_loaded_unpinned_elsewhere_is_refused_by_the_rotation_too(admitted, tmp_path):
    """Dagster builds the rotation's subject from its resource, before the rotation sees the archive."""
    from llmarchive.subjects import ReferenceSubject

    model = tmp_path / "custom.gguf"
    shutil.copyfile(models.embedded_model_path(), model)
    loaded = ReferenceSubject(16, model=CUSTOM, model_path=str(model))
    assert loaded.pin_source is None, "nothing pinned this file: only its sha256 was computed"
    assert loaded.runtime()["model_sha256"] == models.file_sha256(model) == loaded.config()["model_sha256"], \
        "the file's sha256 is recorded on every run"
    runtime_fingerprint(admitted, "2026-11-01", lambda: BaselineEngine("0" * 64, model.name))
    record = guard_rotation(admitted, "2026-11-02", loaded)
    assert record["verdict"] == "unavailable"
    assert "0" * 64 in record["reason"] and models.file_sha256(model) in record["reason"]
