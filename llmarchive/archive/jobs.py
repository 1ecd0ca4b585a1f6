"""The archive's jobs, one table that says everything about each (method §8, §12).

Every scheduled job is named by its key in ``cadence.yaml`` — the file that
says how often it is due — and by nothing else: coverage accounts for it
under that name, the budget charges it under that name, a skip it records
carries that name, and the Dagster job that runs it says so
(``assets/jobs.py``).  Two more jobs spend money without a schedule: a
``manual`` run a person starts, and a generation ``bridge`` the model watch
opens.  The model watch records skips as ``model_watch``.

A job that appends one record a day (the fingerprints, the guard rotation,
revalidation) says here which record kind and fields it writes
(:class:`Record`), how coverage judges its day (:class:`Covered`), whether it
is one of the instrument's free self-checks, which Dagster asset runs it,
what the morning status shows of it (:class:`Shown`), and where and how
publication shows its records (:class:`Public`).  ``record_logs.KINDS``, the
coverage rows, ``llmarchive status``, the CLI's listing, the Dagster job of
the daily checks and what ``publish/`` reads and shows of them are built
from these rows, so a new daily self-check is one row here (plus the module
that does the check and its ``cadence.yaml`` line), not an edit in every place
that lists them: a row that names its ``check`` has its Dagster asset built
from the row (``assets/selfchecks.py``); a check that needs more than the
archive (a model, a subject) still writes its own asset.
Rows are read through functions at call time, so a row added with
:func:`register` (a test's toy check) reaches every one of them.

Older records and ledgers used other names for some jobs (the sweep was
``sweep``; the guard rotation's and revalidation's outputs are logs called
``guard_rotation`` and ``revalidation``).  Those names stay readable:
:func:`canonical` maps a stored name to the job's one name, and
:func:`stored_names` lists every name a job's records may carry.
"""
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from llmarchive.archive.paths import ArchivePaths
from measure.errors import ArchiveError

# A daily self-check's work: the archive and the day in, the materialisation's metadata (plain values) out;
# it raises an ArchiveError to fail the day.  A row names it as "module:function" (JobSpec.check).
Check = Callable[[ArchivePaths, str], Mapping[str, Any]]


class UnknownJob(ArchiveError, ValueError):
    """A job name that is neither a job of the table nor an older name of one."""


class JobTableError(ArchiveError, ValueError):
    """A row that would make the table answer twice for one name, kind or asset."""


@dataclass(frozen=True)
class Record:
    """The log a job appends to, and the fields each of its records must carry (``record_logs.KINDS``)."""

    kind: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Covered:
    """How coverage accounts for a job's periods (:mod:`llmarchive.schedule.coverage_conditions`).

    ``series`` is the method §4 track its rows belong to (None: the archive's
    checks on itself).  ``period`` fixes the period when the cadence value is
    a count, not a schedule (revalidation: so many a day).  ``unavailable``
    names the field of its record that says ``unavailable`` when it could not
    run (then the day is ``instrument_unavailable``, not output).  ``detail``
    is the published words of a day that ran, formatted from the day's last
    record (``{count}`` and ``{statuses}`` count all of the day's records);
    ``run_id`` the record field that names the run, if any.  ``opens_archive``:
    whether a record of it can be the archive's first day (revalidation
    recomputes runs that already exist, so it never is).
    """

    series: Optional[str] = None
    per_protocol: bool = False
    needs_provider: bool = False
    commercial: bool = False
    period: Optional[str] = None
    unavailable: Optional[str] = None
    detail: Optional[str] = None
    run_id: Optional[str] = None
    opens_archive: bool = True


@dataclass(frozen=True)
class Shown:
    """What ``llmarchive status`` shows of a job's record of today: its label and the fields it prints."""

    label: str
    fields: tuple[str, ...]


class _Blank(dict):
    """A record's fields for :meth:`Public.status_of`'s format: a field the record lacks reads as None."""

    def __missing__(self, key: str) -> None:
        return None


@dataclass(frozen=True)
class Public:
    """What publication shows of a job's records: ``archive.db``'s instrument table, ``status.json``, the glossary.

    The instrument table has one ``status`` column for every kind, so each row
    says how its records fill it: ``status`` names the record field copied as
    it is (then not repeated in the row's ``detail``), or ``status_words``
    formats it from the record's fields (which stay in ``detail``).
    ``latest`` is what ``status.json``'s ``instrument`` part (and the site's
    lines drawn from it) shows of the newest record; ``glossary`` what the
    kind is, in the site glossary's words.
    """

    latest: tuple[str, ...]
    glossary: str
    status: Optional[str] = None
    status_words: Optional[str] = None

    def status_of(self, record: dict) -> object:
        """The instrument table's ``status`` of one record."""
        if self.status is not None:
            return record.get(self.status)
        return (self.status_words or "").format_map(_Blank(record))

    def apart(self) -> set[str]:
        """The record fields the status column already shows, so the row's ``detail`` leaves them out."""
        return {self.status} if self.status is not None else set()


