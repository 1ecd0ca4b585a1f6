"""``llmarchive measure``: build (or rebuild) the measurement of a run folder."""
import argparse
import json
from pathlib import Path

from llmarchive.archive import load_run, measurement_run, store
from llmarchive.cli import CommandError
from measure.measurement import build

ORDER = 70
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "sample_run"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "measure",
        help="build the measurement record of a completed run folder and print it",
        description=(
            f"Build the measurement record of a run folder ({store.RUN_FILE} + {store.TRIALS_FILE}) with the frozen "
            "estimator and print it as JSON. --sample measures the bundled sample trial set "
            "(synthetic responses, for trying the estimator without a model)."
        ),
    )
    p.add_argument("run_dir", nargs="?", help="a run folder (private/experiments/<run_id>)")
    p.add_argument("--sample", action="store_true", help="measure the bundled sample trial set")
    p.add_argument("--write", action="store_true", help=f"also write {store.MEASUREMENT_FILE} into the run folder")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.sample == bool(args.run_dir):
        raise CommandError("give either a run folder or --sample")
    path = SAMPLE if args.sample else Path(args.run_dir)
    folder = load_run(path)
    record = build(folder.protocol_header, folder.trials, measurement_run(folder.run))
    if args.write:
        if args.sample:
            raise CommandError("--write is not allowed on the bundled sample")
        # A rebuild from the same trials on purpose (a person asked for it): it replaces the one written.
        store.write_measurement(path, record, replace=True)
    print(json.dumps(record, indent=1, ensure_ascii=False))
    return 0
