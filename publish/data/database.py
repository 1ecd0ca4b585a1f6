"""``archive.db``: the public SQLite database, built with sqlite-utils and served by Datasette.

Every table, column, view and index is declared in :data:`TABLES` and
:data:`VIEWS` — with the description Datasette shows — so the database and
``metadata.yml`` (:mod:`publish.datasette.meta`) are generated from one
place and cannot drift.  The ``measurements`` columns are the row's reading
in words first (:mod:`publish.words.numbers`), then ``MEASUREMENT_FIELDS``
themselves, in schema order with the schema's descriptions, then
the server builds beside them (:data:`measure.schema.BESIDE_MEASUREMENT_FIELDS`), then
``min_detectable_change_pct`` (:mod:`publish.data.changes`).  ``changes`` holds
the change rule's rows (as ``changes.csv``), its verdict in words first.

Type mapping: ``pct``, ``unit_interval`` and ``number`` → REAL; ``int`` and
``count`` → INTEGER; ``bool`` → INTEGER 0/1; ``text`` → TEXT; ``json`` →
TEXT holding canonical JSON.  The build is deterministic (fixed table
order, fixed row order, no timestamps inside, ``VACUUM`` at the end), so
the same records give the same file bytes.
"""
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Union

if TYPE_CHECKING:      # loaded by build() alone: reading the column specs must not need the archive extra
    import sqlite_utils

from llmarchive.archive import either
from measure import jsonl
from measure.canonical import canonical_json
from measure.schema import (
    BESIDE_MEASUREMENT_FIELDS,
    MEASUREMENT_FIELDS,
    OUTCOME_FIELD_DESCRIPTIONS,
    OUTCOME_FIELDS,
    PROTOCOL_DERIVED_FIELDS,
    PROTOCOL_HEADER_FIELDS,
    TRIAL_FIELD_LABELS,
)
from publish.data import changes, csvs, human_gap
from publish.words import PUBLISHED_DESCRIPTIONS, numbers
from publish.errors import PublishError
from publish.data.record_tables import comparison_rows, instrument_rows, succession_rows
from publish.data.sources import ALARM, Inputs, instrument_checks

DATABASE = "archive"
DB_FILE = f"{DATABASE}.db"
"""The database's published name; Datasette serves it as ``/archive`` (:mod:`publish.datasette.meta`)."""

SQL_TYPES = {"pct": float, "unit_interval": float, "number": float, "int": int, "count": int, "bool": int,
             "text": str, "json": str}


@dataclass
class Column:
    name: str
    label: str
    words: Union[str, Callable[[], str]]    # a function: the words depend on the job table, worked out when read

    @property
    def description(self) -> str:
        """What Datasette shows for the column (``metadata.yml``, :mod:`publish.datasette.meta`)."""
        return self.words() if callable(self.words) else self.words


@dataclass
class Table:
    name: str
    description: str
    columns: list[Column]
    pk: Any
    foreign_keys: list[tuple[str, str, str]] = field(default_factory=list)
    indexes: list[tuple[str, ...]] = field(default_factory=list)
    sort: Optional[str] = None

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


@dataclass
class View:
    name: str
    description: str
    sql: str
    columns: list[str]


def _cols(spec: Iterable[tuple[str, str, Union[str, Callable[[], str]]]]) -> list[Column]:
    return [Column(n, label, d) for n, label, d in spec]


