"""A day's instrument verdict, the latched alarm, and what an alarm does to measurements.

method §7: a day without a passing runtime fingerprint publishes no
measurement.  The cycle does not stop — measurements are still written,
flagged ``instrument_suspect`` with the reason, and kept off every curve.
Recovery is only through a human ``core_change``.

**An alarm latches.**  From the first ``instrument_alarm`` until a human
acknowledges it (:mod:`llmarchive.instrument.acknowledge`, a ``core_change``
record in its own hash-chained log), every new measurement is suspect, on
whatever day it is made: a clean fingerprint the next morning proves the
runtime answers as it did, not that whatever moved has been understood.
A ``core_change`` record covers the alarms that were in the alarm log when
it was written (``acknowledged_alarms`` is their count, the log being
append-only): an alarm raised a moment later is not covered and latches
again.  :func:`latched_alarm` says whether the archive is latched now.

:func:`day_verdict` says whether a date passes: at least one
``runtime_fingerprint`` record of that date has status ``pass``, no
``instrument_alarm`` is dated that day, and no earlier alarm was still
unacknowledged on that date.  :func:`suspect_value` is what a run asks for:
its own day's verdict plus the latch as it stands *now*, because a run
resumed during a latch is made with an unvouched instrument even when it
started on a clean day.

Order within a day does not weaken the rule.  A measurement built before
the day's alarm was raised is marked afterwards by :func:`mark_day_suspect`
(called by :func:`raise_alarm`): its run record gets the reason and its
measurement is rebuilt by the frozen estimator with the flag set.  The flag
is only ever added, never removed.

**Every run folder, wherever it lives.**  Run folders are not all under
``private/experiments/``: bridge runs of a model under review are held in
``private/review/runs/`` and the guard rotation's runs in
``private/instrument/runs/`` (:func:`run_roots`).  :func:`mark_day_suspect`
walks all of them, held runs before the curve's, so a held run that joins
the curve (``review resolve --successor``, a rename) while the marking runs
is still seen in one place or the other, and joins the curve flagged.

**Runs in flight.**  An alarm can land while a run is still calling the
model, before it has a measurement to mark.  Two steps, in a fixed order,
make sure one side always sees the other: :func:`raise_alarm` appends the
alarm *first* and only then looks for measurements; the runner writes its
measurement *first* and only then asks :func:`llmarchive.run.alarms.alarm_since` whether an
alarm was recorded since its session started (marking itself with
:func:`llmarchive.archive.store.mark_suspect` under the run lock it already holds).  Whichever
looks second sees what the other wrote: either the runner finds the alarm,
or the alarm's marking finds the measurement and waits for the run's lock.

**Folders that cannot be read.**  A run folder whose record is torn has no
date the marking could compare, so it is neither marked nor passed over:
the alarm leaves a pending mark in it (:func:`llmarchive.archive.store.leave_pending_mark`).
Once the folder reads again, the next walk — any alarm's, or
:func:`apply_pending` (``llmarchive instrument apply-marks``) — flags the run
if it was made on the alarm's day and drops the mark otherwise; until then
publication refuses the folder, so a repaired run never reaches the curve
unmarked.  :func:`pending_folders` lists the folders still waiting.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from llmarchive.archive import ArchivePaths, RecordFileError, record_logs as records, store, utc_today
from llmarchive.succession import file_points, held_paths

# method §7's word for the only way out of an alarm.  Bookkeeping kept outside
# method §10's closed record_type list, like the other instrument records.
CORE_CHANGE = "core_change"
# The guard-rotation verdicts that raise an instrument_alarm (llmarchive.instrument.rotation); the CLI and the
# Dagster asset read this one set, so both report the same rotation as an alarm.
ALARM_VERDICTS = frozenset({"improved", "regressed", "changed", "unmeasurable", "unavailable"})


def read_core_changes(paths: ArchivePaths) -> list[dict]:
    """Every ``core_change`` record, oldest first."""
    return records.read(paths, CORE_CHANGE)


def append_core_change(paths: ArchivePaths, fields: Mapping[str, Any]) -> dict:
    """Append one ``core_change`` record to its chained log (:data:`llmarchive.archive.record_logs.KINDS` says what it needs)."""
    return records.append(paths, CORE_CHANGE, fields)


def _covered(acks: list[dict], alarms: list[dict], on: Optional[str] = None) -> int:
    """How many alarms (from the start of the log) the acknowledgements made by ``on`` cover.

    An acknowledgement counts only when the alarm log still holds the alarm
    it names as its last (``acknowledged_through``): a log that was replaced
    or cut is never read as acknowledged.
    """
    best = 0
    for ack in acks:
        if on is not None and str(ack.get("date")) > on:
            continue
        count = int(ack.get("acknowledged_alarms") or 0)
        if 0 < count <= len(alarms) and alarms[count - 1].get("record_sha256") == ack.get("acknowledged_through"):
            best = max(best, count)
    return best


def latched_from(alarms: list[dict], acks: list[dict], on: Optional[str] = None) -> Optional[dict]:
    """The latch described by an alarm log and a ``core_change`` log; None when nothing is latched.

    With ``on`` (``YYYY-MM-DD``) the latch as it stood on that date: alarms
    dated on or before it, acknowledgements dated on or before it.
    """
    start = _covered(acks, alarms, on)
    open_alarms = [a for a in alarms[start:] if on is None or str(a.get("date")) <= on]
    if not open_alarms:
        return None
    first, last = open_alarms[0], open_alarms[-1]
    return {
        "since": first.get("date"),
        "source": first.get("source"),
        "reason": first.get("reason"),
        "alarm_count": len(open_alarms),
        "last_date": last.get("date"),
        "sources": sorted({str(a.get("source")) for a in open_alarms}),
        "first_alarm_sha256": first.get("record_sha256"),
    }


def latched_alarm(paths: ArchivePaths, on: Optional[str] = None) -> Optional[dict]:
    """The unacknowledged alarm(s), or None: ``since`` (date of the first), ``source``, ``reason``, ``alarm_count``.

    Also ``last_date`` (the newest open alarm), ``sources`` and
    ``first_alarm_sha256``.  ``on`` asks for the state on a past date.
    """
    return latched_from(records.read(paths, "instrument_alarm"), read_core_changes(paths), on)


def latch_reason(latch: Mapping[str, Any]) -> str:
    """The latch for the owner's screens: the first alarm's own reason included."""
    return (f"instrument_alarm latched since {latch['since']} ({latch['source']}: {latch['reason']}; "
            f"{latch['alarm_count']} alarm(s) unacknowledged) — recovery only by a human core_change "
            f"(`llmarchive instrument acknowledge`)")


def public_latch_words(latch: Mapping[str, Any]) -> str:
    """The latch in public words (dates, the check's name, a count): what a run's ``instrument_suspect`` carries."""
    return (f"instrument_alarm latched since {latch['since']} (from {latch['source']}; "
            f"{latch['alarm_count']} alarm(s) unacknowledged)")


def public_alarm_words(source: object, date: object, protocol_id: object = None) -> str:
    """One alarm in public words.

    An alarm's ``reason`` stays in the private alarm log: an instrument that
    could not run writes the error's text there (a model file's path, an
    exception), and a measurement carries its ``instrument_suspect`` reason
    into the published ``flag_reasons``.  So what a run is marked with is
    composed from the alarm's structured fields only.
    """
    where = f" ({protocol_id})" if protocol_id else ""
    return f"instrument_alarm from {source}{where} on {date}"


def accepted_rotation_runs(paths: ArchivePaths) -> set[str]:
    """Run ids of alarmed guard-rotation results that a ``core_change`` accepted as the new baseline."""
    out: set[str] = set()
    for ack in read_core_changes(paths):
        out.update(str(r) for r in ack.get("accepted_rotations") or [])
    return out


@dataclass(frozen=True)
class DayVerdict:
    """Whether ``date`` has a passing instrument, and if not, every reason."""

    date: str
    reasons: tuple[str, ...]
    latched: bool = False          # an unacknowledged alarm stood on that date
    public_reasons: tuple[str, ...] = ()   # the same reasons from public facts only (what a run is marked with)

    @property
    def passing(self) -> bool:
        return not self.reasons

    @property
    def suspect(self) -> bool:
        return bool(self.reasons)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    def instrument_suspect(self) -> Union[bool, str]:
        """The value for ``RunSettings.instrument_suspect``: ``False`` or the reason, in public words."""
        return f"instrument: {'; '.join(self.public_reasons or self.reasons)}" if self.reasons else False


def day_verdict(paths: ArchivePaths, date: str) -> DayVerdict:
    """The instrument's verdict on ``date`` (``YYYY-MM-DD``) from the record logs."""
    prints = records.dated(paths, "runtime_fingerprint", date)
    alarms = records.read(paths, "instrument_alarm")
    start = _covered(read_core_changes(paths), alarms, date)
    open_alarms = [a for a in alarms[start:] if str(a.get("date")) <= date]
    reasons: list[str] = []
    public: list[str] = []
    if not prints:
        reasons.append(f"no runtime fingerprint ran on {date} (a missing fingerprint counts as a failure)")
        public.append(reasons[-1])
    elif not any(r.get("status") == "pass" for r in prints):
        statuses = ", ".join(sorted({str(r.get("status")) for r in prints}))
        reasons.append(f"no passing runtime fingerprint on {date} (status: {statuses})")
        public.append(reasons[-1])
        if statuses == "established":     # the owner's first day: say what turns it to passing (not published)
            reasons[-1] += (" — a first fingerprint only establishes the expectation; run `llmarchive instrument "
                            "fingerprint` again (or let tomorrow's daily run do it) to check the model against it")
    earlier = [a for a in open_alarms if str(a.get("date")) < date]
    if earlier:
        latch = latched_from(earlier, [])
        reasons.append(latch_reason(latch))
        public.append(public_latch_words(latch))
    for alarm in open_alarms:
        if alarm.get("date") == date:
            reasons.append(f"instrument_alarm from {alarm.get('source')}: {alarm.get('reason')}")
            public.append(public_alarm_words(alarm.get("source"), date, alarm.get("protocol_id")))
    return DayVerdict(date, tuple(reasons), latched=bool(open_alarms), public_reasons=tuple(public))


