"""``llmarchive watch``: read the provider's models list and act on succession (method §4.3)."""
import argparse
import dataclasses
import os
import sys

from llmarchive.cli import archive
from llmarchive.cli._options import add_api, add_date, add_json, add_subject_models, day, print_json, subject_models
from llmarchive.schedule import WEBHOOK_ENV, watch as model_watch, webhook_from
from llmarchive.subjects import check_api_settings

ORDER = 60


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "watch",
        help="the model watch: record the models list, raise the bridge alarm, switch only on a declaration",
        description=(
            "Read the provider's models list, record every id seen (model_observed) and apply the three "
            "succession cases: a declared successor → generation_bridge + subject_model (the switch); a new id "
            "in the family with no declaration → generation_bridge + needs_review (no switch: its bridge runs are "
            "comparison points, off every curve, until `llmarchive review resolve` decides); the active "
            "model gone with no successor → series_closed. Every pending bridge's alarm is repeated daily "
            "(printed, recorded, POSTed to the webhook) until both models' bridge runs exist. An unreachable "
            "provider is recorded with cause provider_outage; a missing key or a malformed --base-url is our "
            "mistake, refused before anything is recorded (exit 2). Keys come from the environment only."
        ),
    )
    add_date(p)
    add_api(p, timeout=False)
    add_json(p, "print {date, listed, new_ids, written, alarms, notes, outage} as JSON")
    p.add_argument("--webhook", help=f"POST each alarm as JSON here (default: ${WEBHOOK_ENV} when set)")
    add_subject_models(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    when = day(args)
    config = subject_models(args)
    # A missing key or a malformed --base-url stops here, before the home is touched (never a provider_outage).
    check_api_settings(config.provider, args.base_url)
    paths = archive(args).ensure()
    outcome = model_watch.watch(paths, when, config, base_url=args.base_url,
                    webhook=args.webhook or webhook_from(os.environ), max_attempts=args.max_attempts)
    if args.json:
        print_json(dataclasses.asdict(outcome))
    else:
        print(model_watch.describe(outcome))
    for alarm in outcome.alarms:
        print(f"ALARM: {alarm}", file=sys.stderr)
    return 0
