"""``needs_review``: a new model id nobody declared a successor, held off every curve until a person decides.

method §4.3 separates two decisions.  Bridging a new model id of the family is
automatic (a retired model can never be measured again); *switching* to it is
interpretive and waits for an explicit declaration.  When the model watch
sees a new id with no declaration it records a ``needs_review``.  Until that
review is resolved, nothing measured on the new id may reach a curve:

* **Where its bridge runs live.**  The new model's bridge runs are written
  under ``private/review/runs/<run_id>/`` (:class:`ReviewPaths`: the runner's
  usual layout under another root, the same device the instrument uses for
  its rotation runs).  Publication reads ``private/experiments/`` only, so a
  held run is in no measurement table, no curve and no aggregate.
* **What is published meanwhile.**  Each complete held run is filed as a
  ``comparison_point`` record (method §4.3's rule for bridge data of a model that
  is not the successor): its measurement recomputed with the ``exploratory``
  flag and the reason, so the point is never on a curve.

Resolving (``llmarchive review resolve ID --successor | --not-successor
--reviewer NAME``, or the Dagster ``review_job``) appends a second
``needs_review`` record to the same chained log: ``resolves`` (the
``record_sha256`` of the review), ``resolution``, ``reviewer``, the date.

* ``successor`` — the held runs move into ``private/experiments/`` (a rename:
  the trials are the ones recorded, nothing is re-run or rewritten) and join
  the family's curve; a ``subject_model`` record switches the active model,
  naming the review and the reviewer; the comparison points filed for those
  runs are listed in ``comparison_points_withdrawn`` (their runs are now
  measurements of the series).
* ``not_successor`` — nothing moves: the runs stay comparison points, and a
  bridge run finished later is filed the same way.

A later provider declaration of the same id (seen by the model watch)
resolves a pending review the same way, with the declaration as reviewer.
Every step is idempotent (:func:`settle` finishes whatever a crash or a busy
run left undone), and every decision is a dated, chained record.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from measure.errors import ArchiveError
from llmarchive.archive import (ArchivePaths, RecordFileError, declared_model_ids, latest_point_of_run, lock_file,
                                measurement_run, record_logs as records, replaced_points, store)
from llmarchive.succession.subject_models import SubjectModelsError, latest_subject_model, load_subject_models
from measure.measurement import MeasurementError, build

RESOLUTIONS = ("successor", "not_successor")
HOLD_NOTE = ("bridge run of {model}, which no provider declared the successor of {old}: a comparison point, "
             "never on a curve, unless a person resolves needs_review {review} as successor")
BRIDGE_SUBMITTER = "this archive's generation bridge (needs_review)"
BRIDGE_SOURCE = "generation_bridge"
"""The ``source`` a held bridge run's point carries: the archive wrote it, so publication may label it a bridge run
(:mod:`llmarchive.comparison.names` refuses the word from outsiders)."""
MIN_ID_PREFIX = 8


class ReviewError(ArchiveError, ValueError):
    """A review that cannot be resolved as asked; the message says which and why."""


class ReviewPaths(ArchivePaths):
    """An archive whose run folders are the held ones (``private/review/runs``)."""

    @property
    def experiments(self) -> Path:
        return store.held_root(self)


def held_paths(paths: ArchivePaths) -> ReviewPaths:
    return ReviewPaths(paths.home)


@dataclass
class Review:
    """One ``needs_review`` and, once decided, the record that resolved it."""

    record: dict
    resolution: Optional[dict] = None
    held: list[str] = field(default_factory=list)          # run ids still under private/review/runs
    comparison_points: list[dict] = field(default_factory=list)
    unreadable: list[store.Unreadable] = field(default_factory=list)   # its held folders that cannot be read

    @property
    def current_points(self) -> list[dict]:
        """The comparison points publication shows: each held run's newest (none a later one replaced)."""
        replaced = replaced_points(self.comparison_points)
        return [c for c in self.comparison_points if c.get("record_sha256") not in replaced]

    @property
    def review_id(self) -> str:
        return str(self.record.get("record_sha256"))

    @property
    def model_family(self) -> str:
        return self.record.get("model_family")

    @property
    def model_id(self) -> str:
        return self.record.get("model_id")

    @property
    def state(self) -> str:
        """``pending``, ``successor`` or ``not_successor``."""
        return "pending" if self.resolution is None else self.resolution.get("resolution")

    def to_json(self) -> dict:
        r = self.resolution or {}
        return {"review_id": self.review_id, "date": self.record.get("date"), "model_family": self.model_family,
                "model_id": self.model_id, "reason": self.record.get("reason"), "state": self.state,
                "resolved_on": r.get("date"), "reviewer": r.get("reviewer"), "note": r.get("note"),
                "held_runs": list(self.held),
                "comparison_points": [c.get("record_sha256") for c in self.comparison_points],
                "runs_joined_curve": r.get("runs_joined_curve", []),
                "unreadable_held": [{"run_id": u.run_id, "problem": u.problem} for u in self.unreadable]}


