"""What must hold before (and after) publication, as plain functions.

Each returns a list of problems in words (empty means the check passes).
``llmarchive publish --check`` prints them and the Dagster ``public_archive``
asset reports each as an asset check, so both read the same verdict.

* :func:`chain_problems` — every run's trial log and every bookkeeping log
  verifies as a hash chain from its first record, and every complete run's
  log is the one its record and its measurement describe (the trials they
  counted, the last record ``run.json`` names, no torn line).
* :func:`flagged_on_curve` — no measurement carries a flag and
  ``on_curve: true`` at once (the estimator never writes one; a hand edit
  would).
* :func:`unexplained_gaps` and :func:`unexplained_periods` — every coverage
  row that is a gap names exactly one cause from the closed list, and no
  scheduled period that has ended is left with neither output nor a cause
  (method §10.4), computed as of the build.
* :func:`leak_problems` — no published byte carries guard or sealed wording
  (the sealed-text check, run again over ``public/`` as it stands) nor the owner's
  money, a path of this machine or a credential (the value check,
  :mod:`publish.boundary.values`), and
  ``public/panels/`` holds exactly the open protocols' panel files, each
  verifying against its own hashes and the registry's
  (:func:`publish.data.panels.published_problems`).
"""
import contextlib
import io
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from llmarchive.archive import (ArchivePaths, RecordFileError, log_checkpoints, log_disagreement, measured_trials,
                                parse_time, read_json, record_logs as records, state_of_records, store)
from llmarchive.schedule import coverage
from measure.errors import ArchiveError
from measure import chain, jsonl
from measure.schema import GAP_CAUSES
from publish.data import CheckedRead, list_headers, modal_cells, panels, protocols, sources, verified
from publish.boundary import BoundaryError, sealed_text_check, value_check
from publish.errors import LeakError, PublishError
from publish.pipeline import report
from publish.workers import pool

CHECKS = ("trial_log_chains", "no_flagged_measurement_on_curve", "coverage_gaps_have_causes", "leak_guard")
BLOCKING = CHECKS[:3]


def _run_folders(paths: ArchivePaths) -> list[Path]:
    return store.run_folders(paths.experiments)


def _log_problem(folder: str, known: Optional[dict] = None) -> Optional[str]:
    """What is wrong with a run folder's trial log: a broken chain, or — for a complete run — a log that is
    not the one its record and its measurement describe (:mod:`llmarchive.archive.log_agreement`)."""
    return _check_log((folder, known), keep=False)[0]


def _log_lines(raw: bytes, log: Path) -> list[jsonl.Line]:
    """A log's lines as :func:`llmarchive.archive.jsonio.read_jsonl` reads its records (none for no file)."""
    try:
        return list(jsonl.JsonlReader(jsonl.STRICT, str(log), torn_tail=jsonl.DROP).lines(io.BytesIO(raw)))
    except jsonl.JsonlError as exc:
        raise RecordFileError(str(exc)) from None


Checked = tuple[Optional[str], Optional[CheckedRead], Optional[dict], bool, Optional[str]]
"""One run checked: its problem, what publication keeps of its log, the entry that vouches for it
(:mod:`publish.data.verified`; None when nothing may be kept), whether its log was verified from its
first record in this pass (False: its bytes were the ones an entry vouches for), and its measurement's
problem for :func:`flagged_on_curve` (from the entry, for a measurement whose bytes it vouches for)."""


def _check_log(task: tuple[str, Optional[dict]], open_ids: frozenset = frozenset(), keep: bool = True) -> Checked:
    """:func:`_log_problem`, and for a complete run whose log agrees with its record, what publication keeps
    of the log (:data:`publish.data.sources.CheckedRead`; its trial lines only when its protocol is in
    ``open_ids``), so a build that checks every log need not read one again to publish it.

    ``task`` is the folder and the entry recorded when the run last verified clean: when the three files'
    digests are still the entry's, its verdict and derived rows are taken and the log is not parsed."""
    folder, known = task
    raw, digests = verified.read_folder(Path(folder))
    vouched, read = verified.reuse(known, digests, raw, open_ids)
    if vouched and isinstance(known.get("flags_on_curve"), list):
        return None, (read if keep else None), known, False, _flag_words(Path(folder), known["flags_on_curve"])
    flagged, flags = _measurement_flags(Path(folder))
    if vouched:       # an entry kept without the flags: the verdict stands, and the flags are kept from now on
        return None, (read if keep else None), known if flags is None else {**known, "flags_on_curve": flags}, \
            False, flagged
    problem, read, lines, protocol_id = _verify_log(Path(folder), raw, open_ids)
    if problem:
        return problem, None, None, True, flagged
    kept = None if read is None else (read[0][1] if read[0] is not None else None, read[1], read[2])
    entry = verified.entry(digests, protocol_id, kept, lines, raw)
    if entry is not None and flags is not None:
        entry["flags_on_curve"] = flags
    return None, (read if keep else None), entry, True, flagged