PROTOCOL_COLUMN_SPEC = (
    ("protocol_id", "text", "Protocol identifier: family, rewording type and protocol series."),
    ("series", "text", "Protocol series (v0 or v1); a new series is a new set of protocols, never a continuation."),
    ("family", "text", "Scenario family: risky_choice_framing, sunk_cost_fallacy or base_rate_neglect."),
    ("rewording_type", "text", "What B changes: wording, anchoring, order or default."),
    ("options", "json", "The options a decision may name (JSON list)."),
    ("n", "count", "Calls per version, frozen per protocol."),
    ("n_per_scenario", "count", "Calls per scenario and version."),
    ("n_items", "count", "Scenarios in the panel (15)."),
    ("item_ids", "json", "The panel's scenario ids (JSON list)."),
    ("grammar_version", "int", "Decision grammar the protocol is scored with."),
    ("theta_positive_pct", "pct", "Pre-declared threshold the positive control must clear."),
    ("scenario_dominated_share_pct", "pct", "Pre-declared share of the gap two scenarios may produce before the flag."),
    ("generation", "json", "Every generation setting sent besides the prompt (JSON)."),
    ("panel_sha256", "text", "SHA-256 of the panel; with protocol_id, the panel's identity."),
    ("protocol_sha256", "text", "SHA-256 of the protocol without status, lane and twin."),
    ("status", "text", "candidate or admitted."),
    ("lane", "text", "open (wording public), guard (wording private) or sealed (existence and count only)."),
    ("twin_id", "text", "The protocol of the other lane measuring the same family, if paired."),
    ("option_roles", "json", "Which role each option letter plays in each scenario (JSON: {item_id: {letter: role}}, "
                             "e.g. sure or gamble), as the panel's structure names them; what gap_role_ab_pct "
                             "counts by. Empty for a sealed protocol."),
)
assert tuple(n for n, _, _ in PROTOCOL_COLUMN_SPEC) == PROTOCOL_HEADER_FIELDS + PROTOCOL_DERIVED_FIELDS
DESIGN_COLUMN_SPEC = (
    ("design_readers", "json", "The protocol's design figures per reference reader, when it has them (JSON: "
                               "{reader: {gap_ab_pct, gap_aa_prime_pct, gap_ac_pct, stability_pct}}); empty "
                               "for a protocol without them and for a sealed one."),
)
SEALED_PUBLIC = ("protocol_id", "series", "status", "lane")

RUN_COLUMN_SPEC = (
    ("run_id", "text", "Identifier of the experiment run."),
    ("run_date", "text", "UTC date of the run."),
    ("protocol_id", "text", "The protocol run."),
    ("series", "text", "commercial or open_weights."),
    ("lane", "text", "The protocol's current lane; open runs have every trial in open_lane_trials."),
    ("twin_id", "text", "The protocol's twin across the open/guard lanes, if any."),
    ("subject_model_id", "text", "Model id requested."),
    ("model_family", "text", "Product family the run belongs to."),
    ("returned_model_id", "text", "Every model id the provider reported back over the run, each once, sorted and "
                                  "comma-joined."),
    ("condition_profile", "text", "Name of the frozen request configuration."),
    ("api_surface_sha", "text", "SHA-256 of the request sent, minus the prompt."),
    ("explicitly_set", "json", "Every request parameter the subject sent explicitly (JSON), when recorded."),
    ("replicate_index", "int", "0 for the first run of this protocol, model and date; 1, 2... for repeats."),
    ("n_trials", "count", "Number of trial records in the run's log."),
    ("started_at", "text", "When the run's first call started (UTC)."),
    ("finished_at", "text", "When the run completed (UTC)."),
)

# The open_lane_trials columns: schema trial fields (names and type labels from measure.schema.TRIAL_FIELDS),
# in this order, then one JSON column for every other field.  The descriptions are this table's own shorter
# wording (what metadata.yml shows); the schema's are the open-lane file's (croissant.json).
TRIAL_COLUMN_DESCRIPTIONS = {
    "record_sha256": "SHA-256 of the trial record; unique.",
    "run_id": "The run the trial belongs to.",
    "protocol_id": "The open protocol the prompt came from.",
    "item_id": "The scenario (s01 ... s15).",
    "version": "A, A_prime, B or C.",
    "replicate_index": "Repetition of this scenario and version.",
    "trial_index": "Position of the call in the run's schedule.",
    "outcome": "valid, unparseable, refused, blocked_upstream, truncated, empty or off_format.",
    "token": "The extracted decision when valid.",
    "prompt_sha256": "SHA-256 of the prompt sent (the text itself is not published).",
    "response_text": "The model's full response.",
    "prev_sha256": "Hash of the previous trial in the same run's chain.",
    "system_fingerprint": "The server's build as its API reported it with this answer; empty when it reported none "
                          "or the trial predates the field.",
}
TRIAL_COLUMN_SPEC = tuple((name, TRIAL_FIELD_LABELS[name], description)
                          for name, description in TRIAL_COLUMN_DESCRIPTIONS.items()) + (
    ("transport", "json", "Every other field of the trial record (provider stop reason, token counts...), JSON."),
)
TRIAL_COMMON = {"record_type", "schema_version"}


