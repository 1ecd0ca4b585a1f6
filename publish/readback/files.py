"""Reading the published files back: the other half of ``llmarchive verify --public``.

An outsider holding nothing but a copy of ``public/`` recomputes an
open-lane measurement from three of its files (:func:`public_inputs`): the
measurement row from ``stability.csv`` (or the ``measurements`` table of
``archive.db`` when the CSV is absent), the protocol's text-free header from
the ``protocols`` table, and the run's lines from ``open-lane/<year>.jsonl``.
The file names are the publisher's own (:mod:`publish.data.csvs`,
:mod:`publish.data.files`, :mod:`publish.data.open_lane`), so a rename there
cannot leave this reader looking for a file that is no longer written.
:func:`published_problems` reads a copy of ``public/`` as a whole against the
table of published files (:data:`publish.data.files.PUBLISHED`), the render
manifest and ``croissant.json``.

Published cells are text (a CSV cell, a database column holding canonical
JSON, a 0/1 boolean), so every value is decoded by the type label the
schema gives its field before anything is computed, and checked: a value of
the wrong type, a file that is not UTF-8, a truncated line or a header of
another protocol is one :class:`PublishError` naming the file and the
problem, never a traceback.  The same decoders read a measurement or header
saved from Datasette's JSON, and a run folder's records (``llmarchive
verify`` with a run folder or the three files spelled out).
"""
import csv
import hashlib
import io
import json
import math
import sqlite3
from pathlib import Path
from typing import Any, BinaryIO, Mapping, NamedTuple, Optional

from measure import jsonl, schema
from measure.records import Trial
from measure.schema import MEASUREMENT_FIELD_NAMES, MEASUREMENT_FIELDS
from publish.data import DESIGN_COLUMN_SPEC, PROTOCOL_COLUMN_SPEC, csvs, files as published, open_lane
from publish.errors import PublishError
from publish.words import READING_COLUMNS

DERIVED_NAMES = tuple(name for name, _, _ in READING_COLUMNS)
"""The words stability.csv publishes before the schema's fields; a copy of an older publication has none."""
LABEL_WORDS = {"pct": "a number", "unit_interval": "a number", "number": "a number", "int": "an integer",
               "count": "an integer", "bool": "true or false", "text": "text", "json": "a JSON value"}


class PublicInputs(NamedTuple):
    """What the recomputation needs, and the file the trials came from (named in its report).

    ``beside``: the published fields beside the measurement
    (:data:`measure.schema.BESIDE_MEASUREMENT_FIELDS`, the server builds),
    decoded, for the ones the row carries (a copy of an older publication
    has none); ``llmarchive verify`` recomputes them from the trials.
    """

    measurement: dict
    trials: list[dict]
    header: dict
    trials_file: Path
    beside: Optional[dict] = None


# --------------------------------------------------------------------------
# reading files: every failure is one line naming the file
# --------------------------------------------------------------------------

