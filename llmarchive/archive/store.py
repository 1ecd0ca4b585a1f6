"""The store: the one module that knows how a run folder is laid out on disk.

A run folder (``private/experiments/<run_id>/``, or the same layout under
another root: the held runs of :mod:`llmarchive.succession.review`, the instrument's
rotation runs) holds three files — the ``experiment_run`` record (which
embeds the protocol's text-free header as ``protocol_header``), the
hash-chained trial log and, once the run is complete, the measurement — plus
the lock file the runner holds while it works.  Their names are spelled here
and nowhere else (a test checks it): every other module opens, lists, locks,
measures, marks and moves runs through these functions, and gets typed
records back: :class:`Run` and :class:`RunFolder` for a folder,
:class:`measure.records.Trial` and :class:`measure.records.Measurement` for
what it holds — each checked against the schema as it is read, so no
computation starts from a record that breaks it.  The bookkeeping logs are
the other half of the archive's files; :mod:`llmarchive.archive.record_logs` owns them.

**One policy for a file that cannot be read** (method §10.4).  A run folder
whose record is not a readable JSON object — torn, not JSON, not an object,
or missing beside a trial log or a measurement — is never skipped: a
listing (:func:`scan`) returns it as :class:`Unreadable`, coverage names it
as the condition :data:`UNREADABLE_CONDITION` of the period its run id
belongs to, and publication refuses to build (:meth:`RunScan.refuse`).

**Why here.**  If one machine is ever outgrown, this module is what a shared
backend replaces (method §10.5): it needs an atomic write of a whole file
and an atomic append to a log, an exclusive lock per run folder, and a
listing of run folders.  Only the local-disk backend exists.  Listings answer from the run index
(:mod:`llmarchive.archive.run_index`), which the writes below keep and the folders can always rebuild.
"""
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from measure.errors import ArchiveError
from measure.measurement import MeasurementError, build
from measure.records import Measurement, MeasurementRecordError, Trial
from measure.schema import TrialError
from llmarchive.archive import jobs as job_table
from llmarchive.archive.jsonio import ChainedLog, RecordFileError, read_json, read_jsonl, write_json
from llmarchive.archive.locks import lock_file
from llmarchive.archive.paths import ArchivePaths
from llmarchive.archive.run_ids import is_sweep_id
from llmarchive.archive.run_index import Entry, Run, RunIndex, RunScan, log_facts, measured_trials

RUN_FILE = "run.json"
TRIALS_FILE = "trials.jsonl"
MEASUREMENT_FILE = "measurement.json"
LOCK_FILE = ".lock"
# The coverage condition of a run folder the store cannot read (llmarchive.archive.skips.CONDITIONS).
UNREADABLE_CONDITION = "run_record_unreadable"


class StoreError(ArchiveError, ValueError):
    """A store operation refused: the message names the run folder and why."""


# --------------------------------------------------------------------------
# file names of one folder
# --------------------------------------------------------------------------

def run_file(folder: Path) -> Path:
    """The ``experiment_run`` record of a run folder."""
    return Path(folder) / RUN_FILE


def trial_log(folder: Path) -> Path:
    """The hash-chained trial log of a run folder (workers that verify logs in parallel take this path)."""
    return Path(folder) / TRIALS_FILE


def measurement_file(folder: Path) -> Path:
    """The measurement of a run folder (present once the run is complete)."""
    return Path(folder) / MEASUREMENT_FILE


def has_run(folder: Path) -> bool:
    """Whether the folder holds a run record (a run was started in it)."""
    return run_file(folder).exists()


def is_complete(folder: Path) -> bool:
    """Whether the folder holds a measurement."""
    return measurement_file(folder).exists()


