"""Worker processes for publication's parallel reads, started clean instead of forked from the caller.

Publication runs inside processes that have threads and signal handlers of
their own: Datasette's write thread, Dagster's executor (which catches
SIGTERM and SIGINT during a step so the step can finish).  A worker
*forked* from such a process inherits both: a lock another thread held at
the fork stays held for ever in the child, and a handler that only records
SIGTERM turns ``Pool.terminate`` into a no-op, so the parent joins a worker
that never exits — the hang seen as one pool worker defunct, the other
waiting on the task queue's lock and the parent joining for ever.

So every pool here is a :class:`concurrent.futures.ProcessPoolExecutor` on
the ``forkserver`` start method: one single-threaded server process,
started by exec (not by forking the caller) the first time a pool is
needed, forks each worker from its own clean state — default signal
handlers, no inherited locks — and a worker that dies fails the pool
(``BrokenProcessPool``) instead of leaving its task unanswered.

The server imports the modules of the worker functions once (``PRELOAD``),
so a worker starts without importing them again.  As with every non-fork
start method, worker functions must be importable at module level (they
are pickled by name), and a script that publishes must keep its top-level
work under ``if __name__ == "__main__":`` (the server imports the main
module); ``llmarchive``, ``python -m assets.…`` and Dagster's processes do.
"""
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Optional

START_METHOD = "forkserver"
PRELOAD = ["__main__", "publish.pipeline.checks", "publish.boundary.sealed", "publish.data.sources"]


def pool(workers: int, initializer: Optional[Callable[..., Any]] = None,
         initargs: tuple = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` clean processes (use it as a context manager; it joins them on exit)."""
    context = multiprocessing.get_context(START_METHOD)
    context.set_forkserver_preload(PRELOAD)       # read only when the server first starts
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=initializer,
                               initargs=initargs)
