"""``llmarchive comparison``: accept a third party's run on an open panel as a comparison point."""
import argparse
import shlex
import sys

from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import add_concurrency, add_date, add_model, add_out, add_run_id, day, out_file
from llmarchive.cli._options import concurrency as concurrency_for
from llmarchive.archive import TRIALS_FILE, terminal
from llmarchive.comparison import KNOWN_ANSWER_SOURCE, harness_import, intake, lmeval_log, log_bounds, run_comparison
from llmarchive.run import RunInterrupted, TrialProgress
from llmarchive.subjects import registry
from measure.errors import ArchiveError

ORDER = 65


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def _log_bounds_said() -> str:
    """The bounds a harness log is held to, said from the constants that enforce them (never a copy of them)."""
    b, lm = log_bounds, lmeval_log
    return (f"Bounds, checked before the harness's reader is given the file (over one: one line naming it, exit 2, "
            f"nothing written): a log read whole, or an .eval once decompressed, at most {_mib(b.LOG_BYTES)} and "
            f"{b.LOG_VALUES:,} JSON values; an .eval at most {b.MAX_MEMBERS:,} members and {b.MAX_SAMPLES:,} "
            f"samples of at most {_mib(b.SAMPLE_BYTES)} each; an lm-eval samples file at most "
            f"{_mib(lm.MAX_LOG_BYTES)}, {lm.MAX_RECORDS:,} lines of at most {_mib(lm.MAX_LINE_BYTES)}.")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "comparison",
        help="third-party comparison points on an open panel (method §4.2)",
        description=(
            "A comparison point is one outside run of one open protocol on one model, checked against the "
            "panel and recomputed by this archive's own estimator. It is read-only: it starts no measurement, "
            "changes no rotation, and is never on a curve or in an aggregate."
        ),
    )
    sub = p.add_subparsers(dest="comparison_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    run = sub.add_parser(
        "run", help="run a published open panel file on your own model and write a submission (resumable)",
        description=(
            "Run the published open panel FILE (public/panels/<protocol_id>.json) on MODEL behind an "
            "OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, LM Studio, TGI) or the Anthropic API, "
            "and write a submission `llmarchive comparison submit` accepts unchanged. Needs nothing but the file: "
            "its panel_sha256 and protocol_sha256 are recomputed first and an edited file is refused before any "
            "call. Each prompt is sent exactly, one fresh call each, with the panel's max_tokens and no other "
            "setting (the submission records what the client set). The run lives in "
            "$LLMARCHIVE_HOME/private/experiments/<run_id>/; the same command again resumes it and sends only "
            "the missing calls. Keys come from the environment only: " + _keys() + "."
        ),
    )
    run.add_argument("--panel", required=True, metavar="FILE", help="the published open panel file")
    run.add_argument("--base-url", default=None,
                     help="the server, e.g. http://127.0.0.1:8080 (a trailing /v1 is accepted; default: the "
                          "provider's public API)")
    add_model(run, "the exact model id the server serves (no alias such as …-latest)")
    default = registry.comparison_default()
    run.add_argument("--api", choices=registry.comparison_names(), default=default,
                     help=f"the protocol the server speaks (default: {default}, chat completions)")
    add_out(run, "the submission (once the run is complete)")
    run.add_argument("--submitted-by", help="who made the run, written into the submission's header")
    run.add_argument("--run-date", help="YYYY-MM-DD, the day the run is dated (default: today, UTC; a resumed run "
                                        "keeps its own)")
    add_run_id(run, "default: comparison_<protocol_id>_<api>_<model>; the same id resumes the same run")
    add_concurrency(run)
    run.add_argument("--max-attempts", type=int, default=6,
                     help="attempts per call before it counts as unanswered (the run stops, the slot stays open "
                          "and the next run sends it; default 6)")
    run.add_argument("--timeout", type=float, default=120.0, help="seconds per attempt (default 120)")
    run.add_argument("--quiet", action="store_true",
                     help="no progress bar on stderr (there is none anyway when stderr is not a terminal)")
    run.set_defaults(func=do_run)
    submit = sub.add_parser(
        "submit", help="check a submission file and store it, or list every reason it is refused",
        description=(
            f"FILE is JSON Lines: trial records exactly as `llmarchive run` writes them to {TRIALS_FILE} (the "
            "trial log of a `comparison run` is accepted as it is), optionally preceded by one header "
            "line {\"record_type\": \"comparison_submission\", \"model_id\": …, \"run_date\": …, "
            "\"submitted_by\": …}. Accepted only with the same panel_sha256 (every prompt_sha256 must be the "
            "panel's), the same grammar_version, the same n, all four versions, the full outcome "
            "distribution per version and one exact model_id. Caps: the file at most 16 MiB, one line at most "
            "256 KiB, one response at most 64 characters per token of the panel's max_tokens (16,384 for 256). "
            "A run is filed once: its identity is its trials (each prompt and its answer), not the file, so the "
            "same run under another header, note, submitter or file name is refused, naming the earlier point, "
            "and so is a run whose trials are the archive's own. A refused file stores nothing, and every reason "
            "is listed at once, one line each. `llmarchive comparison run` writes such a file from a published "
            "panel file."
        ),
    )
    submit.add_argument("file", metavar="FILE")
    submit.add_argument("--submitted-by", help="who made the run (required unless the header names it)")
    submit.add_argument("--known-answer", action="store_true",
                        help="the archive's own known-answer step files this point: one of its simulated readers, "
                             "run through the outsiders' route (only then is a simulated-reader-… model id "
                             "accepted, and the point published as a known answer)")
    add_date(submit, "the day the point is filed")
    submit.set_defaults(func=do_submit)
    _register_import(sub)


