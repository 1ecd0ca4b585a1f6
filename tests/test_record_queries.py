"""Record queries (llmarchive/archive/queries.py): each fact asked one way, on a small real store.

The records are appended through :mod:`llmarchive.archive.record_logs` (the
hash-chained logs, with the ``recorded_at`` each append is given), the run
folders written as the runner leaves them (``tests.publish_helpers.write_run``
for a complete run: ``run.json``, a chained ``trials.jsonl`` and a measurement
the estimator built; :func:`llmarchive.archive.store.write_run` for a run
started and not finished).  Each query is asked of an empty archive too.
"""
from datetime import datetime, timezone

from llmarchive.archive import manual_run_id, queries, record_logs as records, store, sweep_run_id
from tests import publish_helpers as ph

FAMILY = "claude-sonnet"
OPEN = "risky_choice_framing__wording__v0"
GUARD = "risky_choice_framing__anchoring__v0"
OTHER = "base_rate_neglect__wording__v0"
MODEL = "claude-sonnet-5"


def subject_model(paths, model_id, at, family=FAMILY, previous=None):
    return records.append(paths, "subject_model", {"date": at[:10], "model_family": family, "model_id": model_id,
                                                   "previous_model_id": previous, "declared_by": "test"},
                          recorded_at=at)


def series_closed(paths, at, family=FAMILY, model_id=MODEL):
    return records.append(paths, "series_closed", {"date": at[:10], "model_family": family, "model_id": model_id,
                                                   "reason": "retired without successor"}, recorded_at=at)


def skip(paths, day, protocol_id, reason, job="full_sweep"):
    return records.append(paths, "skip", {"date": day, "job": job, "protocol_id": protocol_id, "reason": reason,
                                          "cause": "budget_exhausted"}, recorded_at=f"{day}T06:00:00Z")


def point(paths, run_id, model_id="outside-model-1", replaces=None, at="2026-11-02T10:00:00Z"):
    fields = {"date": at[:10], "protocol_id": OPEN, "model_id": model_id, "submitted_by": "a lab",
              "measurement": {"stability_pct": 50.0}, "run_id": run_id}
    if replaces:
        fields["replaces"] = replaces
    return records.append(paths, "comparison_point", fields, recorded_at=at)


def decision(paths, resolution, withdrawn, resolves="sha-of-the-review"):
    return records.append(paths, "needs_review", {"date": "2026-11-20", "model_family": FAMILY,
                                                  "model_id": "claude-sonnet-6", "reason": "decided",
                                                  "resolves": resolves, "resolution": resolution,
                                                  "comparison_points_withdrawn": withdrawn},
                          recorded_at="2026-11-20T09:00:00Z")


def complete_run(paths, protocols, run_id, run_date, *, protocol_id=OPEN, model=MODEL, job="full_sweep", **changes):
    """A complete run folder as the runner leaves it, its record naming its job (and any other ``changes``)."""
    ph.write_run(paths, protocols[protocol_id], run_id, run_date, subject_model_id=model)
    folder = paths.run_dir(run_id)
    store.write_run(folder, {**store.read_run(folder), "job": job, **changes})
    return folder


def open_run(paths, run_id, run_date, *, protocol_id=OPEN, model=MODEL, job="full_sweep"):
    """A run started and not finished: its record, no measurement."""
    folder = paths.run_dir(run_id)
    store.write_run(folder, {"record_type": "experiment_run", "run_id": run_id, "run_date": run_date,
                             "protocol_id": protocol_id, "series": "commercial", "subject_model_id": model,
                             "job": job, "status": "running"})
    return folder


# --------------------------------------------------------------------------
# succession
# --------------------------------------------------------------------------

def test_an_empty_archive_has_no_closure_no_model_no_declaration_and_no_skip(paths):
    assert queries.series_closure(paths, FAMILY) is None
    assert queries.latest_subject_model(paths, FAMILY) is None
    assert queries.declared_model_ids(paths, FAMILY) == set()
    assert queries.last_skip(paths, "2026-11", OPEN) is None
    assert queries.records_on(paths, "skip", "2026-11-02") == []


