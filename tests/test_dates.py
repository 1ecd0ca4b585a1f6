"""One parser for days, months and timestamps (llmarchive.archive.dates): the right form and a real calendar value."""
import pytest

from llmarchive.archive import DateError, not_after, optional_date, parse_date, parse_month, parse_timestamp
from measure.errors import ArchiveError


@pytest.mark.parametrize("value", ["2026-11-03", "2024-02-29", "2026-12-31", "0001-01-01"])
def test_a_calendar_day_is_returned_unchanged(value):
    assert parse_date(value) == value


@pytest.mark.parametrize("value, words", [
    ("2026-13-01", "is not a calendar date"),
    ("2026-02-29", "is not a calendar date"),      # 2026 is not a leap year
    ("2026-11-31", "is not a calendar date"),
    ("2026-00-10", "is not a calendar date"),
    ("26-1-1", "YYYY-MM-DD"),
    ("2026-1-01", "YYYY-MM-DD"),
    ("2026-11-03T00:00:00Z", "YYYY-MM-DD"),
    ("2026-11-03\n", "YYYY-MM-DD"),
    ("\uff12\uff10\uff12\uff16-11-03", "YYYY-MM-DD"),   # fullwidth digits: a regex digit, not an ASCII one
    ("", "YYYY-MM-DD"),
    (20261103, "YYYY-MM-DD"),
])
def test_a_day_that_is_not_one_is_refused_naming_the_option(value, words):
    with pytest.raises(DateError, match=words) as info:
        parse_date(value, "--run-date")
    assert str(info.value).startswith("--run-date")
    assert isinstance(info.value, ArchiveError)     # the CLI prints it in one line and exits 2


@pytest.mark.parametrize("value", ["2026-01", "2026-12", "1999-07"])
def test_a_calendar_month_is_returned_unchanged(value):
    assert parse_month(value) == value


@pytest.mark.parametrize("value, words", [
    ("2026-13", "is not a calendar month"),
    ("2026-00", "is not a calendar month"),
    ("26-1", "YYYY-MM"),
    ("2026-1", "YYYY-MM"),
    ("2026-11-03", "YYYY-MM"),
    ("", "YYYY-MM"),
])
def test_a_month_that_is_not_one_is_refused(value, words):
    with pytest.raises(DateError, match=words):
        parse_month(value, "--month")


@pytest.mark.parametrize("value", ["2026-11-03T00:00:00Z", "2024-02-29T23:59:59Z"])
def test_a_utc_timestamp_is_returned_unchanged(value):
    assert parse_timestamp(value) == value


@pytest.mark.parametrize("value, words", [
    ("2026-13-01T00:00:00Z", "not a real date and time"),
    ("2026-11-03T24:00:00Z", "not a real date and time"),
    ("2026-11-03T12:60:00Z", "not a real date and time"),
    ("2026-11-03T12:00:00", "absolute UTC"),            # no Z: not absolute
    ("2026-11-03T12:00:00+01:00", "absolute UTC"),
    ("2026-11-03", "absolute UTC"),
])
def test_a_timestamp_that_is_not_an_absolute_real_instant_is_refused(value, words):
    with pytest.raises(DateError, match=words):
        parse_timestamp(value, "--build-time")


def test_an_absent_value_stays_absent_and_a_range_may_not_run_backwards():
    assert optional_date(None) is None
    assert optional_date("2026-11-03") == "2026-11-03"
    not_after("2026-11-03", "2026-11-03", "--since", "--date")
    with pytest.raises(DateError, match="--since 2026-11-04 is after --date 2026-11-03"):
        not_after("2026-11-04", "2026-11-03", "--since", "--date")


def test_the_croissant_version_is_only_ever_a_real_day():
    from publish.data.croissant import calendar_version

    assert calendar_version("2026-12-03") == "2026.12.3"
    with pytest.raises(DateError):
        calendar_version("2026-13-01")


def test_the_clock_and_a_records_time_are_read_and_written_by_the_one_dates_module():
    from datetime import datetime, timedelta, timezone

    from llmarchive.archive import parse_time, utc_millis, utc_month, utc_now, utc_today
    assert parse_timestamp(utc_now()) and parse_date(utc_today()) and parse_month(utc_month())
    moment = datetime(2026, 3, 4, 5, 6, 7, 891234, tzinfo=timezone(timedelta(hours=2)))
    assert utc_millis(moment) == "2026-03-04T03:06:07.891Z"
    assert utc_millis(moment.replace(tzinfo=None)) == "2026-03-04T05:06:07.891Z"      # naive: taken as UTC
    assert parse_time("2026-03-04T03:06:07.891Z") == moment.replace(microsecond=891000)
    assert parse_time("2026-13-01T00:00:00Z") is None and parse_time(None) is None
