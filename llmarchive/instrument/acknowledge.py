"""The human ``core_change`` that ends a latched instrument alarm (method §7).

An alarm latches (:mod:`llmarchive.instrument.verdict`): measurements stay
``instrument_suspect`` until a person says what changed and why.  That
statement is a ``core_change`` record in its own hash-chained log under
``private/records/``, and it is also the only thing that establishes a new
expectation after the archive's first:

* every fingerprint **candidate** still pending (a runtime key seen for the
  first time, or a digest that differed and kept differing) becomes its
  runtime's expectation — the replaced one is kept under ``superseded/``;
* every guard-rotation result that raised an alarm (``improved``,
  ``regressed``, or ``changed``: a slot decided differently) and is not
  yet accepted becomes the protocol's accepted baseline, so the next
  rotation compares with it.

The record names what it covers: ``acknowledged_alarms`` (how many alarm
records the log held — an alarm appended later is not covered),
``acknowledged_through`` (the last covered alarm's ``record_sha256``), the
accepted candidates' runtime keys and digests, and the accepted rotation
runs.  The record is written before any expectation file moves: a crash in
between leaves the old expectation, so the next fingerprint alarms again —
never a silent change.
"""
from dataclasses import dataclass
from typing import Optional

from llmarchive.archive import ArchivePaths, lock_file, record_logs as records, utc_today
from llmarchive.instrument.fingerprint import install_candidate, pending_candidates
from llmarchive.instrument.verdict import (accepted_rotation_runs, append_core_change, latched_alarm,
                                           read_core_changes)
from measure.errors import ArchiveError

ALARMED_VERDICTS = ("improved", "regressed", "changed")


class AcknowledgeError(ArchiveError, ValueError):
    """An acknowledgement that cannot be recorded; the message names the missing or bad field."""


@dataclass(frozen=True)
class Acknowledgement:
    """What :func:`acknowledge` did: the record written (None when nothing was latched) and the latch it ended."""

    record: Optional[dict]
    latch: Optional[dict]

    @property
    def recorded(self) -> bool:
        return self.record is not None


def _required(value: Optional[str], option: str, what: str) -> str:
    text = (value or "").strip()
    if not text:
        raise AcknowledgeError(f"{option} is required and may not be empty: {what}")
    return text


def acknowledge(paths: ArchivePaths, core_change: Optional[str], reviewer: Optional[str],
                date: Optional[str] = None) -> Acknowledgement:
    """Record a human ``core_change`` ending the current latch; nothing is written when nothing is latched.

    Raises :class:`AcknowledgeError` for an empty ``core_change`` or
    ``reviewer`` — checked before anything is read or written.
    """
    change = _required(core_change, "--core-change", "say what changed in the instrument and why")
    who = _required(reviewer, "--reviewer", "name the person who reviewed the alarm")
    day = date or utc_today()
    with lock_file(paths.private / "instrument" / ".acknowledge.lock"):
        latch = latched_alarm(paths)
        if latch is None:
            return Acknowledgement(None, None)
        alarms = records.read(paths, "instrument_alarm")
        already = accepted_rotation_runs(paths)
        rotations = [r for r in records.read(paths, "guard_rotation")
                     if r.get("verdict") in ALARMED_VERDICTS and r.get("run_id") and r["run_id"] not in already]
        candidates = pending_candidates(paths)
        record = append_core_change(paths, {
            "date": day,
            "core_change": change,
            "reviewer": who,
            "acknowledged_alarms": len(alarms),
            "acknowledged_through": alarms[-1].get("record_sha256"),
            "latched_since": latch["since"],
            "alarm_count": latch["alarm_count"],
            "sources": latch["sources"],
            "accepted_expectations": [{"runtime_key_sha256": c.get("runtime_key_sha256"), "digest": c.get("digest"),
                                       "fingerprint_date": c.get("established_on")} for c in candidates],
            "accepted_rotations": [r["run_id"] for r in rotations],
            "sequence": len(read_core_changes(paths)) + 1,
        })
        for candidate in candidates:
            install_candidate(paths, candidate, accepted_by=str(record.get("record_sha256")))
    return Acknowledgement(record, latch)
