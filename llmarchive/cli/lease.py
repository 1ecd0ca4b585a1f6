"""``llmarchive lease``: the lease on life — dead-man alert, vacation, dormancy."""
import argparse
import sys

from llmarchive.cli import archive
from llmarchive.cli._options import add_json, print_json
from llmarchive.schedule.lease import check, record_state
from llmarchive.schedule.watch import post_webhook

ORDER = 58


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "lease",
        help="is the archive alive? dead-man alert after 36 h without a daily cycle, dormant after 180 d without a run",
        description=(
            "Read the daily cycle's heartbeat (the runtime fingerprint) and the latest run, and report the "
            "lease state from cadence.yaml's lease keys. Any state but alive is recorded (once a day), posted "
            "to --webhook when given, and exits 1."
        ),
    )
    p.add_argument("--webhook", help="POST a JSON alert here when the state is not alive")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()
    state = check(paths)
    record = record_state(paths, state)
    alive = state.state == "alive" and not state.source_degraded
    if args.json:
        print_json(state.__dict__ | {"coverage_cause": state.coverage_cause})
    else:
        print(f"lease {state.now}: {state.state}"
              + (f" (gaps from here: {state.coverage_cause})" if state.coverage_cause else ""))
        print(f"  last daily cycle: {state.last_cycle_at or 'never'}; last run: {state.last_run_date or 'never'}")
        for reason in state.reasons:
            print(f"  {reason}")
    if not alive and args.webhook and record is not None:
        print(f"  webhook: {post_webhook(args.webhook, {'text': state.reason, 'kind': 'lease', 'state': state.state})}",
              file=sys.stderr)
    return 0 if alive else 1
