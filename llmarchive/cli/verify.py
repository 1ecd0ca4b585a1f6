"""``llmarchive verify``: recompute a measurement and list every difference.

Three ways in, one recomputation (:func:`measure.verify.recompute`):

* a run folder (``private/experiments/<run_id>``), for the owner;
* ``--public DIR RUN_ID``, for an outsider holding nothing but a copy of
  ``public/``: the measurement row from ``stability.csv`` (or the
  ``measurements`` table of ``archive.db`` when the CSV is absent), the
  protocol's text-free header from the ``protocols`` table, and the run's
  lines from ``open-lane/<year>.jsonl``;
* the three files spelled out (``--trials``, ``--measurement``,
  ``--protocol``), for a row saved from Datasette's JSON or anywhere else.

Published cells are text (a CSV cell, a database column holding canonical
JSON, a 0/1 boolean), so every value is decoded by the type label the
schema gives its field before anything is computed, and checked: a value of
the wrong type, a file that is not UTF-8, a truncated line or a header of
another protocol is one line naming the file and the problem, never a
traceback.
"""
import argparse
import csv
import io
import json
import math
import sqlite3
import sys
from pathlib import Path
from typing import Any, Mapping, Optional

from llmarchive.cli import CommandError
from llmarchive.cli._options import add_json, print_json
from measure import chain
from measure.schema import MEASUREMENT_FIELD_NAMES, MEASUREMENT_FIELDS
from measure.errors import ArchiveError
from measure.verify import recompute

ORDER = 80


class ChainBroken(ArchiveError):
    """A run folder's trial log does not verify: a failed check (exit 1), not bad input."""

DB_FILE = "archive.db"
DERIVED_PROTOCOL_COLUMNS = ("design_readers",)  # published beside the header, not part of it
STABILITY_FILE = "stability.csv"

# Trial fields the estimator reads, with the types it needs (None allowed where a trial may lack a value).
TRIAL_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {
    "item_id": ((str,), False), "version": ((str,), False), "outcome": ((str,), False),
    "replicate_index": ((int,), False), "token": ((str,), True), "response_text": ((str,), True),
}
LABEL_WORDS = {"pct": "a number", "unit_interval": "a number", "number": "a number", "int": "an integer",
               "count": "an integer", "bool": "true or false", "text": "text", "json": "a JSON value"}


def public_command(public_dir: str = "public", run_id: str = "RUN_ID") -> str:
    """The exact command the site's Data page shows an outsider (:func:`publish.open_lane.verify_command`)."""
    from publish.open_lane import verify_command

    return verify_command(run_id, public_dir)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verify",
        help="recompute a measurement from its trials and report every field that differs",
        description=(
            "Recompute a measurement with the frozen estimator and list every field that differs. "
            "Give a run folder (private/experiments/<run_id>); or, with nothing but a copy of the published "
            "files, --public DIR RUN_ID (reads stability.csv or archive.db, the protocols table and "
            "open-lane/<year>.jsonl); or the three files: --trials (JSONL, e.g. open-lane/<year>.jsonl), "
            "--measurement (one JSON record, e.g. a row saved from Datasette) and --protocol (the protocol's "
            "text-free header as JSON)."
        ),
    )
    p.add_argument("run_dir", nargs="?", metavar="RUN_DIR | RUN_ID",
                   help="a run folder with run.json, trials.jsonl, measurement.json; with --public, the run id")
    p.add_argument("--public", metavar="DIR", help="a copy of the published files (public/)")
    p.add_argument("--trials", help="JSONL file of trial records")
    p.add_argument("--measurement", help="JSON file with the measurement record")
    p.add_argument("--protocol", help="JSON file with the protocol header")
    add_json(p, "print the differences as a JSON list")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------
# reading files: every failure is one line naming the file
# --------------------------------------------------------------------------

def read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CommandError(f"{path}: a folder, not a file") from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text (byte {exc.start} is {data[exc.start:exc.start + 1]!r})") from None


def read_json_file(path: Path) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise CommandError(f"{path}: JSON nested too deeply") from None


def _check_trial(trial: dict, where: str) -> None:
    for name, (types, nullable) in TRIAL_TYPES.items():
        value = trial.get(name)
        if value is None:
            if nullable:
                continue
            raise CommandError(f"{where}: the trial has no {name!r}")
        if isinstance(value, bool) or not isinstance(value, types):
            want = "an integer" if types == (int,) else "text"
            raise CommandError(f"{where}: field {name!r} should be {want}, got {type(value).__name__} {value!r}")


def read_records(path: Path, torn_tail_ok: bool) -> list[tuple[int, dict]]:
    """Every record of a JSONL file with its line number, checked line by line.

    A run folder's own log may end in a torn line a killed process left
    (never reported written, so ignored when ``torn_tail_ok``); a published
    file never does, so there a last line without its newline is an error.
    """
    text = read_text(path)
    lines = text.split("\n")
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = number == len(lines)  # text after the final newline
        if torn and torn_tail_ok:
            break
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = " - the file ends in the middle of this line (truncated?)" if torn else ""
            raise CommandError(f"{path}, line {number}: not valid JSON ({exc.msg}){hint}") from None
        except RecursionError:
            raise CommandError(f"{path}, line {number}: JSON nested too deeply") from None
        if torn:
            raise CommandError(f"{path}, line {number}: the last line has no newline (truncated?)")
        if not isinstance(record, dict):
            raise CommandError(f"{path}, line {number}: not a JSON object")
        out.append((number, record))
    return out