def is_resolution(record: dict) -> bool:
    return bool(record.get("resolves"))


def unreadable_held(paths: ArchivePaths) -> list[store.Unreadable]:
    """Every held run folder the store cannot read (coverage names it, publication refuses it)."""
    return store.held_scan(paths).unreadable


def _run_ids_of(review: Review, bridge_records: list[dict]) -> set[str]:
    """Run ids known to be the review's without reading a run record: its filed points, its closed bridges."""
    ids = {str(c.get("run_id")) for c in review.comparison_points if c.get("run_id")}
    ids.update(str(run_id) for b in bridge_records for run_id in b.get("run_ids") or []
               if (b.get("model_family"), b.get("new_model_id")) == (review.model_family, review.model_id))
    return ids


def unplaced_unreadable(paths: ArchivePaths, found: list[Review]) -> list[store.Unreadable]:
    """The unreadable held folders none of ``found`` can be told to hold (listed apart by ``review list``)."""
    placed = {u.run_id for review in found for u in review.unreadable}
    return [u for u in unreadable_held(paths) if u.run_id not in placed]


def _flagged(point: dict) -> bool:
    measurement = point.get("measurement") if isinstance(point.get("measurement"), dict) else {}
    return "instrument_suspect" in (measurement.get("flags") or [])


def reviews(paths: ArchivePaths, family: Optional[str] = None) -> list[Review]:
    """Every review (oldest first) with its resolution, held runs, comparison points and unreadable held folders."""
    found: dict[str, Review] = {}
    log = records.read(paths, "needs_review")
    for r in log:
        if not is_resolution(r):
            found[str(r.get("record_sha256"))] = Review(r)
    for r in log:
        if is_resolution(r) and r["resolves"] in found and found[r["resolves"]].resolution is None:
            found[r["resolves"]].resolution = r
    scanned = store.held_scan(paths)   # a held folder that cannot be read is kept, never skipped
    held = {run.run_id: run.record for run in scanned.runs()}
    bad = scanned.unreadable
    points = records.read(paths, "comparison_point")
    bridge_records = records.read(paths, "generation_bridge") if bad else []
    out = []
    for review in found.values():
        if family is not None and review.model_family != family:
            continue
        review.held = sorted(run_id for run_id, run in held.items()
                             if run.get("subject_model_id") == review.model_id
                             and run.get("model_family") == review.model_family)
        review.comparison_points = [c for c in points if c.get("needs_review") == review.review_id]
        # A torn record cannot say whose run it is; the run ids recorded elsewhere still can.
        mine = _run_ids_of(review, bridge_records) if bad else set()
        review.unreadable = [u for u in bad if u.run_id in mine]
        out.append(review)
    return out


def review_of(paths: ArchivePaths, family: str, model_id: str) -> Optional[Review]:
    """The review of ``model_id`` in ``family`` (the latest one, should there be several), or None."""
    mine = [r for r in reviews(paths, family) if r.model_id == model_id]
    return mine[-1] if mine else None


