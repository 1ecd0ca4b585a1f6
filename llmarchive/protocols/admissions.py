"""Admissions on disk: the hash-chained ``private/protocols/admissions.jsonl``.

The lane rule, the twin check and what a promotion may admit are pure and
live in :mod:`panels.lanes`; this module reads the admissions log and
appends to it.  :func:`promote` is the one way a protocol gets a lane.
``planned_lane`` and ``PromotionError`` are the names callers need next to
it, so they are importable from here too.
"""
import getpass
import os
from typing import Iterable, Mapping, Optional

from llmarchive.archive import ArchivePaths, ChainedLog, parse_date, read_jsonl, utc_now
from measure.errors import ArchiveError
from panels.lanes import PromotionError, admission_row, planned_lane

__all__ = ["OPEN_LANE_PUBLISHES", "PromotionError", "default_reviewer", "planned_lane", "promote",
           "read_admissions", "reviewer_name"]

# What admission to the open lane means, said wherever a promotion to it is asked for or done (method §3.9).
OPEN_LANE_PUBLISHES = ("Admission to the open lane publishes the panel in full: every scenario's four versions, "
                       "exactly as sent, go into public/panels/<protocol_id>.json at the next `llmarchive publish`, "
                       "for anyone to read and run.")


def read_admissions(paths: ArchivePaths) -> list[dict]:
    """Every admission ever recorded, oldest first (chain verified by ChainedLog on write)."""
    return read_jsonl(paths.admissions)


def first_admission(paths: ArchivePaths) -> Optional[str]:
    """The date (``YYYY-MM-DD``, UTC) of the home's first admission; None when nothing was ever admitted.

    The archive's real start: nothing could have run before it.  A row whose
    ``reviewed_at`` is not a date is passed over; a log that cannot be read raises.
    """
    if not paths.admissions.exists():
        return None
    days = []
    for row in read_admissions(paths):
        stamp = row.get("reviewed_at") if isinstance(row, dict) else None
        try:
            days.append(parse_date(str(stamp)[:10], "reviewed_at"))
        except (ArchiveError, ValueError):
            continue
    return min(days) if days else None


def promote(paths: ArchivePaths, protocol: Mapping, lane: str, twin_id: Optional[str] = None,
            human_reviewed: bool = False, reviewer: Optional[str] = None,
            allow_development_seed: bool = False, known_ids: Iterable[str] = ()) -> dict:
    """Admit one built protocol to a lane; return the admission as recorded.

    The decision is :func:`panels.lanes.admission_row`'s, taken against the
    log as it stands; nothing is written when it raises
    :class:`PromotionError`.
    """
    log = ChainedLog(paths.admissions)
    try:
        row = admission_row(protocol, lane, log.records, reviewer=reviewer_name(reviewer), reviewed_at=utc_now(),
                            twin_id=twin_id, human_reviewed=human_reviewed,
                            allow_development_seed=allow_development_seed, known_ids=known_ids)
    except PromotionError as exc:
        # The acknowledgement asked for is also consent to publication: say so when the lane is open.
        if lane == "open" and "--human-reviewed" in str(exc) and "--allow-development-seed" not in str(exc):
            raise PromotionError(f"{exc} {OPEN_LANE_PUBLISHES}") from None
        raise
    return log.append(row)


def reviewer_name(given: Optional[str]) -> str:
    """Who the admission names: ``--reviewer`` as given, else the login name.

    A given name that is empty or blank is refused rather than replaced by
    the login name: the record would name someone the caller did not name
    (``instrument acknowledge`` refuses it the same way).
    """
    if given is None:
        return default_reviewer()
    if not isinstance(given, str) or not given.strip():
        raise PromotionError(f"--reviewer must name the person who reviewed the protocol, got {given!r}")
    return given.strip()


def default_reviewer() -> str:
    """Who is promoting, when no ``--reviewer`` is given: the login name."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (OSError from 3.13, KeyError from pwd before) in some containers
        return os.environ.get("USER") or "unknown"