# --------------------------------------------------------------------------
# typed records
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Unreadable:
    """A run folder whose record cannot be read, and what is wrong with it.

    ``problem`` is the owner's line (it names the file by its path);
    :attr:`public_problem` says the same in words a published coverage row
    may carry: the record's file name and the kind of fault, no path.
    """

    folder: Path
    problem: str

    @property
    def run_id(self) -> str:
        return self.folder.name

    @property
    def public_problem(self) -> str:
        for marker, words in (("missing beside", "is missing beside the run's other files"),
                              ("not UTF-8", "is not UTF-8 text"), ("not valid JSON", "is not valid JSON"),
                              ("not a JSON object", "is not a JSON object"),
                              ("nested too deeply", "is nested too deeply")):
            if marker in self.problem:
                return f"{RUN_FILE} {words}"
        return f"{RUN_FILE} cannot be read"


@dataclass
class RunFolder:
    """A run folder read whole: its record, its typed trials, its typed measurement (None while open)."""

    path: Path
    run: dict
    trials: list[Trial]
    measurement: Optional[Measurement]

    @property
    def protocol_header(self) -> dict:
        header = self.run.get("protocol_header")
        if not isinstance(header, dict):
            raise RecordFileError(f"{run_file(self.path)}: no protocol_header object")
        return header


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------

def read_run(folder: Path) -> dict:
    """The run record of ``folder``; :class:`RecordFileError` naming the file when it is not a JSON object."""
    path = run_file(folder)
    value = read_json(path)
    if not isinstance(value, dict):
        raise RecordFileError(f"{path}: not a JSON object")
    return value


def run_record(paths: ArchivePaths, run_id: str) -> Optional[dict]:
    """The run record of ``run_id`` in the archive, None when there is no such run (unreadable: raises)."""
    return read_run_if_any(paths.run_dir(run_id))


def read_run_if_any(folder: Path) -> Optional[dict]:
    """The run record of ``folder``, None when no run was started there (unreadable: raises, never skipped)."""
    return read_run(folder) if has_run(folder) else None


def read_measurement(folder: Path) -> Optional[Measurement]:
    """The measurement of ``folder``, None while the run is open.

    Checked against the schema on the way out (:class:`measure.records.Measurement`):
    :class:`RecordFileError` names the file and the first problem.
    """
    path = measurement_file(folder)
    if not path.exists():
        return None
    try:
        return Measurement(read_json(path), str(path))
    except MeasurementRecordError as exc:
        raise RecordFileError(str(exc)) from None


def read_trials(folder: Path) -> list[Trial]:
    """The trial records of the folder's log (bookkeeping lines left out), as written, each checked.

    Every trial passes the schema's one validator as a reader applies it
    (:class:`measure.records.Trial`); the first that does not raises
    :class:`RecordFileError` naming the log, the record's position and the field.  A
    trial the runner wrote always passes: it checked the record before
    appending it.
    """
    path = trial_log(folder)
    out = []
    for number, record in enumerate(read_jsonl(path), start=1):   # each a JSON object (jsonio checks)
        if record.get("record_type") != "trial":
            continue
        try:
            out.append(Trial(record, f"{path}, record {number}"))
        except TrialError as exc:
            raise RecordFileError(str(exc)) from None
    return out


def load_run(path: Path) -> RunFolder:
    """Load a run folder whole, every record checked, naming the file at fault on any problem."""
    path = Path(path)
    if not path.is_dir():
        raise RecordFileError(f"{path}: not a run folder")
    return RunFolder(path, read_run(path), read_trials(path), read_measurement(path))


def measurement_run(run: dict) -> dict:
    """The fields of an experiment_run that :func:`measure.measurement.build` reads."""
    keys = ("run_id", "run_date", "subject_model_id", "series", "model_family", "returned_model_id",
            "api_surface_sha", "condition_profile", "replicate_index", "instrument_suspect", "exploratory")
    return {k: run.get(k) for k in keys if k in run}


