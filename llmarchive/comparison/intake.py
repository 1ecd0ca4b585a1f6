"""Third-party comparison points (method §4.2): an outside run on an open panel, checked, recomputed, filed once.

The submission file
-------------------
A JSON Lines file of **trial records in exactly the format our runner
writes** (``trials.jsonl``), so the trial log of a run made with
``llmarchive comparison run`` is a valid submission as it stands.
Optionally, the first line is a header ``{"record_type":
"comparison_submission", …}`` with any of ``protocol_id``, ``panel_sha256``,
``protocol_sha256``, ``grammar_version``, ``n``, ``model_id``,
``requested_model_id``, ``model_family``, ``run_date``, ``submitted_by``,
``note``, ``explicitly_set``; each value given there must agree with the
trials and the protocol.  ``llmarchive comparison run``
(:mod:`llmarchive.comparison.run`) writes exactly such a file from a
published panel file alone: the header it writes (the model as the server
named it, the id the client asked for, the run date, both panel hashes and
what the client set) is kept with the point.

What a trial needs: ``protocol_id``, ``item_id``, ``version``,
``replicate_index``, ``prompt_sha256`` (sha256 of the exact prompt sent),
``outcome``, ``token``, ``response_text`` and ``returned_model_id``.  Every
field a trial carries that :data:`measure.schema.TRIAL_FIELDS` names
(timings, token counts, chain hashes…) must have the schema's type, and may
be null only where the schema allows it (never ``outcome``); keys the schema
does not know are kept and not judged.  A file whose trials carry chain
hashes must verify as a chain.

In order, and nothing is written until all of it has passed:

1. **Read within caps** (:mod:`llmarchive.comparison.submission`): the file
   streamed line by line with a running byte count — at most 16 MiB, a line
   at most 256 KiB, 2,000 records — every value of every line checked for
   depth and finite numbers, every header value for type and size.
2. **The conditions** (:mod:`llmarchive.comparison.check`): one open
   protocol; every ``prompt_sha256`` is this panel's; the ``grammar_version``
   re-extracts every response to its recorded outcome; exactly ``n`` trials
   per version; all four versions; the closed outcome list; one exact,
   printable ``model_id``; one path-safe ``run_id``; each response at most
   64 characters per token of the panel's ``max_tokens``; ``run_date``,
   ``submitted_by``, ``chain``, ``format``.
3. **Not the archive's own run** (:mod:`llmarchive.comparison.identity`): a
   run is its trials as recorded — each prompt, answer and the time of each
   call — not its file; a submission most of whose trials are those of runs
   the archive made itself (the curve's, the held ones, the instrument's: the
   runs the open lane publishes) is refused, and so is one that borrows such
   a run's id.
4. **Not filed before**, judged under the intake's lock together with the
   write, so N copies of one file submitted at once file one point: a
   submission most of whose trials are already the archive's — filed points
   and own runs pooled, under any header, note, submitter, model id or file
   name — or that has a filed point's ``run_id`` is refused, naming every
   source.  The identical file again is answered "already filed".  The
   names, under confusable folding, are judged here too
   (:mod:`llmarchive.comparison.names`).
5. **Disclosed, not refused**: answers that are word for word those of a
   filed point or an own run (another model, or the same deterministic model
   run again, gives the same words) are counted on the point —
   ``coinciding_answers``: which point or run, how many answers, how many
   trials as recorded, and whether it reproduces an own run.

Every failed condition is reported at once, one line each, naming the file
and the condition (:class:`SubmissionRejected`).  An accepted file is
recomputed by our own estimator (:func:`measure.measurement.build`) —
nothing submitted is trusted as a number; its ``run_id`` is the one the
trials carry, so ``llmarchive verify --trials FILE`` recomputes it from the
file as submitted — and stored as a ``comparison_point`` record plus a
private copy of the file, the copy renamed into place only beside a record
that was appended (a failed append leaves no copy).  It is read-only: it
starts no run, touches no schedule or rotation, and its measurement carries
the ``exploratory`` flag, so it is never on a curve or in an aggregate.
"""
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from llmarchive.archive import ArchivePaths, lock_file, record_logs as records, terminal, utc_today, write_json
from llmarchive.comparison.check import check, is_exact_model_id
from llmarchive.comparison.names import KNOWN_ANSWER_SOURCE, name_reasons
from llmarchive.comparison.identity import (OWN_RUN, Overlap, answer_identity, copy_path, is_same_run,
                                            own_run_named, own_run_overlaps, point_overlaps, pooled_copies,
                                            trial_keys, trials_sha256)
from llmarchive.comparison.submission import HEADER_FIELDS, HEADER_TYPE, HEADER_TYPES, Submission, read_submission
from measure.errors import ArchiveError
from measure.measurement import MeasurementError, build
from llmarchive.protocols import registry

__all__ = ["Accepted", "EXPLORATORY_NOTE", "HEADER_FIELDS", "HEADER_TYPE", "HEADER_TYPES", "SubmissionRejected",
           "intake_lock", "is_exact_model_id", "submit"]

