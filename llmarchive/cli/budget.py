"""``llmarchive budget``: create the private budget, see the ladder, plan a sweep."""
import argparse
import sys

from llmarchive import budget as budget_mod
from llmarchive.budget import eur
from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_json, print_json, subject_models
from llmarchive.protocols import registry, sweep_protocols
from llmarchive.succession import SubjectModelsError

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
    init.add_argument("--input-price", type=float,
                      help="the provider's price per million input tokens, EUR (the ledger charges reported usage)")
    init.add_argument("--output-price", type=float,
                      help="the provider's price per million output tokens, EUR")
    init.add_argument("--force", action="store_true", help="replace an existing budget.json")
    init.set_defaults(func=do_init)

    show = sub.add_parser("show", help="spend per pool this month (charged, worst case, reserves) and the rung")
    show.add_argument("--month", help="YYYY-MM, the month to show (default: this month, UTC)")
    add_json(show)
    show.set_defaults(func=do_show)

    plan = sub.add_parser("plan", help="which admitted protocols the ladder lets run (nothing is recorded)",
                          description="The admitted protocols of one series (the ones a sweep or a bridge can run; "
                                      "a candidate is never run) and what the budget ladder does with each this "
                                      "month. Nothing is recorded.")
    plan.add_argument("--job", choices=("sweep", "bridge"), default="sweep")
    plan.add_argument("--series", default="v0", help="protocol series to plan, one the protocols carry (default v0)")
    plan.add_argument("--month", help="YYYY-MM, the month to plan (default: this month, UTC)")
    add_json(plan)
    plan.set_defaults(func=do_plan)


def _budget(paths) -> budget_mod.Budget:
    budget = budget_mod.load_budget(paths)
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
    if (args.input_price is None) != (args.output_price is None):
        raise CommandError("give both --input-price and --output-price (EUR per million tokens), or neither")
    if args.input_price is not None:
        data["prices_eur_per_mtok"] = {"input": args.input_price, "output": args.output_price}
    budget = budget_mod.parse_budget(data, "the given numbers")
    budget_mod.write_budget(paths, budget)
    print(f"wrote {paths.budget_file} (general pool {eur(budget.general_pool_eur)} a month)")
    if not budget.priced:
        print("no token prices given: every call is charged its flat per-call rate; add --input-price and "
              "--output-price to charge the usage the provider reports", file=sys.stderr)
    return 0


def do_show(args: argparse.Namespace) -> int:
    paths = archive(args)
    budget = _budget(paths)
    state = budget_mod.ladder_state(paths, budget, args.month)
    if args.json:
        shown = state.to_json()
        shown["reserves_eur"] = {"bridge": budget.bridge_reserve_eur, "heartbeat": budget.heartbeat_reserve_eur}
        shown["budget_cuts"] = budget_mod.budget_cuts(paths)
        print_json(shown)
        return 0

    def pool(name: str, size: float) -> str:
        charged, worst = state.charged_eur[name], state.worst_case_eur[name]
        return (f"{eur(charged, 4)} charged + {eur(worst, 4)} worst case (calls of unknown fate) = "
                f"{eur(charged + worst, 4)} of {eur(size)}")

    print(f"month: {state.month}")
    charging = ("reported usage × prices_eur_per_mtok" if state.priced
                else "flat per-call rates (budget.json has no prices_eur_per_mtok)")
    print(f"charging: {charging}")
    print(f"general pool: {pool('general', state.general_pool_eur)} "
          f"({state.used_pct:.1f} % used, {eur(state.general_left_eur)} left)")
    print(f"bridge reserve: {pool('bridge', budget.bridge_reserve_eur)}, {eur(state.bridge_left_eur)} left")
    print(f"heartbeat reserve: {pool('heartbeat', budget.heartbeat_reserve_eur)}, "
          f"{eur(state.heartbeat_left_eur)} left")
    print(f"ladder: {state.describe()}")
    cuts = budget_mod.budget_cuts(paths)
    level = budget_mod.current_level(paths)
    # The level is a cap, not a plan: say so beside what is admitted, so "12 protocols" is not read as what runs.
    print(f"programme: level {level.level}, " + (level.describe() if level.tier_drop else f"at most {level.describe()}")
          + (f" (budget_cut of {cuts[-1]['date']})" if cuts else ""))
    try:
        series = subject_models(args).protocol_series
    except SubjectModelsError:
        return 0        # no tracked model declared yet: nothing is swept, and `status` says why
    admitted = sweep_protocols(paths, series)
    print(f"this month's sweep: the {len(admitted)} admitted protocol(s) of series {series}, within the programme "
          f"and the ladder (`llmarchive budget plan --series {series}` names each and why)")
    return 0


def do_plan(args: argparse.Namespace) -> int:
    paths = archive(args)
    budget = _budget(paths)
    known = sorted({h["series"] for h in registry.list_protocols(paths) if h.get("series")})
    if args.series not in known:
        raise CommandError(f"--series {args.series!r} is not a protocol series; known: {', '.join(known)}")
    # Only what a sweep or a bridge can run: admitted to a lane (sweep_protocols), never a candidate.
    headers = [h for h in sweep_protocols(paths, args.series) if h.get("n")]
    if not headers:
        print(f"no protocol of series {args.series} is admitted yet: nothing to plan "
              "(`llmarchive panels promote`)", file=sys.stderr)
    plan = budget_mod.allowed_protocols(paths, headers, args.job, args.month, record_skips=False, budget=budget)
    if args.json:
        print_json(plan.to_json())
        return 0
    print(f"{plan.state.month}: {plan.state.used_pct:.1f} % of the general pool used; {plan.state.describe()}")
    for pid in plan.allowed:
        print(f"  run   {pid}")
    for pid, reason in plan.skipped:
        print(f"  skip  {pid}: {reason}")
    return 0