def run_folders(root: Path) -> list[Path]:
    """Every folder under ``root`` (sorted by run id); none when the root does not exist."""
    root = Path(root)
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _examine(folder: Path) -> Union[Run, Unreadable, None]:
    measured = is_complete(folder)
    if not has_run(folder):
        if measured or trial_log(folder).exists():
            return Unreadable(folder, f"{run_file(folder)}: missing beside the run's other files")
        return None   # an empty folder (a lock taken before anything was written): no run
    try:
        return Run(folder, read_run(folder), measured)
    except RecordFileError as exc:
        return Unreadable(folder, str(exc))
    except UnicodeDecodeError as exc:
        return Unreadable(folder, f"{run_file(folder)}: not UTF-8 text (byte {exc.start})")


def _signature(folder: Path) -> str:
    """What changes when a file of the folder is written: inode, size and time of each (``-`` when absent)."""
    parts = []
    for name in (RUN_FILE, MEASUREMENT_FILE, TRIALS_FILE):   # strings, not Paths: a scan signs every folder
        try:
            st = os.stat(f"{folder}/{name}")
            parts.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        except FileNotFoundError:
            parts.append("-")
    return "|".join(parts)


def _entry(folder: Path) -> Entry:
    """One folder read for the run index (signed first: a write while it is read leaves a signature to redo)."""
    signed = _signature(folder)
    found = _examine(folder)
    if found is None:
        return Entry(folder.name, "empty", signed)
    if isinstance(found, Unreadable):
        return Entry(folder.name, "unreadable", signed, is_complete(folder), problem=found.problem)
    facts: dict[str, Any] = {}
    with contextlib.suppress(FileNotFoundError):
        raw = trial_log(folder).read_bytes()   # whole: the index keeps what status would read it for
        facts.update(zip(("trials_count", "trials_last", "trials_torn"), log_facts(raw)), trials_size=len(raw))
    if found.measured:
        try:
            facts["counted"] = measured_trials(read_json(measurement_file(folder)))
        except (RecordFileError, UnicodeDecodeError) as exc:
            facts["measurement_problem"] = str(exc)
    return Entry(folder.name, "run", signed, found.measured, found.record, **facts)


def _index(root: Path) -> RunIndex:
    return RunIndex(Path(root), _entry, _signature)
index_of = _index   # the run index of a root, for the index's other readers (run_reads)


def scan(root: Path) -> RunScan:
    """Every run folder under ``root``, sorted by run id, each complete, open or unreadable — none skipped.

    Through the run index (:mod:`llmarchive.archive.run_index`): each row's files are signed (``stat``, no
    parse); a folder whose files changed, or that the index does not know, is read again."""
    out, root = RunScan(), Path(root)
    for entry in _index(root).entries():
        folder = root / entry.run_id
        if entry.kind == "unreadable":
            out.unreadable.append(Unreadable(folder, str(entry.problem)))
        else:
            (out.complete if entry.measured else out.open).append(Run(folder, dict(entry.record or {}), entry.measured,
                                                                      entry))
    return out


def archive_scan(paths: ArchivePaths) -> RunScan:
    """:func:`scan` of the archive's own run folders (``private/experiments``)."""
    return scan(paths.experiments)


def held_root(paths: ArchivePaths) -> Path:
    """Where runs held for review live (``private/review/runs``, :mod:`llmarchive.succession.review`): the same layout."""
    return paths.private / "review" / "runs"


def held_scan(paths: ArchivePaths) -> RunScan:
    """:func:`scan` of the runs held for review."""
    return scan(held_root(paths))


def complete_runs(paths: ArchivePaths) -> list[dict]:
    """The ``experiment_run`` record of every complete, dated run folder (a measurement exists)."""
    return [r.record for r in archive_scan(paths).complete if r.run_date]


def latest_complete_run_date(paths: ArchivePaths) -> Optional[str]:
    """The newest day (``YYYY-MM-DD``) of a complete, dated run: the lease's run clock, one query of the index.

    Only rows that can still change the answer (open, empty, unreadable folders, and folders the index does
    not know) are checked against their files: a complete run's date is not rewritten."""
    return _index(paths.experiments).latest_complete_date()


