"""Everything a build publishes from, read once and checked.

:func:`gather` walks the run folders (``private/experiments/<run_id>/``),
the bookkeeping logs (``private/records/<kind>.jsonl``) and the protocol
registry, and returns one :class:`Inputs`.  Nothing is published from
anywhere else, so a build is a pure function of these records (plus the
build time), which is what makes a rebuild byte-identical.

Checks made here, each naming the file at fault:

* a ``measurement.json`` carries exactly ``MEASUREMENT_FIELD_NAMES`` (put back in
  schema order, since record files are written with sorted keys) and the
  run id of its folder, and a known ``series``;
* every hash-chained log publication copies from (an open run's
  ``trials.jsonl``, every record log) verifies end to end.

Selection rules (method §3, §10):

* a run is published once it is complete (its ``measurement.json`` exists);
* a ``sealed`` protocol's measurements and runs are never published — its
  existence and count are, through the protocols table;
* a run's trials go to the open lane when its protocol's *current* lane is
  ``open`` (declassification is a lane flip), never otherwise.
"""
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Optional

from llmarchive.archive import ArchivePaths, JobSpec, RecordFileError, jobs, record_logs, store
from llmarchive.instrument import CORE_CHANGE
from measure import chain, jsonl
from measure.records import Measurement
from measure.schema import MEASUREMENT_FIELD_NAMES, SERIES
from publish.data.changes import beside_fields, modal_cells, modal_cells_of_log
from publish.data import csvs, verified
from publish.errors import PublishError
from publish.data.open_lane import OpenRun, label_of
from publish.data.protocols import ProtocolTexts, collect_texts, list_headers
from publish.workers import pool

SUCCESSION_KINDS = ("subject_model", "generation_bridge", "needs_review", "series_closed", "bridge_incomplete")
# The instrument's records that belong to no job of the table: an alarm a check raised, and the human
# core_change that acknowledges alarms (llmarchive.instrument.verdict).
ALARM = "instrument_alarm"
NOT_JOB_KINDS = (ALARM, CORE_CHANGE)


def instrument_checks() -> tuple[JobSpec, ...]:
    """The daily checks whose records publication shows, from the job table (a row saying ``published``).

    The instrument's free checks on itself come first and the paid check of
    the tracked model after them, each group in table order: the order of the
    site's lines, the glossary and the instrument table's description.  Read
    at call time, so a row registered later (a test's toy check) is published.
    """
    rows = [job for job in jobs.table() if job.published and job.record and job.public]
    return tuple(sorted(rows, key=lambda job: not job.self_check))


def instrument_kinds() -> tuple[str, ...]:
    """Every instrument log publication reads: the published checks' record kinds, the alarms, core changes."""
    return tuple(job.record.kind for job in instrument_checks() if job.record) + NOT_JOB_KINDS


def read_kinds() -> tuple[str, ...]:
    """Every bookkeeping log a build reads (:func:`read_logs`)."""
    return ("coverage", "comparison_point") + instrument_kinds() + SUCCESSION_KINDS


@dataclass
class RunInfo:
    """A complete, publishable run: its experiment_run record, trial count and current lane."""

    run: dict
    n_trials: int
    lane: Optional[str]
    measurement: dict


@dataclass
class Inputs:
    measurements: list[dict]
    runs: list[RunInfo]
    open_runs: list[OpenRun]
    headers: list[dict]
    texts: ProtocolTexts
    records: dict[str, list[dict]] = field(default_factory=dict)
    # run_id -> the run's modal decision per scenario x version (publish.data.changes.modal_cells), for the
    # on-curve runs the changes table pairs up; a run whose trial log cannot be read is absent.
    cells: dict[str, dict] = field(default_factory=dict)

    def by_kind(self, kind: str) -> list[dict]:
        return self.records.get(kind, [])

    @cached_property
    def coverage_rows(self) -> list[dict]:
        """The coverage log as published (:func:`publish.data.csvs.coverage_rows`), worked out once per build on
        first use: coverage.csv, the database's coverage table, the site and status.json all read it."""
        return csvs.coverage_rows(self.by_kind("coverage"))


