"""The no-backfill rule (llmarchive/schedule/no_backfill.py): a month is measured in that month.

The rule itself at its edges (the first and last day of a month, a year's
turn, a run already started), then the one refusal it makes from every entry
point that starts paid measurements: ``llmarchive run`` on a paid subject,
``llmarchive sweep --date``, and a ``commercial_trials`` partition in
Dagster — the same sentence, one line on the command line (exit 2, nothing
written, nothing spent), a ``Failure`` in Dagster.  A run started in its own
month and interrupted resumes on a later day, from the CLI and from Dagster.
The paid subject is the fake provider over real HTTP on 127.0.0.1; the clock
is set with time-machine.
"""
import pytest
from dagster import MultiPartitionKey

from llmarchive import budget as budget_mod
from llmarchive.archive import manual_run_id, record_logs as records, store, sweep_run_id
from llmarchive.cli import main
from llmarchive.schedule import NotThisMonth, partition_day, refuse_backfill, sweep_scope
from llmarchive.succession import load_subject_models
from measure.errors import ArchiveError
from tests.dagster_helpers import failure_text, materialization_metadata, refusals, resources, run
from tests.fake_provider import Fault, decide_by_hash
from tests.instrument_helpers import preregister
from tests.test_cli_bad_input import refused, tree

OPEN = "risky_choice_framing__wording__v0"
OTHER = "base_rate_neglect__wording__v0"
MODEL = "claude-sonnet-5"
CONFIG = load_subject_models()
TODAY = "2026-11-03"
THE_RULE = ("cannot be started on 2026-11-03: a model is measured in the month it is measured, never backfilled "
            "(only a run already started under its date resumes on a later day). Nothing was spent.")
"""What every entry point says after naming what it refused (on 3 November 2026)."""

pytestmark = pytest.mark.time_machine(f"{TODAY}T06:00:00Z")


def started_run(paths, run_id, run_date, protocol_id=OPEN, model=MODEL):
    """A run folder as a run leaves it when it stops before its end: its record, no measurement."""
    store.write_run(paths.run_dir(run_id), {"record_type": "experiment_run", "run_id": run_id, "run_date": run_date,
                                            "protocol_id": protocol_id, "series": "commercial", "job": "full_sweep",
                                            "subject_model_id": model, "status": "interrupted"})


def paid_run_argv(fake, run_date):
    return ["run", OPEN, "--subject", "anthropic", "--model", MODEL, "--base-url", fake.base_url,
            "--run-date", run_date, "--quiet"]


def after_what(line: str) -> str:
    """The sentence after what was refused ("run …", "a sweep dated …", "the … partition")."""
    return line[line.index("cannot be started on"):]


# --------------------------------------------------------------------------
# the rule
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dated, today", [
    ("2026-11-01", "2026-11-30"),       # the month's first day, on its last
    ("2026-11-30", "2026-11-01"),
    ("2026-11", "2026-11-15"),          # a month
    ("2027-01-01", "2027-01-01"),
])
def test_a_measurement_dated_in_todays_month_goes_ahead_and_is_given_today(dated, today):
    assert refuse_backfill(dated, today=today) == today


@pytest.mark.parametrize("dated, today", [
    ("2026-10-31", "2026-11-01"),       # yesterday, the month before
    ("2026-12-01", "2026-11-30"),       # tomorrow, the month after
    ("2026-12-31", "2027-01-01"),       # across the year's turn
    ("2025-11-15", "2026-11-15"),       # the same month of another year
    ("2026-10", "2026-11-01"),
])
def test_a_measurement_dated_in_another_month_is_refused_in_one_sentence_naming_it(dated, today):
    with pytest.raises(NotThisMonth) as caught:
        refuse_backfill(dated, today=today)
    error = caught.value
    assert isinstance(error, ArchiveError), "the CLI prints it as one line and exits 2"
    assert str(error) == (f"a measurement dated {dated} cannot be started on {today}: a model is measured in the "
                          "month it is measured, never backfilled (only a run already started under its date resumes "
                          "on a later day). Nothing was spent.")
    assert (error.refusal, error.month, error.today) == ("not_this_month", dated[:7], today)


def test_a_run_already_started_under_its_date_goes_ahead_on_a_later_day():
    assert refuse_backfill("2026-10-31", started=True, today="2026-11-01") == "2026-11-01"
    assert refuse_backfill("2026-10-31", started=True, today="2027-03-15") == "2027-03-15"


def test_the_rule_reads_today_from_the_clock_when_not_given():
    assert refuse_backfill("2026-11-01") == TODAY
    with pytest.raises(NotThisMonth, match="run x cannot be started on 2026-11-03"):
        refuse_backfill("2026-10-31", what="run x")