def test_a_series_is_closed_by_its_latest_closure_and_only_for_its_own_family(paths):
    subject_model(paths, MODEL, "2026-10-01T00:00:00Z")
    first = series_closed(paths, "2026-11-01T00:00:00Z")
    assert queries.series_closure(paths, FAMILY) == first
    assert queries.series_closure(paths, "gpt") is None
    series_closed(paths, "2026-11-02T00:00:00Z", family="gpt")
    assert queries.series_closure(paths, FAMILY) == first, "another family's closure is not this one's"


def test_a_successor_declared_after_the_closure_reopens_the_series_and_a_later_closure_closes_it_again(paths):
    series_closed(paths, "2026-11-01T00:00:00Z")
    # recorded at the same instant as the closure: not after it, the series stays closed
    subject_model(paths, MODEL, "2026-11-01T00:00:00Z")
    assert queries.series_closure(paths, FAMILY) is not None
    # another family's declaration reopens nothing
    subject_model(paths, "gpt-9", "2026-11-03T00:00:00Z", family="gpt")
    assert queries.series_closure(paths, FAMILY) is not None
    subject_model(paths, "claude-sonnet-6", "2026-11-01T00:00:01Z", previous=MODEL)
    assert queries.series_closure(paths, FAMILY) is None
    again = series_closed(paths, "2026-11-05T00:00:00Z", model_id="claude-sonnet-6")
    assert queries.series_closure(paths, FAMILY) == again


def test_the_latest_subject_model_is_the_familys_last_record_with_a_model(paths):
    subject_model(paths, MODEL, "2026-10-01T00:00:00Z")
    newest = subject_model(paths, "claude-sonnet-6", "2026-11-01T00:00:00Z", previous=MODEL)
    subject_model(paths, "gpt-9", "2026-11-02T00:00:00Z", family="gpt")
    subject_model(paths, None, "2026-11-03T00:00:00Z")          # a record naming no model changes nothing
    assert queries.latest_subject_model(paths, FAMILY) == newest
    assert queries.latest_subject_model(paths, "gpt")["model_id"] == "gpt-9"
    assert queries.latest_subject_model(paths, "mistral") is None


def test_declared_model_ids_are_every_model_the_family_was_given(paths):
    subject_model(paths, MODEL, "2026-10-01T00:00:00Z")
    subject_model(paths, "claude-sonnet-6", "2026-11-01T00:00:00Z", previous=MODEL)
    subject_model(paths, MODEL, "2026-11-02T00:00:00Z", previous="claude-sonnet-6")
    subject_model(paths, "gpt-9", "2026-11-02T00:00:00Z", family="gpt")
    subject_model(paths, None, "2026-11-03T00:00:00Z")
    assert queries.declared_model_ids(paths, FAMILY) == {MODEL, "claude-sonnet-6"}


# --------------------------------------------------------------------------
# skips and days
# --------------------------------------------------------------------------

def test_the_last_skip_is_the_months_last_for_that_protocol(paths):
    skip(paths, "2026-10-31", OPEN, "october")
    first = skip(paths, "2026-11-01", OPEN, "first of november")
    skip(paths, "2026-11-02", OTHER, "another protocol")
    last = skip(paths, "2026-11-30", OPEN, "last of november")
    skip(paths, "2026-12-01", OPEN, "december")
    assert queries.last_skip(paths, "2026-11", OPEN) == last
    assert queries.last_skip(paths, "2026-10", OPEN)["reason"] == "october"
    assert queries.last_skip(paths, "2026-11", OTHER)["reason"] == "another protocol"
    assert queries.last_skip(paths, "2026-09", OPEN) is None
    assert queries.last_skip(paths, "2026-11", GUARD) is None
    assert first != last