def _open(path: Path) -> BinaryIO:
    """``path`` opened to read; a missing file or a folder is one line naming it."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise PublishError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PublishError(f"{path}: a folder, not a file") from None
    except OSError as exc:
        raise PublishError(f"{path}: cannot be read ({exc.strerror})") from None


def read_text(path: Path) -> str:
    with _open(path) as fh:
        try:
            data = fh.read()
        except OSError as exc:
            raise PublishError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PublishError(f"{path}: not UTF-8 text (byte {exc.start} is {data[exc.start:exc.start + 1]!r})") from None


def read_json_file(path: Path) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)        # one JSON document: a published .json file, as an outsider reads it
    except json.JSONDecodeError as exc:
        raise PublishError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise PublishError(f"{path}: JSON nested too deeply") from None


def typed_trial(trial: dict, where: str) -> Trial:
    """The trial as a :class:`measure.records.Trial`: refused, as a :class:`PublishError` with the schema's
    one-line message, when a field the estimator reads is missing or any field has the wrong type."""
    try:
        return Trial(trial, where)
    except schema.TrialError as exc:
        raise PublishError(str(exc)) from None


def read_records(path: Path, torn_tail_ok: bool) -> list[tuple[int, dict]]:
    """Every record of a JSONL file with its line number, read by :data:`measure.jsonl.REFUSE`.

    The first line that cannot be read refuses the file, naming it and the
    line.  A run folder's own log may end in a torn line a killed process
    left (never reported written, so passed over when ``torn_tail_ok``); a
    published file never does, so there a last line without its newline is
    an error.
    """
    reader = jsonl.JsonlReader(jsonl.REFUSE, str(path), torn_tail=jsonl.DROP if torn_tail_ok else jsonl.REFUSED)
    with _open(path) as fh:
        try:
            return [(line.number, line.record) for line in reader.lines(fh)]
        except jsonl.JsonlError as exc:
            raise PublishError(str(exc)) from None
        except OSError as exc:
            raise PublishError(f"{path}: cannot be read ({exc.strerror})") from None


def read_trials(path: Path, run_id: Optional[str], torn_tail_ok: bool,
                records: Optional[list[tuple[int, dict]]] = None) -> list[Trial]:
    """The trial records of ``run_id`` (every trial when ``None``) in ``path``, each typed and checked."""
    out = []
    for number, record in records if records is not None else read_records(path, torn_tail_ok):
        if record.get("record_type", "trial") != "trial":
            continue
        if run_id is not None and record.get("run_id") not in (None, run_id):
            continue
        out.append(typed_trial(record, f"{path}, line {number}"))
    return out


# --------------------------------------------------------------------------
# decoding published cells by their type labels
# --------------------------------------------------------------------------

def decode(value: Any, label: str, where: str, name: str, from_text: bool) -> Any:
    """One value of field ``name`` as the estimator wrote it, from a JSON value, a CSV cell or a column."""
    def wrong() -> PublishError:
        return PublishError(f"{where}: field {name!r} should be {LABEL_WORDS.get(label, label)}, got "
                            f"{type(value).__name__} {str(value)[:60]!r}")

    if value is None or (from_text and value == "" and label != "text"):
        return None
    if from_text and value == "" and label == "text":
        return None
    if label == "json":
        if isinstance(value, str):
            try:
                return json.loads(value)        # one JSON document: a cell labelled json
            except (json.JSONDecodeError, RecursionError):
                raise wrong() from None
        if isinstance(value, (dict, list)):
            return value
        raise wrong()
    if label == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value in ("true", "false", "1", "0"):
            return value in ("true", "1")
        raise wrong()
    if label in ("int", "count"):
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                raise wrong() from None
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise wrong()
    if label in ("pct", "unit_interval", "number"):
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise wrong() from None
            if not math.isfinite(number):
                raise wrong()
            return number
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        raise wrong()
    if isinstance(value, str):
        return value
    raise wrong()


def decode_measurement(record: Mapping, where: str, from_text: bool = False) -> dict:
    """A measurement record from a published row: schema fields only, each decoded and type-checked."""
    missing = [name for name in MEASUREMENT_FIELD_NAMES if name not in record]
    if missing:
        raise PublishError(f"{where}: not a measurement row of this schema (missing {', '.join(missing[:5])})")
    out = {name: decode(record[name], label, where, name, from_text) for name, label in MEASUREMENT_FIELDS}
    if out["record_type"] != "measurement":
        raise PublishError(f"{where}: record_type is {out['record_type']!r}, not 'measurement'")
    return out


def decode_beside(record: Mapping, where: str, from_text: bool = False) -> dict:
    """The fields beside a measurement that a published row (or a saved one) carries, decoded and checked.

    Each is the schema's ``json`` list of strings, or null; a field the row
    does not carry is left out (an older publication, or a row saved without
    it), so nothing is claimed about it.
    """
    out = {}
    for name, label, _ in schema.BESIDE_MEASUREMENT_FIELDS:
        if name not in record:
            continue
        value = decode(record[name], label, where, name, from_text)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise PublishError(f"{where}: field {name!r} should be a JSON list of strings, got "
                               f"{schema.json_type_words(value)}")
        out[name] = value
    return out


def _header_labels() -> dict[str, str]:
    return {name: label for name, label, _ in PROTOCOL_COLUMN_SPEC}


def _derived_protocol_columns() -> tuple[str, ...]:
    """Columns the protocols table publishes beside the header (the design figures), not part of it."""
    return tuple(name for name, _, _ in DESIGN_COLUMN_SPEC)


def decode_header(record: Mapping, where: str, measurement: Mapping) -> dict:
    """The protocol's text-free header, decoded, checked, and checked to be the measurement's protocol."""
    if not isinstance(record, Mapping):
        raise PublishError(f"{where}: not a JSON object")
    labels = _header_labels()
    derived = _derived_protocol_columns()
    missing = [name for name in ("protocol_id", "options", "grammar_version") if name not in record]
    if missing:
        raise PublishError(f"{where}: not a protocol header (missing {', '.join(missing)})")
    header = {name: (decode(value, labels[name], where, name, False) if name in labels else value)
              for name, value in record.items() if name not in derived}
    options = header["options"]
    if not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
        raise PublishError(f"{where}: field 'options' should be a non-empty list of strings, got {options!r}")
    if "item_ids" in header and not isinstance(header["item_ids"], list):
        raise PublishError(f"{where}: field 'item_ids' should be a list, got {header['item_ids']!r}")
    for name in ("protocol_id", "panel_sha256", "protocol_sha256"):
        if (name == "protocol_id" or header.get(name) is not None) and header.get(name) != measurement.get(name):
            raise PublishError(f"{where}: a header of another protocol ({name} {header[name]!r}; the measurement "
                               f"{measurement.get('run_id')!r} has {measurement.get(name)!r})")
    return header


def single_row(document: Any, where: str) -> Any:
    """A saved Datasette answer (``{"rows": [row]}``, shape objects) stands for its one row."""
    if isinstance(document, dict) and isinstance(document.get("rows"), list) and "record_type" not in document \
            and "protocol_id" not in document:
        rows = document["rows"]
        if len(rows) != 1 or not isinstance(rows[0], dict):
            raise PublishError(f"{where}: a Datasette answer with {len(rows)} rows; save the one row "
                               "(?_shape=objects) you mean")
        return rows[0]
    if not isinstance(document, dict):
        raise PublishError(f"{where}: not a JSON object")
    return document


# --------------------------------------------------------------------------
# a copy of public/
# --------------------------------------------------------------------------

def _open_db(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise PublishError(f"{path}: no such file")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        connection.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise PublishError(f"{path}: not a readable SQLite database ({exc})") from None
    connection.row_factory = sqlite3.Row
    return connection


def _db_row(connection: sqlite3.Connection, db: Path, table: str, key: str, value: str) -> Optional[dict]:
    try:
        row = connection.execute(f'select * from "{table}" where "{key}" = ?', (value,)).fetchone()
    except sqlite3.DatabaseError as exc:
        raise PublishError(f"{db}: table {table} cannot be read ({exc})") from None
    return dict(row) if row is not None else None


def _schema_part(header: list[str]) -> tuple[str, ...]:
    """The header without the fields beside the measurement that end it (an older copy has none)."""
    beside = schema.BESIDE_MEASUREMENT_FIELD_NAMES
    return tuple(header[:-len(beside)]) if tuple(header[-len(beside):]) == beside else tuple(header)


def _measurement_from_csv(path: Path, run_id: str) -> Optional[tuple[dict, dict]]:
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        header = next(reader, None)
        body = _schema_part(header) if header is not None else ()
        if header is None or body[-len(MEASUREMENT_FIELD_NAMES):] != MEASUREMENT_FIELD_NAMES \
                or body[:-len(MEASUREMENT_FIELD_NAMES)] not in ((), DERIVED_NAMES):
            raise PublishError(f"{path}: its header is not the measurement schema's fields (after the derived "
                               f"{', '.join(DERIVED_NAMES)}, before {', '.join(schema.BESIDE_MEASUREMENT_FIELD_NAMES)})")
        for number, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise PublishError(f"{path}, row {number}: {len(row)} cells, the header has {len(header)}")
            if row[header.index("run_id")] == run_id:
                where, record = f"{path}, row {number}", dict(zip(header, row))
                return (decode_measurement(record, where, from_text=True),
                        decode_beside(record, where, from_text=True))
    except csv.Error as exc:
        raise PublishError(f"{path}: not a readable CSV ({exc})") from None
    return None


def public_inputs(folder: Path, run_id: str) -> PublicInputs:
    """Measurement, trials and header of ``run_id`` from a copy of ``public/`` and nothing else."""
    if not folder.is_dir():
        raise PublishError(f"{folder}: not a folder of published files")
    db = folder / published.DATABASE.name
    connection = _open_db(db)
    try:
        csv_file = folder / csvs.STABILITY_FILE
        if csv_file.exists():
            found = _measurement_from_csv(csv_file, run_id)
            source = csv_file
        else:
            row = _db_row(connection, db, "measurements", "run_id", run_id)
            where = f"{db}, measurements {run_id}"
            found = (decode_measurement(row, where), decode_beside(row, where)) if row else None
            source = db
        if found is None:
            raise PublishError(f"{source}: no measurement with run_id {run_id!r}")
        measurement, beside = found
        header_row = _db_row(connection, db, "protocols", "protocol_id", measurement["protocol_id"])
        if header_row is None:
            raise PublishError(f"{db}: no protocol {measurement['protocol_id']!r} in the protocols table")
        header = decode_header(header_row, f"{db}, protocols {measurement['protocol_id']}", measurement)
    finally:
        connection.close()
    run_date = measurement.get("run_date") or ""
    trials_file = folder / open_lane.file_name(run_date[:4])
    if "open" not in (header.get("lane"), measurement.get("lane")):  # declassified: the current lane is open
        raise PublishError(f"run {run_id!r} is in the {header.get('lane')} lane: its trials are not published, "
                           "so only an open-lane run can be recomputed from the public files")
    trials = read_trials(trials_file, run_id, torn_tail_ok=False)
    if not trials:
        raise PublishError(f"{trials_file}: no trials of run {run_id!r} (only open-lane runs publish their trials)")
    return PublicInputs(measurement, trials, header, trials_file, beside)


# --------------------------------------------------------------------------
# The folder as a whole
# --------------------------------------------------------------------------

def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def published_problems(folder: Path) -> list[str]:
    """What is wrong with a copy of ``public/`` as a whole, one line each (empty: nothing).

    Every file in it is one the table of published files declares, and each
    of the table's single files is there; the render manifest lists every
    other file with the sha256 of the bytes found; and ``croissant.json``
    lists every file the table says it lists, under its name and with the
    same sha256.  The table, not a list here, says which files these are, so
    a file added to the table is read back without a change to this reader.
    """
    if not folder.is_dir():
        raise PublishError(f"{folder}: not a folder of published files")
    present = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    problems = [f"{name}: not a file the table of published files declares"
                for name in published.undeclared(present)]
    problems += [f"{entry.name}: declared but not published" for entry in published.PUBLISHED
                 if entry.set_id is None and entry.name not in present]
    manifest_name = published.MANIFEST.name
    if manifest_name not in present:
        return problems
    listed = read_json_file(folder / manifest_name).get("files") or {}
    for name in sorted(present - {manifest_name}):
        if name not in listed:
            problems.append(f"{name}: published but not in {manifest_name}")
        elif _sha256_of(folder / name) != listed[name].get("sha256"):
            problems.append(f"{name}: its bytes are not the ones {manifest_name} lists")
    problems += [f"{name}: in {manifest_name} but not published" for name in sorted(set(listed) - present)]
    croissant_name = published.CROISSANT.name
    if croissant_name in present:
        described = {d.get("@id"): d for d in read_json_file(folder / croissant_name).get("distribution") or []}
        for entry in published.in_croissant():
            if entry.set_id is not None:
                if any(entry.matches(name) for name in present) and entry.set_id not in described:
                    problems.append(f"{entry.set_id}: a published file set {croissant_name} does not list")
            elif entry.name in present:
                if entry.name not in described:
                    problems.append(f"{entry.name}: published but not in {croissant_name}")
                elif described[entry.name].get("sha256") != _sha256_of(folder / entry.name):
                    problems.append(f"{entry.name}: {croissant_name} lists another sha256")
    return problems
