"""Record queries: the facts several modules read from the archive, each asked one way.

The record logs (:mod:`llmarchive.archive.record_logs`) and the run folders
(:mod:`llmarchive.archive.store`) hold everything the archive observed; a few
facts are read from them by the sweep, the Dagster assets, the scheduler's
jobs and publication alike.  Each such fact is a function here, so the rule
that reads it — which record wins, what reopens a closed series, which
comparison point is shown — is written once:

* :func:`series_closure` — is the family's series closed now;
* :func:`last_skip` — the month's last recorded skip of a protocol;
* :func:`latest_subject_model`, :func:`declared_model_ids` — the family's
  model in force, and every model a declaration made the family's;
* :func:`replaced_points`, :func:`withdrawn_points`, :func:`shown_points`,
  :func:`latest_point_of_run` — which comparison point of a run is current;
* :func:`records_on` — a log's records of one day;
* :func:`times_recorded` — when records were written (the daily cycle's
  heartbeats, the provider's last answer);
* :func:`sweep_run_folder`, :func:`month_sweep_runs`, :func:`open_sweep_runs` —
  the month's sweep runs.

Publication reads its logs once (``publish.data.sources.Inputs``), so the
comparison-point rules take record lists; the others read the archive.
"""
from datetime import datetime
from pathlib import Path
from typing import Iterable, Optional

from llmarchive.archive import record_logs as records
from llmarchive.archive.dates import parse_time
from llmarchive.archive import store
from llmarchive.archive.paths import ArchivePaths
from llmarchive.archive.run_ids import sweep_run_id


# --------------------------------------------------------------------------
# succession
# --------------------------------------------------------------------------

def series_closure(paths: ArchivePaths, family: str) -> Optional[dict]:
    """The ``series_closed`` record that closes ``family`` now, or None.

    The family's latest closure, unless a ``subject_model`` record of the
    family was written after it (a successor declared since reopens the series).
    """
    closed = [r for r in records.read(paths, "series_closed") if r.get("model_family") == family]
    if not closed:
        return None
    last = closed[-1]
    reopened = any(r.get("model_family") == family and str(r.get("recorded_at")) > str(last.get("recorded_at"))
                   for r in records.read(paths, "subject_model"))
    return None if reopened else last


def latest_subject_model(paths: ArchivePaths, family: str) -> Optional[dict]:
    """The family's latest ``subject_model`` record (the switch in force), or None before the first watch."""
    latest = None
    for record in records.read(paths, "subject_model"):
        if record.get("model_family") == family and record.get("model_id"):
            latest = record
    return latest


def declared_model_ids(paths: ArchivePaths, family: str) -> set[str]:
    """Every model a ``subject_model`` record made the family's model (a declaration, or a successor decision)."""
    return {r.get("model_id") for r in records.read(paths, "subject_model")
            if r.get("model_family") == family and r.get("model_id")}


# --------------------------------------------------------------------------
# skips and days
# --------------------------------------------------------------------------

def last_skip(paths: ArchivePaths, month: str, protocol_id: str) -> Optional[dict]:
    """The last ``skip`` recorded in ``month`` (``YYYY-MM``) for ``protocol_id``, or None."""
    skips = [s for s in records.read(paths, "skip")
             if s.get("protocol_id") == protocol_id and str(s.get("date", ""))[:7] == month]
    return skips[-1] if skips else None


def records_on(paths: ArchivePaths, kind: str, day: str) -> list[dict]:
    """The records of ``kind`` dated ``day``, oldest first (read from the log's end: :func:`records.dated`)."""
    return records.dated(paths, kind, day)


def times_recorded(found: Iterable[dict]) -> list[datetime]:
    """When each record was written (its ``recorded_at``), sorted; a record without a readable time is left out."""
    return sorted(t for t in (parse_time(r.get("recorded_at")) for r in found) if t)


# --------------------------------------------------------------------------
# comparison points
# --------------------------------------------------------------------------

def replaced_points(points: Iterable[dict]) -> set[str]:
    """``record_sha256`` of every comparison point a later one replaced (publication shows only the later)."""
    return {p["replaces"] for p in points if p.get("replaces")}


def withdrawn_points(needs_review_records: Iterable[dict]) -> set[str]:
    """``record_sha256`` of every comparison point a successor decision withdrew (its run is on the curve now).

    Publication leaves these out of the comparison table, so one run is
    never shown both as a measurement of the series and as a comparison point.
    """
    return {sha for r in needs_review_records if r.get("resolves") and r.get("resolution") == "successor"
            for sha in r.get("comparison_points_withdrawn") or []}


def shown_points(points: list[dict], needs_review_records: Iterable[dict]) -> list[dict]:
    """The comparison points publication shows: none a successor decision withdrew, none a later one replaced."""
    hidden = withdrawn_points(needs_review_records) | replaced_points(points)
    return [p for p in points if p.get("record_sha256") not in hidden]


def latest_point_of_run(points: Iterable[dict]) -> dict[str, dict]:
    """The current comparison point of each run filed as one, by run id (the log is in order: the last one wins)."""
    return {p.get("run_id"): p for p in points}


# --------------------------------------------------------------------------
# the month's sweep runs
# --------------------------------------------------------------------------

def sweep_run_folder(paths: ArchivePaths, month: str, protocol_id: str, model_id: str) -> Optional[Path]:
    """The folder of the sweep's run of ``protocol_id`` on ``model_id`` in ``month``, when it was started."""
    folder = paths.run_dir(sweep_run_id(month, protocol_id, model_id))
    return folder if store.has_run(folder) else None


def month_sweep_runs(paths: ArchivePaths, month: str, model_id: str) -> dict[str, str]:
    """``{protocol_id: run_id}`` of the sweep's complete runs of ``month`` on ``model_id``.

    Only the sweep's own runs (:func:`llmarchive.archive.store.is_sweep_run`): a
    manual or exploratory run of a protocol is not the month's sweep.
    """
    return {r["protocol_id"]: r["run_id"] for r in store.complete_runs_dated(paths, month=month)
            if store.is_sweep_run(r) and r.get("subject_model_id") == model_id}


def open_sweep_runs(paths: ArchivePaths, month: str, model_id: str) -> dict[str, str]:
    """``{protocol_id: run_id}`` of the sweep's runs of ``month`` on ``model_id`` started and not complete.

    Found by their run id (the sweep's own folder for the protocol), not by
    their job: what a sweep left open is what it resumes.
    """
    return {run.record["protocol_id"]: run.run_id for run in store.open_runs(paths)
            if run.record.get("protocol_id")
            and run.run_id == sweep_run_id(month, str(run.record["protocol_id"]), model_id)}
