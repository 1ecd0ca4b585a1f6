"""The publication pipeline: every public file, generated from the archive's records.

One entry point, :func:`publish_all` (re-exported by :mod:`publish`).  It reads the records once
(:mod:`publish.data.sources`), renders every file into a staging folder beside
``public/``, runs the sealed-text check (:mod:`publish.boundary.sealed`) and the
value check (:mod:`publish.boundary.values`: no money of the owner's, no path
of this machine, no credential) over every byte of it in one pass, and only
then swaps the staging folder into place.  A refused build leaves
``public/`` exactly as it was.

Where a ten-year build's time goes (``bench/publish_bench.py`` prints the
split, :data:`STAGE_SECONDS`): each run's trial log is read and verified
once, by the blocking check, which hands what publication keeps of it to
:func:`publish.data.sources.gather` — and only when its files' bytes are not the ones a clean verdict
was recorded for (:mod:`publish.data.verified`; the others are hashed, not parsed); a file both
boundary checks found clean in an earlier build is not searched again (:mod:`publish.boundary.memo`);
the asset checks after a build report its verdicts (:mod:`publish.pipeline.report`); the boundary checks search every file's bytes in
worker processes while the CSVs, the database and the site are still
being built (:class:`publish.boundary.sealed.TreeScan`), and one thread writes and fsyncs the files
meanwhile, so no stage waits on another that does not need its result.

What it writes into ``public/`` (the table :data:`publish.data.files.PUBLISHED` declares each file, renders
the ones made from the inputs alone, and a file it does not declare is refused)::

    stability.csv  outcomes.csv  coverage.csv  changes.csv  open-lane/<year>.jsonl
    panels/<protocol_id>.json (every open protocol, in full)  croissant.json  archive.db  index.html  status.json  render_manifest.json

Nothing in ``public/`` is edited by hand; rebuilding from the same records
gives the same bytes except where the build time is written (the site,
``status.json``, ``render_manifest.json`` and the version of ``croissant.json``).
"""
import contextlib
import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Optional

from llmarchive.archive import ArchivePaths, DateError, fsync_dir, lock_file, parse_timestamp, utc_now
from measure.canonical import sha256_hex
from publish.data import croissant, database, files as published, open_lane, panels, protocols, sources, status
from publish.boundary import memo as scan_memo, sealed, sealed_text_check, value_check
from publish.pipeline import checks, report
from publish.site import render as site
from publish.errors import PublishError


STAGE_SECONDS: dict[str, float] = {}
"""Wall seconds per stage of the last build in this process (``bench/publish_bench.py`` prints the split)."""


SKIPPED: list[str] = []
"""The files the last build in this process did not search: their names and bytes, under the same checks, were
found clean by an earlier build (:mod:`publish.boundary.memo`)."""


