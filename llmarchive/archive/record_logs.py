"""Bookkeeping records: one hash-chained log per kind under ``private/records/``.

Runs keep their own folders (``experiments/<run_id>/``).  Everything else the
archive observes day to day — instrument checks, coverage, model-id
sightings, succession events, revalidations, comparison points — is a record
appended to ``private/records/<kind>.jsonl``.  Each log is append-only and
hash-chained (:mod:`measure.chain`), so a record cannot be quietly edited
after the fact, and publication reads these logs and nothing hand-written.

:data:`KINDS` (the kinds below, and each daily job's record kind from
:mod:`llmarchive.archive.jobs`) is the contract between the modules that write a kind and the
ones that read it (publication, the Dagster assets): the fields each record
must carry.  Writers may add fields; they may not drop these.  Every record
also gets ``record_type`` (the kind), ``schema_version`` and ``recorded_at``
(UTC, ISO 8601 with ``Z``).

Some kinds are in the closed ``record_type`` list of method §10.3 (``subject_model``,
``generation_bridge``, ``bridge_incomplete``, ``series_closed``,
``needs_review``, ``comparison_point``); the others are internal
bookkeeping kept deliberately outside that list, because adding a value to
it would change ``schema_sha256``.
"""
from datetime import datetime, timedelta
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from measure.errors import ArchiveError
from llmarchive.archive import jobs as job_table
from llmarchive.archive.dates import parse_time, utc_now
from llmarchive.archive.jsonio import (CHECKPOINT_EVERY, append_record, append_records, read_digested, read_jsonl,
                                       verify_log, write_digested)
from llmarchive.archive.log_reads import read_back as _read_back, read_forward as _read_forward, records_after
from measure import chain
from llmarchive.archive.paths import ArchivePaths
from measure.schema import GAP_CAUSES, SCHEMA_VERSION

_BOOKKEEPING: dict[str, tuple[str, ...]] = {
    # One row per scheduled job and period: it ran, or exactly one gap cause.
    # status "ran" → cause None and run_id set; status "gap" → cause ∈ GAP_CAUSES.
    "coverage": ("period", "job", "series", "protocol_id", "status", "cause", "run_id", "detail"),
    # Anything that makes the day's measurements instrument_suspect.
    "instrument_alarm": ("date", "source", "reason"),
    # A model id seen on the provider's models list.
    "model_observed": ("date", "provider", "model_id", "in_family"),
    # Work that was due and skipped, with why (budget ladder, pre-registration guard, …).
    "skip": ("date", "job", "protocol_id", "reason", "cause"),
    # Succession (method §4.3).
    "subject_model": ("date", "model_family", "model_id", "previous_model_id", "declared_by"),
    "generation_bridge": ("date", "model_family", "old_model_id", "new_model_id", "protocol_ids", "status"),
    "needs_review": ("date", "model_family", "model_id", "reason"),
    "series_closed": ("date", "model_family", "model_id", "reason"),
    "bridge_incomplete": ("date", "model_family", "old_model_id", "new_model_id", "reason"),
    # A third party's run on an open panel, recomputed by our own estimator.
    "comparison_point": ("date", "protocol_id", "model_id", "submitted_by", "measurement"),
    # Added with the instrument and succession (issue 6); bookkeeping outside that closed list.
    # The model watch's bridge alarm, repeated once a day until the old and the new
    # model's bridge runs exist; "notified" says whether the webhook took it.
    "bridge_alarm": ("date", "model_family", "old_model_id", "new_model_id", "message", "notified"),
    # A lease-on-life check that found the archive in any state but "alive" (method §8).
    "lease": ("date", "state", "hours_since_cycle", "days_since_run", "reason"),
    # A person's acknowledgement of a latched instrument alarm (method §7.4): what changed and why.
    "core_change": ("date", "core_change", "reviewer", "acknowledged_alarms", "acknowledged_through"),
    # A dated cut of the budget ladder's order (method §9.2), written by llmarchive.budget.
    "budget_cut": ("date", "month", "from_level", "to_level", "step", "reason"),
}


