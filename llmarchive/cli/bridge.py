"""``llmarchive bridge``: run the pending generation bridge by hand (SPEC §4.3)."""
import argparse
import sys

from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_api, add_date, add_subject_models, api_subject_factory, day, lister, subject_models

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
    status.set_defaults(func=do_status)

    run = sub.add_parser("run", help="run (or resume) the pending bridge: old model first, then new")
    add_date(run, "the day the bridge runs")
    run.add_argument("--old", help="the old model id (when more than one bridge is pending)")
    run.add_argument("--new", help="the new model id (when more than one bridge is pending)")
    run.add_argument("--subject", choices=("anthropic", "openai"), help="the API (default: subject_models.yaml's)")
    run.add_argument("--concurrency", type=int, default=4, help="calls in flight at once (default 4)")
    run.add_argument("--unbudgeted", action="store_true", help="no budget.json (e.g. your own server)")
    run.add_argument("--quiet", action="store_true", help="no per-trial progress lines on stderr")
    add_api(run)
    add_subject_models(run)
    run.set_defaults(func=do_run)


def do_status(args: argparse.Namespace) -> int:
    from llmarchive.bridge import bridge_runs, bridges

    paths = archive(args)
    found = bridges(paths)
    if not found:
        print("no bridge has been raised")
        return 0
    for (family, old, new), state in found.items():
        raised = state["raised"]
        runs = bridge_runs(paths, raised)
        done = sum(1 for r in runs.values() if r.get("status") == "complete")
        print(f"{family}: {old} → {new} raised {raised['date']}: {state['status']} "
              f"({done}/{2 * len(raised.get('protocol_ids') or [])} runs complete)")
    return 0


def do_run(args: argparse.Namespace) -> int:
    from llmarchive.bridge import BridgeError, run_bridge
    from llmarchive.budget import BudgetError
    from llmarchive.runner import RunError, RunHalted

    paths = archive(args).ensure()
    config = subject_models(args)
    provider = args.subject or config.provider

    def progress(done: int, total: int, trial: dict) -> None:
        print(f"[{done}/{total}] {trial['run_id']} {trial['item_id']} {trial['version']}: {trial['outcome']}",
              file=sys.stderr, flush=True)

    try:
        outcome = run_bridge(paths, day(args), config, old=args.old, new=args.new,
                             subject_factory=api_subject_factory(args, provider), listed=lister(args, provider),
                             concurrency=args.concurrency, unbudgeted=args.unbudgeted,
                             progress=None if args.quiet else progress)
    except (BridgeError, BudgetError, RunError, RunHalted) as exc:
        raise CommandError(str(exc)) from None
    b = outcome.bridge
    print(f"bridge {b['old_model_id']} → {b['new_model_id']}: {outcome.status} "
          f"({len(outcome.run_ids)} runs this session, {outcome.calls} calls)")
    if outcome.message:
        print(f"  {outcome.message}")
    return 0 if outcome.status == "complete" else 1
