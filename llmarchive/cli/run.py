"""``llmarchive run``: run one protocol on one subject, resumably, and measure it."""
import argparse
import sys

from llmarchive.archive import either, manual_run_id, parse_date, store, utc_today
from llmarchive.budget import eur
from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import (add_concurrency, add_max_tokens, add_model, add_reference, add_run_id,
                                     add_subject)
from llmarchive.cli._options import concurrency as concurrency_for
from llmarchive.run import RunInterrupted, TrialProgress
from llmarchive.subjects import api_provider, make_subject, registry as provider_table, subject_kinds
from llmarchive.protocols import registry
from llmarchive.schedule import paid_run, refuse_backfill
from measure.errors import ArchiveError

ORDER = 40


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a protocol on a subject (resumable) and build its measurement",
        description=(
            "Send every trial of PROTOCOL (4 versions x n) to a subject, one fresh call each, record "
            "them in a hash-chained log under $LLMARCHIVE_HOME/private/experiments/<run_id>/, and build "
            "the measurement when the run is complete. Running the same --run-id again resumes it: "
            "recorded trials are never sent again. --subject "
            + "; ".join(p.help_phrase() for p in provider_table.providers()) + "."
        ),
    )
    p.add_argument("protocol", metavar="PROTOCOL", help="protocol id, e.g. risky_choice_framing__wording__v0")
    add_subject(p, subject_kinds(), required=True, what="who answers")
    add_model(p, "model id (API subjects: required) or reference model name (smollm2-135m, the default, or "
                 "qwen2.5-1.5b)")
    p.add_argument("--base-url", help="API subjects: the server (default: the provider's public API)")
    p.add_argument("--run-date", help="YYYY-MM-DD, the day the run is dated (default: today, UTC; a resumed run "
                                      "keeps its own)")
    add_run_id(p, "default: <run-date>_<protocol>_<model>; give an existing one to resume")
    add_concurrency(p)
    commercial = either(tuple(p.name for p in provider_table.providers() if p.series == "commercial"))
    p.add_argument("--series", choices=provider_table.SERIES,
                   help=f"default: commercial for {commercial}, open_weights otherwise")
    p.add_argument("--model-family",
                   help="the curve this model belongs to (default: the model id without version numbers)")
    p.add_argument("--job", choices=("manual", "full_sweep", "sweep"), default="manual",
                   help="which budget rule applies to a paid subject (full_sweep: the monthly sweep's; sweep is "
                        "its older name). A generation bridge is run with `llmarchive bridge run`, the only "
                        "command that spends the bridge reserve")
    p.add_argument("--unbudgeted", action="store_true",
                   help="a paid subject you pay nothing for (e.g. your own server): the run is charged to no pool, "
                        "even when budget.json exists, and its costs are logged as unknown")
    p.add_argument("--max-attempts", type=int, default=6,
                   help="API subjects: attempts per call before it counts as unanswered (the run stops, the slot "
                        "stays open and resumes later; default 6)")
    p.add_argument("--timeout", type=float, default=120.0, help="API subjects: seconds per attempt (default 120)")
    add_reference(p, model=False, workers=True)
    add_max_tokens(p, what="override the protocol's generation.max_tokens (tests, trials); the run is marked "
                        "exploratory and is never on a curve")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar on stderr (there is none anyway when stderr is not a terminal)")
    p.set_defaults(func=run)


def _all_headers(paths) -> list[dict]:
    try:
        return [h for h in registry.list_protocols(paths) if h.get("n")]
    except ArchiveError:     # an unreadable protocol file: the run goes on without the other headers
        return []


def run(args: argparse.Namespace) -> int:
    paid_run.check_job(args.job)
    # Every option is checked before the home is touched: a bad value creates no folder and writes nothing.
    run_date = parse_date(args.run_date, "--run-date") if args.run_date is not None else utc_today()
    if args.workers != 1 and api_provider(args.subject) is not None:
        raise CommandError("--workers applies to the reference model only (API subjects: --concurrency)")
    paths = archive(args)
    protocol = registry.load_protocol(paths, args.protocol)
    max_tokens = args.max_tokens or (protocol.get("generation") or {}).get("max_tokens")
    subject = make_subject(args.subject, max_tokens=max_tokens, model=args.model, base_url=args.base_url,
                           model_path=args.model_path, model_sha256=args.model_sha256,
                           max_attempts=args.max_attempts, timeout_s=args.timeout,
                           n_threads=args.threads, n_batch=args.batch, workers=args.workers)
    model_label = args.model or getattr(subject, "name", subject.subject_model_id)
    run_id = args.run_id or manual_run_id(run_date, protocol["protocol_id"], model_label)
    if subject.billed and not args.unbudgeted:
        # A paid subject measures a month of the tracked model: a new run only in the month it is dated.
        folder = paths.run_dir(run_id)
        refuse_backfill(run_date, started=store.has_run(folder), complete=store.is_complete(folder),
                        what=f"run {run_id}")
    paths.ensure()
    # A pool of reference instances takes one call per instance at once, unless --concurrency says otherwise.
    if args.workers > 1 and args.concurrency is None:
        concurrency = args.workers
    else:
        concurrency = concurrency_for(args, subject.is_async)
    if not subject.is_async and concurrency != 1:
        raise CommandError("the reference model runs one call at a time: --concurrency must be 1")
    request = paid_run.PaidRun(job=args.job, run_id=run_id, day=run_date, run_date=args.run_date,
                               series=args.series, model_family=args.model_family, concurrency=concurrency,
                               unbudgeted=args.unbudgeted, allow_generation_override=args.max_tokens is not None)

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    try:
        # A bar on a terminal (done/total, rate, time left); nothing when stderr is not one.
        with TrialProgress(enabled=not args.quiet) as progress:
            result = paid_run.start_paid_run(paths, protocol, subject, request, all_headers=_all_headers(paths),
                                             progress=progress if progress.active else None, say=say)
    except paid_run.PaidRunRefused as exc:
        print(f"refused: {exc} (recorded as a skip: condition {exc.condition}, cause {exc.cause})", file=sys.stderr)
        return 1
    except RunInterrupted as exc:
        # Not an error in the configuration: the provider gave no answer (or the pool's cap, or a full disk).
        print(f"interrupted: {exc}", file=sys.stderr)
        return 1
    _summary(result)
    return 0 if result.complete else 1


def _summary(result) -> None:
    run = result.run
    print(f"run_id: {run['run_id']}")
    print(f"folder: {result.run_dir}")
    print(f"status: {run['status']} ({run['n_trials_recorded']}/{run['n_trials_planned']} trials; "
          f"{result.called} called now, {result.already_recorded} already recorded)")
    for version, counts in run["outcomes"].items():
        shown = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        print(f"  {version}: {shown or '-'}")
    cost = run.get("cost_eur")
    print(f"tokens: {run['input_tokens']} in, {run['output_tokens']} out; "
          f"cost: {'unknown' if cost is None else eur(cost, 4)}")
    m = result.measurement
    if m is not None:
        flags = ", ".join(m["flags"]) or "none"
        print(f"stability_pct: {m['stability_pct']} (CI {m['ci_low_pct']}–{m['ci_high_pct']}); "
              f"gap_null_pct {m['gap_null_pct']}; gap_positive_pct {m['gap_positive_pct']}")
        print(f"flags: {flags}; on_curve: {m['on_curve']}")
    else:
        print(f"not complete: run `llmarchive run … --run-id {run['run_id']}` again to resume")