def raise_alarm(paths: ArchivePaths, date: str, source: str, reason: str, **extra) -> dict:
    """Record an ``instrument_alarm`` and mark the day's measurements suspect (the latch starts here)."""
    record = records.append(paths, "instrument_alarm", {"date": date, "source": source, "reason": reason, **extra})
    # The record is returned as appended; folders the marking could not read are in pending_folders(paths).
    mark_day_suspect(paths, date, f"instrument: {public_alarm_words(source, date, extra.get('protocol_id'))}")
    _refile_comparison_points(paths, date)
    return record


def _refile_comparison_points(paths: ArchivePaths, day: str) -> None:
    """A held run flagged just now may have a comparison point filed before the flag: replace it with one that has it."""
    file_points(paths, day)


def run_roots(paths: ArchivePaths) -> list[Path]:
    """Every folder run folders live in: the instrument's, the held ones, then the curve's (``experiments/``).

    Held runs come before the curve's because a held run moves onto the
    curve (a rename): a walk in this order meets a moving run at least once.
    """
    # The guard rotation's root (llmarchive.instrument.rotation.InstrumentPaths, which imports this module).
    return [paths.private / "instrument" / "runs", held_paths(paths).experiments, paths.experiments]


def mark_day_suspect(paths: ArchivePaths, date: str, reason: str) -> list[str]:
    """Flag every complete measurement of ``date``, in every run root, that is not yet ``instrument_suspect``.

    Returns the run ids changed.  Takes the same per-run lock file as the
    runner, so a run that is writing its measurement is waited for rather
    than raced; a run still calling the model has no measurement yet and
    marks itself (:func:`llmarchive.run.alarms.alarm_since`, asked by the runner after it writes
    its measurement — the alarm was appended before this walk began).  A
    folder that cannot be read gets a pending mark instead (listed by
    :func:`pending_folders`), and one that reads again has its pending marks
    applied first.
    """
    changed: list[str] = []
    for root in run_roots(paths):
        # One that moved away meanwhile (a held run joining the curve) is met again later.
        scanned = store.scan(root)
        changed += _apply_in(scanned.runs())
        for run in scanned.complete:
            folder = run.folder
            if run.run_date != date:
                continue
            flagged, moved = False, False
            with store.lock_run(folder):
                moved = not store.has_run(folder)
                if not moved:
                    try:
                        flagged = store.mark_suspect(folder, reason)
                    except RecordFileError:
                        pass
            if moved:   # it moved while we waited for its lock (met again in experiments/): leave no empty folder
                _remove_stray(folder)
            if flagged and folder.name not in changed:
                changed.append(folder.name)
        for bad in scanned.unreadable:
            with store.lock_run(bad.folder):
                moved = _only_lock(bad.folder)
                if not moved:
                    try:
                        store.leave_pending_mark(bad.folder, date, reason)
                    except RecordFileError:
                        pass   # its pending file cannot be read either: publication refuses it all the same
            if moved:
                _remove_stray(bad.folder)
    return changed