def switched_to(paths: ArchivePaths, family: str) -> set[str]:
    """Every model a ``subject_model`` record made the family's model (a declaration, or a successor decision)."""
    return declared_model_ids(paths, family)


def holds(paths: ArchivePaths, family: str, model_id: str) -> bool:
    """Must runs of ``model_id`` be kept off the family's curves (a review not resolved as successor)?

    A provider's declaration recorded after a person answered "not the
    successor" still switches the series (the watch writes its
    ``subject_model``); from then on the model's new runs are the family's,
    as the sweep's are — runs already held stay comparison points.
    """
    review = review_of(paths, family, model_id)
    return (review is not None and review.state != "successor"
            and model_id not in switched_to(paths, family))


def declared_models(paths: ArchivePaths, config) -> set[str]:
    """The ids that may be on ``config``'s family curve: the file's first model and every recorded switch."""
    return {config.active_model} | declared_model_ids(paths, config.model_family)


def hold_reason(paths: ArchivePaths, model_id: str, model_family: Optional[str] = None,
                config=None) -> Optional[str]:
    """Why a run of ``model_id`` must stay off every curve (an ``exploratory`` reason), or None.

    For runs started outside the bridge (``llmarchive run`` by hand): such a
    run is written where every run goes, so it is kept off the curves by its
    ``exploratory`` flag instead of a held folder.  Held when

    * ``model_id`` has a ``needs_review`` (in any family) not resolved as
      successor — nobody declared it, so it is not the series' model; or
    * it belongs to the tracked family (its pattern, or ``model_family``
      naming the family) but no declaration ever made it the family's model
      — not the file's first model, no ``subject_model`` record.  This closes
      the window before the model watch has seen a new id at all.

    ``config`` defaults to the repository's ``subject_models.yaml``; when
    that file cannot be read only the first rule applies.
    """
    for review in reviews(paths):
        if review.model_id == model_id and holds(paths, review.model_family, model_id):
            return (f"{model_id} has needs_review {review.review_id[:12]} ({review.state}): no provider declared "
                    f"it the successor in {review.model_family}, so its runs are on no curve until a person "
                    "resolves the review as successor")
    if config is None:
        try:
            config = load_subject_models()
        except SubjectModelsError:
            return None
    if (config.in_family(model_id) or model_family == config.model_family) \
            and model_id not in declared_models(paths, config):
        return (f"{model_id} was never declared the model of {config.model_family} (not the configured first "
                "model, no subject_model record): a run of it is on no curve of the family")
    return None


def mark_held(paths: ArchivePaths, model_id: str, model_family: Optional[str],
              exploratory: Union[bool, str] = False, config=None) -> Union[bool, str]:
    """``exploratory`` with :func:`hold_reason` added when ``model_id`` is held (the value for ``RunSettings``)."""
    reason = hold_reason(paths, model_id, model_family, config)
    if not reason:
        return exploratory
    return "; ".join(x for x in (exploratory if isinstance(exploratory, str) else "", reason) if x)


def find(paths: ArchivePaths, review_id: str) -> Review:
    """The review whose id is ``review_id`` or starts with it (at least 8 characters)."""
    wanted = (review_id or "").strip().lower()
    if len(wanted) < MIN_ID_PREFIX:
        raise ReviewError(f"give at least {MIN_ID_PREFIX} characters of the review id "
                          "(`llmarchive review list` shows them)")
    matches = [r for r in reviews(paths) if r.review_id.startswith(wanted)]
    if not matches:
        raise ReviewError(f"no needs_review has the id {review_id!r} (`llmarchive review list` shows them)")
    if len(matches) > 1:
        raise ReviewError(f"{len(matches)} reviews start with {review_id!r}; give more characters")
    return matches[0]


# --------------------------------------------------------------------------
# comparison points for held runs, and moving runs onto the curve
# --------------------------------------------------------------------------