def complete_runs_dated(paths: ArchivePaths, month: Optional[str] = None, before: Optional[str] = None) -> list[dict]:
    """:func:`complete_runs` of ``month`` (``YYYY-MM``) and/or dated before ``before``, checked as the run clock is
    (:func:`latest_complete_run_date`): a month's sweep and revalidation's history ask this on their hot paths."""
    where = ["kind = 'run' AND measured = 1 AND run_date IS NOT NULL",
             *(["substr(run_date, 1, 7) = ?"] if month else []), *(["run_date < ?"] if before else [])]
    args = tuple(a for a in (month, before) if a)
    return [e.record for e in _index(paths.experiments).select(" AND ".join(where), args) if e.record]


def open_runs(paths: ArchivePaths) -> list[Run]:
    """The archive's readable runs without a measurement yet, each read again when its files changed."""
    return [Run(paths.experiments / e.run_id, dict(e.record or {}), False)
            for e in _index(paths.experiments).select("kind = 'run' AND measured = 0")]


def index_disagreements(paths: ArchivePaths) -> list[str]:
    """Every way the run indexes (the archive's and the held runs') differ from the folders read whole now:
    for ``llmarchive verify --deep`` and publication, which see here an edit that kept a file's size and time."""
    return [line for root in (paths.experiments, held_root(paths)) if root.is_dir()
            for line in _index(root).disagreements()]


def is_sweep_run(run: dict, declared_models: Optional[Any] = None) -> bool:
    """Whether ``run`` (a run record) is the sweep's own run: the only kind that is a month's ``full_sweep``.

    Job ``full_sweep`` (or its older name), the commercial series, not
    exploratory (a manual run of an unlisted protocol, a model nobody
    declared, an override), and — when the family's declared models are
    known — on one of them.  A manual run of the same protocol measures
    something, but it is not the programme's sweep.
    """
    job = run.get("job")
    if job is None:   # a run recorded before runs named their job: the sweep's run ids say whose it is
        job = job_table.FULL_SWEEP if is_sweep_id(str(run.get("run_id", ""))) else None
    return (run.get("series") == "commercial" and job in job_table.stored_names(job_table.FULL_SWEEP)
            and not run.get("exploratory")
            and (declared_models is None or run.get("subject_model_id") in declared_models))


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------

def lock_run(folder: Path, busy: Optional[Exception] = None) -> contextlib.AbstractContextManager:
    """The run folder's lock: wait for it, or raise ``busy`` at once when another process holds it."""
    return lock_file(Path(folder) / LOCK_FILE, busy=busy)


def open_trial_log(folder: Path) -> ChainedLog:
    """The folder's trial log, opened for appending (its chain verified first)."""
    return ChainedLog(trial_log(folder))


def write_run(folder: Path, record: dict) -> None:
    """Write (or rewrite) the run record: it says where the run stands, so it changes as the run goes."""
    write_json(run_file(folder), record)
    _index(Path(folder).parent).note(Path(folder))


def write_measurement(folder: Path, record: dict, replace: bool = False) -> None:
    """Write the run's measurement — once.

    Only a record of the measurement schema is written (:class:`StoreError`
    names the first problem).  A measurement is written when the run completes; writing a different
    one over it is refused (:class:`StoreError`) unless ``replace`` says the
    caller rebuilt it from the same trials on purpose (a flag added by
    :func:`mark_suspect`, ``llmarchive measure --write``).  Writing the same
    record again is a no-op, so a resumed step may repeat it.
    """
    path = measurement_file(folder)
    try:
        Measurement(record, str(path))
    except MeasurementRecordError as exc:
        raise StoreError(str(exc)) from None
    if path.exists() and not replace:
        try:
            same = read_json(path) == record
        except RecordFileError:
            same = False
        if same:
            return
        raise StoreError(f"{path}: the run already has a different measurement; it is written once")
    write_json(path, record)
    _index(Path(folder).parent).note(Path(folder))