def _flag_words(folder: Path, flags: list) -> Optional[str]:
    return f"{store.measurement_file(folder)}: on_curve with flags {', '.join(flags)}" if flags else None


def _measurement_flags(folder: Path) -> tuple[Optional[str], Optional[list]]:
    """A run's problem for :func:`flagged_on_curve` (None when it has none), and the flags it carries on the
    curve ([] for none; None when there is no readable measurement, so nothing is kept)."""
    file = store.measurement_file(folder)
    if not file.exists():
        return None, None
    try:
        m = read_json(file)
    except RecordFileError as exc:
        return str(exc), None
    flags = list(m["flags"]) if m.get("on_curve") and m.get("flags") else []
    return _flag_words(folder, flags), flags


def _verify_log(folder: Path, raw: bytes, open_ids: frozenset
                ) -> tuple[Optional[str], Optional[CheckedRead], list[jsonl.Line], Optional[str]]:
    """The log read from its first record: its problem, what publication keeps of it, its lines, its protocol."""
    log = store.trial_log(folder)
    try:
        lines = _log_lines(raw, log)
        found = [line.record for line in lines]
        chain.verify(found)
    except (chain.ChainError, RecordFileError) as exc:
        return f"{log}: {exc}", None, [], None
    if not store.is_complete(folder) or not store.has_run(folder):
        return None, None, lines, None   # an open run is never published; an unreadable record is refused by its own check
    try:
        record = read_json(store.run_file(folder))
        measurement = read_json(store.measurement_file(folder))
    except RecordFileError as exc:
        return str(exc), None, lines, None
    if not isinstance(record, dict) or not isinstance(measurement, dict):
        return None, None, lines, None   # not objects: the store's scan and the measurement's own check name them
    problem = log_disagreement(folder, record, measured_trials(measurement), state_of_records(folder, found))
    if problem:
        return problem, None, lines, None
    count = sum(1 for line in lines if verified.TRIAL_MARK in line.raw)
    protocol_id = record.get("protocol_id")
    if protocol_id in open_ids:
        read = sources.open_run_read(lines)
        return None, (read, read[2], count), lines, protocol_id
    cells = modal_cells(r for r in found if r.get("record_type") == "trial")
    return None, (None, cells, count), lines, protocol_id


def chain_problems(paths: ArchivePaths, reads: Optional[dict[str, CheckedRead]] = None) -> list[str]:
    """Every trial log and record log that does not verify from its first record, and every complete run
    whose trial log disagrees with its own record (fewer or more trials, another last record, a torn line).

    Ten years of runs are thousands of logs (460,800 trials in the
    benchmark's archive), so many logs are verified in two worker processes
    — clean ones (:mod:`publish.workers`), never forked from the caller,
    which may be a Dagster step or a server with threads of its own.  A run
    whose three files hash to the digests recorded when it last verified
    clean is not parsed again (:mod:`publish.data.verified`).

    With ``reads`` (a build), what publication keeps of every complete run's
    log is put in it by run id, read by the same pass
    (:func:`publish.data.sources.gather` takes it instead of reading the logs again).
    """
    with _verifying_logs(paths, reads) as problems:
        return problems()


