"""``llmarchive watch``: read the provider's models list and act on succession (SPEC §4.3)."""
import argparse
import os
import sys

from llmarchive.cli import archive
from llmarchive.cli._options import add_date, add_subject_models, day, subject_models

ORDER = 60
WEBHOOK_ENV = "LLMARCHIVE_WATCH_WEBHOOK"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "watch",
        help="the model watch: record the models list, raise the bridge alarm, switch only on a declaration",
        description=(
            "Read the provider's models list, record every id seen (model_observed) and apply the three "
            "succession cases: a declared successor → generation_bridge + subject_model (the switch); a new id "
            "in the family with no declaration → generation_bridge + needs_review (no switch); the active "
            "model gone with no successor → series_closed. Every pending bridge's alarm is repeated daily "
            "(printed, recorded, POSTed to the webhook) until both models' bridge runs exist. An unreachable "
            "provider is recorded with cause provider_outage. Keys come from the environment only."
        ),
    )
    add_date(p)
    p.add_argument("--base-url", help="the provider's API (default: its public address)")
    p.add_argument("--max-attempts", type=int, default=6, help="attempts to read the models list (default 6)")
    p.add_argument("--webhook", help=f"POST each alarm as JSON here (default: ${WEBHOOK_ENV} when set)")
    add_subject_models(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from llmarchive.watch import describe, watch

    paths = archive(args).ensure()
    config = subject_models(args)
    outcome = watch(paths, day(args), config, base_url=args.base_url,
                    webhook=args.webhook or os.environ.get(WEBHOOK_ENV), max_attempts=args.max_attempts)
    print(describe(outcome))
    for alarm in outcome.alarms:
        print(f"ALARM: {alarm}", file=sys.stderr)
    return 0