def measurement_sort_key(m: dict) -> tuple:
    return (m.get("series") or "", m.get("run_date") or "", m.get("protocol_id") or "",
            m.get("subject_model_id") or "", m.get("replicate_index") or 0, m.get("run_id") or "")


def _check_measurement(m: Optional[Measurement], folder: Path) -> dict:
    """What publication adds to the store's check of the schema (:class:`measure.records.Measurement`)."""
    where = store.measurement_file(folder)
    if m is None:
        raise PublishError(f"{where}: missing in a complete run folder")
    # A measurement written before the later fields were appended has them as null; files are key-sorted.
    m = {name: m.get(name) for name in MEASUREMENT_FIELD_NAMES}
    if m["run_id"] != folder.name:
        raise PublishError(f"{where}: run_id {m['run_id']!r} does not match its folder {folder.name!r}")
    if m["series"] not in SERIES:
        raise PublishError(f"{where}: series {m['series']!r} is not one of {SERIES}")
    return m


OpenRunRead = tuple[list[bytes], dict[str, set[str]], dict]
"""An open run's log as read: its trial lines, their values' type labels, and its modal cells."""


def _read_trial_lines(path: Path) -> OpenRunRead:
    """The trial lines of a chained log, verified, byte for byte as written.

    Read by :data:`measure.jsonl.REFUSE` (the first line that cannot be
    read refuses the build, naming the file and the line); a torn last line
    was never reported written and is passed over.  Also returns, per key,
    the type labels of the values the trials carry
    (:func:`publish.data.open_lane.label_of`), for Croissant, and the run's modal
    decision per cell (:func:`publish.data.changes.modal_cells`), from the records
    already parsed (:func:`open_run_read`).
    """
    reader = jsonl.JsonlReader(jsonl.REFUSE, str(path), torn_tail=jsonl.DROP)
    try:
        with open(path, "rb") as fh:
            lines = list(reader.lines(fh))
    except FileNotFoundError:
        raise PublishError(f"{path}: no trial log in a complete open-lane run") from None
    except OSError as exc:
        raise PublishError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except jsonl.JsonlError as exc:
        raise PublishError(str(exc)) from None
    try:
        chain.verify(line.record for line in lines)
    except chain.ChainError as exc:
        raise PublishError(f"{path}: hash chain broken at {exc}") from None
    return open_run_read(lines)


def open_run_read(lines: list[jsonl.Line]) -> OpenRunRead:
    """What publication keeps of a run's log once its lines are read and its chain verified: the trial lines
    as written, their values' type labels and the run's modal cells (the blocking check's workers, which read
    every log anyway, call this too, so a build reads each log once: :func:`publish.pipeline.checks.chain_problems`)."""
    kept, trials = [], []
    types: dict[str, dict[type, object]] = {}
    shapes: set[tuple] = set()     # a trial whose keys and value types were all met before adds nothing
    for line in lines:
        record = line.record
        if record.get("record_type") == "trial":
            kept.append(line.raw)
            trials.append(record)
            shape = (*record, *map(type, record.values()))
            if shape in shapes:
                continue
            shapes.add(shape)
            for key, value in record.items():
                seen = types.setdefault(key, {})
                if value is not None and type(value) not in seen:
                    seen[type(value)] = value
    labels = {key: {label_of(key, example) for example in seen.values()} for key, seen in types.items()}
    return kept, labels, modal_cells(trials)


CheckedRead = tuple[Optional[OpenRunRead], dict, int]
"""A complete run's log as the blocking check read and verified it (:func:`publish.pipeline.checks.chain_problems`):
its :data:`OpenRunRead` when its protocol is open (else None), its modal cells and its trial-line count
(as :func:`_count_trials` counts them)."""