def mark_suspect(folder: Path, reason: str) -> bool:
    """Add ``instrument_suspect`` (with ``reason``) to a run folder; the caller holds the folder's lock.

    method §7.4.  The run record gets the reason (a reason it already has is
    kept); a measurement, if there is one, is rebuilt by the frozen estimator
    with the flag set.  A run already flagged is left as it is.  Returns
    whether anything changed.
    """
    loaded = load_run(folder)
    already = bool(loaded.run.get("instrument_suspect"))
    if loaded.measurement is not None:
        already = already and "instrument_suspect" in (loaded.measurement.get("flags") or [])
    if already:
        return False
    run = dict(loaded.run)
    run["instrument_suspect"] = run.get("instrument_suspect") or reason
    measurement = None
    if loaded.measurement is not None:
        try:
            measurement = build(loaded.protocol_header, sorted(loaded.trials, key=lambda t: t["trial_index"]),
                                measurement_run(run))
        except MeasurementError:
            return False
    write_run(folder, run)
    if measurement is not None:
        write_measurement(folder, measurement, replace=True)
    return True


def move_run(source: Path, target: Path, busy: Exception) -> None:
    """Move a whole run folder (a rename: nothing re-run or rewritten), under the source's lock.

    Raises ``busy`` when a process is working on the run, and
    :class:`StoreError` when ``target`` exists already.
    """
    if target.exists():
        raise StoreError(f"{target} already exists; the run {source} cannot move there under the same run id")
    with lock_run(source, busy=busy):
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
    _index(source.parent).forget(source.name)
    _index(target.parent).note(target)


# --------------------------------------------------------------------------
# pending marks
# --------------------------------------------------------------------------

# The suspect marks an alarm left in a folder it could not read (llmarchive.instrument.verdict, method §7.4).
PENDING_FILE = "suspect_pending.json"


def pending_file(folder: Path) -> Path:
    """Where a run folder keeps the marks an alarm could not apply yet (inside it: it moves with the run)."""
    return Path(folder) / PENDING_FILE


def has_pending_marks(folder: Path) -> bool:
    """Whether an alarm left marks in the folder that nobody has applied yet (publication refuses them)."""
    return pending_file(folder).exists()


def pending_marks(folder: Path) -> list[dict]:
    """The marks left in the folder, oldest first: ``{"date", "reason"}`` each."""
    path = pending_file(folder)
    value = read_json(path) if path.exists() else {"marks": []}
    marks = value.get("marks") if isinstance(value, dict) else None
    if not isinstance(marks, list) or not all(isinstance(m, dict) for m in marks):
        raise RecordFileError(f"{path}: not an object with a list of marks")
    return marks


def leave_pending_mark(folder: Path, date: str, reason: str) -> bool:
    """Keep an alarm's mark for a folder whose run date cannot be read; the caller holds the folder's lock.

    Its date is unknown while its record cannot be read, so neither marking
    nor passing over it is right: the mark waits, written whole (atomically),
    until :func:`apply_pending_marks`.  A mark already left is not repeated.
    Returns whether one was added.
    """
    marks = pending_marks(folder)
    mark = {"date": date, "reason": reason}
    if mark in marks:
        return False
    write_json(pending_file(folder), {"marks": [*marks, mark]})
    return True


def apply_pending_marks(folder: Path) -> bool:
    """Apply the folder's pending marks now that its record reads; the caller holds the folder's lock.

    A mark dated the run's ``run_date`` flags it (:func:`mark_suspect`); one
    of another date is dropped, the run was not made that day.  The pending
    file is then removed.  Raises :class:`RecordFileError` while the record
    still cannot be read (the marks stay).  Returns whether the run changed.
    """
    marks = pending_marks(folder)
    run_date = read_run(folder).get("run_date")
    changed = False
    for mark in marks:
        if mark.get("date") == run_date:
            changed = mark_suspect(folder, str(mark.get("reason"))) or changed
    pending_file(folder).unlink(missing_ok=True)
    return changed