def test_records_on_a_day_are_that_days_oldest_first(paths):
    a = skip(paths, "2026-11-02", OPEN, "a")
    skip(paths, "2026-11-03", OPEN, "the next day")
    b = skip(paths, "2026-11-02", OTHER, "b")
    assert queries.records_on(paths, "skip", "2026-11-02") == [a, b]
    assert queries.records_on(paths, "series_closed", "2026-11-02") == []


def test_times_recorded_are_sorted_and_leave_out_a_time_that_cannot_be_read():
    found = [{"recorded_at": "2026-11-02T10:00:00Z"}, {"recorded_at": "2026-11-01T23:00:00+01:00"},
             {"recorded_at": "yesterday"}, {"recorded_at": None}, {}]
    assert queries.times_recorded(found) == [datetime(2026, 11, 1, 22, tzinfo=timezone.utc),
                                             datetime(2026, 11, 2, 10, tzinfo=timezone.utc)]
    assert queries.times_recorded([]) == []


def test_times_recorded_reads_the_times_the_store_stamped(paths):
    skip(paths, "2026-11-03", OPEN, "later")
    skip(paths, "2026-11-02", OPEN, "earlier")
    assert queries.times_recorded(records.read(paths, "skip")) == [
        datetime(2026, 11, 2, 6, tzinfo=timezone.utc), datetime(2026, 11, 3, 6, tzinfo=timezone.utc)]


# --------------------------------------------------------------------------
# comparison points
# --------------------------------------------------------------------------

def test_no_point_is_replaced_withdrawn_or_shown_in_an_empty_archive():
    assert queries.replaced_points([]) == set()
    assert queries.withdrawn_points([]) == set()
    assert queries.shown_points([], []) == []
    assert queries.latest_point_of_run([]) == {}


def test_a_later_point_of_a_run_replaces_the_earlier_and_is_the_runs_current_point(paths):
    first = point(paths, "bridge-run-1")
    other = point(paths, "outside-run-2", model_id="outside-model-2")
    second = point(paths, "bridge-run-1", replaces=first["record_sha256"], at="2026-11-03T10:00:00Z")
    points = records.read(paths, "comparison_point")
    assert queries.replaced_points(points) == {first["record_sha256"]}
    assert queries.shown_points(points, []) == [other, second]
    assert queries.latest_point_of_run(points) == {"bridge-run-1": second, "outside-run-2": other}


def test_a_successor_decision_withdraws_its_points_and_a_not_successor_decision_withdraws_none(paths):
    kept = point(paths, "outside-run")
    withdrawn = point(paths, "bridge-run", model_id="claude-sonnet-6")
    decision(paths, "not_successor", [kept["record_sha256"]])
    decision(paths, "successor", [withdrawn["record_sha256"]], resolves=None)   # resolves nothing: no decision
    decision(paths, "successor", [withdrawn["record_sha256"]])
    reviews = records.read(paths, "needs_review")
    assert queries.withdrawn_points(reviews) == {withdrawn["record_sha256"]}
    assert queries.shown_points(records.read(paths, "comparison_point"), reviews) == [kept]
    # a review that is no decision (no "resolves") withdraws nothing
    assert queries.withdrawn_points(reviews[:2]) == set()


# --------------------------------------------------------------------------
# the month's sweep runs
# --------------------------------------------------------------------------

def test_no_sweep_run_in_an_empty_archive(paths):
    assert queries.sweep_run_folder(paths, "2026-11", OPEN, MODEL) is None
    assert queries.month_sweep_runs(paths, "2026-11", MODEL) == {}
    assert queries.open_sweep_runs(paths, "2026-11", MODEL) == {}