class _Kinds(Mapping[str, tuple[str, ...]]):
    """``KINDS`` as the job table has it now: the bookkeeping kinds here, then each daily job's record kind.

    The daily checks' kinds and fields (the runtime and subject
    fingerprints, the guard rotation, revalidation) are declared once, in
    their job's row of :mod:`llmarchive.archive.jobs`; this view reads that
    table at each look-up, so a job registered later (a test's toy check)
    has its kind here as well.
    """

    def _now(self) -> dict[str, tuple[str, ...]]:
        return {**_BOOKKEEPING, **job_table.record_fields()}

    def __getitem__(self, kind: str) -> tuple[str, ...]:
        return self._now()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())


KINDS: Mapping[str, tuple[str, ...]] = _Kinds()


class RecordError(ArchiveError, ValueError):
    """A record that does not carry what its kind requires."""


def _prepare(kind: str, fields: Mapping[str, Any], recorded_at: Optional[str]) -> dict:
    """Check one record of ``kind`` against :data:`KINDS` and stamp it."""
    if kind not in KINDS:
        raise RecordError(f"unknown record kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}")
    missing = [name for name in KINDS[kind] if name not in fields]
    if missing:
        raise RecordError(f"a {kind} record needs {', '.join(missing)}")
    if kind == "coverage":
        status, cause = fields["status"], fields["cause"]
        if status == "ran" and cause is not None:
            raise RecordError("a coverage row that ran carries no cause")
        if status == "gap" and cause not in GAP_CAUSES:
            raise RecordError(f"a coverage gap needs exactly one cause from {GAP_CAUSES}, got {cause!r}")
        if status not in ("ran", "gap"):
            raise RecordError(f"coverage status must be 'ran' or 'gap', got {status!r}")
    record = {"record_type": kind, "schema_version": SCHEMA_VERSION, "recorded_at": recorded_at or utc_now()}
    record.update(fields)
    if kind == "coverage" and fields["status"] == "gap":
        record["record_type"] = "coverage_gap"  # the closed list's name for a gap row (method §10.3)
    return record


def append(paths: ArchivePaths, kind: str, fields: Mapping[str, Any], recorded_at: Optional[str] = None) -> dict:
    """Validate and append one record of ``kind``; return it as written."""
    return append_record(paths.record_log(kind), _prepare(kind, fields, recorded_at))


def append_many(paths: ArchivePaths, kind: str, rows: Sequence[Mapping[str, Any]],
                recorded_at: Optional[str] = None) -> list[dict]:
    """Validate and append several records of ``kind`` as one locked, fsynced write.

    Every row is checked before anything is written, so a bad row writes
    none of the batch (a month's coverage is all there or not at all).  One
    lock, one write and one fsync for the whole batch: a month's coverage
    rows cost about as much as one row.  Returns the records as written.
    """
    prepared = [_prepare(kind, fields, recorded_at) for fields in rows]
    return append_records(paths.record_log(kind), prepared)


def verify(paths: ArchivePaths, kind: str) -> int:
    """Verify the whole chain of ``kind``'s log on demand; return its number of records.

    Appends read only the log's last line, so a break in the middle of a log
    is found here (and whenever a :class:`~llmarchive.archive.jsonio.ChainedLog` is
    opened), not by the next append.
    """
    if kind not in KINDS:
        raise RecordError(f"unknown record kind {kind!r}")
    return verify_log(paths.record_log(kind))


def read(paths: ArchivePaths, kind: str) -> list[dict]:
    """Every record of ``kind``, oldest first (empty when none was written)."""
    if kind not in KINDS:
        raise RecordError(f"unknown record kind {kind!r}")
    return read_jsonl(paths.record_log(kind))


# --------------------------------------------------------------------------
# reads from the end: what a caller asks of a log's last days, at the cost of its last days
# --------------------------------------------------------------------------
#
# Which field is in order: ``recorded_at`` is stamped by the appender (utc_now) when the record is made, just
# before the log's lock is taken, so along a log it does not decrease (to the second) unless the machine's
# clock is set back.  ``date`` is the day a record is about, passed in by its caller; a late or early record
# (a catch-up, a test's chosen day) breaks its order, so no read stops on ``date`` alone.

Match = Callable[[dict], bool]
DATED_SLACK = timedelta(days=1)
"""How far before a day a record about that day may have been stamped (a day's job started just before midnight)."""


def read_back(paths: ArchivePaths, kind: str) -> Iterator[dict]:
    """The records of ``kind`` newest first, read lazily from the log's end, each checked against its own hash and
    its link to the next (:func:`llmarchive.archive.log_reads.read_back`)."""
    if kind not in KINDS:
        raise RecordError(f"unknown record kind {kind!r}")
    return _read_back(paths.record_log(kind))


