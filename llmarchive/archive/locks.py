"""Advisory file locks shared by every writer of the archive.

The archive is written by several processes at once — the CLI, Dagster's
per-step processes, a month's partitions side by side — so each shared file
has a lock file, and the OS releases a lock when its holder dies (no stale
locks after a SIGKILL).  Two uses:

* :func:`file_lock` — *wait* for the lock beside a data file (``x.jsonl`` →
  ``x.jsonl.lock``): appending to a hash-chained log must read the last hash
  and write under one lock, or two records would chain onto the same one;
* :func:`lock_file` with ``busy=`` — *refuse* when another process holds it
  (a run folder, a publication build): doing the same work twice at once is
  a mistake to report, not to queue.
"""
import contextlib
import fcntl
from pathlib import Path
from typing import Iterator, Optional


@contextlib.contextmanager
def lock_file(lock_path: Path, busy: Optional[Exception] = None) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path``; wait for it, or raise ``busy`` at once when given."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        if busy is None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        else:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise busy from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def file_lock(path: Path) -> contextlib.AbstractContextManager:
    """Wait for the exclusive lock beside ``path`` (``path`` + ``.lock``)."""
    return lock_file(path.with_name(path.name + ".lock"))