def instrument_kind_description() -> str:
    """The instrument table's ``kind`` column: the job table's published checks and the alarm, read when the
    description is (:attr:`Column.description`), so a row registered after import (a test's toy check) is in it."""
    return either([job.record.kind for job in instrument_checks() if job.record] + [ALARM]) + "."


INSTRUMENT_COLUMN_SPEC = (
    ("record_sha256", "text", "SHA-256 of the bookkeeping record; unique."),
    ("kind", "text", instrument_kind_description),
    ("date", "text", "The day the check is about (UTC)."),
    ("status", "text", "pass / fail / unavailable for the fingerprint; the verdict of a guard rotation; "
                       "correct/total for the subject fingerprint; 'alarm' for an alarm."),
    ("protocol_id", "text", "The guard protocol replayed, for a guard rotation."),
    ("run_id", "text", "The run the check produced, when it produced one."),
    ("subject_model_id", "text", "The subject model, for the subject fingerprint."),
    ("detail", "json", "Every other field of the record (JSON)."),
    ("recorded_at", "text", "When the record was written (UTC)."),
)

SUCCESSION_COLUMN_SPEC = (
    ("record_sha256", "text", "SHA-256 of the bookkeeping record; unique."),
    ("kind", "text", "subject_model, generation_bridge, needs_review, series_closed or bridge_incomplete."),
    ("date", "text", "When it happened (UTC date)."),
    ("model_family", "text", "The product family concerned."),
    ("model_id", "text", "The model the event is about (the new model for a bridge)."),
    ("previous_model_id", "text", "The model it follows or replaces, when there is one."),
    ("status", "text", "The bridge's status, for a generation_bridge."),
    ("reason", "text", "Why, in words, when recorded."),
    ("detail", "json", "Every other field of the record (JSON)."),
)

COMPARISON_COLUMN_SPEC = (
    ("record_sha256", "text", "SHA-256 of the accepted comparison-point record; unique."),
    ("date", "text", "When the point was accepted (UTC date)."),
    ("run_date", "text", "When the outside run was made: the measurement date shown beside it."),
    ("protocol_id", "text", "The open protocol the outside run used."),
    ("model_id", "text", "The exact model id the outside party ran."),
    ("submitted_by", "text", "Who submitted it."),
    ("stability_pct", "pct", "Stability recomputed by this project's own estimator."),
    ("ci_low_pct", "pct", "Low end of its 95% bootstrap interval, conditional on the panel."),
    ("ci_high_pct", "pct", "High end of that interval."),
    ("entropy_a", "unit_interval", "Normalised entropy of A's decisions."),
    ("entropy_b", "unit_interval", "Normalised entropy of B's decisions."),
    ("null_floor_pct", "pct", "Gap that sampling alone produces at these counts."),
    ("n", "count", "Calls per version."),
    ("grammar_version", "int", "Decision grammar version used."),
    ("panel_sha256", "text", "Panel hash the submission matched."),
    ("flags", "json", "Checks the measurement failed (JSON list)."),
    ("measurement", "json", "The full recomputed measurement record (JSON)."),
)

HUMAN_GAP_COLUMN_SPEC = (
    ("gap_id", "text", "Identifier of the row."),
    ("family", "text", "Scenario family the human result is comparable with."),
    ("rewording_type", "text", "Rewording type it is comparable with."),
    ("study", "text", "The published study."),
    ("citation", "text", "Full reference."),
    ("year", "int", "Year the human data were collected."),
    ("design", "text", "multi_lab or meta_analysis."),
    ("n_participants", "count", "Participants behind the effect."),
    ("effect_pct", "pct", "The human effect in points (0-100): a difference in the share choosing one option's "
                          "role (e.g. the sure programme), so it is read against a measurement's gap_role_ab_pct, "
                          "not gap_pct (which counts letters)."),
    ("effect_definition", "text", "How the effect was computed from the published result."),
    ("source", "text", "Where the numbers come from."),
    ("read_against", "text", "The measurement field in the humans' construct: gap_role_ab_pct, the A-B distance over "
                             "the options' roles."),
)