@contextlib.contextmanager
def _stage(name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        STAGE_SECONDS[name] = STAGE_SECONDS.get(name, 0.0) + time.perf_counter() - started


def _pretty(value) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _write_all(root: Path, files: dict[str, bytes]) -> None:
    """Write every file, then fsync them all: the disk takes the writes together, not one flush at a time."""
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
    for name in files:
        _fsync_file(root / name)
    for folder in sorted({(root / name).parent for name in files}):
        fsync_dir(folder)


def _fsync_file(path: Path) -> None:
    """Make a file's bytes durable (the database is written by sqlite with its own syncing off)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _swap(staging: Path, public: Path) -> None:
    old = public.parent / f".public-old-{os.getpid()}"
    if old.exists():
        shutil.rmtree(old)
    if public.exists():
        os.replace(public, old)
    os.replace(staging, public)
    fsync_dir(public.parent)
    if old.exists():
        shutil.rmtree(old)


def _publish_lock(paths: ArchivePaths) -> contextlib.AbstractContextManager:
    """One build at a time per archive home (the CLI and the Dagster asset may both be asked)."""
    return lock_file(paths.home / ".publish.lock",
                     busy=PublishError(f"another publication of {paths.home} is running; try again when it ends"))


def publish_all(paths: ArchivePaths, build_time: Optional[str] = None) -> dict:
    """Build every public file from the records and move them into ``public/``; return the render manifest.

    The blocking checks of :mod:`publish.pipeline.checks` run first (every hash
    chain verifies and every complete run's trial log is the one its record
    describes, no flagged measurement on the curve, every coverage gap has
    its cause and no period that ended as of ``build_time`` is left without
    one), so every entry point publishes under the same rule.

    Raises :class:`PublishError` (bad input, naming the file; a blocking
    check that fails; or another build of the same home running), :class:`LeakError` (private wording
    found; nothing written), :class:`BoundaryError` (the owner's money, a path of this machine or a
    credential found; nothing written) or :class:`SiteError` (a site rule refused).
    """
    # The one timestamp parser (llmarchive.archive.dates): the right form and a real instant, before anything is written.
    try:
        build_time = utc_now() if build_time is None else parse_timestamp(build_time, "the build time (--build-time)")
    except DateError as exc:
        raise PublishError(str(exc)) from None
    paths.ensure()
    with _publish_lock(paths), protocols.read_once(paths):    # each protocol file read and hash-checked once
        return _build(paths, build_time)


def _build(paths: ArchivePaths, build_time: str) -> dict:
    STAGE_SECONDS.clear()
    checks.REVERIFIED.clear()
    SKIPPED.clear()
    reads: dict = {}      # every complete run's log, read and verified once by the check, published from
    logs: dict = {}       # and every record log, by kind
    with _stage("checks"):
        blocking = checks.blocking_problems(paths, build_time, reads, logs)
    if blocking:
        raise PublishError(checks.refusal(blocking))
    with _stage("gather"):
        inputs = sources.gather(paths, reads, logs)
    del reads, logs
    with _stage("panels"):
        panel_files = panels.files(paths, inputs.headers)
    with _stage("boundary checks (build)"):
        sealed_check, values_check = sealed_text_check(inputs), value_check(paths, inputs, panel_files)
        scanned = scan_memo.load(paths, sealed_check, values_check)   # files found clean before, same checks

    staging = paths.home / f".publish-staging-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    # Three things go on at once: the boundary checks search each file in worker processes as soon as it exists
    # (its bytes, before they are written), one thread writes and fsyncs the files, and this one renders the rest.
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="publish-write")
    try:
        with sealed.TreeScan(sealed_check, also=values_check, memo=scanned) as scan:
            files = _data_files(inputs, panel_files, build_time, scan.data)
            writes = [writer.submit(_write_all, staging, dict(files))]
            with _stage("database"):
                db = published.DATABASE.name
                database.build(staging / db, inputs)
                scan.file(staging / db, db)
                writes.append(writer.submit(_fsync_file, staging / db))
                files[db] = (staging / db).read_bytes()
            with _stage("site, status, manifest"):
                manifest, rendered = _site_files(inputs, build_time, files)
            for name, data in rendered.items():
                scan.data(name, data)
            writes.append(writer.submit(_write_all, staging, rendered))
            with _stage("write + fsync (wait)"):
                for done in writes:
                    done.result()
            with _stage("boundary scan (wait)"):
                scan.finish(staging)     # the sealed-text check and the value check, every file
        with _stage("swap"):
            _swap(staging, paths.public)
        # What was just checked, for the publication job's asset checks (publish.pipeline.report): every check
        # passed, or nothing would have been swapped in.
        report.record(paths, build_time, {**files, **rendered}, {name: [] for name in checks.CHECKS},
                      checks.REVERIFIED)
        scan_memo.save(paths, scanned)
        SKIPPED[:] = scanned.skipped
    finally:
        writer.shutdown(wait=True, cancel_futures=True)   # never remove the folder under a write
        if staging.exists():
            shutil.rmtree(staging)
    return manifest


def _data_files(inputs: sources.Inputs, panel_files: dict[str, bytes], build_time: str,
                made: Callable[[str, bytes], None]) -> dict:
    """The data files (CSVs, the open lane, the panels, Croissant) as bytes.

    Each file is handed to ``made`` as soon as it exists, the largest (the
    open lane) first, so the boundary checks search it while the rest is rendered.
    """
    with _stage("open lane"):
        lane = open_lane.files(inputs.open_runs)
    for name, data in {**lane, **panel_files}.items():
        made(name, data)
    with _stage("csvs"):
        # every file the table renders from the inputs alone (publish.data.files): the CSVs, and any file added there
        tables = {entry.name: entry.render(inputs) for entry in published.rendered()}
    for name, data in tables.items():
        made(name, data)
    files = {**tables, **lane, **panel_files}
    with _stage("croissant"):
        latest = max((m["run_date"] for m in inputs.measurements), default=None)
        files[published.CROISSANT.name] = _pretty(croissant.build(files, inputs.open_runs, latest, build_time[:10]))
    made(published.CROISSANT.name, files[published.CROISSANT.name])
    return files


def _site_files(inputs: sources.Inputs, build_time: str, files: dict[str, bytes]) -> tuple[dict, dict[str, bytes]]:
    """The render manifest, and the files that describe the others (the site, status.json, the manifest)."""
    data_files = [(name, len(data), sha256_hex(data)) for name, data in sorted(files.items())]
    site_page = site.render(site.SiteContext(inputs, inputs.coverage_rows, build_time, data_files))
    rendered = {published.SITE.name: site_page.encode("utf-8"),
                published.STATUS.name: _pretty(status.status(inputs, inputs.coverage_rows, build_time))}
    manifest = status.manifest({**files, **rendered}, inputs, build_time)
    rendered[published.MANIFEST.name] = _pretty(manifest)
    # Nothing is published that the table of published files does not declare (so Croissant, the readback and
    # the listing, which read the table, cannot miss a file the pipeline writes).
    unlisted = published.undeclared([*files, *rendered])
    if unlisted:
        raise PublishError(f"not in the table of published files (publish/data/files.py): {', '.join(unlisted)}")
    return manifest, rendered
