"""``llmarchive sweep``: the month's paid sweep of the active model, unattended."""
import argparse
import sys

from llmarchive.cli import archive
from llmarchive.cli._options import (add_api, add_concurrency, add_date, add_subject, add_subject_models,
                                     api_subject_factory, concurrency, day, lister, subject_models)
from llmarchive.schedule import sweep_month, sweep_scope
from llmarchive.subjects import check_api_settings

ORDER = 42


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="run the month's sweep on the family's active model (paid, unattended, resumable)",
        description=(
            "Run every admitted protocol of the configured series once this month on the tracked family's "
            "active model. Before any paid call: a closed series, a generation bridge raised this month, an "
            "unreachable provider, a protocol that is not pre-registered (skipped as not_preregistered: cause "
            "protocol_confounded, nothing spent) and the budget ladder each skip what they must, and every "
            "skip is recorded with its cause. Protocols already measured this month are not run again; an "
            "interrupted sweep resumes its run folders. The month's coverage rows are written at the end. A "
            "missing key or a malformed --base-url is refused before anything is recorded (exit 2), and so is a "
            "--date in another month: a month is measured in that month, never backfilled (only the runs a sweep "
            "of an earlier month left open resume under their own date)."
        ),
    )
    add_date(p, "the day the sweep runs (its month is the sweep's period)")
    add_subject(p)
    add_concurrency(p)
    p.add_argument("--quiet", action="store_true", help="no per-trial progress lines on stderr")
    add_api(p)
    add_subject_models(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    when = day(args)
    config = subject_models(args)
    provider = args.subject or config.provider
    # A missing key or a malformed --base-url stops here, before the home is touched (never a provider_outage).
    check_api_settings(provider, args.base_url)
    paths = archive(args)
    # A month is measured in that month: in a later one only the runs its sweep left open resume (no backfill).
    only = sweep_scope(paths, when, config)
    paths.ensure()

    def progress(done: int, total: int, trial: dict) -> None:
        print(f"[{done}/{total}] {trial['protocol_id']} {trial['item_id']} {trial['version']}: {trial['outcome']}",
              file=sys.stderr, flush=True)

    outcome = sweep_month(paths, when, config, subject_factory=api_subject_factory(args, provider),
                          provider_check=lister(args, provider), concurrency=concurrency(args),
                          progress=None if args.quiet else progress, only=only)
    print(f"sweep {when[:7]} on {outcome.model_id}: {len(outcome.ran)} ran, {len(outcome.already)} already done "
          f"this month, {len(outcome.skipped)} skipped")
    for pid in outcome.ran:
        print(f"  ran      {pid}")
    for pid in outcome.already:
        print(f"  done     {pid}")
    for pid, condition, reason in outcome.skipped:
        print(f"  skipped  {pid}: {condition} — {reason}")
    if outcome.halted:
        print(f"the sweep stopped: {outcome.halted}", file=sys.stderr)
        return 1
    return 0