@dataclass(frozen=True)
class JobSpec:
    """One job: its name, cost and pool, older names, and for a daily check everything that is derived from it."""

    name: str
    scheduled: bool                      # its name is a cadence.yaml key (schedule or, for revalidation, count)
    category: Optional[str] = None       # budget category of its calls; None: it makes no paid call
    pool: Optional[str] = None           # the budget pool it is paid from (subject_fingerprint: then heartbeat)
    aliases: tuple[str, ...] = ()        # older names still found in stored records and ledgers
    record: Optional[Record] = None      # the log it appends one record a day to
    covered: Optional[Covered] = None    # coverage accounts for its periods
    self_check: bool = False             # a free daily check of the instrument (daily_instrument_job runs it)
    asset: Optional[str] = None          # the Dagster asset that runs it (the daily partitioned one)
    shown: Optional[Shown] = None        # a line part of ``llmarchive status``
    published: tuple[str, ...] = ()     # the public files its records reach (publication reads its log)
    public: Optional[Public] = None      # how publication shows its records (needed when published)
    says: str = ""                       # what it is, in a few words (the CLI's listing, Dagster descriptions)
    check: Optional[str] = None          # "module:function", a Check; set, its asset is built from this row
    # (a reference, not the function: the row lives on the ground floor and its check in llmarchive/instrument/)


FULL_SWEEP = "full_sweep"
SUBJECT_FINGERPRINT = "subject_fingerprint"
RUNTIME_FINGERPRINT = "runtime_fingerprint"
GUARD_MARGIN_ROTATION = "guard_margin_rotation"
REVALIDATION_DAILY = "revalidation_daily"
OPEN_WEIGHTS_SERIES = "open_weights_series"
COVERAGE_PUBLISH = "coverage_publish"
MANUAL = "manual"
BRIDGE = "bridge"
MODEL_WATCH = "model_watch"

# Where publication puts a daily check's records: archive.db's instrument table and status.json's instrument part.
_INSTRUMENT_FILES = ("archive.db", "status.json")

_DECLARED: tuple[JobSpec, ...] = (
    JobSpec(FULL_SWEEP, True, "scenario", "general", aliases=("sweep",),
            covered=Covered("commercial", per_protocol=True, needs_provider=True, commercial=True)),
    JobSpec(SUBJECT_FINGERPRINT, True, "fingerprint", "general",
            record=Record("subject_fingerprint",
                          ("date", "subject_model_id", "returned_model_id", "correct", "total", "items")),
            covered=Covered("commercial", needs_provider=True, commercial=True,
                            detail="{subject_model_id}: {correct}/{total} correct"),
            asset="subject_fingerprint", published=_INSTRUMENT_FILES,
            public=Public(("date", "subject_model_id", "correct", "total"),
                          "24 short single-fact questions put to the tracked model every day.",
                          status_words="{correct}/{total}"),
            says="24 single-fact items against the tracked model (paid)"),
    JobSpec(RUNTIME_FINGERPRINT, True,
            record=Record("runtime_fingerprint",
                          ("date", "status", "digest", "expected_digest", "model_sha256", "template_sha256",
                           "llama_cpp_version", "runner_arch", "n_threads", "n_batch", "seed")),
            covered=Covered(unavailable="status", detail="status {status}"),
            self_check=True, asset="runtime_fingerprint", shown=Shown("fingerprint", ("status",)),
            published=_INSTRUMENT_FILES, says="runtime fingerprint",
            public=Public(("date", "status"), "The reference model's daily answers to fixed prompts; any "
                          "difference raises an alarm.", status="status")),
    JobSpec(GUARD_MARGIN_ROTATION, True, aliases=("guard_rotation",),
            record=Record("guard_rotation", ("date", "protocol_id", "run_id", "previous_run_id", "verdict")),
            covered=Covered(unavailable="verdict", detail="{protocol_id}: {verdict}", run_id="run_id"),
            self_check=True, asset="guard_rotation", shown=Shown("rotation", ("protocol_id", "verdict")),
            published=_INSTRUMENT_FILES, says="guard rotation",
            public=Public(("date", "protocol_id", "verdict"), "One guard protocol a day replayed on the reference "
                          "model, compared with that protocol's last accepted baseline.", status="verdict")),
    JobSpec(REVALIDATION_DAILY, True, aliases=("revalidation",),
            record=Record("revalidation", ("date", "run_id", "status", "differences")),
            covered=Covered(period="day", detail="{count} measurement(s) recomputed: {statuses}",
                            opens_archive=False),
            self_check=True, asset="revalidation", says="revalidation"),
    JobSpec(OPEN_WEIGHTS_SERIES, True),
    JobSpec(COVERAGE_PUBLISH, True),
    JobSpec(MANUAL, False, "scenario", "general"),
    JobSpec(BRIDGE, False, "scenario", "bridge"),
    JobSpec(MODEL_WATCH, False),
)
_TABLE: dict[str, JobSpec] = {}


