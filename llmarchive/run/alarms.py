"""What an instrument alarm does to one run folder, below both the runner and the instrument.

method §7.4: an alarm marks the measurements of its day ``instrument_suspect``,
and a run that was calling the model when an alarm was raised is marked as
well.  The runner asks :func:`alarm_since` after it has written its
measurement and marks itself with :func:`llmarchive.archive.store.mark_suspect`; the
instrument (:mod:`llmarchive.instrument.verdict`) uses the same
:func:`~llmarchive.archive.store.mark_suspect` for the runs of an alarm's day.  This module sits below both because the
instrument runs protocols through the runner: the runner may not import the
instrument.
"""
from typing import Optional

from llmarchive.archive import ArchivePaths, parse_time, record_logs as records

ALARM_KIND = "instrument_alarm"


def alarm_since(paths: ArchivePaths, since: str) -> Optional[str]:
    """The ``instrument_suspect`` reason for a run session that started at ``since`` (UTC), or None.

    Any ``instrument_alarm`` recorded at or after ``since`` was raised while
    the session was calling the model, whatever day it is dated: those
    answers came from an instrument nobody vouches for.  An alarm recorded
    before the session began was already seen when the run started.
    """
    start = parse_time(since)
    if start is None:
        return None
    raised = [a for a in records.read(paths, ALARM_KIND)
              if (when := parse_time(a.get("recorded_at"))) is not None and when >= start]
    if not raised:
        return None
    first = raised[0]
    # Public facts only: the alarm's own reason stays in the private alarm log (it can hold an error's text).
    where = f" ({first.get('protocol_id')})" if first.get("protocol_id") else ""
    return (f"instrument: instrument_alarm from {first.get('source')}{where} (raised on "
            f"{first.get('date')} while this run was calling the model)")

