"""``llmarchive revalidate``: recompute the day's historical measurements; fail loudly on any difference."""
import argparse
import json
import sys

from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_date, add_run_id, day
from llmarchive.instrument import RevalidationFailed, revalidate as revalidation

ORDER = 57


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "revalidate",
        help="recompute the day's historical measurements from their trials (revalidation_daily)",
        description=(
            "Recompute revalidation_daily (cadence.yaml: 10) historical measurements from their own trials "
            "with measure.verify — estimator, grammar re-extraction and hash chain — chosen by a fixed "
            "rotation over every complete run. Each is recorded; any difference is printed in full and the "
            "command exits 1."
        ),
    )
    add_date(p)
    p.add_argument("--count", type=int, help="how many (default: cadence.yaml's revalidation_daily)")
    add_run_id(p, "revalidate this run instead of the day's choice (repeatable)", repeatable=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()
    if args.count is not None and args.count < 1:
        raise CommandError("--count must be at least 1")
    when = day(args)
    try:
        outcome = revalidation.revalidate(paths, when, count=args.count, run_ids=args.run_ids)
    except RevalidationFailed as exc:
        for record in exc.differing:
            print(f"DIFFERS {record['run_id']}:", file=sys.stderr)
            for d in record["differences"]:
                print(f"  {d['field']}: recorded {json.dumps(d['recorded'])[:200]} / recomputed "
                      f"{json.dumps(d['recomputed'])[:200]}", file=sys.stderr)
        print(str(exc), file=sys.stderr)
        return 1
    if not outcome.chosen:
        print(f"revalidation {when}: no historical measurement yet")
    for record in outcome.records:
        print(f"revalidation {when}: {record['run_id']} {record['status']}")
    return 0
