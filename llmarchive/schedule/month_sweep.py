"""The monthly sweep as one use case: the producer's pass, then the auditor's rows for that month.

:func:`llmarchive.schedule.sweep.sweep` produces runs and skips and nothing else; it
knows nothing of coverage, so the producers of runs never import the
auditor (method §10: coverage judges what the producers left, it is not
their index).  A whole-month pass — ``llmarchive sweep`` and every test of
the month's story — then wants the month's ``full_sweep`` coverage rows
written at once, so a gap has its cause the moment the pass ends instead of
at the next coverage job.  This module is that composition, the one
function every whole-month entry point calls.  A pass over chosen protocols
(``only``, one Dagster partition) writes no rows: the monthly coverage job
sees every protocol at once.
"""
from typing import Any

from llmarchive.schedule.coverage import compute, write_rows
from llmarchive.archive import ArchivePaths
from llmarchive.succession import SubjectModels
from llmarchive.schedule.sweep import SweepOutcome, sweep


def sweep_month(paths: ArchivePaths, day: str, config: SubjectModels, **options: Any) -> SweepOutcome:
    """Run :func:`~llmarchive.schedule.sweep.sweep` for ``day``'s month, then record that month's ``full_sweep`` rows.

    ``options`` are :func:`~llmarchive.schedule.sweep.sweep`'s keyword arguments.  A
    sweep that raises (a missing key, a malformed URL: our own mistake) has
    recorded nothing, and no coverage row is written for it either.
    """
    out = sweep(paths, day, config, **options)
    if options.get("only") is None:
        rows = compute(paths, day, jobs=("full_sweep",), periods=(day[:7],)).rows
        out.coverage_rows = write_rows(paths, rows)
    return out
