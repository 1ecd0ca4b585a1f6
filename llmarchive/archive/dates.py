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
"""
import re
from datetime import date as Date
from datetime import datetime
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