MEASUREMENT_EXTRA_SPEC = (
    ("min_detectable_change_pct", "pct",
     "Derived, not a schema field: the smallest move from this measurement the change rule could call if "
     "the next measurement were as precise (max of sqrt(2) x CI half-width and 2 x drop_bound_pct_ab). "
     "Empty when the measurement has no interval. Above 100 it is more than the scale: the losses alone could "
     "explain any result, so no move could be called from here."),
)

COVERAGE_COLUMN_SPEC = (("coverage_id", "int", "Row number, in (period, series, job, protocol) order."),) + tuple(
    (name, "text", csvs.COVERAGE_DESCRIPTIONS[name]) for name in csvs.COVERAGE_FIELDS)

TABLES: tuple[Table, ...] = (
    Table("protocols", "Every protocol's text-free header. Sealed protocols appear by id, lane and status only; "
          "no wording of any protocol is in this database.",
          _cols(PROTOCOL_COLUMN_SPEC + DESIGN_COLUMN_SPEC), "protocol_id", indexes=[("lane",), ("family", "rewording_type")]),
    Table("runs", "One row per completed, published experiment run.",
          _cols(RUN_COLUMN_SPEC), "run_id", foreign_keys=[("protocol_id", "protocols", "protocol_id")],
          indexes=[("protocol_id", "run_date"), ("series", "run_date")]),
    Table("measurements", "One row per measurement (the same rows as stability.csv): first what the row can be "
          "read as, in words (reading, flag_sentences), then one column per MEASUREMENT_FIELDS key, exactly as "
          "computed, then the server builds that answered its run (system_fingerprints). Both series are here, "
          "told apart by the series column; never draw them as one line.",
          _cols(numbers.READING_COLUMNS) + [Column(n, label, PUBLISHED_DESCRIPTIONS[n]) for n, label in MEASUREMENT_FIELDS]
          + _cols(BESIDE_MEASUREMENT_FIELDS) + _cols(MEASUREMENT_EXTRA_SPEC), "run_id",
          foreign_keys=[("run_id", "runs", "run_id"), ("protocol_id", "protocols", "protocol_id")],
          indexes=[("protocol_id", "model_family", "series", "run_date"), ("series", "run_date"),
                   ("on_curve",), ("run_date",)]),
    Table("changes", "The change rule as data: for every curve (one protocol_id within one series and one "
          "model_family), each consecutive pair of on-curve measurements with the difference, its random-error "
          "bound, its systematic cap and the label computed by the frozen change rule (the same rows as "
          "changes.csv).",
          _cols(numbers.CHANGE_READING_COLUMNS + changes.CHANGE_COLUMN_SPEC), "to_run_id",
          foreign_keys=[("to_run_id", "measurements", "run_id"), ("from_run_id", "measurements", "run_id")],
          indexes=[("protocol_id", "model_family", "series", "to_run_date"), ("to_run_date",), ("label",)],
          sort="to_run_date"),
    Table("outcomes", "The outcomes field unpacked: one row per run, version and outcome, zero counts included "
          "(the same rows as outcomes.csv).",
          [Column(n, label, OUTCOME_FIELD_DESCRIPTIONS[n]) for n, label in OUTCOME_FIELDS],
          ("run_id", "version", "outcome"), foreign_keys=[("run_id", "measurements", "run_id")]),
    Table("coverage", "Every scheduled job: it ran, or it is a gap with exactly one cause from the closed list "
          "(the same rows as coverage.csv).",
          _cols(COVERAGE_COLUMN_SPEC), "coverage_id", indexes=[("status", "cause"), ("series", "period")]),
    Table("open_lane_trials", "Every trial of every open-lane run (the same trials as open-lane/<year>.jsonl). "
          "Prompts are identified by hash only; guard and sealed trials are never published.",
          _cols(TRIAL_COLUMN_SPEC), "record_sha256", foreign_keys=[("run_id", "runs", "run_id")],
          indexes=[("run_id",), ("protocol_id", "item_id", "version")]),
    Table("comparison_points", "Outside runs on an open panel, recomputed by this project's estimator. A separate "
          "context table: never on the main curve, never in an aggregate, never a ranking.",
          _cols(numbers.POINT_COLUMNS + COMPARISON_COLUMN_SPEC), "record_sha256",
          indexes=[("protocol_id", "run_date")]),
    Table("instrument", "The instrument's own daily checks: the reference model's runtime fingerprint, the guard "
          "rotation, the subject fingerprint and any alarm.",
          _cols(INSTRUMENT_COLUMN_SPEC), "record_sha256", indexes=[("kind", "date")]),
    Table("succession", "Model succession events (SPEC 4.3) as context for the curves.",
          _cols(SUCCESSION_COLUMN_SPEC), "record_sha256", indexes=[("model_family", "date")]),
    Table("human_model_gap", "Published human results a protocol can be read beside, where one is genuinely "
          "comparable; always with the collection year, never aggregated, never a headline.",
          _cols(HUMAN_GAP_COLUMN_SPEC), "gap_id"),
)
TABLE_BY_NAME = {t.name: t for t in TABLES}