def test_a_sweep_in_its_own_month_may_run_every_protocol(paths):
    assert sweep_scope(paths, "2026-11-01", CONFIG, today="2026-11-30") is None


def test_a_sweep_of_an_earlier_month_only_resumes_the_runs_that_months_sweep_left_open(paths):
    with pytest.raises(NotThisMonth, match="^a sweep dated 2026-10-31 cannot be started on 2026-11-01"):
        sweep_scope(paths, "2026-10-31", CONFIG, today="2026-11-01")
    started_run(paths, sweep_run_id("2026-10-30", OTHER, MODEL), "2026-10-30", protocol_id=OTHER)
    started_run(paths, sweep_run_id("2026-10-30", OPEN, "claude-sonnet-6"), "2026-10-30", model="claude-sonnet-6")
    started_run(paths, sweep_run_id("2026-09-30", OPEN, MODEL), "2026-09-30")
    assert sweep_scope(paths, "2026-10-31", CONFIG, today="2026-11-01") == [OTHER]


def test_a_partition_of_todays_month_runs_as_today_one_of_an_earlier_month_as_its_started_run(paths):
    assert partition_day(paths, "2026-11", OPEN, MODEL, today="2026-11-30") == "2026-11-30"
    with pytest.raises(NotThisMonth, match="^the 2026-10 partition cannot be started on 2026-11-01"):
        partition_day(paths, "2026-10", OPEN, MODEL, today="2026-11-01")
    folder = paths.run_dir(sweep_run_id("2026-10-31", OPEN, MODEL))
    started_run(paths, folder.name, "2026-10-31")
    assert partition_day(paths, "2026-10", OPEN, MODEL, today="2026-11-01") == "2026-10-31"
    with pytest.raises(NotThisMonth):       # another model's run is not this partition's
        partition_day(paths, "2026-10", OPEN, "claude-sonnet-6", today="2026-11-01")
    store.measurement_file(folder).write_text("{}", encoding="utf-8")     # the run completed: nothing to resume
    with pytest.raises(NotThisMonth, match=r"\(its run is complete, so nothing is left to resume\)") as refused_:
        partition_day(paths, "2026-10", OPEN, MODEL, today="2026-11-01")
    assert refused_.value.complete


# --------------------------------------------------------------------------
# the same refusal from every entry point
# --------------------------------------------------------------------------

def test_a_paid_run_dated_last_month_is_refused_in_one_line_and_nothing_is_written_or_spent(
        paid_paths, archive_home, fake, capsys):
    line = refused(paid_run_argv(fake, "2026-10-31"), archive_home, capsys)
    run_id = manual_run_id("2026-10-31", OPEN, MODEL)
    assert line == f"error: run {run_id} {THE_RULE}"
    assert fake.chat_requests == [] and budget_mod.ledger(paid_paths) == []


def test_a_sweep_dated_last_month_is_refused_in_one_line_and_records_nothing(paid_paths, archive_home, fake, capsys):
    line = refused(["sweep", "--date", "2026-10-31", "--base-url", fake.base_url], archive_home, capsys)
    assert line == f"error: a sweep dated 2026-10-31 {THE_RULE}"
    assert fake.requests == [] and budget_mod.ledger(paid_paths) == []
    assert records.read(paid_paths, "skip") == [] and records.read(paid_paths, "coverage") == []


def test_a_free_or_unbudgeted_run_measures_no_month_of_the_series_and_is_not_refused(paid_paths, fake, capsys):
    # A server you pay nothing for: no month of the tracked model is claimed, so any date is allowed.
    assert main(["run", OPEN, "--subject", "openai", "--model", "own-server-model", "--base-url", fake.base_url,
                 "--unbudgeted", "--run-date", "2026-10-31", "--run-id", "own-server", "--quiet"]) == 0
    assert store.read_run(paid_paths.run_dir("own-server"))["run_date"] == "2026-10-31"


def test_a_past_month_partition_fails_in_dagster_with_the_same_sentence_and_spends_nothing(
        paid_paths, fake, instance, capsys, archive_home):
    preregister(paid_paths, [OPEN])
    key = MultiPartitionKey({"month": "2026-10-01", "protocol": OPEN})
    result = run(["commercial_trials"], resources(paid_paths, fake.base_url), instance, partition_key=key,
                 raise_on_error=False)
    [(said, facts)] = refusals(result)
    assert not result.success and said == f"the 2026-10 partition {THE_RULE}"
    assert facts["refusal"] == "not_this_month" and facts["spent_eur"] == 0.0
    assert (facts["month"], facts["today"]) == ("2026-10", TODAY)
    assert fake.requests == [] and budget_mod.ledger(paid_paths) == []
    # The command line says the same after naming what it refused.
    cli = refused(["sweep", "--date", "2026-10-15", "--base-url", fake.base_url], archive_home, capsys)
    assert after_what(cli) == after_what(said) == THE_RULE


