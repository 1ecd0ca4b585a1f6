"""A tick Dagster launches late, after the daemon was down, does what its period's rule allows (method §8).

The real daemon launches only each schedule's latest missed tick, under that
tick's own time (tests/test_daemon_faketime.py pins it).  Evaluated by
Dagster's own tick evaluation against the project's definitions: a daily
tick that arrives on a later day and the sweep's tick that arrives in a later
month are skipped with the reason and the gap's cause, never launched to be
refused; a late tick of a period still running, and the monthly coverage and
publication, go ahead.
"""
import datetime as dt

import pytest
import time_machine
from dagster import build_schedule_context

from assets.definitions_builder import build_definitions
from assets.schedules import (daily_instrument_schedule, daily_subject_fingerprint_schedule,
                              monthly_coverage_schedule, monthly_publication_schedule, monthly_sweep_schedule)
from tests.dagster_helpers import resources

RESTART = "2027-02-03T12:00:00Z"     # the daemon back after three days down, over the 1st and the 2nd


def tick(schedule, paths, when: dt.datetime):
    settings = resources(paths)
    context = build_schedule_context(scheduled_execution_time=when, resources=settings,
                                     repository_def=build_definitions(settings).get_repository_def())
    return schedule.evaluate_tick(context)


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


@pytest.mark.time_machine(RESTART)
@pytest.mark.parametrize("schedule, due", [(daily_instrument_schedule, "2027-02-02T04:00"),
                                           (daily_subject_fingerprint_schedule, "2027-02-02T04:30"),
                                           (monthly_sweep_schedule, "2027-01-02T06:00")])
def test_a_tick_whose_period_ended_while_the_daemon_was_down_is_skipped_with_its_gaps_cause(paths, schedule, due):
    data = tick(schedule, paths, at(due))
    assert not data.run_requests
    assert "came late" in data.skip_message and "human_absent" in data.skip_message
    assert due[:10] in data.skip_message and "\n" not in data.skip_message


@pytest.mark.time_machine(RESTART)
@pytest.mark.parametrize("schedule, due, runs", [(daily_instrument_schedule, "2027-02-03T04:00", 1),
                                                 (monthly_sweep_schedule, "2027-02-02T06:00", 12),
                                                 (monthly_coverage_schedule, "2027-02-01T08:00", 1),
                                                 (monthly_publication_schedule, "2027-02-01T09:00", 1)])
def test_a_late_tick_of_a_period_still_running_or_of_a_job_that_only_reads_goes_ahead(paths, schedule, due, runs):
    data = tick(schedule, paths, at(due))
    assert len(data.run_requests) == runs and not data.skip_message


def test_the_coverage_tick_of_the_archives_first_month_skips_the_month_before_it_which_has_no_partition(paths):
    """On the archive's first 1st the tick would ask for a month before the partitions begin (an unknown
    partition, a daemon error every such tick); it is skipped, saying why."""
    from assets.partitions import MONTH_START

    first = at(MONTH_START + "T08:00")
    with time_machine.travel(first + dt.timedelta(minutes=1), tick=False):
        data = tick(monthly_coverage_schedule, paths, first)
        later = tick(monthly_coverage_schedule, paths, first.replace(month=first.month % 12 + 1,
                                                                     year=first.year + first.month // 12))
    assert not data.run_requests and "before this archive's first month" in data.skip_message
    assert [r.partition_key for r in later.run_requests] == [MONTH_START]
