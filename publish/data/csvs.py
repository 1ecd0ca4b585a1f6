"""The CSV files: stability.csv, outcomes.csv, coverage.csv (method §10 "Files") and changes.csv.

One cell convention for all three, so a reader needs to learn it once:
an absent value is an empty cell; a boolean is ``true`` / ``false``; a
number is written as Python writes its shortest exact form; a structured
value (the schema's ``json`` type) is one cell of canonical JSON.  Rows are
sorted on stable keys and lines end in ``\\n``, so the same records always
give the same bytes.
"""
import csv
import io
from typing import Any, Iterable, Sequence

from llmarchive.schedule import job_series, public_detail
from llmarchive.archive import KINDS
from measure.canonical import canonical_json
from measure.schema import BESIDE_MEASUREMENT_FIELDS, MEASUREMENT_FIELDS, OUTCOME_FIELD_NAMES, OUTCOMES, VERSIONS
from publish.data.changes import CHANGE_COLUMN_SPEC
from publish.words import CHANGE_READING_COLUMNS, READING_COLUMNS, change_reading, derived_columns

STABILITY_FILE = "stability.csv"
OUTCOMES_FILE = "outcomes.csv"
COVERAGE_FILE = "coverage.csv"
CHANGES_FILE = "changes.csv"
"""The published names of the four CSV files: their entries in :data:`publish.data.files.PUBLISHED` (which
:func:`publish.publish_all` and Croissant follow) use them, and :mod:`publish.readback.files`
(``llmarchive verify --public``) reads them back by the same ones."""

COVERAGE_FIELDS = KINDS["coverage"] + ("recorded_at",)
COVERAGE_DESCRIPTIONS = {
    "period": "The scheduled period of the job (a date for daily jobs, a month for the monthly sweep).",
    "job": "Which scheduled job this row is about (for example the monthly sweep or the daily fingerprint).",
    "series": "commercial or open_weights; empty for the instrument's own daily jobs (runtime fingerprint, guard "
              "rotation, revalidation), which belong to no series. The coverage bar counts commercial only.",
    "protocol_id": "The protocol the job was for, when it was for one protocol.",
    "status": "ran, or gap when the job did not run.",
    "cause": "For a gap, exactly one cause from the closed list; empty when the job ran.",
    "run_id": "The run the job produced, when it ran.",
    "detail": "What was observed, in words.",
    "recorded_at": "When the row was recorded (UTC).",
}


def cell(value: Any, label: str = "text") -> str:
    """One CSV cell under the convention above."""
    if value is None:
        return ""
    if label == "json" or isinstance(value, (dict, list)):
        return canonical_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_csv(header: Sequence[str], rows: Iterable[Sequence[str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def stability_csv(measurements: Iterable[dict]) -> bytes:
    """One row per measurement: the derived words first (:data:`publish.words.numbers.READING_COLUMNS`: what the
    row can be read as, its flags as sentences), then one column per ``MEASUREMENT_FIELDS`` key, in schema
    order and exactly as computed, then what the run saw beside it
    (:data:`measure.schema.BESIDE_MEASUREMENT_FIELDS`: the server builds that answered, empty for a run
    recorded before it).  The words lead because a spreadsheet is read from the left; every parser that
    reads columns by name is unaffected, and :mod:`publish.readback.files` checks the schema's part and recomputes
    the part beside it."""
    header = ([name for name, _, _ in READING_COLUMNS] + [name for name, _ in MEASUREMENT_FIELDS]
              + [name for name, _, _ in BESIDE_MEASUREMENT_FIELDS])
    rows = ([cell(words[name], label) for name, label, _ in READING_COLUMNS]
            + [cell(m[name], label) for name, label in MEASUREMENT_FIELDS]
            + [cell(m.get(name), label) for name, label, _ in BESIDE_MEASUREMENT_FIELDS]
            for m, words in ((m, derived_columns(m)) for m in measurements))
    return write_csv(header, rows)


def outcome_rows(measurements: Iterable[dict]) -> list[tuple[str, str, str, int]]:
    """The ``outcomes`` field unpacked: (run_id, version, outcome, count), zero counts included."""
    out = []
    for m in measurements:
        table = m["outcomes"] or {}
        for version in VERSIONS:
            counts = table.get(version, {})
            for outcome in OUTCOMES:
                out.append((m["run_id"], version, outcome, int(counts.get(outcome, 0))))
    return out


def outcomes_csv(measurements: Iterable[dict]) -> bytes:
    return write_csv(OUTCOME_FIELD_NAMES, ([cell(v) for v in row] for row in outcome_rows(measurements)))


def coverage_rows(records: Iterable[dict]) -> list[dict]:
    """One row per scheduled job: the latest record for each (period, job, protocol_id).

    The log is append-only, so a job first recorded as a gap and later run
    (or re-classified) has two records; the later one is what happened.
    ``detail`` is the row's public words (:func:`llmarchive.schedule.coverage_wording.public_detail`): a row
    written before those existed is never copied as written.  ``series`` is the job's
    (:func:`llmarchive.schedule.coverage_conditions.job_series`): a row recorded when the instrument's jobs
    were labelled ``open_weights`` is published under no series, as they are now.
    """
    latest: dict[tuple, dict] = {}
    for record in records:
        key = (record.get("period"), record.get("job"), record.get("protocol_id"))
        latest[key] = {name: record.get(name) for name in COVERAGE_FIELDS}
        latest[key]["series"] = job_series(str(record.get("job")), record.get("series"))
        latest[key]["detail"] = public_detail(record)
    return sorted(latest.values(), key=lambda r: (str(r["period"]), str(r["series"]), str(r["job"]),
                                                  str(r["protocol_id"] or "")))


def coverage_csv(rows: Iterable[dict]) -> bytes:
    return write_csv(COVERAGE_FIELDS, ([cell(r[name]) for name in COVERAGE_FIELDS] for r in rows))


def changes_csv(rows: Iterable[dict]) -> bytes:
    """The change rule's rows (:func:`publish.data.changes.change_rows`), one column per ``CHANGE_FIELDS`` key."""
    spec = CHANGE_READING_COLUMNS + CHANGE_COLUMN_SPEC
    return write_csv([n for n, _, _ in spec],
                     ([cell(change_reading(r) if n == "reading" else r[n], label) for n, label, _ in spec]
                      for r in rows))
