"""Coverage's reads of the run index: the open window's runs, every run's day, the unreadable folders.

Coverage of a month looks at the runs of its open window and, for its
look-back, only at each complete run's day; reading every record (or
signing every folder, as :func:`llmarchive.archive.store.scan` does) would
cost the archive's age.  These ask the run index for exactly that, checked
as the lease's run clock is (:func:`llmarchive.archive.store.latest_complete_run_date`):
the rows that can still change (open, empty, unreadable folders, folders the
index does not know) are read again, a complete run's row is not.  They
live apart from :mod:`llmarchive.archive.store` only by that module's size.
"""
from llmarchive.archive.paths import ArchivePaths
from llmarchive.archive.store import Unreadable, index_of

COMPLETE = "kind = 'run' AND measured = 1 AND run_date IS NOT NULL"


def complete_runs_since(paths: ArchivePaths, since: str) -> list[dict]:
    """The record of every complete run dated ``since`` (``YYYY-MM-DD``) or later, by run id."""
    found = index_of(paths.experiments).select(f"{COMPLETE} AND substr(run_date, 1, 10) >= ?", (since,))
    return [e.record for e in found if e.record]


def complete_run_days(paths: ArchivePaths) -> list[str]:
    """The date (as recorded) of every complete, dated run, by run id: the index's column, no record parsed."""
    return index_of(paths.experiments).dates(COMPLETE)


def unreadable_runs(paths: ArchivePaths) -> list[Unreadable]:
    """The archive's run folders that cannot be read, by run id."""
    root = paths.experiments
    return [Unreadable(root / e.run_id, str(e.problem)) for e in index_of(root).select("kind = 'unreadable'")]
