"""``llmarchive comparison``: accept a third party's run on an open panel as a comparison point."""
import argparse

from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_date, day
from llmarchive.store import TRIALS_FILE
from measure.errors import ArchiveError

ORDER = 65


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "comparison",
        help="third-party comparison points on an open panel (method §4.2)",
        description=(
            "A comparison point is one outside run of one open protocol on one model, checked against the "
            "panel and recomputed by this archive's own estimator. It is read-only: it starts no measurement, "
            "changes no rotation, and is never on a curve or in an aggregate."
        ),
    )
    sub = p.add_subparsers(dest="comparison_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    submit = sub.add_parser(
        "submit", help="check a submission file and store it, or list every reason it is refused",
        description=(
            f"FILE is JSON Lines: trial records exactly as `llmarchive run` writes them to {TRIALS_FILE} (the "
            "trial log of one of our own open runs is accepted as it is), optionally preceded by one header "
            "line {\"record_type\": \"comparison_submission\", \"model_id\": …, \"run_date\": …, "
            "\"submitted_by\": …}. Accepted only with the same panel_sha256 (every prompt_sha256 must be the "
            "panel's), the same grammar_version, the same n, all four versions, the full outcome "
            "distribution per version and one exact model_id. A refused file stores nothing."
        ),
    )
    submit.add_argument("file", metavar="FILE")
    submit.add_argument("--submitted-by", help="who made the run (required unless the header names it)")
    add_date(submit, "the day the point is filed")
    submit.set_defaults(func=do_submit)


def do_submit(args: argparse.Namespace) -> int:
    from llmarchive.comparison import submit

    paths = archive(args)
    when = day(args)
    try:
        # A refused submission is an ArchiveError like any other mistake meant for a person: main prints its
        # one line (the file and every reason) and exits 2.
        accepted = submit(paths, args.file, submitted_by=args.submitted_by, today=when)
    except ArchiveError:
        raise
    except ValueError as exc:
        raise CommandError(f"{args.file}: {exc}") from None
    r, m = accepted.record, accepted.record["measurement"]
    if accepted.already:
        print(f"already accepted as {accepted.comparison_id} on {r['date']}; nothing stored again")
        return 0
    print(f"accepted: comparison point {accepted.comparison_id}")
    print(f"  {r['protocol_id']} on {r['model_id']}, run {r['run_date']}, submitted by {r['submitted_by']}")
    print(f"  recomputed here: stability_pct {m['stability_pct']} (CI {m['ci_low_pct']}–{m['ci_high_pct']}), "
          f"null_floor_pct {m['null_floor_pct']}, flags {', '.join(m['flags'])}")
    print("  one model, one frozen 15-scenario panel, one day: not a ranking, never on a curve")
    return 0