def register(job: JobSpec) -> Callable[[], None]:
    """Add ``job`` to the table (after the rows already there); returns the function that removes it.

    Refused: a name, an older name, a record kind or an asset another row
    already has — two rows answering for one of them would make every
    derived list ambiguous; a row whose records are published but that
    does not say how (``public``), or has no record to publish; and a row
    with a ``check`` that is no self-check with an asset.
    """
    taken = {n for row in _TABLE.values() for n in (row.name, *row.aliases)}
    if job.name in taken or set(job.aliases) & taken:
        raise JobTableError(f"job {job.name!r} (or an older name of it) is already in the table")
    if job.record and job.record.kind in record_fields():
        raise JobTableError(f"record kind {job.record.kind!r} already belongs to another job")
    if job.asset and job.asset in {row.asset for row in _TABLE.values()}:
        raise JobTableError(f"asset {job.asset!r} already runs another job")
    if job.published and (job.public is None or job.record is None):
        raise JobTableError(f"job {job.name!r} is published but names no record or no Public way to show it")
    if job.check is not None and not (job.self_check and job.asset):
        raise JobTableError(f"job {job.name!r} names a check but is no self-check with an asset to run it")
    _TABLE[job.name] = job

    def unregister() -> None:
        if _TABLE.get(job.name) is job:
            del _TABLE[job.name]
    return unregister


def table() -> tuple[JobSpec, ...]:
    """Every row, in the order declared (coverage lists its jobs in this order)."""
    return tuple(_TABLE.values())


def record_fields() -> dict[str, tuple[str, ...]]:
    """Record kind → required fields, for every job that appends a daily record (part of ``record_logs.KINDS``)."""
    return {job.record.kind: job.record.fields for job in _TABLE.values() if job.record}


def record_kinds(*, self_check: Optional[bool] = None, published: Optional[bool] = None) -> tuple[str, ...]:
    """The daily record kinds of the jobs (the instrument kinds), optionally only self-checks / published ones."""
    return tuple(job.record.kind for job in _TABLE.values() if job.record
                 and (self_check is None or job.self_check == self_check)
                 and (published is None or bool(job.published) == published))


def covered() -> tuple[JobSpec, ...]:
    """The jobs coverage accounts for, in table order."""
    return tuple(job for job in _TABLE.values() if job.covered)


def self_checks() -> tuple[JobSpec, ...]:
    """The instrument's free daily self-checks: what ``daily_instrument_job`` runs."""
    return tuple(job for job in _TABLE.values() if job.self_check)


def shown() -> tuple[JobSpec, ...]:
    """The jobs whose record of today ``llmarchive status`` shows, in the order shown."""
    return tuple(job for job in _TABLE.values() if job.shown and job.record)


def assets(*, self_check: Optional[bool] = None, published: Optional[bool] = None) -> tuple[str, ...]:
    """The Dagster assets of the jobs that have one (optionally only self-checks / published ones)."""
    return tuple(job.asset for job in _TABLE.values() if job.asset
                 and (self_check is None or job.self_check == self_check)
                 and (published is None or bool(job.published) == published))


def record_kind(name: str) -> str:
    """The record kind a job (by any of its names) appends to."""
    job = spec(name)
    if job.record is None:
        raise UnknownJob(f"job {job.name} appends no daily record")
    return job.record.kind


def canonical(name: str) -> str:
    """The job's one name for ``name`` (itself, or the job an older name stood for)."""
    if name in _TABLE:
        return name
    for job in _TABLE.values():
        if name in job.aliases:
            return job.name
    raise UnknownJob(f"unknown job {name!r}; the jobs are {', '.join(_TABLE)}")


def spec(name: str) -> JobSpec:
    """The table's entry for ``name`` (an older name is accepted)."""
    return _TABLE[canonical(name)]


def stored_names(name: str) -> tuple[str, ...]:
    """Every name a record of this job may carry: its one name first, then the older ones."""
    job = spec(name)
    return (job.name,) + job.aliases


for _row in _DECLARED:
    register(_row)


def __getattr__(name: str) -> Any:
    """``JOBS``, ``BY_NAME``, ``SCHEDULED`` and ``PAID``: views of the table as it is now, not as it was at import."""
    if name == "JOBS":
        return table()
    if name == "BY_NAME":
        return dict(_TABLE)
    if name == "SCHEDULED":
        return tuple(job.name for job in _TABLE.values() if job.scheduled)
    if name == "PAID":
        return tuple(job.name for job in _TABLE.values() if job.category is not None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
