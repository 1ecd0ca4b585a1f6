"""``llmarchive bridge``: run the pending generation bridge by hand (method §4.3)."""
import argparse
import sys

from llmarchive.cli import archive
from llmarchive.cli._options import (add_api, add_concurrency, add_date, add_json, add_subject, add_subject_models,
                                     api_subject_factory, concurrency, day, lister, print_json,
                                     refuse_unbudgeted_with_a_budget, subject_models)
from llmarchive.schedule import bridge_runs, bridges, choose_bridge, refuse_backfill, run_bridge, start_date
from llmarchive.succession import review_of

ORDER = 62


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bridge",
        help="generation bridges: see the pending ones, run one (paid, from the bridge reserve only)",
        description=(
            "A bridge measures one admitted protocol of each rewording type on the old and the new model in the "
            "same week, each at its own frozen n (960 calls for v0). It is paid only from bridge_reserve_eur and "
            "takes that month's sweep. If the old model leaves the provider first, the bridge is recorded "
            "bridge_incomplete: a permanent, disclosed discontinuity."
        ),
    )
    sub = p.add_subparsers(dest="bridge_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    status = sub.add_parser("status", help="every bridge and where it stands")
    add_json(status, "print a JSON list of bridges")
    status.set_defaults(func=do_status)

    run = sub.add_parser("run", help="run (or resume) the pending bridge: old model first, then new")
    add_date(run, "the day the bridge runs")
    run.add_argument("--old", help="the old model id (when more than one bridge is pending)")
    run.add_argument("--new", help="the new model id (when more than one bridge is pending)")
    add_subject(run)
    add_concurrency(run)
    run.add_argument("--unbudgeted", action="store_true",
                     help="an archive with no budget.json (e.g. your own server); refused when one exists")
    run.add_argument("--quiet", action="store_true", help="no per-trial progress lines on stderr")
    add_api(run)
    add_subject_models(run)
    run.set_defaults(func=do_run)


def do_status(args: argparse.Namespace) -> int:
    paths = archive(args)
    found = bridges(paths)
    listing = []
    for (family, old, new), state in found.items():
        raised = state["raised"]
        runs = bridge_runs(paths, raised)
        review = review_of(paths, family, new)
        listing.append({
            "model_family": family, "old_model_id": old, "new_model_id": new, "raised": raised["date"],
            "status": state["status"], "started": start_date(paths, raised),
            "runs_complete": sum(1 for r in runs.values() if r.get("status") == "complete"),
            "runs_planned": 2 * len(raised.get("protocol_ids") or []),
            "review": None if review is None else {"review_id": review.review_id, "state": review.state,
                                                   "held": len(review.held)},
        })
    if args.json:
        print_json(listing)
        return 0
    if not listing:
        print("no bridge has been raised")
    for b in listing:
        print(f"{b['model_family']}: {b['old_model_id']} → {b['new_model_id']} raised {b['raised']}: {b['status']} "
              f"({b['runs_complete']}/{b['runs_planned']} runs complete"
              + (f", started {b['started']}" if b["started"] else "") + ")")
        review = b["review"]
        if review is not None:
            print(f"  needs_review {review['review_id'][:12]}: {review['state']}; {b['new_model_id']}'s runs "
                  + ("are on the curve" if review["state"] == "successor" else
                     f"are comparison points, off every curve ({review['held']} held)"))
    return 0


def do_run(args: argparse.Namespace) -> int:
    paths = archive(args)
    refuse_unbudgeted_with_a_budget(args, paths, "the bridge from its reserve")
    config = subject_models(args)
    when = day(args)
    # A bridge not yet started is a new measurement, dated the day it starts (no backfill); once started its runs
    # keep its start date and resume on any day of that week (the bridge's own rule, checked by run_bridge).
    bridge = choose_bridge(paths, config.model_family, args.old, args.new)
    refuse_backfill(when, started=start_date(paths, bridge) is not None,
                    what=f"the bridge {bridge['old_model_id']} → {bridge['new_model_id']} dated {when}")
    paths.ensure()
    provider = args.subject or config.provider

    def progress(done: int, total: int, trial: dict) -> None:
        print(f"[{done}/{total}] {trial['run_id']} {trial['item_id']} {trial['version']}: {trial['outcome']}",
              file=sys.stderr, flush=True)

    outcome = run_bridge(paths, when, config, old=args.old, new=args.new,
                         subject_factory=api_subject_factory(args, provider), listed=lister(args, provider),
                         concurrency=concurrency(args), unbudgeted=args.unbudgeted,
                         progress=None if args.quiet else progress)
    b = outcome.bridge
    print(f"bridge {b['old_model_id']} → {b['new_model_id']}: {outcome.status} "
          f"({len(outcome.run_ids)} runs this session, {outcome.calls} calls)")
    if outcome.held:
        print(f"  held for review, off every curve: {', '.join(outcome.held)}")
    if outcome.message:
        print(f"  {outcome.message}")
    return 0 if outcome.status == "complete" else 1
