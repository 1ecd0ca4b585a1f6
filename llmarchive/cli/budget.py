"""``llmarchive budget``: create the private budget, see the ladder, plan a sweep."""
import argparse
import json

from llmarchive import budget as budget_mod
from llmarchive.cli import CommandError, archive

ORDER = 45


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "budget",
        help="the monthly budget: create it, show where the ladder stands, plan which protocols may run",
        description=(
            "The private budget (private/budget.json) and spend ledger (private/spend.jsonl). The ladder "
            "cuts the sweep to 6 protocols from 60 % of the general pool used, to 4 guard protocols "
            "from 80 %, and to subject_fingerprint only from 95 %; the bridge and heartbeat reserves "
            "are never spent by the sweep. The reference model is free and never gated."
        ),
    )
    sub = p.add_subparsers(dest="budget_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    init = sub.add_parser("init", help="write private/budget.json")
    init.add_argument("--ceiling", type=float, required=True, help="monthly ceiling, EUR")
    init.add_argument("--bridge-reserve", type=float, required=True, help="reserve for a generation bridge, EUR")
    init.add_argument("--heartbeat-reserve", type=float, required=True,
                      help="reserve that keeps subject_fingerprint running, EUR")
    init.add_argument("--scenario-rate", type=float, required=True, help="measured cost of one scenario call, EUR")
    init.add_argument("--fingerprint-rate", type=float, required=True,
                      help="measured cost of one subject_fingerprint call, EUR")
    init.add_argument("--force", action="store_true", help="replace an existing budget.json")
    init.set_defaults(func=do_init)

    show = sub.add_parser("show", help="spend per pool this month and the rung in force")
    show.add_argument("--month", help="YYYY-MM (default: this month, UTC)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=do_show)

    plan = sub.add_parser("plan", help="which protocols the ladder lets run (nothing is recorded)")
    plan.add_argument("--job", choices=("sweep", "bridge"), default="sweep")
    plan.add_argument("--series", default="v0", help="protocol series to plan (default v0)")
    plan.add_argument("--month", help="YYYY-MM (default: this month, UTC)")
    plan.add_argument("--json", action="store_true", help="print JSON")
    plan.set_defaults(func=do_plan)


def _budget(paths) -> budget_mod.Budget:
    try:
        budget = budget_mod.load_budget(paths)
    except budget_mod.BudgetError as exc:
        raise CommandError(str(exc)) from None
    if budget is None:
        raise CommandError(f"{paths.budget_file} does not exist: create it with `llmarchive budget init`")
    return budget


def do_init(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()
    if paths.budget_file.exists() and not args.force:
        raise CommandError(f"{paths.budget_file} exists; pass --force to replace it")
    data = {"monthly_ceiling_eur": args.ceiling, "bridge_reserve_eur": args.bridge_reserve,
            "heartbeat_reserve_eur": args.heartbeat_reserve,
            "rates_eur_per_call": {"scenario": args.scenario_rate, "fingerprint": args.fingerprint_rate}}
    try:
        budget = budget_mod.parse_budget(data, "the given numbers")
    except budget_mod.BudgetError as exc:
        raise CommandError(str(exc)) from None
    budget_mod.write_budget(paths, budget)
    print(f"wrote {paths.budget_file} (general pool €{budget.general_pool_eur:.2f} a month)")
    return 0


def do_show(args: argparse.Namespace) -> int:
    paths = archive(args)
    budget = _budget(paths)
    try:
        state = budget_mod.ladder_state(paths, budget, args.month)
    except budget_mod.BudgetError as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps(state.to_json(), indent=1))
        return 0
    print(f"month: {state.month}")
    print(f"general pool: €{state.spent_eur['general']:.2f} of €{state.general_pool_eur:.2f} "
          f"({state.used_pct:.1f} % used, €{state.general_left_eur:.2f} left)")
    print(f"bridge reserve: €{state.spent_eur['bridge']:.2f} spent, €{state.bridge_left_eur:.2f} left")
    print(f"heartbeat reserve: €{state.spent_eur['heartbeat']:.2f} spent, €{state.heartbeat_left_eur:.2f} left")
    print(f"ladder: {state.describe()}")
    return 0


def do_plan(args: argparse.Namespace) -> int:
    paths = archive(args)
    budget = _budget(paths)
    from panels import registry

    headers = [h for h in registry.list_protocols(paths) if h.get("n") and h.get("series") == args.series]
    plan = budget_mod.allowed_protocols(paths, headers, args.job, args.month, record_skips=False, budget=budget)
    if args.json:
        print(json.dumps(plan.to_json(), indent=1))
        return 0
    print(f"{plan.state.month}: {plan.state.used_pct:.1f} % of the general pool used; {plan.state.describe()}")
    for pid in plan.allowed:
        print(f"  run   {pid}")
    for pid, reason in plan.skipped:
        print(f"  skip  {pid}: {reason}")
    return 0