_CURVE_COLUMNS = ["run_id", "run_date", "protocol_id", "rewording_type", "model_family", "subject_model_id",
                  "returned_model_id", "stability_pct", "ci_low_pct", "ci_high_pct", "entropy_a", "entropy_b",
                  "null_floor_pct", "gap_pct", "panel_sha256"]


def _curve_view(series: str) -> View:
    columns = ", ".join(_CURVE_COLUMNS)
    return View(
        f"main_curve_{series}",
        f"The main curve of the {series} series: on-curve measurements only, entropy beside stability. "
        "One curve is one protocol_id within one model_family; never join rows of different families.",
        f"select {columns} from measurements where on_curve = 1 and series = '{series}' "
        "order by protocol_id, model_family, run_date, replicate_index",
        list(_CURVE_COLUMNS),
    )


VIEWS: tuple[View, ...] = (_curve_view("commercial"), _curve_view("open_weights"))


# --------------------------------------------------------------------------
# rows
# --------------------------------------------------------------------------

def _value(value: Any, label: str) -> Any:
    if value is None:
        return None
    if label == "json" or isinstance(value, (dict, list)):
        return canonical_json(value)
    if label == "bool":
        return 1 if value else 0
    return value


def protocol_rows(inputs: Inputs) -> list[dict]:
    out = []
    for header in inputs.headers:
        if header.get("lane") == "sealed":
            header = {k: (header.get(k) if k in SEALED_PUBLIC else None) for k in PROTOCOL_HEADER_FIELDS}
        else:
            header = {**header, "design_readers": inputs.texts.designs.get(header["protocol_id"])}
        out.append(header)
    return out


def measurement_rows(inputs: Inputs):
    for m in inputs.measurements:
        yield {**numbers.derived_columns(m), **m, "min_detectable_change_pct": changes.min_detectable_change_pct(m)}


def run_rows(inputs: Inputs) -> list[dict]:
    out = []
    for info in inputs.runs:
        run, m = info.run, info.measurement
        subject = run.get("subject") if isinstance(run.get("subject"), dict) else {}
        out.append({
            "run_id": m["run_id"], "run_date": m["run_date"], "protocol_id": m["protocol_id"],
            "series": m["series"], "lane": info.lane, "twin_id": m.get("twin_id"),
            "subject_model_id": m["subject_model_id"], "model_family": m.get("model_family"),
            "returned_model_id": m.get("returned_model_id"), "condition_profile": m.get("condition_profile"),
            "api_surface_sha": m.get("api_surface_sha"),
            "explicitly_set": run.get("explicitly_set", subject.get("explicitly_set")),
            "replicate_index": m.get("replicate_index"), "n_trials": info.n_trials,
            "started_at": run.get("started_at"), "finished_at": run.get("finished_at"),
        })
    return out