def _keys() -> str:
    """Where each API ``comparison run`` offers reads its key, in the provider table's words."""
    rows = [registry.find(name) for name in registry.comparison_names()]
    return ", ".join(f"{p.key_env} (optional for a local server)" if not p.key_required
                     else f"{p.key_env} for --api {p.name}" for p in rows if p is not None and p.key_env)


def _register_import(sub) -> None:
    """``comparison import``: a harness's log (Inspect AI, lm-evaluation-harness) made into a submission file."""
    imp = sub.add_parser(
        "import", help="turn a harness's log (Inspect AI, lm-evaluation-harness) of a published open panel into a "
                        "submission",
        description=(
            "Read LOG — an Inspect AI eval log (.eval, or its .json form) of the panel's published Inspect task "
            "(panels/<protocol_id>.py), or an lm-evaluation-harness --log_samples file "
            "(samples_<task>_<date>.jsonl, with its results file beside it) of the published task "
            "(panels/<protocol_id>.lm_eval.yaml) — with the harness's own reader and write a submission `llmarchive "
            "comparison submit` accepts unchanged. The panel FILE is verified first. Refused, listing every "
            "reason at once and writing nothing: a sample whose input does not hash to the panel's "
            "prompt_sha256, a slot (scenario x version x epoch) missing or answered twice, a sample that "
            "errored (run `inspect eval-retry` and import the new log), more than one model id as the server "
            "reported it (output.model) or an alias, a generation setting other than the panel's max_tokens "
            "(a sampling parameter, a system message, a cache); first of all, a value that is not a finite "
            "number (NaN, Infinity), naming its field. Every setting the log records is kept in "
            "the submission's explicitly_set; the run date is the day the log says the eval was created. "
            + _log_bounds_said()
        ),
    )
    imp.add_argument("log", metavar="LOG", help="the harness's log file (an Inspect AI .eval log, an lm-eval "
                                                        "samples_*.jsonl)")
    imp.add_argument("--panel", required=True, metavar="FILE", help="the published open panel file the log ran")
    add_out(imp, "the submission")
    imp.add_argument("--format", choices=sorted(harness_import.IMPORTERS), default=None,
                     help="which harness wrote LOG (default: told from the file)")
    imp.add_argument("--submitted-by", help="who made the run, written into the submission's header")
    imp.set_defaults(func=do_import)