def read_forward(paths: ArchivePaths, kind: str) -> Iterator[dict]:
    """The records of ``kind`` oldest first, read lazily from the log's start, each checked against its own hash
    and its link to the one before (:func:`llmarchive.archive.log_reads.read_forward`)."""
    if kind not in KINDS:
        raise RecordError(f"unknown record kind {kind!r}")
    return _read_forward(paths.record_log(kind))


def latest(paths: ArchivePaths, kind: str, match: Optional[Match] = None) -> Optional[dict]:
    """The newest record of ``kind`` (that ``match`` accepts), or None; reads back only as far as that record."""
    return next((r for r in read_back(paths, kind) if match is None or match(r)), None)


def newest_time(paths: ArchivePaths, kind: str) -> Optional[datetime]:
    """When the newest record of ``kind`` was written (its ``recorded_at``, the last readable one), or None."""
    for record in read_back(paths, kind):
        at = parse_time(record.get("recorded_at"))
        if at is not None:
            return at
    return None


def since(paths: ArchivePaths, kind: str, cutoff: str) -> list[dict]:
    """The records of ``kind`` written at or after ``cutoff`` (an ISO date or time, UTC), oldest first.

    Reading back stops at the first record stamped before ``cutoff``:
    ``recorded_at`` is the field in order (see above).
    """
    found = []
    for record in read_back(paths, kind):
        at = record.get("recorded_at")
        if isinstance(at, str) and at < cutoff:
            break
        found.append(record)
    return found[::-1]


def dated(paths: ArchivePaths, kind: str, day: str, match: Optional[Match] = None) -> list[dict]:
    """The records of ``kind`` about ``day`` (their ``date``), that ``match`` accepts, oldest first.

    Reading back stops at the first record both dated before ``day`` and
    stamped before the day before it (:data:`DATED_SLACK`): every record
    written after that one was stamped later, so a record about ``day``
    older than it would have been written more than a day before ``day``
    began — which a record about a day does not do.
    """
    start = parse_time(f"{day}T00:00:00Z")
    horizon = (start - DATED_SLACK).strftime("%Y-%m-%d") if start is not None else ""   # no day: read it all
    found = []
    for record in read_back(paths, kind):
        when = str(record.get("date"))
        if when == day:
            if match is None or match(record):
                found.append(record)
        elif when < day and str(record.get("recorded_at", "")) < horizon:
            break
    return found[::-1]


def distinct(paths: ArchivePaths, kind: str, fields: tuple[str, ...]) -> set[tuple]:
    """Every combination of ``fields`` any record of ``kind`` ever carried (scalar fields only).

    Why: "every id ever seen" needs the whole log; the set is kept beside
    it (``<kind>.jsonl.distinct-<fields>``, digested) with the offset and
    hash it covers, and only what was appended since is read and folded —
    from the seam, checked as a checkpoint's is.  A summary that is missing,
    damaged or does not meet its log is folded again from the whole log.
    """
    if kind not in KINDS:
        raise RecordError(f"unknown record kind {kind!r}")
    log = paths.record_log(kind)
    where = log.with_name(f"{log.name}.distinct-{'+'.join(fields)}")
    saved = read_digested(where)
    offset, last, values = 0, chain.GENESIS, set()
    if saved is not None and saved.get("fields") == list(fields):
        try:
            offset, last, values = int(saved["offset"]), str(saved["last_sha256"]), {tuple(v) for v in saved["values"]}
        except (KeyError, TypeError, ValueError):
            offset, last, values = 0, chain.GENESIS, set()
    after = records_after(log, offset, last)
    if after is None:
        offset, last, values = 0, chain.GENESIS, set()
        after = records_after(log, 0, chain.GENESIS)
    found, size, end = after or ([], 0, chain.GENESIS)
    values.update(tuple(r.get(f) for f in fields) for r in found)
    if size - offset >= CHECKPOINT_EVERY or (saved is None and size > 0):
        try:
            write_digested(where, {"fields": list(fields), "offset": size, "last_sha256": end,
                                   "values": [list(v) for v in sorted(values, key=repr)]})
        except OSError:
            pass      # a summary is only a shortcut
    return values
