"""The archive's jobs, one name each (method §8, §12).

Every scheduled job is named by its key in ``cadence.yaml`` — the file that
says how often it is due — and by nothing else: coverage accounts for it
under that name, the budget charges it under that name, a skip it records
carries that name, and the Dagster job that runs it says so
(``assets/jobs.py``).  Two more jobs spend money without a schedule: a
``manual`` run a person starts, and a generation ``bridge`` the model watch
opens.  The model watch records skips as ``model_watch``.

Older records and ledgers used other names for some jobs (the sweep was
``sweep``; the guard rotation's and revalidation's outputs are logs called
``guard_rotation`` and ``revalidation``).  Those names stay readable:
:func:`canonical` maps a stored name to the job's one name, and
:func:`stored_names` lists every name a job's records may carry.
"""
from dataclasses import dataclass
from typing import Optional

from measure.errors import ArchiveError


class UnknownJob(ArchiveError, ValueError):
    """A job name that is neither a job of the table nor an older name of one."""


@dataclass(frozen=True)
class JobSpec:
    """One job: its name, what it costs and from which pool, and the names older records gave it."""

    name: str
    scheduled: bool                      # its name is a cadence.yaml key (schedule or, for revalidation, count)
    category: Optional[str] = None       # budget category of its calls; None: it makes no paid call
    pool: Optional[str] = None           # the budget pool it is paid from (subject_fingerprint: then heartbeat)
    aliases: tuple[str, ...] = ()        # older names still found in stored records and ledgers


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

JOBS: tuple[JobSpec, ...] = (
    JobSpec(FULL_SWEEP, True, "scenario", "general", aliases=("sweep",)),
    JobSpec(SUBJECT_FINGERPRINT, True, "fingerprint", "general"),
    JobSpec(RUNTIME_FINGERPRINT, True),
    JobSpec(GUARD_MARGIN_ROTATION, True, aliases=("guard_rotation",)),
    JobSpec(REVALIDATION_DAILY, True, aliases=("revalidation",)),
    JobSpec(OPEN_WEIGHTS_SERIES, True),
    JobSpec(COVERAGE_PUBLISH, True),
    JobSpec(MANUAL, False, "scenario", "general"),
    JobSpec(BRIDGE, False, "scenario", "bridge"),
    JobSpec(MODEL_WATCH, False),
)
BY_NAME = {job.name: job for job in JOBS}
SCHEDULED = tuple(job.name for job in JOBS if job.scheduled)
PAID = tuple(job.name for job in JOBS if job.category is not None)
_ALIASES = {alias: job.name for job in JOBS for alias in job.aliases}


def canonical(name: str) -> str:
    """The job's one name for ``name`` (itself, or the job an older name stood for)."""
    if name in BY_NAME:
        return name
    if name in _ALIASES:
        return _ALIASES[name]
    raise UnknownJob(f"unknown job {name!r}; the jobs are {', '.join(BY_NAME)}")


def spec(name: str) -> JobSpec:
    """The table's entry for ``name`` (an older name is accepted)."""
    return BY_NAME[canonical(name)]


def stored_names(name: str) -> tuple[str, ...]:
    """Every name a record of this job may carry: its one name first, then the older ones."""
    job = spec(name)
    return (job.name,) + job.aliases
