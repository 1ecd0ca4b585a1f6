"""``llmarchive run``: run one protocol on one subject, resumably, and measure it."""
import argparse
import re
import sys

from llmarchive import budget as budget_mod
from llmarchive.cli import CommandError, archive
from llmarchive.instrument.verdict import suspect_value
from llmarchive.runner import (RunError, RunHalted, RunSettings, preregistration, protocol_header,
                               recorded_trials, run_protocol, schedule)
from llmarchive.subjects import SUBJECT_KINDS, make_subject
from llmarchive.subjects.base import SubjectError
from llmarchive.records import utc_today

ORDER = 40


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a protocol on a subject (resumable) and build its measurement",
        description=(
            "Send every trial of PROTOCOL (4 versions x n) to a subject, one fresh call each, record "
            "them in a hash-chained log under $LLMARCHIVE_HOME/private/experiments/<run_id>/, and build "
            "the measurement when the run is complete. Running the same --run-id again resumes it: "
            "recorded trials are never sent again. --subject reference with no other option runs the "
            "embedded SmolLM2 model; anthropic reads ANTHROPIC_API_KEY; openai talks to any "
            "OpenAI-compatible server (llama-server, vLLM, Ollama) and reads OPENAI_API_KEY if set."
        ),
    )
    p.add_argument("protocol", metavar="PROTOCOL", help="protocol id, e.g. risky_choice_framing__wording__v0")
    p.add_argument("--subject", required=True, choices=SUBJECT_KINDS, help="who answers")
    p.add_argument("--model", help="model id (API subjects: required) or reference model name "
                                   "(smollm2-135m, the default, or qwen2.5-1.5b)")
    p.add_argument("--model-path", help="reference: a GGUF file instead of the named model's default location")
    p.add_argument("--model-sha256", help="reference: the sha256 the --model-path file must have")
    p.add_argument("--base-url", help="API subjects: the server (default: the provider's public API)")
    p.add_argument("--run-date", help="YYYY-MM-DD (default: today, UTC; a resumed run keeps its own)")
    p.add_argument("--run-id", help="default: <run-date>_<protocol>_<model>; give an existing one to resume")
    p.add_argument("--concurrency", type=int, default=None,
                   help="API subjects: calls in flight at once (default 4; the reference model runs one at a time)")
    p.add_argument("--series", choices=("commercial", "open_weights"),
                   help="default: commercial for anthropic, open_weights otherwise")
    p.add_argument("--model-family",
                   help="the curve this model belongs to (default: the model id without version numbers)")
    p.add_argument("--job", choices=("manual", "sweep", "bridge"), default="manual",
                   help="which budget rule applies to a paid subject (bridge draws on its own reserve)")
    p.add_argument("--unbudgeted", action="store_true",
                   help="run a paid subject with no budget.json (e.g. your own server); costs are logged as unknown")
    p.add_argument("--max-attempts", type=int, default=6,
                   help="API subjects: attempts per call before blocked_upstream")
    p.add_argument("--timeout", type=float, default=120.0, help="API subjects: seconds per attempt")
    p.add_argument("--threads", type=int, default=1, help="reference: llama.cpp n_threads (recorded; default 1)")
    p.add_argument("--workers", type=int, default=1,
                   help="reference: identical model instances answering side by side (default 1; answers "
                        "are the same at any number, only faster on a machine with spare cores)")
    p.add_argument("--batch", type=int, default=512, help="reference: llama.cpp n_batch (recorded)")
    p.add_argument("--max-tokens", type=int,
                   help="override the protocol's generation.max_tokens (tests, trials); the run is marked "
                        "exploratory and is never on a curve")
    p.add_argument("--quiet", action="store_true", help="no per-trial progress lines on stderr")
    p.set_defaults(func=run)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "model"


def _load_protocol(paths, protocol_id: str) -> dict:
    from panels import registry

    try:
        return registry.load_protocol(paths, protocol_id)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _all_headers(paths) -> list[dict]:
    try:
        from panels import registry
        return [h for h in registry.list_protocols(paths) if h.get("n")]
    except (ImportError, ValueError, AttributeError):
        return []


