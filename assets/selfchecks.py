"""The daily self-checks' assets: written by hand in :mod:`assets.instrument`, or built from their job table row.

A self-check whose row names its ``check``
(:class:`llmarchive.archive.jobs.JobSpec`) and has no hand-written asset of
its name gets one built here, with the conventions of the hand-written ones:
partitioned by day in group ``instrument``, refusing a day that is not today,
the archive from :class:`~assets.resources.ArchiveResource`, described by the
row's ``says``, a ``Failure`` whose description is the check's error, and the
mapping the check returns as the materialisation's metadata.  A check that
needs more than the archive (a model, a subject) writes its own asset in
:mod:`assets.instrument`.
"""
import importlib

from dagster import AssetExecutionContext, AssetsDefinition, Failure, MaterializeResult, asset

from assets import instrument
from assets.partitions import days
from assets.resources import ArchiveResource
from llmarchive.archive import jobs as job_table
from measure.errors import ArchiveError

# asset name → (the row it was built from, the asset): the same row gives the same asset each time it is asked for.
_BUILT: dict[str, tuple[job_table.JobSpec, AssetsDefinition]] = {}


def build(row: job_table.JobSpec) -> AssetsDefinition:
    """The daily partitioned asset that runs ``row.check`` for today's partition."""
    if row.check is None or not row.asset:
        raise ValueError(f"job {row.name!r} names no check or no asset: there is nothing to build")
    check = resolve(row)

    @asset(partitions_def=days, group_name="instrument", name=row.asset,
           description=f"{row.says[:1].upper()}{row.says[1:]}: a daily self-check of the instrument "
                       f"(job {row.name}), its asset built from its row of the job table.")
    def _self_check(context: AssetExecutionContext, archive: ArchiveResource) -> MaterializeResult:
        day = instrument._today_only(context.partition_key)
        try:
            metadata = check(archive.paths(), day)
        except ArchiveError as exc:
            raise Failure(description=str(exc)) from None
        return MaterializeResult(metadata=dict(metadata))

    return _self_check


def resolve(row: job_table.JobSpec) -> job_table.Check:
    """The function ``row.check`` names (``"module:function"``), imported when the definitions are built."""
    module_name, _, function_name = str(row.check).partition(":")
    try:
        found = getattr(importlib.import_module(module_name), function_name) if function_name else None
    except (ImportError, AttributeError):
        found = None
    if not callable(found):
        raise ValueError(f"job {row.name!r}: its check {row.check!r} names no function (\"module:function\")")
    return found


def built(row: job_table.JobSpec) -> AssetsDefinition:
    """:func:`build` of ``row``, once per row."""
    known = _BUILT.get(row.asset or "")
    if known is None or known[0] is not row:
        known = _BUILT[row.asset or ""] = (row, build(row))
    return known[1]


def daily_assets() -> list[AssetsDefinition]:
    """Every daily job's asset, in table order: its hand-written one, else the one built from its row."""
    found = []
    for row in job_table.table():
        if not row.asset:
            continue
        written = getattr(instrument, row.asset, None)
        if isinstance(written, AssetsDefinition):
            found.append(written)
        elif row.check is not None:
            found.append(built(row))
        else:
            raise ValueError(f"job {row.name!r} names the asset {row.asset!r}, but assets/instrument.py has none "
                             f"and its row names no check to build one from")
    return found