EXPLORATORY_NOTE = "comparison point: a third party's run on an open panel; never on a curve or in an aggregate"
INTAKE_LOCK = ".intake.lock"
MAX_SOURCES_NAMED = 12
"""A refusal names at most this many of the runs and points a submission's trials come from, then counts the rest."""


class SubmissionRejected(ArchiveError, ValueError):
    """A submission that fails one or more conditions; ``reasons`` lists every one.

    Its message names the file and the number of reasons on its first line,
    then one line per reason — ``FILE: condition: what is wrong`` — with
    every character a terminal would act on escaped, so a command line
    prints it as it is: never a traceback, never the submitter's escapes.
    """

    def __init__(self, reasons: list[tuple[str, str]], file: Optional[Path] = None) -> None:
        self.reasons = [(condition, " ".join(terminal(message).split())) for condition, message in reasons]
        self.file = file
        where = f"{terminal(file)}: " if file is not None else ""
        count = len(self.reasons)
        super().__init__(f"{where}submission rejected, nothing stored ({count} reason{'s' if count != 1 else ''}):\n"
                         + "\n".join(f"{where}{condition}: {message}" for condition, message in self.reasons))


@dataclass
class Accepted:
    record: dict
    comparison_id: str
    already: bool = False


def intake_lock(paths: ArchivePaths):
    """The intake's lock: the repeat check and the write of a point happen under it, one submission at a time."""
    return lock_file(paths.comparison_points / INTAKE_LOCK)


def submit(paths: ArchivePaths, file: Path, submitted_by: Optional[str] = None,
           today: Optional[str] = None, source: Optional[str] = None) -> Accepted:
    """Check a submission file; file it as a comparison point or raise :class:`SubmissionRejected`.

    ``source`` is how the archive files it, recorded on the point and the only thing its published label
    is derived from: None for an outsider's submission (the record carries no ``source``), or
    :data:`KNOWN_ANSWER_SOURCE` when the archive's own known-answer step files one of its simulated readers.
    """
    if source not in (None, KNOWN_ANSWER_SOURCE):
        raise ValueError(f"unknown source of a comparison point: {source!r}")
    file = Path(file)
    read = read_submission(file)
    reasons = list(read.problems)
    protocol, derived = None, {}
    if read.judgeable:          # a value of the wrong type or size is named, not judged further
        protocol, derived, more = check(paths, read.header, read.numbered, submitted_by)
        reasons += more
    if reasons or protocol is None:
        raise SubmissionRejected(reasons or [("format", "the file names no protocol")], file)
    trials = read.trials
    identities = [trial_keys(t) for t in trials]
    words = [str(answer_identity(t)) for t in trials]
    digest = trials_sha256(trials)
    run_id = derived["run_id"]
    own = own_run_overlaps(paths, protocol["protocol_id"], identities, words)
    reasons = _own_run_reasons(paths, own, len(identities), run_id)
    if reasons:
        raise SubmissionRejected(reasons, file)
    comparison_id = f"cp-{digest[:16]}"
    # The measurement is of the submitted trials under their own run id, so `llmarchive verify --trials FILE`
    # recomputes it from the file as submitted (its trials are read by run id); the point's id when they name none.
    run = {"run_id": run_id or comparison_id, "run_date": derived["run_date"],
           "subject_model_id": derived["model_id"],
           "series": None, "model_family": read.header.get("model_family") or "third_party",
           "returned_model_id": derived["model_id"], "api_surface_sha": None,
           "condition_profile": "third-party submission", "replicate_index": 0, "exploratory": EXPLORATORY_NOTE}
    try:
        measurement = build(registry.header(protocol), trials, run)
    except MeasurementError as exc:
        raise SubmissionRejected([("format", f"the trials cannot be measured: {exc}")], file) from None
    fields = {"date": today or utc_today(), "protocol_id": protocol["protocol_id"], "model_id": derived["model_id"],
              "submitted_by": str(derived["submitted_by"]).strip(), "measurement": measurement,
              "comparison_id": comparison_id, "submission_sha256": read.sha256, "trials_sha256": digest,
              "run_id": run_id, "file_name": file.name, "n_trials": len(trials), "run_date": derived["run_date"],
              "note": read.header.get("note"), "requested_model_id": read.header.get("requested_model_id"),
              "explicitly_set": read.header.get("explicitly_set"),
              **({"source": source} if source is not None else {})}
    paths.comparison_points.mkdir(parents=True, exist_ok=True)
    with intake_lock(paths):
        points = records.read(paths, "comparison_point")
        same_file = next((p for p in points if p.get("submission_sha256") == read.sha256), None)
        if same_file is not None:
            return Accepted(same_file, str(same_file.get("comparison_id")), already=True)
        overlaps = own + point_overlaps(paths, points, protocol["protocol_id"], identities, words)
        reasons = name_reasons(paths, points, derived["model_id"], fields["submitted_by"], source)
        reasons += _repeat_reasons(points, overlaps, len(identities), run_id)
        if reasons:
            raise SubmissionRejected(reasons, file)
        disclosed = coinciding_answers(overlaps, len(identities))
        if disclosed:
            fields["coinciding_answers"] = disclosed
        record = _file_point(paths, read, fields)
    return Accepted(record, comparison_id)