# --------------------------------------------------------------------------
# a run started in its month resumes on a later day
# --------------------------------------------------------------------------

def key_revoked_after(calls: int):
    """A responder that answers ``calls`` calls, then refuses the key (401) until ``state["revoked"]`` is False."""
    answer, state = decide_by_hash(), {"n": 0, "revoked": True}

    def responder(request):
        state["n"] += 1
        return Fault.status(401) if state["n"] > calls and state["revoked"] else answer(request)
    return responder, state


@pytest.mark.time_machine("2026-10-31T20:00:00Z")
def test_a_paid_run_started_on_the_months_last_day_resumes_the_next_month_under_its_date(
        paid_paths, archive_home, fake, capsys, time_machine):
    fake.responder, state = key_revoked_after(50)
    run_id = manual_run_id("2026-10-31", OPEN, MODEL)
    assert main(paid_run_argv(fake, "2026-10-31") + ["--concurrency", "1"]) == 2    # the key stopped working
    assert f"run {run_id} stopped after 50 of 120 trials" in capsys.readouterr().err
    done_first = len(store.load_run(paid_paths.run_dir(run_id)).trials)
    assert done_first == 50

    time_machine.move_to("2026-11-02T06:00:00Z")
    state["revoked"] = False
    sent_before = len(fake.chat_requests)
    assert main(paid_run_argv(fake, "2026-10-31")) == 0
    folder = store.load_run(paid_paths.run_dir(run_id))
    assert len(folder.trials) == 120 and folder.run["run_date"] == "2026-10-31"
    assert len(fake.chat_requests) - sent_before == 120 - done_first, "only the missing trials were sent"
    # A run not started in October is not started in November under October's date.
    before = tree(archive_home)
    capsys.readouterr()
    assert main(paid_run_argv(fake, "2026-10-30")) == 2
    assert "error: run " + manual_run_id("2026-10-30", OPEN, MODEL) + " cannot be started on 2026-11-02" in \
        capsys.readouterr().err
    # Nor is the October run, now complete, run again: nothing is left to resume.
    sent_before = len(fake.chat_requests)
    assert main(paid_run_argv(fake, "2026-10-31")) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: run {run_id} cannot be started on 2026-11-02: a model is measured in the month it is measured, "
        "never backfilled (its run is complete, so nothing is left to resume). Nothing was spent.")
    assert tree(archive_home) == before and len(fake.chat_requests) == sent_before


@pytest.mark.time_machine("2026-10-31T20:00:00Z")
def test_a_partition_started_on_the_months_last_day_resumes_the_next_month_under_its_runs_date(
        paid_paths, fake, instance, time_machine):
    preregister(paid_paths, [OPEN])
    fake.responder, state = key_revoked_after(50)
    key = MultiPartitionKey({"month": "2026-10-01", "protocol": OPEN})
    res = resources(paid_paths, fake.base_url, concurrency=1)
    first = run(["commercial_trials"], res, instance, partition_key=key, raise_on_error=False)
    assert not first.success and "can be resumed" in failure_text(first)
    run_id = sweep_run_id("2026-10-31", OPEN, MODEL)
    assert len(store.load_run(paid_paths.run_dir(run_id)).trials) == 50

    time_machine.move_to("2026-11-02T06:00:00Z")
    state["revoked"] = False
    second = run(["commercial_trials"], res, instance, partition_key=key)
    assert second.success
    folder = store.load_run(paid_paths.run_dir(run_id))
    assert len(folder.trials) == 120 and folder.run["run_date"] == "2026-10-31"
    assert materialization_metadata(second, "commercial_trials")["month"] == "2026-10"
    # Launched again (a backfill of October from the UI): the run is complete, so the partition is refused, not
    # turned green by a launch that measured nothing.
    sent_before = len(fake.chat_requests)
    again = run(["commercial_trials"], res, instance, partition_key=key, raise_on_error=False)
    [(said, facts)] = refusals(again)
    assert not again.success and facts["refusal"] == "not_this_month" and facts["spent_eur"] == 0.0
    assert "its run is complete, so nothing is left to resume" in said
    assert facts["what_to_do"].startswith("nothing: the 2026-10 run is complete")
    assert len(fake.chat_requests) == sent_before
    # Another protocol's October partition was never started: refused in November.
    other = run(["commercial_trials"], res, instance, raise_on_error=False,
                partition_key=MultiPartitionKey({"month": "2026-10-01", "protocol": OTHER}))
    [(said, facts)] = refusals(other)
    assert facts["refusal"] == "not_this_month" and said.startswith("the 2026-10 partition cannot be started on "
                                                                    "2026-11-02")