def _read_open_run(path: str) -> OpenRunRead:
    return _read_trial_lines(Path(path))


def _read_open_runs(folders: list[Path], checked: dict[str, CheckedRead]) -> list[OpenRunRead]:
    """Read and verify the open runs' logs, in two processes when there are many (a ten-year archive); a log
    the blocking check already read and verified in this build (``checked``, by run id) is not read again."""
    todo = [f for f in folders if (checked.get(f.name) or (None,))[0] is None]
    if len(todo) < 64:
        found = {f.name: _read_trial_lines(store.trial_log(f)) for f in todo}
    else:
        with pool(2) as workers:   # clean workers, never forked from the caller (publish.workers)
            reads = workers.map(_read_open_run, [str(store.trial_log(f)) for f in todo], chunksize=8)
            found = {f.name: read for f, read in zip(todo, reads)}
    return [found[f.name] if f.name in found else checked[f.name][0] for f in folders]


def _count_trials(path: Path) -> int:
    if not path.exists():
        return 0
    count = 0
    with open(path, "rb") as fh:
        for line in fh:
            if b'"record_type":"trial"' in line:
                count += 1
    return count


def read_logs(paths: ArchivePaths, verified_logs: Optional[dict[str, list[dict]]] = None) -> dict[str, list[dict]]:
    """Every bookkeeping record publication uses, each log's chain verified (a log in ``verified_logs``, read
    and verified moments before by the same build's check, is taken as it was read)."""
    out = {}
    for kind in read_kinds():
        if verified_logs and kind in verified_logs:
            out[kind] = verified_logs[kind]
            continue
        try:
            found = record_logs.read(paths, kind)
        except RecordFileError as exc:
            raise PublishError(str(exc)) from None
        try:
            chain.verify(found)
        except chain.ChainError as exc:
            raise PublishError(f"{paths.record_log(kind)}: hash chain broken at {exc}") from None
        out[kind] = found
    return out


def _refuse_pending_marks(runs: list) -> None:
    for found in runs:
        if store.has_pending_marks(found.folder):   # an alarm met it unreadable: its flag may be missing (§7.4)
            raise PublishError(f"{found.folder}: an instrument alarm left a pending suspect mark while its run "
                               "record could not be read; apply it with `llmarchive instrument apply-marks`")


def digest_inputs(paths: ArchivePaths) -> Inputs:
    """Only what :func:`publish.data.status.inputs_digest` reads of the inputs, for ``llmarchive status``'s "is the
    publication current" — which may not cost a build's reading of the archive's history.

    Read as :func:`gather` reads them: every complete run folder (refused as a build refuses it), its
    measurement checked and completed from its record, the open lane's trial lines found by their bytes
    (:func:`publish.data.verified.trial_lines`).  Not read: the protocols' texts, every trial log of the
    other lanes, and each record log but its last record (read from its end, checked against its own hash):
    the digest holds only each log's chain head, and publication verifies every chain before it builds.
    """
    headers = list_headers(paths)
    lanes = {h["protocol_id"]: h.get("lane") for h in headers}
    measurements: list[dict] = []
    open_runs: list[OpenRun] = []
    held = store.held_scan(paths).refuse(PublishError)
    complete = store.archive_scan(paths).refuse(PublishError).complete
    _refuse_pending_marks([*held.runs(), *complete])
    for found in complete:
        folder = found.folder
        try:
            m = _check_measurement(store.read_measurement(folder), folder)
            m.update(beside_fields(found.record, str(store.run_file(folder))))
            lane = lanes.get(m["protocol_id"], m.get("lane"))
            if "sealed" in (lane, m.get("lane")):
                continue
            measurements.append(m)
            if lane == "open":
                raw = store.trial_log(folder).read_bytes()
                open_runs.append(OpenRun(m["run_id"], m["run_date"], verified.trial_lines(raw)))
        except RecordFileError as exc:
            raise PublishError(str(exc)) from None
        except FileNotFoundError:
            raise PublishError(f"{store.trial_log(folder)}: no trial log in a complete open-lane run") from None
        except OSError as exc:
            raise PublishError(f"{store.trial_log(folder)}: cannot be read ({exc.strerror or exc})") from None
    try:
        heads = {kind: [last] if (last := record_logs.latest(paths, kind)) else [] for kind in read_kinds()}
    except RecordFileError as exc:
        raise PublishError(str(exc)) from None
    measurements.sort(key=measurement_sort_key)
    open_runs.sort(key=lambda r: (r.run_date, r.run_id))
    return Inputs(measurements, [], open_runs, headers, ProtocolTexts([], [], {}), heads)