def apply_pending(paths: ArchivePaths, day: Optional[str] = None) -> list[str]:
    """Apply the pending marks of every run folder, in every run root, that can be read now; the run ids changed.

    What ``llmarchive instrument apply-marks`` runs after a torn run record
    was repaired.  A folder that still cannot be read keeps its marks.  A
    held run flagged here gets its comparison point replaced (dated ``day``,
    today by default).
    """
    changed: list[str] = []
    for root in run_roots(paths):
        changed += _apply_in(store.scan(root).runs())
    if changed:
        _refile_comparison_points(paths, day or utc_today())
    return changed


def pending_folders(paths: ArchivePaths) -> list[Path]:
    """Every run folder, in every run root, that holds marks an alarm could not apply yet."""
    return [folder for root in run_roots(paths) for folder in store.run_folders(root)
            if store.has_pending_marks(folder)]


def _apply_in(runs: list[store.Run]) -> list[str]:
    """Apply the pending marks of readable runs, each under its lock; the run ids changed."""
    changed: list[str] = []
    for run in runs:
        if not store.has_pending_marks(run.folder):
            continue
        with store.lock_run(run.folder):
            moved = not store.has_run(run.folder)
            try:
                if not moved and store.apply_pending_marks(run.folder):
                    changed.append(run.run_id)
            except (RecordFileError, UnicodeDecodeError):
                pass   # torn again meanwhile: the marks stay, and the folder is listed as unreadable
        if moved:
            _remove_stray(run.folder)
    return changed


