"""``llmarchive verify``: recompute a measurement and list every difference."""
import argparse
import json
import sys
from pathlib import Path

from llmarchive.cli import CommandError
from llmarchive.jsonio import RecordFileError, read_json, read_jsonl
from llmarchive.runs import load_run
from measure import chain
from measure.verify import recompute

ORDER = 80


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verify",
        help="recompute a measurement from its trials and report every field that differs",
        description=(
            "Recompute a measurement with the frozen estimator and list every field that differs. "
            "Give a run folder (private/experiments/<run_id>), or the three files an outsider has: "
            "--trials (JSONL, e.g. open-lane/<year>.jsonl), --measurement (one JSON record) and "
            "--protocol (the protocol's text-free header as JSON)."
        ),
    )
    p.add_argument("run_dir", nargs="?", help="a run folder with run.json, trials.jsonl, measurement.json")
    p.add_argument("--trials", help="JSONL file of trial records")
    p.add_argument("--measurement", help="JSON file with the measurement record")
    p.add_argument("--protocol", help="JSON file with the protocol header")
    p.add_argument("--json", action="store_true", help="print the differences as JSON")
    p.set_defaults(func=run)


def _inputs(args):
    if args.run_dir:
        folder = load_run(Path(args.run_dir))
        if folder.measurement is None:
            raise CommandError(f"{folder.path}: no measurement.json to verify (the run is not complete)")
        return folder.measurement, folder.trials, folder.protocol_header
    if not (args.trials and args.measurement and args.protocol):
        raise CommandError("give a run folder, or all of --trials, --measurement and --protocol")
    measurement = read_json(Path(args.measurement))
    trials = [t for t in read_jsonl(Path(args.trials)) if t.get("record_type", "trial") == "trial"]
    trials = [t for t in trials if t.get("run_id") in (None, measurement.get("run_id"))]
    return measurement, trials, read_json(Path(args.protocol))


def run(args: argparse.Namespace) -> int:
    try:
        measurement, trials, protocol = _inputs(args)
    except RecordFileError as exc:
        raise CommandError(str(exc)) from None
    if not trials:
        raise CommandError(f"no trials of run {measurement.get('run_id')!r} were found")
    if any("record_sha256" in t for t in trials) and args.run_dir:
        # A run folder holds the whole chain, so it must verify from its genesis.
        try:
            chain.verify(read_jsonl(Path(args.run_dir) / "trials.jsonl"))
        except chain.ChainError as exc:
            print(f"trial log chain broken: {exc}", file=sys.stderr)
            return 1
    differences = recompute(measurement, trials, protocol)
    if args.json:
        print(json.dumps(differences, indent=1, ensure_ascii=False))
    elif differences:
        for d in differences:
            print(f"DIFFERS {d['field']}: recorded {d['recorded']!r}, recomputed {d['recomputed']!r}")
    else:
        print(f"OK {measurement.get('run_id')}: {len(trials)} trials, every field recomputes exactly")
    return 1 if differences else 0
