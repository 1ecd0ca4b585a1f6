"""``llmarchive status``: the owner's morning check in one screen."""
import argparse

from llmarchive.cli import archive
from llmarchive.cli._options import add_date, add_json, day, print_json

ORDER = 5


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "status", help="the morning check: instrument, alarms, bridges, reviews, budget, coverage, runs, publication",
        description=("Reads the archive and prints, in one screen: today's instrument verdict and any latched "
                     "alarm, pending generation bridges and needs_review decisions, the budget rung and this "
                     "month's spend, the coverage holes of the running month, the run folders publication would "
                     "refuse (unreadable, or a trial log that disagrees with its record), and the last publication and "
                     "whether it is current. Writes nothing, not even the home or its protocol files; exit "
                     "status 0 (a part that cannot be read says so)."))
    add_date(p, "the day to check")
    add_json(p)
    p.set_defaults(func=do_status)


def _error(part) -> bool:
    return isinstance(part, dict) and "error" in part


def render(s: dict) -> list[str]:
    """The one-screen text form of :func:`llmarchive.schedule.status.morning_status`."""
    out = [f"llmarchive status — {s['date']} — {s['home']}"]
    inst = s["instrument"]
    if _error(inst):
        out.append(f"instrument   cannot be read: {inst['error']}")
    else:
        fp = inst["runtime_fingerprint"] or "not run"
        rot = inst["guard_rotation"]
        rot_text = f"{rot['protocol_id']} {rot['verdict']}" if rot else "not run"
        out.append(f"instrument   {'PASSING' if inst['passing'] else 'SUSPECT'} — fingerprint {fp}; rotation {rot_text}")
        for reason in inst["reasons"]:
            out.append(f"             - {reason}")
        latch = inst["latched_alarm"]
        if latch:
            out.append(f"ALARM        latched since {latch['since']} ({latch['source']}), {latch['alarm_count']} "
                       f"unacknowledged: new measurements are instrument_suspect")
            out.append("             end it with: llmarchive instrument acknowledge --core-change '…' --reviewer NAME")
        else:
            out.append("alarm        none latched")

    bridges = s["pending_bridges"]
    if _error(bridges):
        out.append(f"bridges      cannot be read: {bridges['error']}")
    elif not bridges:
        out.append("bridges      none pending")
    else:
        for b in bridges:
            out.append(f"bridge       {b['model_family']}: {b['old_model_id']} → {b['new_model_id']} "
                       f"(raised {b['date']}, {b['status']}) — `llmarchive bridge run`")
    reviews = s["needs_review"]
    if _error(reviews):
        out.append(f"needs_review cannot be read: {reviews['error']}")
    elif not reviews:
        out.append("needs_review none pending")
    else:
        for r in reviews:
            ident = r.get("review_id") or ""
            out.append(f"needs_review {r.get('model_family')}: {r.get('model_id')} {ident[:8]} — `llmarchive review`")

    budget = s["budget"]
    if budget is None:
        out.append("budget       no budget.json (no paid call can run)")
    elif _error(budget):
        out.append(f"budget       cannot be read: {budget['error']}")
    else:
        spent = budget["spent_eur"]
        out.append(f"budget       {budget['month']}: {spent.get('general', 0.0):.2f} of "
                   f"{budget['general_pool_eur']:.2f} EUR general pool used ({budget['used_pct']:.1f} %); "
                   f"rung: {budget['rung'] or 'no cut'}")
        out.append(f"             bridge reserve left {budget['bridge_left_eur']:.2f} EUR, heartbeat "
                   f"{budget['heartbeat_left_eur']:.2f} EUR")

    cov = s["coverage"]
    if _error(cov):
        out.append(f"coverage     cannot be read: {cov['error']}")
    elif cov["archive_start"] is None:
        out.append(f"coverage     {cov['month']}: the archive has not started (no run or check yet)")
    else:
        out.append(f"coverage     {cov['month']}: {cov['ran']} ran, {len(cov['gaps'])} gaps with a cause, "
                   f"{len(cov['unexplained'])} unexplained, {len(cov['pending'])} still open")
        for g in cov["unexplained"][:5]:
            out.append(f"             UNEXPLAINED {g['job']} {g['period']} {g['protocol_id'] or ''}".rstrip())
        causes: dict = {}
        for g in cov["gaps"]:
            causes[g["cause"]] = causes.get(g["cause"], 0) + 1
        if causes:
            out.append("             gaps by cause: " + ", ".join(f"{c} {n}" for c, n in sorted(causes.items())))

    runs = s.get("runs")
    if _error(runs):
        out.append(f"runs         cannot be read: {runs['error']}")
    elif runs is not None:
        refused = runs["refused"]
        out.append(f"runs         {runs['complete']} complete, {runs['open']} open"
                   + (f"; {len(refused)} that publication refuses:" if refused else "; every one reads as recorded"))
        for r in refused[:10]:
            out.append(f"             REFUSED {r['problem']}")
        if len(refused) > 10:
            out.append(f"             and {len(refused) - 10} more (`llmarchive status --json`)")

    pub = s["publication"]
    if _error(pub):
        out.append(f"publication  cannot be read: {pub['error']}")
    elif not pub["published"]:
        out.append("publication  never published — `llmarchive publish`")
    else:
        newest = pub["newest_input"] or {}
        state = ("current" if pub["current"] else
                 f"STALE: newer inputs than the build (newest: {newest.get('what')} at {newest.get('at')}) — "
                 f"`llmarchive publish`")
        out.append(f"publication  built {pub['build_time']} — {state}")
    return out


def publication_inputs_current(paths) -> bool:
    """Whether ``public/render_manifest.json`` was built from the inputs as they are now (the publisher's digest)."""
    from llmarchive.archive.jsonio import read_json
    from publish import sources, status

    manifest = read_json(paths.public / status.MANIFEST_FILE)
    return status.inputs_digest(sources.gather(paths)) == manifest.get("inputs_sha256")


def do_status(args: argparse.Namespace) -> int:
    from llmarchive.schedule.status import morning_status

    when = day(args)
    # Read only: a home that does not exist yet is reported as empty, and is not created.
    result = morning_status(archive(args), when, inputs_current=publication_inputs_current)
    if args.json:
        print_json(result)
    else:
        from llmarchive.archive.textsafe import terminal

        print(terminal("\n".join(render(result)), keep_newlines=True))   # model ids come from outside: escaped
    return 0