def _only_lock(folder: Path) -> bool:
    """Whether the folder holds nothing but the lock file (its run moved away while the lock was awaited)."""
    try:
        return [p.name for p in folder.iterdir()] == [store.LOCK_FILE]
    except OSError:
        return False


def _remove_stray(folder: Path) -> None:
    """Remove a folder that holds nothing but the lock file taking the lock re-created."""
    try:
        if _only_lock(folder):
            (folder / store.LOCK_FILE).unlink()
            folder.rmdir()
    except OSError:
        pass


def suspect_value(paths: ArchivePaths, date: Optional[str], run_id: Optional[str] = None) -> Union[bool, str]:
    """What a caller passes as ``RunSettings.instrument_suspect`` for a run dated ``date``.

    ``date`` None means today (UTC).  When ``run_id`` names a run folder that
    already exists, its stored ``run_date`` is the day whose fingerprint
    counts (a resumed run keeps its own date).  The latch as it stands now is
    added either way: whatever the run's date, its calls are made today.
    """

    day = date or utc_today()
    if run_id is not None:
        try:
            day = (store.run_record(paths, run_id) or {}).get("run_date") or day
        except RecordFileError:
            pass   # the runner refuses to resume an unreadable run folder and says why
    verdict = day_verdict(paths, day)
    if not verdict.latched:
        now = latched_alarm(paths)
        if now is not None:
            verdict = DayVerdict(day, verdict.reasons + (latch_reason(now),), latched=True,
                                 public_reasons=(verdict.public_reasons or verdict.reasons) + (public_latch_words(now),))
    return verdict.instrument_suspect()