def gather(paths: ArchivePaths, checked: Optional[dict[str, CheckedRead]] = None,
           logs: Optional[dict[str, list[dict]]] = None) -> Inputs:
    """Read and check every input of a build.

    ``checked`` holds, by run id, the logs the blocking check read and verified moments before in the same
    build (:func:`publish.pipeline.checks.blocking_problems`): those are taken as read, not read a second time;
    ``logs`` the record logs it read and verified, by kind.
    """
    headers = list_headers(paths)
    lanes = {h["protocol_id"]: h.get("lane") for h in headers}
    texts = collect_texts(paths, headers)

    measurements: list[dict] = []
    runs: list[RunInfo] = []
    open_folders: list[tuple[Path, RunInfo]] = []
    # Open runs are published once complete; a run folder the store cannot read refuses the build, a held one
    # (review) as well: the archive's state is unknown while any record of it cannot be read.
    held = store.held_scan(paths).refuse(PublishError)
    complete = store.archive_scan(paths).refuse(PublishError).complete
    if checked is None:     # outside a build: the runs an entry still vouches for are hashed, not parsed
        checked = verified.known_reads(paths, [found.folder for found in complete],
                                       {pid for pid, lane in lanes.items() if lane == "open"})
    _refuse_pending_marks([*held.runs(), *complete])
    for found in complete:
        folder, run = found.folder, found.record
        try:
            m = _check_measurement(store.read_measurement(folder), folder)
        except RecordFileError as exc:
            raise PublishError(str(exc)) from None
        m.update(beside_fields(run, str(store.run_file(folder))))   # the server builds, from the run record
        current_lane = lanes.get(m["protocol_id"], m.get("lane"))
        if "sealed" in (current_lane, m.get("lane")):
            continue
        measurements.append(m)
        info = RunInfo(run, 0, current_lane, m)
        runs.append(info)
        if current_lane == "open":
            open_folders.append((folder, info))
        else:
            known = checked.get(folder.name)
            info.n_trials = known[2] if known else _count_trials(store.trial_log(folder))
    open_runs: list[OpenRun] = []
    cells: dict[str, dict] = {}
    for (folder, info), (lines, labels, cells_of_run) in zip(open_folders,
                                                             _read_open_runs([f for f, _ in open_folders], checked)):
        info.n_trials = len(lines)
        open_runs.append(OpenRun(info.measurement["run_id"], info.measurement["run_date"], lines, labels))
        if info.measurement.get("on_curve"):
            cells[info.measurement["run_id"]] = cells_of_run
    for info in runs:
        run_id = info.measurement["run_id"]
        if info.measurement.get("on_curve") and run_id not in cells and run_id in checked:
            cells[run_id] = checked[run_id][1]
        elif info.measurement.get("on_curve") and run_id not in cells:
            try:
                cells[run_id] = modal_cells_of_log(store.trial_log(paths.run_dir(run_id)))
            except (OSError, ValueError):
                pass  # the changes row leaves its cell counts empty rather than guessing them

    measurements.sort(key=measurement_sort_key)
    runs.sort(key=lambda r: measurement_sort_key(r.measurement))
    open_runs.sort(key=lambda r: (r.run_date, r.run_id))
    return Inputs(measurements, runs, open_runs, headers, texts, read_logs(paths, logs), cells)
