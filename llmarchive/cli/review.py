"""``llmarchive review``: decide whether an undeclared new model id is the successor (method §4.3)."""
import argparse
import sys
from typing import TYPE_CHECKING

from llmarchive.cli import archive
from llmarchive.cli._options import add_date, add_json, day, print_json
from llmarchive.archive import terminal
from llmarchive.succession import resolve, reviews, unplaced_unreadable

if TYPE_CHECKING:
    from llmarchive.archive import Unreadable

ORDER = 61


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "review",
        help="needs_review: list the undeclared new model ids, resolve one as successor or not",
        description=(
            "A new model id of the family with no provider declaration is bridged (its window never reopens) "
            "but never switched to: the model watch records needs_review, and its bridge runs are kept off every "
            "curve as comparison points. Resolving as successor moves those runs onto the family's curve and "
            "records the switch (subject_model); resolving as not the successor keeps them comparison points. "
            "Each resolution is a dated, hash-chained record naming the reviewer."
        ),
    )
    sub = p.add_subparsers(dest="review_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    listing = sub.add_parser("list", help="every needs_review, pending first")
    add_json(listing)
    listing.set_defaults(func=do_list)

    resolve = sub.add_parser("resolve", help="record the decision on one review (ID from `review list`)")
    resolve.add_argument("review_id", metavar="ID", help="the review id, or its first 8 or more characters")
    decision = resolve.add_mutually_exclusive_group(required=True)
    decision.add_argument("--successor", action="store_const", const="successor", dest="resolution",
                          help="the model is the successor: its bridge runs join the curve, the active model switches")
    decision.add_argument("--not-successor", action="store_const", const="not_successor", dest="resolution",
                          help="it is not: its bridge runs stay comparison points, off every curve")
    resolve.add_argument("--reviewer", required=True, help="who decides (recorded)")
    resolve.add_argument("--note", help="why, or the evidence (recorded)")
    add_date(resolve, "the day of the decision")
    resolve.set_defaults(func=do_resolve)


def do_list(args: argparse.Namespace) -> int:
    paths = archive(args)
    found = sorted(reviews(paths), key=lambda r: (r.state != "pending", str(r.record.get("date"))))
    apart = unplaced_unreadable(paths, found)
    if args.json:
        # The document stays a list of reviews (each names its unreadable held folders, "unreadable_held");
        # a folder no review can be told to hold is named on stderr, so no held folder goes unmentioned.
        print_json([r.to_json() for r in found])
        for bad in apart:
            print(_unreadable_line(bad) + "; no review can be told to hold it", file=sys.stderr)
        return 0
    if not found:
        print("no needs_review has been recorded")
    for r in found:
        line = f"{r.review_id[:12]}  {r.record.get('date')}  {r.model_family}: {r.model_id}  {r.state}"
        if r.resolution is not None:
            line += f" (on {r.resolution.get('date')} by {r.resolution.get('reviewer')})"
        print(terminal(line))          # the model id is a provider's word: printed escaped
        replaced = len(r.comparison_points) - len(r.current_points)
        print(f"    held off the curve: {len(r.held)} run(s); comparison points filed: {len(r.current_points)}"
              + (f" ({replaced} replaced by one carrying a later suspect flag)" if replaced else ""))
        for bad in r.unreadable:
            print("    " + _unreadable_line(bad))
    if apart:
        print("held run folders no review can be told to hold (their records cannot say whose they are):")
        for bad in apart:
            print("    " + _unreadable_line(bad))
    return 0


def _unreadable_line(bad: "Unreadable") -> str:
    """One unreadable held folder, as ``review list`` names it."""
    return (f"unreadable held run folder {bad.run_id}: {bad.problem} "
            "(coverage names it; publication refuses until it is repaired)")


def do_resolve(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()
    done = resolve(paths, args.review_id, args.resolution, args.reviewer, day(args), note=args.note)
    r = done.review
    print(terminal(f"needs_review {r.review_id[:12]} ({r.model_family}: {r.model_id}) resolved as "
                   f"{args.resolution} by {done.record['reviewer']} on {done.record['date']}"))
    if done.switch is not None:
        print(terminal(f"  active model: {done.switch['previous_model_id']} → {done.switch['model_id']} "
                       "(subject_model recorded)"))
    if done.joined_curve:
        print(f"  joined the curve: {', '.join(done.joined_curve)}")
    if done.still_held:
        print(f"  busy, moved at the next `llmarchive bridge run` or watch: {', '.join(done.still_held)}")
    if args.resolution == "not_successor":
        print(f"  stays comparison points: {len(r.current_points)} filed"
              + (f" ({len(done.comparison_points)} now)" if done.comparison_points else ""))
    return 0
