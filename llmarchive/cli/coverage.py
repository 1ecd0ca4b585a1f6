"""``llmarchive coverage``: write the coverage rows — every scheduled job and period ran or has one cause."""
import argparse
import sys

from llmarchive.cli import archive
from llmarchive.cli._options import add_date, add_json, day, print_json
from llmarchive.archive import UnexplainedGap, not_after, optional_date
from llmarchive.schedule import coverage

ORDER = 59


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "coverage",
        help="compute and record coverage: for every scheduled job and period, ran or exactly one cause",
        description=(
            "Walk every scheduled job (full_sweep per admitted protocol per month; runtime_fingerprint, "
            "guard_margin_rotation, subject_fingerprint and revalidation_daily per day) from the archive's "
            "start (or --since) through --date, and record for each period that it ran or the one cause its observed "
            "conditions map to. The periods are judged on --date: every period that ended before it (on the "
            "1st, the whole month just ended, its last day and its monthly rows included) ran or has a cause; "
            "--date itself and its month are pending. This is the rule the Dagster coverage asset judges by. "
            "A period that ended with no output and no observed condition is an error (exit 1), never a silent "
            "hole; every explained row is still written."
        ),
    )
    add_date(p, "the day coverage is judged on: computed through it, periods ended before it judged")
    p.add_argument("--since", help="YYYY-MM-DD, start here, even before the archive began (those periods are "
                                   "before_archive_start); not after --date. Months already sealed are read back "
                                   "from the coverage log, not judged again")
    p.add_argument("--afresh", action="store_true", help="judge every period again from the whole history, sealed "
                                                        "months too (a row is written only where it changed)")
    p.add_argument("--dry-run", action="store_true", help="print the rows, record nothing")
    add_json(p, "print {start, through, recorded, rows, pending, unexplained} as JSON (every row, not only gaps)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    through = day(args)
    since = optional_date(args.since, "--since")
    if since is not None:
        not_after(since, through, "--since", "--date" if args.date else "today (--date)")
    paths = archive(args)
    if not args.dry_run:
        paths.ensure()
    try:
        record = coverage.compute if args.dry_run else coverage.record_coverage
        result = record(paths, through, since, read_back=not args.afresh)
    except UnexplainedGap as exc:
        # A check that failed (exit 1), not bad input: every explained row is already written.
        if args.json:
            print_json({"through": through, "recorded": True, "error": str(exc),
                        "unexplained": [list(g) for g in exc.gaps]})
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print_json({"start": result.start, "through": through, "recorded": not args.dry_run, "rows": result.rows,
                    "pending": [list(p) for p in result.pending],
                    "unexplained": [list(u) for u in result.unexplained]})
        return 1 if result.unexplained else 0
    gaps = [r for r in result.rows if r["status"] == "gap"]
    print(f"coverage {result.start or '-'} → {through}: {len(result.rows) - len(gaps)} ran, {len(gaps)} gap(s), "
          f"{len(result.pending)} pending" + (" (dry run: nothing recorded)" if args.dry_run else ""))
    for row in gaps[-20:]:
        print(f"  {row['period']} {row['job']}{' ' + row['protocol_id'] if row['protocol_id'] else ''}: "
              f"{row['cause']} — {row['detail']}")
    if result.unreadable:
        # A dry run writes nothing and so raises nothing: the folders no period claims are still named.
        shown = "; ".join(bad.problem for bad in result.unreadable[:20])
        print(f"error: {len(result.unreadable)} run folder(s) cannot be read and belong to no scheduled period: "
              f"{shown}", file=sys.stderr)
        return 1
    if result.unexplained:
        print(f"{len(result.unexplained)} period(s) unexplained", file=sys.stderr)
        return 1
    return 0
