"""A day's instrument verdict, and what an alarm does to that day's measurements.

SPEC §7: a day without a passing runtime fingerprint publishes no
measurement.  The cycle does not stop — measurements are still written,
flagged ``instrument_suspect`` with the reason, and kept off every curve.

:func:`day_verdict` is the one function the runner's callers use: a date
passes only when at least one ``runtime_fingerprint`` record of that date
has status ``pass`` **and** no ``instrument_alarm`` is dated that day.  A
missing fingerprint, one that could not run, one that failed, and one that
only established a new expectation (nothing was compared) all leave the
day suspect, each with its reason.

Order within a day does not weaken the rule.  A measurement built before
the day's alarm was raised is marked afterwards by :func:`mark_day_suspect`
(called by :func:`raise_alarm`): its run record gets the reason and its
measurement is rebuilt by the frozen estimator with the flag set.  The flag
is only ever added, never removed here — recovery is a human change.
"""
from dataclasses import dataclass
from typing import Optional, Union

from llmarchive import records
from llmarchive.jsonio import RecordFileError, read_json, write_json
from llmarchive.locks import lock_file
from llmarchive.paths import ArchivePaths
from llmarchive.runs import load_run, measurement_run
from measure.measurement import MeasurementError, build
from llmarchive.records import utc_today


@dataclass(frozen=True)
class DayVerdict:
    """Whether ``date`` has a passing instrument, and if not, every reason."""

    date: str
    reasons: tuple[str, ...]

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
        """The value for ``RunSettings.instrument_suspect``: ``False`` or the reason."""
        return f"instrument: {self.reason}" if self.reasons else False


def day_verdict(paths: ArchivePaths, date: str) -> DayVerdict:
    """The instrument's verdict on ``date`` (``YYYY-MM-DD``) from the record logs."""
    prints = [r for r in records.read(paths, "runtime_fingerprint") if r.get("date") == date]
    alarms = [r for r in records.read(paths, "instrument_alarm") if r.get("date") == date]
    reasons: list[str] = []
    if not prints:
        reasons.append(f"no runtime fingerprint ran on {date} (a missing fingerprint counts as a failure)")
    elif not any(r.get("status") == "pass" for r in prints):
        statuses = ", ".join(sorted({str(r.get("status")) for r in prints}))
        reasons.append(f"no passing runtime fingerprint on {date} (status: {statuses})")
    for alarm in alarms:
        reasons.append(f"instrument_alarm from {alarm.get('source')}: {alarm.get('reason')}")
    return DayVerdict(date, tuple(reasons))


def raise_alarm(paths: ArchivePaths, date: str, source: str, reason: str, **extra) -> dict:
    """Record an ``instrument_alarm`` and mark the day's measurements suspect."""
    record = records.append(paths, "instrument_alarm", {"date": date, "source": source, "reason": reason, **extra})
    mark_day_suspect(paths, date, f"instrument: instrument_alarm from {source}: {reason}")
    return record


def mark_day_suspect(paths: ArchivePaths, date: str, reason: str) -> list[str]:
    """Flag every complete measurement of ``date`` that is not yet ``instrument_suspect``.

    Returns the run ids changed.  Takes the same per-run lock file as the
    runner, so a run in progress is waited for rather than raced.
    """
    changed: list[str] = []
    if not paths.experiments.is_dir():
        return changed
    for folder in sorted(p for p in paths.experiments.iterdir() if p.is_dir()):
        run_file = folder / "run.json"
        if not (folder / "measurement.json").exists() or not run_file.exists():
            continue
        try:
            if read_json(run_file).get("run_date") != date:
                continue
        except RecordFileError:
            continue
        with lock_file(folder / ".lock"):
            loaded = load_run(folder)
            if loaded.measurement is None or "instrument_suspect" in (loaded.measurement.get("flags") or []):
                continue
            run = dict(loaded.run)
            run["instrument_suspect"] = reason
            try:
                measurement = build(loaded.protocol_header, loaded.trials, measurement_run(run))
            except MeasurementError:
                continue
            write_json(run_file, run)
            write_json(folder / "measurement.json", measurement)
            changed.append(folder.name)
    return changed


def suspect_value(paths: ArchivePaths, date: Optional[str], run_id: Optional[str] = None) -> Union[bool, str]:
    """What a caller passes as ``RunSettings.instrument_suspect`` for a run dated ``date``.

    ``date`` None means today (UTC).  When ``run_id`` names a run folder that
    already exists, its stored ``run_date`` is the day that counts (a resumed
    run keeps its own date).
    """

    day = date or utc_today()
    if run_id is not None:
        run_file = paths.run_dir(run_id) / "run.json"
        if run_file.exists():
            try:
                day = read_json(run_file).get("run_date") or day
            except RecordFileError:
                pass
    return day_verdict(paths, day).instrument_suspect()