def trial_rows(inputs: Inputs):
    """The open-lane trials as rows in column order (tuples: 170,000 of them on a ten-year archive)."""
    names = [c[0] for c in TRIAL_COLUMN_SPEC][:-1]
    skip = set(names) | TRIAL_COMMON
    for run in inputs.open_runs:
        for line in run.lines:
            trial = jsonl.record_of(line)          # a line the reader verified (publish.data.sources): a record
            transport = {k: v for k, v in trial.items() if k not in skip}
            yield (*map(trial.get, names), canonical_json(transport) if transport else None)


def coverage_table_rows(inputs: Inputs) -> list[dict]:
    return [{"coverage_id": i, **r} for i, r in enumerate(inputs.coverage_rows, start=1)]


# --------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------

def _create(db: "sqlite_utils.Database", table: Table) -> None:
    db[table.name].create({c.name: SQL_TYPES[c.label] for c in table.columns}, pk=table.pk,
                          foreign_keys=table.foreign_keys or None)


def _insert(db: "sqlite_utils.Database", table: Table, rows: Iterable, ready: bool = False) -> None:
    """Insert rows in order with a plain ``executemany`` (sqlite-utils made the table and makes the
    indexes): on a ten-year archive its per-value conversion would dominate the build time.  ``rows`` are
    dicts, or tuples already in column order and converted when ``ready``."""
    names = table.column_names
    sql = (f'insert into "{table.name}" ({", ".join(chr(34) + n + chr(34) for n in names)}) '
           f'values ({", ".join("?" for _ in names)})')
    labels = [c.label for c in table.columns]
    if not ready:
        rows = ([_value(r.get(n), label) for n, label in zip(names, labels)] for r in rows)
    try:
        db.conn.executemany(sql, rows)
    except (sqlite3.Error, ValueError, TypeError) as exc:
        raise PublishError(f"table {table.name}: a value could not be stored ({exc})") from None


def build(path: Path, inputs: Inputs) -> None:
    """Write the database to ``path`` (which must not exist yet)."""
    if path.exists():
        raise FileExistsError(f"{path} already exists; the database is always built fresh")
    connection = sqlite3.connect(str(path))
    # A fresh file that is discarded on any failure: no journal and no fsync per transaction while it is
    # written (the finished file is fsynced once by the caller's swap).
    connection.execute("pragma journal_mode = off")
    connection.execute("pragma synchronous = off")
    # The whole file (a ten-year archive ~230 MB) in the page cache and index sorts in memory while it is
    # built: the default 2 MB cache re-read index pages on every insert.  Neither changes a byte of the file.
    connection.execute("pragma cache_size = -524288")
    connection.execute("pragma temp_store = memory")
    import sqlite_utils   # here, not above: the light install (no archive extra) reads this module's column specs

    db = sqlite_utils.Database(connection)
    for table in TABLES:
        _create(db, table)
    with connection:
        _insert(db, TABLE_BY_NAME["protocols"], protocol_rows(inputs))
        _insert(db, TABLE_BY_NAME["runs"], run_rows(inputs))
        _insert(db, TABLE_BY_NAME["measurements"], measurement_rows(inputs))
        _insert(db, TABLE_BY_NAME["changes"], ({"reading": numbers.change_reading(r), **r}
                                               for r in changes.change_rows(inputs.measurements, inputs.cells)))
        outcome_table = TABLE_BY_NAME["outcomes"]
        _insert(db, outcome_table, (dict(zip(outcome_table.column_names, row))
                                    for row in csvs.outcome_rows(inputs.measurements)))
        _insert(db, TABLE_BY_NAME["coverage"], coverage_table_rows(inputs))
        _insert(db, TABLE_BY_NAME["open_lane_trials"], trial_rows(inputs), ready=True)
        _insert(db, TABLE_BY_NAME["comparison_points"], comparison_rows(inputs))
        _insert(db, TABLE_BY_NAME["instrument"], instrument_rows(inputs))
        _insert(db, TABLE_BY_NAME["succession"], succession_rows(inputs))
        _insert(db, TABLE_BY_NAME["human_model_gap"], human_gap.rows())
    for table in TABLES:
        for columns in table.indexes:
            db[table.name].create_index(list(columns), find_unique_name=True)
    for view in VIEWS:
        db.create_view(view.name, view.sql)
    connection.execute("pragma journal_mode = delete")
    connection.commit()
    connection.close()