def read_trials(path: Path, run_id: Optional[str], torn_tail_ok: bool,
                records: Optional[list[tuple[int, dict]]] = None) -> list[dict]:
    """The trial records of ``run_id`` (every trial when ``None``) in ``path``, each type-checked."""
    out = []
    for number, record in records if records is not None else read_records(path, torn_tail_ok):
        if record.get("record_type", "trial") != "trial":
            continue
        if run_id is not None and record.get("run_id") not in (None, run_id):
            continue
        _check_trial(record, f"{path}, line {number}")
        out.append(record)
    return out


# --------------------------------------------------------------------------
# decoding published cells by their type labels
# --------------------------------------------------------------------------

def decode(value: Any, label: str, where: str, name: str, from_text: bool) -> Any:
    """One value of field ``name`` as the estimator wrote it, from a JSON value, a CSV cell or a column."""
    def wrong() -> CommandError:
        return CommandError(f"{where}: field {name!r} should be {LABEL_WORDS.get(label, label)}, got "
                            f"{type(value).__name__} {str(value)[:60]!r}")

    if value is None or (from_text and value == "" and label != "text"):
        return None
    if from_text and value == "" and label == "text":
        return None
    if label == "json":
        if isinstance(value, str):
            try:
                return json.loads(value)
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
        raise CommandError(f"{where}: not a measurement row of this schema (missing {', '.join(missing[:5])})")
    out = {name: decode(record[name], label, where, name, from_text) for name, label in MEASUREMENT_FIELDS}
    if out["record_type"] != "measurement":
        raise CommandError(f"{where}: record_type is {out['record_type']!r}, not 'measurement'")
    return out


def _header_labels() -> dict[str, str]:
    from publish.database import PROTOCOL_COLUMN_SPEC

    return {name: label for name, label, _ in PROTOCOL_COLUMN_SPEC}


def decode_header(record: Mapping, where: str, measurement: Mapping) -> dict:
    """The protocol's text-free header, decoded, checked, and checked to be the measurement's protocol."""
    if not isinstance(record, Mapping):
        raise CommandError(f"{where}: not a JSON object")
    labels = _header_labels()
    missing = [name for name in ("protocol_id", "options", "grammar_version") if name not in record]
    if missing:
        raise CommandError(f"{where}: not a protocol header (missing {', '.join(missing)})")
    header = {name: (decode(value, labels[name], where, name, False) if name in labels else value)
              for name, value in record.items() if name not in DERIVED_PROTOCOL_COLUMNS}
    options = header["options"]
    if not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
        raise CommandError(f"{where}: field 'options' should be a non-empty list of strings, got {options!r}")
    if "item_ids" in header and not isinstance(header["item_ids"], list):
        raise CommandError(f"{where}: field 'item_ids' should be a list, got {header['item_ids']!r}")
    for name in ("protocol_id", "panel_sha256", "protocol_sha256"):
        if (name == "protocol_id" or header.get(name) is not None) and header.get(name) != measurement.get(name):
            raise CommandError(f"{where}: a header of another protocol ({name} {header[name]!r}; the measurement "
                               f"{measurement.get('run_id')!r} has {measurement.get(name)!r})")
    return header


def _single(document: Any, where: str) -> Any:
    """A saved Datasette answer (``{"rows": [row]}``, shape objects) stands for its one row."""
    if isinstance(document, dict) and isinstance(document.get("rows"), list) and "record_type" not in document \
            and "protocol_id" not in document:
        rows = document["rows"]
        if len(rows) != 1 or not isinstance(rows[0], dict):
            raise CommandError(f"{where}: a Datasette answer with {len(rows)} rows; save the one row "
                               "(?_shape=objects) you mean")
        return rows[0]
    if not isinstance(document, dict):
        raise CommandError(f"{where}: not a JSON object")
    return document


# --------------------------------------------------------------------------
# the three ways in
# --------------------------------------------------------------------------

