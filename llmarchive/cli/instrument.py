"""``llmarchive instrument``: the daily self-checks (SPEC §7) and a day's verdict."""
import argparse
import json
import sys

from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import (add_api, add_date, add_reference, add_subject_models, api_subject_factory,
                                     day, reference_options, subject_models)

ORDER = 55


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "instrument",
        help="the instrument: runtime fingerprint, guard rotation, subject fingerprint, a day's verdict",
        description=(
            "The archive's checks on its own pipeline. `fingerprint` runs 12 fixed prompts on the reference "
            "model and compares the top-5 logprobs of every generated token with the runtime's expectation "
            "(exact equality); `rotation` runs the day's guard protocol on the reference model and compares "
            "it with its previous result; `subject-fingerprint` asks the tracked model 24 single-fact "
            "questions; `status` prints whether a day's measurements are instrument_suspect. Any difference "
            "or failure is an instrument_alarm, and that day's measurements are flagged."
        ),
    )
    sub = p.add_subparsers(dest="instrument_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    fp = sub.add_parser("fingerprint", help="the runtime fingerprint on the reference model")
    add_date(fp)
    add_reference(fp)
    fp.set_defaults(func=do_fingerprint)

    rot = sub.add_parser("rotation", help="the day's guard protocol on the reference model")
    add_date(rot)
    add_reference(rot)
    rot.add_argument("--series", help="protocol series (default: subject_models.yaml's protocol_series)")
    rot.add_argument("--protocol", help="run this guard protocol instead of the day's (a re-check by hand)")
    rot.add_argument("--show-schedule", action="store_true", help="print which protocol is due, run nothing")
    rot.add_argument("--max-tokens", type=int,
                     help="replace the protocol's max_tokens for a quick trial; the result is exploratory and is "
                          "compared only with results made the same way")
    add_subject_models(rot)
    rot.set_defaults(func=do_rotation)

    sf = sub.add_parser("subject-fingerprint", help="24 single-fact items against the tracked model")
    add_date(sf)
    sf.add_argument("--model", help="model id (default: the family's active model)")
    sf.add_argument("--subject", choices=("anthropic", "openai"),
                    help="the API (default: subject_models.yaml's provider)")
    sf.add_argument("--unbudgeted", action="store_true", help="no budget.json (e.g. your own server)")
    add_api(sf)
    add_subject_models(sf)
    sf.set_defaults(func=do_subject)

    st = sub.add_parser("status", help="a day's verdict: does it have a passing runtime fingerprint and no alarm?")
    add_date(st)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=do_status)


def do_fingerprint(args: argparse.Namespace) -> int:
    from llmarchive.instrument.fingerprint import default_engine_factory, runtime_fingerprint

    paths = archive(args).ensure()
    options = reference_options(args)
    factory = default_engine_factory(model=options["model"] or "smollm2-135m", model_path=options["model_path"],
                                     model_sha256=options["model_sha256"], n_threads=options["n_threads"],
                                     n_batch=options["n_batch"])
    outcome = runtime_fingerprint(paths, day(args), factory)
    r = outcome.record
    print(f"runtime_fingerprint {r['date']}: {r['status']}")
    print(f"  digest:   {r['digest'] or '-'}")
    print(f"  expected: {r['expected_digest'] or '-'}")
    print(f"  runtime:  model {str(r['model_sha256'])[:12]}…, llama-cpp-python {r['llama_cpp_version']}, "
          f"template {str(r['template_sha256'])[:12]}…, {r['runner_arch']}, threads {r['n_threads']}, "
          f"batch {r['n_batch']}")
    print(f"  {r.get('reason')}")
    if outcome.alarm:
        print(f"INSTRUMENT ALARM: {outcome.alarm['reason']}", file=sys.stderr)
    return 0 if r["status"] in ("pass", "established") and not outcome.alarm else 1


def do_rotation(args: argparse.Namespace) -> int:
    from llmarchive.instrument.fingerprint import InstrumentError
    from llmarchive.instrument.rotation import due_protocol, guard_rotation

    paths = archive(args).ensure()
    series = args.series or subject_models(args).protocol_series
    when = day(args)
    if args.show_schedule:
        print(due_protocol(paths, when, series) or f"no admitted guard protocol in series {series}")
        return 0
    try:
        record = guard_rotation(paths, when, series=series, protocol_id=args.protocol,
                                reference_options=reference_options(args), max_tokens=args.max_tokens)
    except (InstrumentError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    print(f"guard_rotation {record['date']}: {record['protocol_id']} — {record['verdict']}")
    if record.get("stability_pct") is not None:
        print(f"  stability_pct {record['stability_pct']} (CI {record.get('ci_low_pct')}–{record.get('ci_high_pct')}); "
              f"run {record.get('run_id')}; previous {record.get('previous_run_id') or '-'}")
    print(f"  {record.get('reason')}")
    if record["verdict"] in ("improved", "regressed", "unmeasurable", "unavailable"):
        print(f"INSTRUMENT ALARM: guard rotation {record['verdict']}", file=sys.stderr)
        return 1
    return 0


def do_subject(args: argparse.Namespace) -> int:
    from llmarchive.budget import BudgetError
    from llmarchive.instrument.fingerprint import InstrumentError
    from llmarchive.instrument.prompts import SUBJECT_MAX_TOKENS
    from llmarchive.instrument.subject import subject_fingerprint
    from llmarchive.subject_models import active_model

    paths = archive(args).ensure()
    config = subject_models(args)
    provider = args.subject or config.provider
    model = args.model or active_model(paths, config)
    subject = api_subject_factory(args, provider)(model, SUBJECT_MAX_TOKENS)
    try:
        outcome = subject_fingerprint(paths, day(args), subject, unbudgeted=args.unbudgeted)
    except (InstrumentError, BudgetError) as exc:
        raise CommandError(str(exc)) from None
    if outcome.record is None:
        print(f"subject_fingerprint not recorded: {outcome.skip['reason']} (cause {outcome.skip['cause']})",
              file=sys.stderr)
        return 1
    r = outcome.record
    print(f"subject_fingerprint {r['date']} on {r['subject_model_id']}: {r['correct']}/{r['total']} correct "
          f"(yes {r['answered_yes']}, no {r['answered_no']}, invalid {r['invalid']})"
          + (" — already recorded today" if outcome.already else ""))
    return 0


def do_status(args: argparse.Namespace) -> int:
    from llmarchive.instrument import day_verdict

    verdict = day_verdict(archive(args), day(args))
    if args.json:
        print(json.dumps({"date": verdict.date, "passing": verdict.passing, "reasons": list(verdict.reasons)},
                         indent=1))
    elif verdict.passing:
        print(f"{verdict.date}: passing — a passing runtime fingerprint and no instrument alarm")
    else:
        print(f"{verdict.date}: instrument_suspect — that day's measurements are flagged and kept off every curve")
        for reason in verdict.reasons:
            print(f"  - {reason}")
    return 0 if verdict.passing else 1