@contextlib.contextmanager
def _verifying_logs(paths: ArchivePaths, reads: Optional[dict[str, CheckedRead]],
                    logs: Optional[dict[str, list[dict]]] = None,
                    flagged: Optional[list[str]] = None) -> Iterator[Callable[[], list[str]]]:
    """:func:`chain_problems` started: the workers verify the trial logs while the caller does other work in
    the body, then calls what this yields for the problems (the record logs are verified in this process
    meanwhile).

    A build (``reads`` given) records the entries of every run that verified clean for the next build and
    names, in :data:`REVERIFIED`, the runs whose logs were read from their first record; with ``logs``, every
    record log that verified is put in it by kind (the build publishes from them without reading them again);
    with ``flagged``, the problems of :func:`flagged_on_curve` found by the same pass are put in it."""
    folders = [str(folder) for folder in _run_folders(paths)]
    known = verified.load(paths)
    tasks = [(folder, known.get(Path(folder).name)) for folder in folders]
    if reads is not None:
        open_ids = frozenset(h["protocol_id"] for h in list_headers(paths) if h.get("lane") == "open")
        task = partial(_check_log, open_ids=open_ids)
    else:
        task = partial(_check_log, keep=False)

    def collect(found: Iterable[Checked]) -> list[str]:
        record_problems = _verify_record_logs(paths, logs)
        found = list(found)
        if reads is not None:
            names = [Path(folder).name for folder in folders]
            reads.update((name, read) for name, (_, read, _, _, _) in zip(names, found) if read is not None)
            REVERIFIED[:] = [name for name, (_, _, _, fresh, _) in zip(names, found) if fresh]
            entries = {name: entry for name, (_, _, entry, _, _) in zip(names, found) if entry is not None}
            if entries != known:
                verified.save(paths, entries)
        if flagged is not None:
            flagged.extend(words for *_, words in found if words)
        return [problem for problem, *_ in found if problem] + record_problems

    if len(folders) < 64:
        yield lambda: collect(task(t) for t in tasks)
        return
    with pool(2) as workers:
        pending = workers.map(task, tasks, chunksize=16)    # every log handed out now; results come in order
        yield lambda: collect(pending)


def _verify_record_logs(paths: ArchivePaths, logs: Optional[dict[str, list[dict]]]) -> list[str]:
    """Every record log that does not verify as a hash chain from its first record; with ``logs``, every one
    that does is read into it by kind (a build publishes them).

    A log whose first bytes are the ones the last build verified (their
    SHA-256, :func:`publish.data.verified.load_logs`) has only the records
    after them chained on: ten years of instrument records were re-hashed
    record by record at every build.  Any other log — new, cut, edited, or
    rewritten and re-chained — is verified from its first record, so the
    verdict is the one a whole verification gives; the owner's deep
    verification (:mod:`llmarchive.archive.log_checkpoints`) is what reports
    a rewritten history.
    """
    known = verified.load_logs(paths)
    kept: dict[str, dict] = {}
    problems = []
    day = datetime.now(timezone.utc).date().isoformat()
    for kind in records.KINDS:
        log = paths.record_log(kind)
        try:
            # One reading: the records published are the bytes verified, even while a job appends to the log.
            raw = log.read_bytes() if log.is_file() else None
            if raw is not None:
                try:
                    kept[kind] = log_checkpoints.verify_log_deep(log, known.get(kind), day, raw)
                except log_checkpoints.LogChanged:
                    if known.get(kind) is None:
                        raise
                    kept[kind] = log_checkpoints.verify_log_deep(log, None, day, raw)
            if logs is not None:
                logs[kind] = [] if raw is None else [line.record for line in _log_lines(raw, log)]
        except (log_checkpoints.LogChanged, RecordFileError, OSError) as exc:
            kept.pop(kind, None)
            problems.append(f"{log}: {exc}")
    if kept != known:
        try:
            verified.save_logs(paths, kept)
        except OSError:
            pass     # only a shortcut: the next build verifies these logs from their first record
    return problems


REVERIFIED: list[str] = []
"""The run ids whose trial logs the last build in this process read and verified from their first record
(every other run's files hashed to the digests of a clean verdict recorded before)."""


def flagged_on_curve(paths: ArchivePaths) -> list[str]:
    """Every measurement that is on the curve with a flag, and every one that cannot be read (a build learns
    the same from its pass over the runs: :func:`blocking_problems`)."""
    return [problem for problem in (_measurement_flags(folder)[0] for folder in _run_folders(paths)) if problem]


def unexplained_gaps(paths: ArchivePaths) -> list[str]:
    problems = []
    try:
        rows = records.read(paths, "coverage")
    except RecordFileError as exc:
        return [str(exc)]
    for row in rows:
        if row.get("status") == "gap" and row.get("cause") not in GAP_CAUSES:
            problems.append(f"coverage {row.get('job')} {row.get('period')} {row.get('protocol_id') or ''}: "
                            f"gap without a cause from the closed list (got {row.get('cause')!r})")
        if row.get("status") not in ("ran", "gap"):
            problems.append(f"coverage {row.get('job')} {row.get('period')}: status {row.get('status')!r}")
    return problems


