"""``llmarchive instrument``: the daily self-checks (method §7) and a day's verdict."""
import argparse
import sys
from pathlib import Path

from llmarchive.cli import CommandError, archive
from llmarchive.cli._options import (add_api, add_date, add_json, add_max_tokens, add_model, add_reference,
                                     add_subject, add_subject_models, api_subject_factory, day, print_json,
                                     reference_options, refuse_unbudgeted_with_a_budget, subject_models)
from llmarchive.archive import ArchivePaths, RecordFileError, jobs as job_table, store, utc_month
from llmarchive.instrument import (ALARM_VERDICTS, SUBJECT_MAX_TOKENS, acknowledge as acknowledgement, apply_pending,
                                   day_verdict, default_engine_factory, due_protocol, guard_rotation, latched_alarm,
                                   pending_folders, runtime_fingerprint, subject_fingerprint)
from llmarchive.succession import active_model

ORDER = 55


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "instrument",
        help="the instrument: runtime fingerprint, guard rotation, subject fingerprint, a day's verdict",
        description=(
            "The archive's checks on its own pipeline. `fingerprint` runs 12 fixed prompts on the reference "
            "model and compares the top-5 logprobs of every generated token with the runtime's expectation "
            "(exact equality); `rotation` runs the day's guard protocol on the reference model and compares "
            "it by the change rule with that protocol's last accepted baseline (its first result, or one a "
            "person accepted with `acknowledge`; an alarmed or flat result never moves it); "
            "`subject-fingerprint` asks the tracked model 24 single-fact "
            "questions; `status` prints whether a day's measurements are instrument_suspect; `apply-marks` "
            "applies the marks an alarm left in run folders it could not read. Any difference "
            "or failure is an instrument_alarm, and it latches: every new measurement is flagged until a person "
            "records what changed with `acknowledge`."
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
    add_max_tokens(rot, what="replace the protocol's max_tokens for a quick trial; the result is exploratory and is "
                          "compared only with results made the same way")
    add_subject_models(rot)
    rot.set_defaults(func=do_rotation)

    sf = sub.add_parser("subject-fingerprint", help="24 single-fact items against the tracked model")
    add_date(sf)
    add_model(sf, "model id (default: the family's active model)")
    add_subject(sf)
    sf.add_argument("--unbudgeted", action="store_true",
                    help="an archive with no budget.json (e.g. your own server); refused when one exists")
    add_api(sf)
    add_subject_models(sf)
    sf.set_defaults(func=do_subject)

    st = sub.add_parser("status", help="a day's verdict: does it have a passing runtime fingerprint and no alarm?")
    add_date(st)
    add_json(st)
    st.set_defaults(func=do_status)

    ack = sub.add_parser(
        "acknowledge", help="end a latched instrument alarm with a recorded human core_change",
        description=("Records a core_change (a hash-chained record: what changed, why, who reviewed it) covering "
                     "every instrument_alarm raised so far. It accepts the pending fingerprint candidates (a new "
                     "runtime, or a digest that kept differing) as the new expectations, and the alarmed guard "
                     "rotation results as the new baselines. Exit status: 0 when recorded, and also 0 when no "
                     "alarm is latched (nothing is recorded, and it says so); 2 when --core-change or --reviewer "
                     "is empty."))
    ack.add_argument("--core-change", required=True, help="what changed in the instrument and why (required)")
    ack.add_argument("--reviewer", required=True, help="who reviewed the alarm (required)")
    add_date(ack)
    add_json(ack)
    ack.set_defaults(func=do_acknowledge)

    checks = sub.add_parser("checks", help="list the daily checks of the job table: record kind, asset, publication")
    add_json(checks)
    checks.set_defaults(func=do_checks)

    marks = sub.add_parser(
        "apply-marks", help="apply the suspect marks an alarm left in run folders it could not read",
        description=("An alarm flags the measurements of its day; a run folder whose record could not be read "
                     "then gets a pending mark instead, and publication refuses it. Once the record is repaired, "
                     "this applies the marks: a run made on the alarm's day becomes instrument_suspect, a mark of "
                     "another day is dropped. Exit status: 0 when no pending mark is left, 1 when some folder "
                     "still cannot be read."))
    add_date(marks, "the date of a comparison point replaced because its held run is flagged now")
    add_json(marks)
    marks.set_defaults(func=do_apply_marks)


def do_fingerprint(args: argparse.Namespace) -> int:
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
        _warn_pending(paths)
    return 0 if r["status"] in ("pass", "established") and not outcome.alarm else 1


def do_rotation(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()
    series = args.series or subject_models(args).protocol_series
    when = day(args)
    if args.show_schedule:
        print(due_protocol(paths, when, series) or f"no admitted guard protocol in series {series}")
        return 0
    record = guard_rotation(paths, when, series=series, protocol_id=args.protocol,
                            reference_options=reference_options(args), max_tokens=args.max_tokens)
    print(f"guard_rotation {record['date']}: {record['protocol_id']} — {record['verdict']}")
    if record.get("stability_pct") is not None:
        print(f"  stability_pct {record['stability_pct']} (CI {record.get('ci_low_pct')}–{record.get('ci_high_pct')}); "
              f"run {record.get('run_id')}; previous {record.get('previous_run_id') or '-'}")
    print(f"  {record.get('reason')}")
    if record["verdict"] in ALARM_VERDICTS:
        print(f"INSTRUMENT ALARM: guard rotation {record['verdict']}", file=sys.stderr)
        _warn_pending(paths)
        return 1
    return 0


def do_subject(args: argparse.Namespace) -> int:
    paths = archive(args)
    refuse_unbudgeted_with_a_budget(args, paths, "the subject fingerprint from its heartbeat reserve")
    paths.ensure()
    config = subject_models(args)
    provider = args.subject or config.provider
    model = args.model or active_model(paths, config)
    subject = api_subject_factory(args, provider)(model, SUBJECT_MAX_TOKENS)
    when = day(args)
    if subject.billed and when[:7] < utc_month():
        # The model is asked as it answers now; a month that has ended is closed to new paid work (method §9.4).
        raise CommandError(f"--date {when}: the subject fingerprint asks the model as it answers today, and "
                           f"{when[:7]} has ended: a paid day of an ended month is refused; nothing was sent")
    outcome = subject_fingerprint(paths, when, subject, unbudgeted=args.unbudgeted)
    if outcome.record is None:
        print(f"subject_fingerprint not recorded: {outcome.skip['reason']} (cause {outcome.skip['cause']})",
              file=sys.stderr)
        return 1
    r = outcome.record
    print(f"subject_fingerprint {r['date']} on {r['subject_model_id']}: {r['correct']}/{r['total']} correct "
          f"(yes {r['answered_yes']}, no {r['answered_no']}, invalid {r['invalid']})"
          + (" — already recorded today" if outcome.already else ""))
    return 0


def do_acknowledge(args: argparse.Namespace) -> int:
    paths = archive(args).ensure()
    outcome = acknowledgement.acknowledge(paths, args.core_change, args.reviewer, date=day(args))
    if args.json:
        print_json({"recorded": outcome.recorded, "latch": outcome.latch, "record": outcome.record}, sort_keys=True)
        return 0
    if not outcome.recorded:
        print("no instrument alarm is latched: nothing to acknowledge, nothing recorded")
        return 0
    r, latch = outcome.record, outcome.latch
    print(f"core_change recorded ({r['date']}, reviewer {r['reviewer']}): the alarm latched since {latch['since']} "
          f"({latch['alarm_count']} alarm(s) from {', '.join(latch['sources'])}) is acknowledged")
    for accepted in r["accepted_expectations"]:
        print(f"  new fingerprint expectation for runtime {str(accepted['runtime_key_sha256'])[:12]}: "
              f"digest {str(accepted['digest'])[:12]}… (from {accepted['fingerprint_date']})")
    for run_id in r["accepted_rotations"]:
        print(f"  new guard-rotation baseline: {run_id}")
    print("  measurements from now on are judged by the day's own fingerprint again "
          "(run `llmarchive instrument fingerprint` for today if today's did not pass)")
    return 0


def do_status(args: argparse.Namespace) -> int:
    paths = archive(args)
    verdict = day_verdict(paths, day(args))
    latch = latched_alarm(paths)
    if args.json:
        print_json({"date": verdict.date, "passing": verdict.passing, "reasons": list(verdict.reasons),
                    "latched_alarm": latch, "pending_marks": [_pending_json(f) for f in pending_folders(paths)]})
    elif verdict.passing:
        print(f"{verdict.date}: passing — a passing runtime fingerprint and no instrument alarm")
    else:
        print(f"{verdict.date}: instrument_suspect — that day's measurements are flagged and kept off every curve")
        for reason in verdict.reasons:
            print(f"  - {reason}")
    if latch is not None and not args.json:
        print(f"LATCHED: instrument_alarm since {latch['since']} ({latch['alarm_count']} unacknowledged); every new "
              f"measurement is instrument_suspect until `llmarchive instrument acknowledge --core-change … "
              f"--reviewer …`")
    if not args.json:
        _warn_pending(paths)
    return 0 if verdict.passing else 1


def do_apply_marks(args: argparse.Namespace) -> int:
    paths = archive(args)
    changed = apply_pending(paths, day(args))
    left = [_pending_json(folder) for folder in pending_folders(paths)]
    if args.json:
        print_json({"marked_suspect": changed, "still_pending": left})
    else:
        for run_id in changed:
            print(f"{run_id}: instrument_suspect (a pending alarm mark of its run date)")
        if not changed and not left:
            print("no pending suspect mark is left: every alarm has marked every run folder it met")
        elif not left:
            print("every pending mark is applied (a mark of another day than the run's is dropped)")
        _warn_pending(paths)
    return 1 if left else 0


def _pending_json(folder: Path) -> dict:
    """One folder still holding pending marks: where, the alarm dates, and why they are not applied yet."""
    try:
        dates = sorted({str(m.get("date")) for m in store.pending_marks(folder)})
    except (RecordFileError, UnicodeDecodeError) as exc:
        dates, problem = [], str(exc)
    else:
        try:
            store.read_run(folder)
            problem = "its record reads again: `llmarchive instrument apply-marks` applies them"
        except (RecordFileError, UnicodeDecodeError) as exc:
            problem = str(exc) if isinstance(exc, RecordFileError) else f"not UTF-8 text (byte {exc.start})"
    return {"run_id": folder.name, "folder": str(folder), "alarm_dates": dates, "problem": problem}


def _warn_pending(paths: ArchivePaths) -> None:
    """Name, on stderr, every run folder an alarm could not mark (a person must repair it)."""
    for entry in (_pending_json(folder) for folder in pending_folders(paths)):
        print(f"PENDING SUSPECT MARK: run folder {entry['run_id']} (alarm of {', '.join(entry['alarm_dates']) or '?'}) "
              f"could not be marked — {entry['problem']}; publication refuses it until the mark is applied "
              "(repair its record, then `llmarchive instrument apply-marks`)", file=sys.stderr)


def daily_checks() -> list[dict]:
    """The job table's daily jobs (those that append a daily record), one dict each, in table order.

    Read from :mod:`llmarchive.archive.jobs` at each call, so the listing is
    the table: a check added there is listed here without an edit.
    """
    return [{"job": job.name, "record_kind": job.record.kind, "self_check": job.self_check, "asset": job.asset,
             "covered": job.covered is not None, "published": list(job.published), "says": job.says}
            for job in job_table.table() if job.record]


def do_checks(args: argparse.Namespace) -> int:
    """Print the daily checks (``--json``: as a list); nothing is run or written."""
    rows = daily_checks()
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        what = "self-check" if row["self_check"] else "subject"
        where = ", ".join(row["published"]) or "not published"
        print(f"{row['job']:<24} {row['record_kind']:<20} {what:<10} asset {row['asset'] or '-'}; {where} — "
              f"{row['says']}")
    return 0
