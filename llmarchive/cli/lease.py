"""``llmarchive lease``: the lease on life — dead-man alert, vacation, dormancy.

It is also the dead-man check that runs *outside* Dagster (``deploy/``: a
systemd timer or a crontab line, hourly), so it must say what it found in a
way a timer shows: the exit status (0 alive, 1 anything else or an alert
that could not be delivered) and, with ``--quiet``, one line only when a
person should know something (see the option's help).
"""
import argparse
import os
import sys

from llmarchive.cli import archive
from llmarchive.cli._options import add_json, print_json
from llmarchive.schedule import WEBHOOK_ENV, lease, outbox, webhook, webhook_from

ORDER = 58


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "lease",
        help="is the archive alive? dead-man alert after 36 h without a daily cycle, dormant after 180 d without a run",
        description=(
            "Read the daily cycle's heartbeat (the runtime fingerprint) and the latest run, and report the "
            "lease state from cadence.yaml's lease keys. Any state but alive is recorded (once a day) and exits 1. "
            "With a webhook, a person is told of a change: when a state other than alive begins, again once a "
            "day while it lasts, and when the archive is alive again (recovered); an alert the webhook did not "
            "take is said in one line, exits 1 and is tried again at the next check. It also sends every other page "
            "the outbox still owes (a failed run, a failing check), and exits 1 while one is owed for more than "
            "an hour. Run it hourly from a systemd timer or cron (deploy/), so a dead Dagster daemon is noticed "
            "too."
        ),
    )
    p.add_argument("--webhook", help=f"POST the owner's pages as JSON here (default: ${WEBHOOK_ENV}, the way to "
                                     "give it: a URL on a command line is visible to every local user in the "
                                     "process list)")
    p.add_argument("--quiet", action="store_true",
                   help="print one line, and only when a person should know: an alert was posted or could not be "
                        "delivered, or, with no webhook, the state is not alive (for cron, which mails what a job "
                        "prints)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    url = args.webhook or webhook_from(os.environ)
    if url:
        webhook.check_url(url, "--webhook" if args.webhook else WEBHOOK_ENV)     # a bad setting writes nothing
    paths = archive(args).ensure()
    state = lease.check(paths)
    lease.record_state(paths, state)
    posted = lease.deliver(paths, state, url) if url else None
    delivered = posted is None or posted[1].startswith("sent")
    broken = outbox.overdue(paths, url)
    alive = state.state == "alive" and not state.source_degraded
    if args.json:
        alert = None if posted is None else {"event": posted[0]["event"], "delivery": posted[1]}
        print_json(state.__dict__ | {"coverage_cause": state.coverage_cause, "alert": alert,
                                     "pages_overdue": None if broken is None else broken[1]})
    elif args.quiet:
        if not alive and not url:
            print(f"lease {state.now}: {state.label}: {state.reason}", file=sys.stderr)
    else:
        print(f"lease {state.now}: {state.state}"
              + (f" (gaps from here: {state.coverage_cause})" if state.coverage_cause else ""))
        print(f"  last daily cycle: {state.last_cycle_at or 'never'}; last run: {state.last_run_date or 'never'}")
        for reason in state.reasons:
            print(f"  {reason}")
    if posted is not None:
        payload, outcome = posted
        line = (f"lease {state.now}: {payload['event']} ({payload['state']}) posted to the webhook: {outcome}"
                if delivered else
                f"lease {state.now}: the {payload['event']} ({payload['state']}) could not be delivered to the "
                f"webhook ({outcome.removeprefix('failed: ')}); it is tried again at the next check: {state.reason}")
        print(line, file=sys.stderr)
    if broken is not None:
        print(f"lease {state.now}: the owner's pages are not getting through: {broken[1]}", file=sys.stderr)
    return 0 if alive and delivered and broken is None else 1
