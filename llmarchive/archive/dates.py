"""Dates, months and timestamps as the archive reads them: one parser for every command and asset.

A day is ``YYYY-MM-DD``, a month ``YYYY-MM`` and a timestamp
``YYYY-MM-DDTHH:MM:SSZ`` (absolute, UTC).  Each must have exactly that form
*and* name a real calendar day or instant: ``2026-13-01`` has the right
shape and is still refused, because a run folder, a spend entry or a
Croissant version named after a day that does not exist cannot be put on
any timeline afterwards.  The value is checked before anything is written,
so a mistyped date costs nothing.

Each parser returns the value unchanged when it is good (the strings are
already canonical: no other spelling is accepted), and raises
:class:`DateError` naming the option or field (``what``) otherwise.  An
empty value is refused too; "not given" is the caller's ``None``.

The clock is read here too (:func:`utc_now`, :func:`utc_today`,
:func:`utc_month`), a record's timestamp is read back here
(:func:`parse_time`) and a call's millisecond timestamp written here
(:func:`utc_millis`, :func:`utc_now_millis`): one module for every date the archive writes or reads.
"""
import re
from datetime import date as Date
from datetime import datetime, timezone
from typing import Optional

from measure.errors import ArchiveError

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_MONTH = re.compile(r"\d{4}-\d{2}", re.ASCII)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", re.ASCII)


class DateError(ArchiveError, ValueError):
    """A day, month or timestamp that is not one (wrong form, or no such day)."""


def parse_date(value: object, what: str = "--date") -> str:
    """``value`` when it is a calendar day written ``YYYY-MM-DD``; else :class:`DateError` naming ``what``."""
    if not isinstance(value, str) or not _DAY.fullmatch(value):
        raise DateError(f"{what} must be YYYY-MM-DD, got {value!r}")
    try:
        Date.fromisoformat(value)
    except ValueError:
        raise DateError(f"{what} {value!r} is not a calendar date") from None
    return value


def parse_month(value: object, what: str = "--month") -> str:
    """``value`` when it is a calendar month written ``YYYY-MM``; else :class:`DateError` naming ``what``."""
    if not isinstance(value, str) or not _MONTH.fullmatch(value):
        raise DateError(f"{what} must be YYYY-MM, got {value!r}")
    if not 1 <= int(value[5:7]) <= 12 or int(value[:4]) < 1:
        raise DateError(f"{what} {value!r} is not a calendar month")
    return value


def parse_timestamp(value: object, what: str = "--build-time") -> str:
    """``value`` when it is an instant written ``YYYY-MM-DDTHH:MM:SSZ`` (UTC); else :class:`DateError`."""
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        raise DateError(f"{what} must be absolute UTC, YYYY-MM-DDTHH:MM:SSZ, got {value!r}")
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise DateError(f"{what} {value!r} is not a real date and time") from None
    return value


def optional_date(value: Optional[str], what: str = "--date") -> Optional[str]:
    """:func:`parse_date` for a value that may be absent (``None`` stays ``None``)."""
    return None if value is None else parse_date(value, what)


def optional_month(value: Optional[str], what: str = "--month") -> Optional[str]:
    """:func:`parse_month` for a value that may be absent (``None`` stays ``None``)."""
    return None if value is None else parse_month(value, what)


def not_after(earlier: str, later: str, earlier_what: str, later_what: str) -> None:
    """Refuse a range whose start (``earlier``) comes after its end: it would silently select nothing."""
    if earlier > later:   # both already parsed: the canonical strings sort as the days do
        raise DateError(f"{earlier_what} {earlier} is after {later_what} {later}")



def utc_now() -> str:
    """The current time as ``YYYY-MM-DDTHH:MM:SSZ`` (absolute, UTC): a record's ``recorded_at``."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def utc_today() -> str:
    """Today's date in UTC as ``YYYY-MM-DD`` (the day a check, run or skip counts for)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def utc_month() -> str:
    """The current month in UTC as ``YYYY-MM`` (the month a spend is charged to)."""
    return datetime.now(timezone.utc).strftime("%Y-%m")


def parse_time(value: object) -> Optional[datetime]:
    """A record's ISO 8601 timestamp (``…Z`` or with an offset) as an aware datetime; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def utc_now_millis() -> str:
    """The current time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``: a call's ``started_at`` / ``finished_at``."""
    return utc_millis(datetime.now(timezone.utc))


def utc_millis(moment: datetime) -> str:
    """``moment`` as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC, milliseconds): how a call's start and end are written.

    Why: a trial's ``started_at``/``finished_at`` are written this way by
    the runner and by an imported harness log alike, so the two can be
    compared character for character.  A naive datetime is taken as UTC.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