def test_the_sweep_run_folder_is_found_once_its_run_was_started(paths):
    run_id = sweep_run_id("2026-11-02", OPEN, MODEL)
    paths.run_dir(run_id).mkdir(parents=True)          # a lock taken, nothing written: no run yet
    assert queries.sweep_run_folder(paths, "2026-11", OPEN, MODEL) is None
    open_run(paths, run_id, "2026-11-02")
    assert queries.sweep_run_folder(paths, "2026-11", OPEN, MODEL) == paths.run_dir(run_id)
    assert queries.sweep_run_folder(paths, "2026-10", OPEN, MODEL) is None
    assert queries.sweep_run_folder(paths, "2026-11", OPEN, "claude-sonnet-6") is None
    assert queries.sweep_run_folder(paths, "2026-11", OTHER, MODEL) is None


def test_the_months_sweep_runs_are_its_complete_sweep_runs_on_that_model(paths, protocols):
    sweep = sweep_run_id("2026-11-02", OPEN, MODEL)
    complete_run(paths, protocols, sweep, "2026-11-02")
    complete_run(paths, protocols, manual_run_id("2026-11-03", OTHER, MODEL), "2026-11-03", protocol_id=OTHER,
                 job="manual")
    complete_run(paths, protocols, sweep_run_id("2026-10-02", GUARD, MODEL), "2026-10-02", protocol_id=GUARD)
    complete_run(paths, protocols, sweep_run_id("2026-11-02", GUARD, "claude-sonnet-6"), "2026-11-02",
                 protocol_id=GUARD, model="claude-sonnet-6")
    complete_run(paths, protocols, "sweep-like-but-exploratory", "2026-11-04", protocol_id=GUARD, exploratory=True)
    open_run(paths, sweep_run_id("2026-11-02", OTHER, MODEL), "2026-11-02", protocol_id=OTHER)
    assert queries.month_sweep_runs(paths, "2026-11", MODEL) == {OPEN: sweep}
    assert queries.month_sweep_runs(paths, "2026-10", MODEL) == {GUARD: sweep_run_id("2026-10-02", GUARD, MODEL)}
    assert queries.month_sweep_runs(paths, "2026-11", "claude-sonnet-6") == {
        GUARD: sweep_run_id("2026-11-02", GUARD, "claude-sonnet-6")}


def test_a_run_recorded_before_runs_named_their_job_is_the_sweeps_by_its_id(paths, protocols):
    sweep = sweep_run_id("2026-11-02", OPEN, MODEL)
    complete_run(paths, protocols, sweep, "2026-11-02", job=None)
    complete_run(paths, protocols, manual_run_id("2026-11-02", OTHER, MODEL), "2026-11-02", protocol_id=OTHER,
                 job=None)
    assert queries.month_sweep_runs(paths, "2026-11", MODEL) == {OPEN: sweep}


def test_the_open_sweep_runs_are_the_months_sweep_folders_started_and_not_complete(paths, protocols):
    left_open = sweep_run_id("2026-11-02", OTHER, MODEL)
    open_run(paths, left_open, "2026-11-02", protocol_id=OTHER)
    complete_run(paths, protocols, sweep_run_id("2026-11-02", OPEN, MODEL), "2026-11-02")
    open_run(paths, manual_run_id("2026-11-02", GUARD, MODEL), "2026-11-02", protocol_id=GUARD, job="full_sweep")
    open_run(paths, sweep_run_id("2026-10-30", GUARD, MODEL), "2026-10-30", protocol_id=GUARD)
    open_run(paths, sweep_run_id("2026-11-02", GUARD, "claude-sonnet-6"), "2026-11-02", protocol_id=GUARD,
             model="claude-sonnet-6")
    assert queries.open_sweep_runs(paths, "2026-11", MODEL) == {OTHER: left_open}
    assert queries.open_sweep_runs(paths, "2026-10", MODEL) == {GUARD: sweep_run_id("2026-10-30", GUARD, MODEL)}
    assert queries.open_sweep_runs(paths, "2026-11", "claude-sonnet-6") == {
        GUARD: sweep_run_id("2026-11-02", GUARD, "claude-sonnet-6")}