def run(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()
    protocol = _load_protocol(paths, args.protocol)
    run_date = args.run_date or utc_today()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", run_date):
        raise CommandError(f"--run-date must be YYYY-MM-DD, got {run_date!r}")
    max_tokens = args.max_tokens or (protocol.get("generation") or {}).get("max_tokens")
    try:
        subject = make_subject(args.subject, max_tokens=max_tokens, model=args.model, base_url=args.base_url,
                               model_path=args.model_path, model_sha256=args.model_sha256,
                               max_attempts=args.max_attempts, timeout_s=args.timeout,
                               n_threads=args.threads, n_batch=args.batch)
    except SubjectError as exc:
        raise CommandError(str(exc)) from None
    concurrency = args.concurrency if args.concurrency is not None else (4 if subject.is_async else 1)
    if not subject.is_async and concurrency != 1:
        raise CommandError("the reference model runs one call at a time: --concurrency must be 1")
    model_label = args.model or getattr(subject, "name", subject.subject_model_id)
    run_id = args.run_id or f"{run_date}_{protocol['protocol_id']}_{_slug(model_label)}"

    authorization, budget = None, None
    if subject.billed:
        budget = budget_mod.load_budget(paths)
        if budget is None and not args.unbudgeted:
            raise CommandError(f"{paths.budget_file} does not exist: paid calls need a budget "
                               "(`llmarchive budget init …`), or pass --unbudgeted for a server you pay nothing for")
        if budget is None:
            authorization = budget_mod.unbudgeted(args.job)
        else:
            remaining = len(schedule(protocol)) - recorded_trials(paths, run_id)
            try:
                authorization = budget_mod.authorize_run(paths, budget, protocol_header(protocol), args.job,
                                                         max(remaining, 0), _all_headers(paths), date=run_date)
            except budget_mod.BudgetHalted as exc:
                print(f"budget: {exc} (recorded as a skip, cause budget_halted)", file=sys.stderr)
                return 1

    prereg = preregistration(paths, protocol)
    exploratory = False
    if not prereg["listed"]:
        exploratory = f"not pre-registered: {prereg['reason']}"
    # SPEC §7: a day without a passing runtime fingerprint (or with an alarm) is instrument_suspect.
    suspect = suspect_value(paths, run_date, run_id)
    if suspect:
        print(f"{suspect} — this run's measurement will be flagged instrument_suspect", file=sys.stderr)
    settings = RunSettings(run_id=run_id, run_date=args.run_date, series=args.series,
                           model_family=args.model_family, concurrency=concurrency,
                           exploratory=exploratory, allow_generation_override=args.max_tokens is not None,
                           instrument_suspect=suspect, extra={"preregistration": prereg})

    def progress(done: int, total: int, trial: dict) -> None:
        token = f" {trial['token']}" if trial["token"] else ""
        print(f"[{done}/{total}] {trial['item_id']} {trial['version']} r{trial['replicate_index']}: "
              f"{trial['outcome']}{token} ({trial['latency_ms']} ms, {trial['attempts']} attempt(s))",
              file=sys.stderr, flush=True)

    print(f"run {run_id}: {protocol['protocol_id']} on {subject.subject_model_id}", file=sys.stderr)
    try:
        result = run_protocol(paths, protocol, subject, settings, authorization=authorization, budget=budget,
                              progress=None if args.quiet else progress)
    except RunHalted as exc:
        raise CommandError(str(exc)) from None
    except (RunError, SubjectError, budget_mod.BudgetError) as exc:
        raise CommandError(str(exc)) from None
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
          f"cost: {'unknown' if cost is None else f'€{cost:.4f}'}")
    m = result.measurement
    if m is not None:
        flags = ", ".join(m["flags"]) or "none"
        print(f"stability_pct: {m['stability_pct']} (CI {m['ci_low_pct']}–{m['ci_high_pct']}); "
              f"gap_null_pct {m['gap_null_pct']}; gap_positive_pct {m['gap_positive_pct']}")
        print(f"flags: {flags}; on_curve: {m['on_curve']}")
    else:
        print(f"not complete: run `llmarchive run … --run-id {run['run_id']}` again to resume")