def _comparison_measurement(folder: Path, run: dict, note: str) -> Optional[dict]:
    """The held run's measurement rebuilt with the ``exploratory`` flag (so it is never on a curve)."""
    if not store.is_complete(folder):
        return None
    loaded = store.load_run(folder)
    fields = measurement_run(run)
    fields["exploratory"] = note
    try:
        return build(loaded.protocol_header, sorted(loaded.trials, key=lambda t: t["trial_index"]), fields)
    except MeasurementError:
        return None


def file_comparison_points(paths: ArchivePaths, review: Review, day: str) -> list[dict]:
    """A ``comparison_point`` for each complete held run of ``review`` that has none yet, or whose point is stale.

    A point is stale when its run was flagged ``instrument_suspect`` after it
    was filed (the day's alarm came later, method §7.4): a record is never
    edited, so a new point with the flag is filed that ``replaces`` the old one,
    and publication shows only the newest (:func:`llmarchive.archive.queries.replaced_points`).
    """
    latest = latest_point_of_run(review.comparison_points)
    root = held_paths(paths).experiments
    written = []
    for run_id in review.held:
        folder = root / run_id
        if store.has_pending_marks(folder):
            # An alarm met it unreadable and its flag is not applied yet: a point filed now would lack it,
            # so it waits for `llmarchive instrument apply-marks` and is filed at the next call.
            continue
        try:
            run = store.read_run(folder)
        except RecordFileError:
            continue   # listed by held_scan as unreadable: no point can be filed from it
        previous = latest.get(run_id)
        if previous is not None and not (run.get("instrument_suspect") and not _flagged(previous)):
            continue
        bridge = run.get("bridge") if isinstance(run.get("bridge"), dict) else {}
        note = HOLD_NOTE.format(model=review.model_id, old=bridge.get("old_model_id") or "the active model",
                                review=review.review_id[:12])
        measurement = _comparison_measurement(folder, run, note)
        if measurement is None:
            continue
        record = records.append(paths, "comparison_point", {
            "date": day, "protocol_id": run.get("protocol_id"), "model_id": review.model_id,
            "submitted_by": BRIDGE_SUBMITTER, "measurement": measurement, "run_id": run_id,
            "run_date": run.get("run_date"), "source": BRIDGE_SOURCE, "needs_review": review.review_id,
            "comparison_id": f"bridge-{run_id}", "bridge": bridge or None,
            "note": "held off every curve: no provider declared this model a successor",
            **({"replaces": previous.get("record_sha256")} if previous is not None else {})})
        review.comparison_points.append(record)
        written.append(record)
    return written


def _join_curve(paths: ArchivePaths, review: Review) -> tuple[list[str], list[str]]:
    """Move the held runs into ``private/experiments/``; ``(moved, still busy)``."""
    root = held_paths(paths).experiments
    moved, busy = [], []
    for run_id in list(review.held):
        source, target = root / run_id, paths.run_dir(run_id)
        if target.exists():
            raise ReviewError(f"{target} already exists; the held run {source} cannot join the curve under the "
                              "same run id — resolve by hand")
        try:
            store.move_run(source, target, busy=ReviewError(f"run {run_id} is being worked on"))
        except ReviewError:
            busy.append(run_id)
            continue
        moved.append(run_id)
        review.held.remove(run_id)
    return moved, busy


def file_points(paths: ArchivePaths, day: str) -> list[dict]:
    """File every comparison point the held runs of undecided and ``not_successor`` reviews need (idempotent).

    Called after an alarm marked runs suspect, so a point filed earlier that
    day is replaced by one that carries the flag.
    """
    return [point for review in reviews(paths) if review.state != "successor"
            for point in file_comparison_points(paths, review, day)]