def _point_words(point: dict) -> str:
    return f"{point.get('comparison_id')} (filed {point.get('date')}, {point.get('model_id')})"


def _source_words(overlap: Overlap) -> str:
    if overlap.kind == OWN_RUN:
        return f"the archive's own measurement run {overlap.name} ({len(overlap.copied)})"
    return f"comparison point {_point_words(overlap.point or {})} ({len(overlap.copied)})"


def _theirs(overlaps: list[Overlap], total: int) -> str:
    """``k of its N trials are …`` naming every source that holds some, with how many each holds."""
    sources = sorted((o for o in overlaps if o.copied), key=lambda o: (-len(o.copied), o.kind, o.name))
    more = len(sources) - MAX_SOURCES_NAMED
    return (f"{len(pooled_copies(sources))} of its {total} trials are, as recorded (the same prompts, answers and "
            f"times of each call), those of " + ", ".join(_source_words(o) for o in sources[:MAX_SOURCES_NAMED])
            + (f" and {more} more run(s) and point(s)" if more > 0 else ""))


def _own_run_reasons(paths: ArchivePaths, own: list[Overlap], total: int,
                     run_id: Optional[str]) -> list[tuple[str, str]]:
    """Why the submission is the archive's own runs (most of its trials, as recorded), or borrows one's id."""
    reasons = []
    if is_same_run(len(pooled_copies(own)), total):
        reasons.append(("own_run", f"{_theirs(own, total)}. A comparison point is an outside run; the archive's own "
                                   "runs are published as they are, under their own ids"))
    if run_id and own_run_named(paths, run_id):
        reasons.append(("run_id", f"run_id {run_id} is the id of one of the archive's own runs; an outside run "
                                  "has its own id"))
    return reasons


def _repeat_reasons(points: list[dict], overlaps: list[Overlap], total: int,
                    run_id: Optional[str]) -> list[tuple[str, str]]:
    """Why the submission is already the archive's: most of its trials, pooled over the filed points and the
    archive's own runs together, are theirs as recorded; or its run id is a filed point's."""
    reasons = []
    pooled = pooled_copies(overlaps)
    same = is_same_run(len(pooled), total)
    if same:
        condition = "own_run" if any(o.kind == OWN_RUN and o.copied for o in overlaps) else "already_filed"
        reasons.append((condition, f"this run is already filed: {_theirs(overlaps, total)}; a run is filed once, "
                                   "whatever its header, note, submitter, model id, run id or file name"))
    if run_id:
        earlier = next((p for p in points if p.get("run_id") == run_id or (
            isinstance(p.get("measurement"), dict) and p["measurement"].get("run_id") == run_id)), None)
        named = {id(o.point) for o in overlaps if o.copied and o.point is not None} if same else set()
        if earlier is not None and id(earlier) not in named:
            reasons.append(("run_id", f"run_id {run_id} is already filed as comparison point "
                                      f"{_point_words(earlier)}; a different run needs its own run id "
                                      "(`llmarchive comparison run --run-id …`)"))
    return reasons


def coinciding_answers(overlaps: list[Overlap], total: int) -> list[dict]:
    """What the point discloses: for each filed point and own run whose answers some of its own coincide with,
    how many answers (the same words to the same prompt) and how many trials (as recorded); an own run whose
    answers at least :data:`llmarchive.comparison.identity.SAME_RUN_SHARE` of them coincide with is marked a
    reproduction.  Ids only, the archive's own: a run id, or the point's comparison id and record hash."""
    out = []
    for o in sorted(overlaps, key=lambda o: (-len(o.coinciding), o.kind, o.name)):
        entry = {"source": o.kind, "id": o.name, "answers": len(o.coinciding), "trials": len(o.copied),
                 "of": total}
        if o.point is not None:
            entry["record_sha256"] = o.point.get("record_sha256")
        if o.kind == OWN_RUN:
            entry["reproduction"] = is_same_run(len(o.coinciding), total)
        out.append(entry)
    return out


def _file_point(paths: ArchivePaths, read: Submission, fields: dict) -> dict:
    """Write the private copy and append the record together; a failed append leaves no copy behind.

    The copy is streamed from the file again and must hash to what was
    checked (a file changed while it was read is refused); it is renamed
    into place just before the append, and removed if the append fails.
    """
    folder = paths.comparison_points
    copy = copy_path(paths, fields["comparison_id"])
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{copy.name}.", suffix=".tmp")
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, open(read.file, "rb") as source:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != read.sha256:
            raise SubmissionRejected([("format", "the file changed while it was being read; submit it again once "
                                                 "it is complete")], read.file)
        os.replace(tmp, copy)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        record = records.append(paths, "comparison_point", fields)
    except BaseException:
        copy.unlink(missing_ok=True)
        raise
    write_json(folder / f"{fields['comparison_id']}.json", record)
    return record