def do_submit(args: argparse.Namespace) -> int:
    paths = archive(args)
    when = day(args)
    try:
        # A refused submission is an ArchiveError like any other mistake meant for a person: main prints its
        # one line (the file and every reason) and exits 2.
        accepted = intake.submit(paths, args.file, submitted_by=args.submitted_by, today=when,
                                 source=KNOWN_ANSWER_SOURCE if args.known_answer else None)
    except ArchiveError:
        raise
    except ValueError as exc:
        raise CommandError(terminal(f"{args.file}: {exc}")) from None
    r, m = accepted.record, accepted.record["measurement"]
    # Every value below came from outside (the file, its header, the command line): printed escaped.
    if accepted.already:
        print(terminal(f"already filed as {accepted.comparison_id} on {r.get('date')}: this exact file; "
                       "nothing stored again"))
        return 0
    print(f"accepted: comparison point {terminal(accepted.comparison_id)}")
    print(terminal(f"  {r['protocol_id']} on {r['model_id']}, run {r['run_date']}, submitted by {r['submitted_by']}"))
    print(terminal(f"  recomputed here: stability_pct {m['stability_pct']} "
                   f"(CI {m['ci_low_pct']}–{m['ci_high_pct']}), null_floor_pct {m['null_floor_pct']}, "
                   f"flags {', '.join(m['flags'])}"))
    print("  one model, one frozen 15-scenario panel, one day: not a ranking, never on a curve")
    return 0


def do_run(args: argparse.Namespace) -> int:
    if not args.model:
        raise CommandError("comparison run needs --model (the exact model id your server serves)")
    if args.max_attempts < 1:
        raise CommandError(f"--max-attempts must be at least 1, got {args.max_attempts}")
    concurrency = concurrency_for(args, True)
    paths = archive(args)
    try:
        # A bar on a terminal (done/total, rate, time left); nothing when stderr is not one.
        with TrialProgress(enabled=not args.quiet) as progress:
            done = run_comparison(paths, args.panel, base_url=args.base_url, model=args.model, api=args.api,
                                  out=out_file(args, paths), run_id=args.run_id, run_date=args.run_date,
                                  concurrency=concurrency, submitted_by=args.submitted_by,
                                  max_attempts=args.max_attempts, timeout_s=args.timeout,
                                  progress=progress if progress.active else None)
    except RunInterrupted as exc:
        # Not a mistake in the command: the server gave no answer. What was recorded stays; nothing else is.
        print(terminal(f"interrupted: {exc}"), file=sys.stderr)
        print("run the same `llmarchive comparison run …` command again to resume; no submission written yet",
              file=sys.stderr)
        return 1
    result, run = done.result, done.result.run
    print(terminal(f"run_id: {run['run_id']}"))
    print(terminal(f"folder: {result.run_dir}"))
    print(f"status: {run['status']} ({run['n_trials_recorded']}/{run['n_trials_planned']} trials; "
          f"{result.called} called now, {result.already_recorded} already recorded)")
    if not done.complete:
        print("not complete: run the same command again to resume; no submission written yet")
        return 1
    header = done.header
    # the model id is the server's own word for itself: printed escaped
    print(terminal(f"submission: {done.out} ({done.protocol['protocol_id']} on {header['model_id']}, "
                   f"run {header['run_date']}, panel_sha256 {header['panel_sha256'][:12]}…)"))
    who = "" if header.get("submitted_by") else " --submitted-by 'YOUR NAME'"
    print(f"next: llmarchive comparison submit {shlex.quote(str(done.out))}{who}")
    return 0


def do_import(args: argparse.Namespace) -> int:
    # A refused log is an ArchiveError (LogImportRefused): main prints the file and every reason, one line each.
    made = harness_import.import_log(args.log, args.panel, out_file(args, archive(args)), kind=args.format,
                                     submitted_by=args.submitted_by)
    head = made.header
    explicitly = ", ".join(f"{k}={v}" for k, v in head["explicitly_set"].items())
    # Every value below came from the log (the server's model id, the client's settings): printed escaped.
    print(terminal(f"submission: {args.out} ({head['protocol_id']} on {head['model_id']}, run {head['run_date']}, "
                   f"{len(made.trials)} trials)"))
    print(terminal(f"  explicitly set: {explicitly}"))
    who = "" if head.get("submitted_by") else " --submitted-by 'YOUR NAME'"
    print(f"next: llmarchive comparison submit {shlex.quote(str(args.out))}{who}")
    return 0
