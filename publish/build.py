"""The publication pipeline: every public file, generated from the archive's records.

One entry point, :func:`publish_all` (re-exported by :mod:`publish`).  It reads the records once
(:mod:`publish.sources`), renders every file into a staging folder beside
``public/``, runs the wording leak guard (:mod:`publish.leak`) and the
publication guard (:mod:`publish.guard`: no money of the owner's, no path
of this machine, no credential) over every byte of it in one pass, and only
then swaps the staging folder into place.  A refused build leaves
``public/`` exactly as it was.

What it writes into ``public/``::

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
from pathlib import Path
from typing import Optional

from llmarchive.archive.dates import DateError, parse_timestamp
from llmarchive.archive.jsonio import fsync_dir
from llmarchive.archive.locks import lock_file
from llmarchive.archive.paths import ArchivePaths
from llmarchive.archive.record_logs import utc_now
from measure.canonical import sha256_hex
from publish import changes, checks, croissant, csvs, database, open_lane, panels, site, sources, status
from publish.boundary import leak_guard, publication_guard
from publish.datasette_meta import DB_FILE
from publish.errors import PublishError


def _pretty(value) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _write(root: Path, name: str, data: bytes) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


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

    The blocking checks of :mod:`publish.checks` run first (every hash
    chain verifies and every complete run's trial log is the one its record
    describes, no flagged measurement on the curve, every coverage gap has
    its cause and no period that ended as of ``build_time`` is left without
    one), so every entry point publishes under the same rule.

    Raises :class:`PublishError` (bad input, naming the file; a blocking
    check that fails; or another build of the same home running), :class:`LeakError` (guarded wording
    found; nothing written), :class:`GuardError` (the owner's money, a path of this machine or a
    credential found; nothing written) or :class:`SiteError` (a site rule refused).
    """
    # The one timestamp parser (llmarchive.archive.dates): the right form and a real instant, before anything is written.
    try:
        build_time = utc_now() if build_time is None else parse_timestamp(build_time, "the build time (--build-time)")
    except DateError as exc:
        raise PublishError(str(exc)) from None
    paths.ensure()
    with _publish_lock(paths):
        return _build(paths, build_time)


def _build(paths: ArchivePaths, build_time: str) -> dict:
    blocking = checks.blocking_problems(paths, build_time)
    if blocking:
        raise PublishError(checks.refusal(blocking))
    inputs = sources.gather(paths)
    guard = leak_guard(inputs)

    files: dict[str, bytes] = {}
    files[csvs.STABILITY_FILE] = csvs.stability_csv(inputs.measurements)
    files[csvs.OUTCOMES_FILE] = csvs.outcomes_csv(inputs.measurements)
    coverage_rows = csvs.coverage_rows(inputs.by_kind("coverage"))
    files[csvs.COVERAGE_FILE] = csvs.coverage_csv(coverage_rows)
    files[csvs.CHANGES_FILE] = csvs.changes_csv(changes.change_rows(inputs.measurements, inputs.cells))
    files.update(open_lane.files(inputs.open_runs))
    panel_files = panels.files(paths, inputs.headers)
    files.update(panel_files)
    boundary = publication_guard(paths, inputs, panel_files)
    latest = max((m["run_date"] for m in inputs.measurements), default=None)
    files["croissant.json"] = _pretty(croissant.build(files, inputs.open_runs, latest, build_time[:10]))

    staging = paths.home / f".publish-staging-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        database.build(staging / DB_FILE, inputs)
        files[DB_FILE] = (staging / DB_FILE).read_bytes()
        data_files = [(name, len(data), sha256_hex(data)) for name, data in sorted(files.items())]
        files["index.html"] = site.render(site.SiteContext(inputs, coverage_rows, build_time, data_files)).encode("utf-8")
        files[status.STATUS_FILE] = _pretty(status.status(inputs, coverage_rows, build_time))
        manifest = status.manifest(files, inputs, build_time)
        files[status.MANIFEST_FILE] = _pretty(manifest)
        for name, data in files.items():
            if name != DB_FILE:
                _write(staging, name, data)
        guard.check_tree(staging, also=boundary)     # the wording leak guard and the publication guard, one pass
        _swap(staging, paths.public)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return manifest
