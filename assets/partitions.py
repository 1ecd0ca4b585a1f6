"""Partitions: months × protocols for the commercial series, generations for
the open-weights series, days for the instrument, months for coverage, one
per protocol, one per pre-registration manifest.

**Where time starts.**  The day and month partitions start at this home's
real start — the date of its first admission (:func:`llmarchive.protocols.admissions.first_admission`),
read when the definitions load — so the UI never offers a month or a day
from before the archive existed, when nothing could have run.  A home with
no admission yet starts at :data:`DESIGN_START`, the date the design gives.
The home is the one the definitions serve: ``$LLMARCHIVE_HOME``, else
``./var`` (:meth:`llmarchive.archive.paths.ArchivePaths.from_env`).  A code location
reloaded after the first admission picks the new start up.
"""
import warnings
from typing import Optional

from dagster import (
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MonthlyPartitionsDefinition,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
)

from llmarchive.protocols import first_admission
from llmarchive.archive import ArchivePaths
from measure.errors import ArchiveError
from panels.build import all_protocol_ids

DESIGN_START = "2026-09-01"


def archive_start(paths: Optional[ArchivePaths] = None) -> str:
    """The first day partition of ``paths`` (default: the environment's home): its first admission, else the design's
    start."""
    paths = paths or ArchivePaths.from_env()
    try:
        return first_admission(paths) or DESIGN_START
    except (ArchiveError, OSError, ValueError) as exc:
        # An admissions log that cannot be read must not keep the UI from loading: it starts at the design's
        # date and says why (every command that reads the log refuses it with the same reason).
        warnings.warn(f"the partitions start at {DESIGN_START}: the admissions log cannot be read ({exc})",
                      stacklevel=2)
        return DESIGN_START


ARCHIVE_START = archive_start()
MONTH_START = ARCHIVE_START[:8] + "01"

# end_offset=1: the partition for the current month/day exists while it is
# running, because the commercial month and the instrument's day are measured
# *during* that period, not after it closes.  Months start on the 1st of the
# start's month (a month partition is the whole month).
months = MonthlyPartitionsDefinition(start_date=MONTH_START, end_offset=1)
days = DailyPartitionsDefinition(start_date=ARCHIVE_START, end_offset=1)
protocol_ids = StaticPartitionsDefinition(all_protocol_ids())
commercial = MultiPartitionsDefinition({"month": months, "protocol": protocol_ids})
# One partition per generation: a commercial model id whose arrival the model
# watch saw, or ``<reference model>-<sha12>`` for the reference model alone.
GENERATIONS = "generation"
generations = DynamicPartitionsDefinition(name=GENERATIONS)
# One partition per pre-registration manifest, keyed by the date in its file name
# (``preregistration_<key>.json``: ``2026-12-02``, or ``2026-12-02-2`` for a second that day).
MANIFESTS = "preregistration_manifest"
manifests = DynamicPartitionsDefinition(name=MANIFESTS)