def _open_db(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        connection.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise CommandError(f"{path}: not a readable SQLite database ({exc})") from None
    connection.row_factory = sqlite3.Row
    return connection


def _db_row(connection: sqlite3.Connection, db: Path, table: str, key: str, value: str) -> Optional[dict]:
    try:
        row = connection.execute(f'select * from "{table}" where "{key}" = ?', (value,)).fetchone()
    except sqlite3.DatabaseError as exc:
        raise CommandError(f"{db}: table {table} cannot be read ({exc})") from None
    return dict(row) if row is not None else None


def _measurement_from_csv(path: Path, run_id: str) -> Optional[dict]:
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        header = next(reader, None)
        if header is None or tuple(header) != MEASUREMENT_FIELD_NAMES:
            raise CommandError(f"{path}: its header is not the measurement schema's fields")
        for number, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise CommandError(f"{path}, row {number}: {len(row)} cells, the header has {len(header)}")
            if row[header.index("run_id")] == run_id:
                return decode_measurement(dict(zip(header, row)), f"{path}, row {number}", from_text=True)
    except csv.Error as exc:
        raise CommandError(f"{path}: not a readable CSV ({exc})") from None
    return None


def public_inputs(folder: Path, run_id: str) -> tuple[dict, list[dict], dict, Path]:
    """Measurement, trials and header of ``run_id`` from a copy of ``public/`` and nothing else."""
    if not folder.is_dir():
        raise CommandError(f"{folder}: not a folder of published files")
    db = folder / DB_FILE
    connection = _open_db(db)
    try:
        csv_file = folder / STABILITY_FILE
        if csv_file.exists():
            measurement = _measurement_from_csv(csv_file, run_id)
            source = csv_file
        else:
            row = _db_row(connection, db, "measurements", "run_id", run_id)
            measurement = decode_measurement(row, f"{db}, measurements {run_id}") if row else None
            source = db
        if measurement is None:
            raise CommandError(f"{source}: no measurement with run_id {run_id!r}")
        header_row = _db_row(connection, db, "protocols", "protocol_id", measurement["protocol_id"])
        if header_row is None:
            raise CommandError(f"{db}: no protocol {measurement['protocol_id']!r} in the protocols table")
        header = decode_header(header_row, f"{db}, protocols {measurement['protocol_id']}", measurement)
    finally:
        connection.close()
    run_date = measurement.get("run_date") or ""
    trials_file = folder / "open-lane" / f"{run_date[:4]}.jsonl"
    if "open" not in (header.get("lane"), measurement.get("lane")):  # declassified: the current lane is open
        raise CommandError(f"run {run_id!r} is in the {header.get('lane')} lane: its trials are not published, "
                           "so only an open-lane run can be recomputed from the public files")
    trials = read_trials(trials_file, run_id, torn_tail_ok=False)
    if not trials:
        raise CommandError(f"{trials_file}: no trials of run {run_id!r} (only open-lane runs publish their trials)")
    return measurement, trials, header, trials_file


def _folder_inputs(folder: Path) -> tuple[dict, list[dict], dict, Path]:
    if not folder.is_dir():
        raise CommandError(f"{folder}: not a run folder")
    run_record = read_json_file(folder / "run.json")
    if not isinstance(run_record, dict) or not isinstance(run_record.get("protocol_header"), dict):
        raise CommandError(f"{folder / 'run.json'}: no protocol_header object")
    if not (folder / "measurement.json").exists():
        raise CommandError(f"{folder}: no measurement.json to verify (the run is not complete)")
    where = folder / "measurement.json"
    measurement = decode_measurement(_single(read_json_file(where), str(where)), str(where))
    log = folder / "trials.jsonl"
    records = read_records(log, torn_tail_ok=True)
    trials = read_trials(log, None, True, records)
    header = decode_header(run_record["protocol_header"], f"{folder / 'run.json'} protocol_header", measurement)
    if any("record_sha256" in r for _, r in records):
        # A run folder holds the whole chain, so it must verify from its genesis.
        try:
            chain.verify([r for _, r in records])
        except chain.ChainError as exc:
            raise ChainBroken(f"{log}: trial log chain broken: {exc}") from None
    return measurement, trials, header, log


def _file_inputs(args) -> tuple[dict, list[dict], dict, Path]:
    if not (args.trials and args.measurement and args.protocol):
        raise CommandError("give a run folder, --public DIR RUN_ID, or all of --trials, --measurement and --protocol")
    where = Path(args.measurement)
    measurement = decode_measurement(_single(read_json_file(where), str(where)), str(where))
    protocol_file = Path(args.protocol)
    header = decode_header(_single(read_json_file(protocol_file), str(protocol_file)), str(protocol_file),
                           measurement)
    trials = read_trials(Path(args.trials), measurement["run_id"], torn_tail_ok=False)
    return measurement, trials, header, Path(args.trials)


def run(args: argparse.Namespace) -> int:
    if args.public:
        if not args.run_dir:
            raise CommandError("--public DIR needs the run id to recompute: llmarchive verify --public DIR RUN_ID")
        measurement, trials, protocol, trials_file = public_inputs(Path(args.public), args.run_dir)
    elif args.run_dir:
        try:
            measurement, trials, protocol, trials_file = _folder_inputs(Path(args.run_dir))
        except ChainBroken as exc:
            print(str(exc), file=sys.stderr)
            return 1
    else:
        measurement, trials, protocol, trials_file = _file_inputs(args)
    if not trials:
        raise CommandError(f"{trials_file}: no trials of run {measurement.get('run_id')!r} were found")
    differences = recompute(measurement, trials, protocol)
    if args.json:
        print_json(differences)
    elif differences:
        for d in differences:
            print(f"DIFFERS {d['field']}: recorded {d['recorded']!r}, recomputed {d['recomputed']!r}")
    else:
        print(f"OK {measurement.get('run_id')}: {len(trials)} trials from {trials_file}, "
              "every field recomputes exactly")
    return 1 if differences else 0
