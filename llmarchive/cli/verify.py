"""``llmarchive verify``: recompute a measurement and list every difference.

Three ways in, one recomputation (:func:`measure.verify.recompute`):

* a run folder (``private/experiments/<run_id>``), for the owner;
* ``--public DIR RUN_ID``, for an outsider holding nothing but a copy of
  ``public/``: read by :func:`publish.readback.files.public_inputs`, the other half
  of the publisher, under the publisher's own file names;
* the three files spelled out (``--trials``, ``--measurement``,
  ``--protocol``), for a row saved from Datasette's JSON or anywhere else.

Every file is read and every value decoded and type-checked by
:mod:`publish.readback.files`, so bad input is one line naming the file and the
problem (a :class:`publish.errors.PublishError`), never a traceback; this
module keeps the arguments and the printing.

Beside the estimator's fields, what the record lists of the run's trials is
recomputed from them too (:data:`measure.schema.BESIDE_MEASUREMENT_FIELDS`:
the server builds, ``system_fingerprints``, read from ``run.json``, the
published row or the saved one).  A record that does not carry it (a run
or a publication older than the field) is not judged on it.  So is
``returned_model_id``: every id the trials name, each once, sorted and
comma-joined (:mod:`llmarchive.subjects.returned_model`); trials that name
none leave nothing to recompute it from.

``--deep`` is the other verification, of the archive's history rather than
of one measurement: every hash-chained log (record logs, spend ledger,
admissions, outbox, every run's trial log) parsed and chained whole, from
its first record, and each still holding the bytes its last deep
verification saw (:mod:`llmarchive.archive.log_checkpoints`).  ``--rotation``
is the daily slice of it that the ``log_integrity`` schedule runs: the logs
whose verification is oldest, so each is verified within a week.  Either
pages the owner through the outbox when a log is broken (with a webhook set).
"""
import argparse
import os
import sys
from pathlib import Path

from llmarchive.cli import CommandError
from llmarchive.archive import ArchivePaths, store, utc_today
from llmarchive.schedule import deep_rotation, webhook_from
from llmarchive.subjects import returned_model_id_differences
from llmarchive.cli._options import add_date, add_json, print_json
from measure import chain
from measure.errors import ArchiveError
from measure.schema import BESIDE_MEASUREMENT_FIELD_NAMES, system_fingerprints
from measure.verify import recompute

# How each field beside the measurement is recomputed from the trials (every one of them has its way).
BESIDE_RECOMPUTED = {"system_fingerprints": system_fingerprints}
assert tuple(BESIDE_RECOMPUTED) == BESIDE_MEASUREMENT_FIELD_NAMES

ORDER = 80


class ChainBroken(ArchiveError):
    """A run folder's trial log does not verify: a failed check (exit 1), not bad input."""


def public_command(public_dir: str = "public", run_id: str = "RUN_ID") -> str:
    """The exact command the site's Data page shows an outsider (:func:`publish.data.open_lane.verify_command`)."""
    # publish is imported in the handlers, not above: it loads sqlite_utils and pandas (~0.4 s), and the CLI
    # imports every subcommand module at start, so every command would pay for it.  Not a cycle.
    from publish.data import verify_command

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
                   help=f"a run folder with {store.RUN_FILE}, {store.TRIALS_FILE}, {store.MEASUREMENT_FILE}; "
                        "with --public, the run id")
    p.add_argument("--public", metavar="DIR", help="a copy of the published files (public/)")
    p.add_argument("--trials", help="JSONL file of trial records")
    p.add_argument("--measurement", help="JSON file with the measurement record")
    p.add_argument("--protocol", help="JSON file with the protocol header")
    p.add_argument("--deep", action="store_true",
                   help="verify every hash-chained log of the archive ($LLMARCHIVE_HOME) whole, from its first "
                        "record; a broken one is listed, paged to $LLMARCHIVE_WEBHOOK_URL, and exits 1")
    p.add_argument("--rotation", action="store_true",
                   help="with --deep: only today's slice (the logs verified longest ago; each within a week)")
    add_date(p, "with --rotation: the day of the slice")
    add_json(p, "print the differences as a JSON list")
    p.set_defaults(func=run)


def run_deep(args: argparse.Namespace) -> int:
    """``--deep``: the archive's chained logs verified (all, or the day's slice); 1 when one is broken."""
    if args.run_dir or args.public or args.trials:
        raise CommandError("--deep verifies the whole archive ($LLMARCHIVE_HOME): give no run or file with it")
    day = args.date or utc_today()         # checked before any command runs (_options.check_dates)
    found, paged = deep_rotation.run(ArchivePaths.from_env(), day, webhook_from(os.environ), whole=not args.rotation)
    if args.json:
        print_json({"verified": found.verified, "broken": [{"log": log, "problem": p} for log, p in found.broken],
                    "logs": found.total, "paged": [page.key for page in paged]})
    else:
        for _, problem in found.broken:
            print(f"BROKEN {problem}")
        which = "the day's slice: " if args.rotation else ""
        said = f"; {len(paged)} page(s) recorded for the owner" if paged else ""
        print(f"{'FAILED' if found.broken else 'OK'}: {which}{len(found.verified)} of {found.total} chained logs "
              f"verified whole, {len(found.broken)} broken{said}")
    return 1 if found.broken else 0


