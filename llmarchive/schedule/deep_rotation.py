"""The daily slice of the deep verification, and the owner's page when it finds a log changed (method §10.1.1).

The verification itself is :mod:`llmarchive.archive.log_checkpoints`; this
step adds the outbox's own log (which that floor does not know) and pages
the owner through the outbox (:mod:`llmarchive.schedule.outbox`); the whole
verification (``llmarchive verify --deep``) also compares the run index
with every run folder read whole (:func:`llmarchive.archive.store.index_disagreements`).  One page
per broken log, keyed by the log and the words of what does not hold, so
the rotation finding the same break again tomorrow records nothing new, and
a different break of the same log is a new page.  It is not a coverage job
and leaves no coverage row: a changed byte in history is the owner's to
look at, not a gap in the measurements.
"""
import hashlib
from datetime import datetime
from typing import Optional

from llmarchive.archive import ArchivePaths, log_checkpoints, store
from llmarchive.schedule import outbox, webhook

KIND = "deep_verify"
INDEX = "the run index"


def page_of(log: str, problem: str) -> outbox.Page:
    """The page for one broken log; its key is stable for as long as the break is the same."""
    digest = hashlib.sha256(problem.encode("utf-8")).hexdigest()[:16]
    return outbox.Page(f"{KIND}|{log}|{digest}", KIND,
                       f"llmarchive deep verification: {problem} — the hot path does not read these bytes; "
                       "see `llmarchive verify --deep` and restore the log from a backup", {"log": log})


def extra_logs(paths: ArchivePaths) -> list:
    """The chained logs of this floor: the outbox's own."""
    return [outbox.log_file(paths)]


def run(paths: ArchivePaths, day: str, url: Optional[str], whole: bool = False,
        now: Optional[datetime] = None) -> tuple[log_checkpoints.DeepOutcome, list[outbox.Page]]:
    """Verify ``day``'s slice (every log with ``whole``), record a page per broken log and send what is owed.

    Without a webhook nothing is recorded (as for every page); the caller
    still sees what is broken, and exits or shows it failed.
    """
    extra = extra_logs(paths)
    found = (log_checkpoints.verify_all(paths, day, extra) if whole
             else log_checkpoints.rotate(paths, day, extra))
    if whole:      # the run index against every folder read whole: an edit that kept a file's size and time
        found.broken += [(INDEX, problem) for problem in store.index_disagreements(paths)]
    pages = [page_of(log, problem) for log, problem in found.broken]
    if not url or not pages:
        return found, []
    webhook.check_url(url)
    new = outbox.record(paths, pages, now=now)
    outbox.send(paths, url, now=now)
    return found, new