def settle(paths: ArchivePaths, day: str, family: Optional[str] = None) -> list[dict]:
    """Finish what the decisions so far require (idempotent): file and move held runs.

    A pending or ``not_successor`` review files a comparison point for each of
    its complete held runs; a ``successor`` review moves its held runs onto
    the curve.  Returns the comparison points written.
    """
    written = []
    for review in reviews(paths, family):
        if review.state == "successor":
            try:
                _join_curve(paths, review)
            except ReviewError:
                continue   # a clash with an existing run folder waits for a person; the watch's alarm goes on
        else:
            written += file_comparison_points(paths, review, day)
    return written


@dataclass
class Resolved:
    review: Review
    record: dict
    switch: Optional[dict]
    joined_curve: list[str]
    still_held: list[str]
    comparison_points: list[dict]


def resolve(paths: ArchivePaths, review_id: str, resolution: str, reviewer: str, day: str,
            note: Optional[str] = None, *, review: Optional[Review] = None) -> Resolved:
    """Record a person's (or a declaration's) decision on a review, then act on it (see the module docstring)."""
    if resolution not in RESOLUTIONS:
        raise ReviewError(f"resolution must be one of {', '.join(RESOLUTIONS)}, got {resolution!r}")
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ReviewError("name the reviewer (--reviewer NAME): a resolution is a person's recorded decision")
    # One decision per review, even when the CLI and the Dagster job resolve at the same moment: the
    # state is read again under the lock, and the check and the record happen inside it.
    with lock_file(held_paths(paths).private / "review" / ".resolve.lock"):
        return _resolve_locked(paths, find(paths, review.review_id if review is not None else review_id),
                               resolution, reviewer, day, note)


def _resolve_locked(paths: ArchivePaths, review: Review, resolution: str, reviewer: str, day: str,
                    note: Optional[str]) -> Resolved:
    if review.state != "pending":
        r = review.resolution
        raise ReviewError(f"needs_review {review.review_id[:12]} ({review.model_id}) was already resolved as "
                          f"{r.get('resolution')} on {r.get('date')} by {r.get('reviewer')}; a decision is not "
                          "taken back silently")
    if resolution == "successor":
        clash = [run_id for run_id in review.held if paths.run_dir(run_id).exists()]
        if clash:
            raise ReviewError(f"{', '.join(clash)} already exist(s) under {paths.experiments}: the held run(s) "
                              "cannot join the curve under the same run id; nothing was recorded — resolve by hand")
    withdrawn = ([c.get("record_sha256") for c in review.comparison_points if c.get("run_id") in review.held]
                 if resolution == "successor" else [])
    held_before = list(review.held)
    if resolution == "successor":
        reason = (f"resolved by {reviewer.strip()}: {review.model_id} is the successor in {review.model_family}; "
                  "its bridge runs join the curve")
    else:
        reason = (f"resolved by {reviewer.strip()}: {review.model_id} is not the successor in "
                  f"{review.model_family}; its bridge runs stay comparison points")
    record = records.append(paths, "needs_review", {
        "date": day, "model_family": review.model_family, "model_id": review.model_id, "reason": reason,
        "resolves": review.review_id, "resolution": resolution, "reviewer": reviewer.strip(), "note": note,
        "runs_joined_curve": held_before if resolution == "successor" else [],
        "comparison_points_withdrawn": withdrawn})
    review.resolution = record
    switch = None
    moved, busy, points = [], [], []
    if resolution == "successor":
        latest = latest_subject_model(paths, review.model_family)
        if latest is None or latest.get("model_id") != review.model_id:
            switch = records.append(paths, "subject_model", {
                "date": day, "model_family": review.model_family, "model_id": review.model_id,
                "previous_model_id": None if latest is None else latest.get("model_id"),
                "declared_by": f"needs_review {review.review_id[:12]} resolved as successor by {reviewer.strip()}",
                "needs_review": review.review_id, "reviewer": reviewer.strip()})
        moved, busy = _join_curve(paths, review)
    else:
        points = file_comparison_points(paths, review, day)
    return Resolved(review, record, switch, moved, busy, points)