# --------------------------------------------------------------------------
# the three ways in (the reading itself is publish.readback's)
# --------------------------------------------------------------------------

Inputs = tuple[dict, list[dict], dict, Path, dict]
"""measurement, trials, protocol header, the trials' file, and the fields beside the measurement it carries."""


def _folder_inputs(folder: Path) -> Inputs:
    # publish.readback.files in the function: see public_command
    from publish.readback import (decode_beside, decode_header, decode_measurement, read_json_file, read_records,
                                  read_trials, single_row)

    if not folder.is_dir():
        raise CommandError(f"{folder}: not a run folder")
    run_file = store.run_file(folder)
    run_record = read_json_file(run_file)
    if not isinstance(run_record, dict) or not isinstance(run_record.get("protocol_header"), dict):
        raise CommandError(f"{run_file}: no protocol_header object")
    where = store.measurement_file(folder)
    if not where.exists():
        raise CommandError(f"{folder}: no {where.name} to verify (the run is not complete)")
    measurement = decode_measurement(single_row(read_json_file(where), str(where)), str(where))
    log = store.trial_log(folder)
    records = read_records(log, torn_tail_ok=True)
    trials = read_trials(log, None, True, records)
    header = decode_header(run_record["protocol_header"], f"{run_file} protocol_header", measurement)
    if any("record_sha256" in r for _, r in records):
        # A run folder holds the whole chain, so it must verify from its genesis.
        try:
            chain.verify([r for _, r in records])
        except chain.ChainError as exc:
            raise ChainBroken(f"{log}: trial log chain broken: {exc}") from None
    return measurement, trials, header, log, decode_beside(run_record, str(run_file))


def _file_inputs(args) -> Inputs:
    # publish.readback.files in the function: see public_command
    from publish.readback import (decode_beside, decode_header, decode_measurement, read_json_file, read_trials,
                                  single_row)

    if not (args.trials and args.measurement and args.protocol):
        raise CommandError("give a run folder, --public DIR RUN_ID, or all of --trials, --measurement and --protocol")
    where = Path(args.measurement)
    row = single_row(read_json_file(where), str(where))
    measurement = decode_measurement(row, str(where))
    protocol_file = Path(args.protocol)
    header = decode_header(single_row(read_json_file(protocol_file), str(protocol_file)), str(protocol_file),
                           measurement)
    trials = read_trials(Path(args.trials), measurement["run_id"], torn_tail_ok=False)
    return measurement, trials, header, Path(args.trials), decode_beside(row, str(where))


def beside_differences(beside: dict, trials: list[dict]) -> list[dict]:
    """Each field beside the measurement that the record carries, recomputed from the trials, where it differs."""
    out = []
    for name, value in sorted(beside.items()):
        again = BESIDE_RECOMPUTED[name](trials)
        if value != again:
            out.append({"field": name, "recorded": value, "recomputed": again})
    return out


def run(args: argparse.Namespace) -> int:
    if args.deep or args.rotation:
        return run_deep(args)
    if args.public:
        if not args.run_dir:
            raise CommandError("--public DIR needs the run id to recompute: llmarchive verify --public DIR RUN_ID")
        from publish.readback import public_inputs        # in the function: see public_command

        found = public_inputs(Path(args.public), args.run_dir)
        measurement, trials, protocol, trials_file, beside = (found.measurement, found.trials, found.header,
                                                              found.trials_file, found.beside or {})
    elif args.run_dir:
        try:
            measurement, trials, protocol, trials_file, beside = _folder_inputs(Path(args.run_dir))
        except ChainBroken as exc:
            print(str(exc), file=sys.stderr)
            return 1
    else:
        measurement, trials, protocol, trials_file, beside = _file_inputs(args)
    if not trials:
        raise CommandError(f"{trials_file}: no trials of run {measurement.get('run_id')!r} were found")
    differences = (recompute(measurement, trials, protocol) + beside_differences(beside, trials)
                   + returned_model_id_differences(measurement, trials))
    if args.json:
        print_json(differences)
    elif differences:
        for d in differences:
            print(f"DIFFERS {d['field']}: recorded {d['recorded']!r}, recomputed {d['recomputed']!r}")
    else:
        print(f"OK {measurement.get('run_id')}: {len(trials)} trials from {trials_file}, "
              "every field recomputes exactly")
    return 1 if differences else 0