def unexplained_periods(paths: ArchivePaths, build_time: Optional[str] = None) -> list[str]:
    """Every scheduled period that ended by the build's day with neither output nor an observed condition.

    method §10.4: a period with no cause fails the publication, whether or
    not the coverage job has run since — so the rows are computed here, as
    of the build time (:func:`llmarchive.schedule.coverage.compute`, which writes
    nothing), the same computation the coverage job records.
    """
    when = parse_time(build_time) if build_time else None
    now = when or datetime.now(timezone.utc)
    try:
        # The open window: a sealed month was sealed with every period ran or one cause (method §10.4), its rows
        # are in the log the other check reads; judging ten years of periods again at every build cost seconds.
        result = coverage.compute(paths, now.date().isoformat(), now=now, open_window=True)
    except ArchiveError as exc:
        return [f"coverage cannot be computed: {exc}"]
    return [f"coverage {job} {period}{' ' + pid if pid else ''}: the period ended with no output and no observed "
            "condition — a gap with no cause (`llmarchive coverage` names it; find why the job neither ran nor "
            "recorded a skip)" for job, period, pid in result.unexplained]


def leak_problems(paths: ArchivePaths) -> list[str]:
    if not paths.public.is_dir():
        return []
    problems: list[str] = []
    try:
        inputs = sources.gather(paths)
        # A panel file for a protocol that is not open publishes private wording whatever the check finds.
        problems = panels.published_problems(paths.public, inputs.headers)
        published = {f"panels/{p.name}": p.read_bytes() for p in sorted((paths.public / "panels").glob("*.json"))}
        sealed_text_check(inputs).check_tree(paths.public, workers=1, also=value_check(paths, inputs, published))
    except (LeakError, BoundaryError) as exc:
        return problems + [str(exc)]
    except PublishError as exc:
        return [f"the sealed-text check could not read its inputs: {exc}"]
    return problems


def blocking_problems(paths: ArchivePaths, build_time: Optional[str] = None,
                      reads: Optional[dict[str, CheckedRead]] = None,
                      logs: Optional[dict[str, list[dict]]] = None) -> dict[str, list[str]]:
    """The checks that must pass before anything is published, by name (only the failing ones).

    :func:`publish.publish_all` runs them, so ``llmarchive publish`` and the
    Dagster asset publish under one rule; the fourth check, the sealed-text check
    with the value check, runs inside the build on the staging folder.
    ``build_time`` is the instant coverage is judged at (default: now).  ``reads``: see :func:`chain_problems`;
    ``logs``: every record log that verified, by kind (:func:`_verifying_logs`).
    """
    flagged: list[str] = []
    with _verifying_logs(paths, reads, logs, flagged) as chains:       # the logs are verified by workers meanwhile
        gaps = unexplained_gaps(paths) + unexplained_periods(paths, build_time)
        found = {"trial_log_chains": chains(), "no_flagged_measurement_on_curve": flagged,
                 "coverage_gaps_have_causes": gaps}
    return {name: problems for name, problems in found.items() if problems}


def refusal(blocking: dict[str, list[str]]) -> str:
    """One line naming every failing check and its first problem."""
    return "refusing to publish: " + "; ".join(
        f"{name}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        for name, problems in blocking.items())


def after_build(paths: ArchivePaths) -> tuple[dict[str, list[str]], Optional[str]]:
    """Every check by name, and the build time when they are the verdicts that build recorded.

    The publication job's asset checks follow :func:`publish.publish_all`,
    which ran every one of them moments before: while ``public/`` holds
    exactly the bytes that build published (:func:`publish.pipeline.report.still_holds`),
    its recorded verdicts are the answer and nothing is run again; otherwise
    (a file changed, added or removed since, or no report) every check runs
    now (:func:`run_all`), and the build time is None.
    """
    found = report.still_holds(paths)
    if found is not None and isinstance(found.get("results"), dict) and set(found["results"]) == set(CHECKS):
        return {name: list(found["results"][name]) for name in CHECKS}, str(found.get("build_time"))
    return run_all(paths), None


def run_all(paths: ArchivePaths) -> dict[str, list[str]]:
    """Every check by name (each protocol file read once for all of them)."""
    with protocols.read_once(paths):
        return {
            "trial_log_chains": chain_problems(paths),
            "no_flagged_measurement_on_curve": flagged_on_curve(paths),
            "coverage_gaps_have_causes": unexplained_gaps(paths) + unexplained_periods(paths),
            "leak_guard": leak_problems(paths),
        }
