"""``llmarchive status``: the owner's morning check in one screen."""
import argparse
import os
from typing import Any, Optional

from llmarchive.cli import archive
from llmarchive.cli._options import add_date, add_json, day, print_json
from llmarchive.archive import jobs as job_table, read_json, terminal
from llmarchive.budget import eur
from llmarchive.schedule import morning_status, webhook_from

ORDER = 5


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "status", help="the morning check: instrument, alarms, dead-man and pages, bridges, reviews, budget, "
                       "coverage, runs, publication",
        description=("Reads the archive and prints, in one screen: today's instrument verdict and any latched "
                     "alarm, the dead-man (hours since the last daily cycle) and the owner's pages (owed, the last "
                     "one delivered, whether they are getting through to LLMARCHIVE_WEBHOOK_URL), pending "
                     "generation bridges and needs_review decisions, the budget rung and this "
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
    """The one-screen text form of :func:`llmarchive.schedule.status.morning_status`: one block per part, in order."""
    out = [f"llmarchive status — {s['date']} — {s['home']}"]
    for part in (_instrument_lines(s["instrument"]), _lifeline_lines(s.get("lifeline")),
                 _bridge_lines(s["pending_bridges"]), _review_lines(s["needs_review"]), _budget_lines(s["budget"]),
                 _coverage_lines(s["coverage"]), _runs_lines(s.get("runs")), _publication_lines(s["publication"])):
        out += part
    return out


def _shown_words(value: Any) -> str:
    """A daily check's part of the instrument line: its fields' values in order, or "not run"."""
    if not value:
        return "not run"
    return " ".join(str(v) for v in value.values()) if isinstance(value, dict) else str(value)


def _instrument_lines(inst: dict) -> list[str]:
    """Today's verdict, its reasons, and the latched alarm with the command that ends it."""
    if _error(inst):
        return [f"instrument   cannot be read: {inst['error']}"]
    checks = "; ".join(f"{job.shown.label} {_shown_words(inst.get(job.record.kind))}" for job in job_table.shown())
    out = [f"instrument   {'PASSING' if inst['passing'] else 'SUSPECT'} — {checks}"]
    out += [f"             - {reason}" for reason in inst["reasons"]]
    latch = inst["latched_alarm"]
    if not latch:
        return out + ["alarm        none latched"]
    return out + [f"ALARM        latched since {latch['since']} ({latch['source']}), {latch['alarm_count']} "
                  f"unacknowledged: new measurements are instrument_suspect",
                  "             end it with: llmarchive instrument acknowledge --core-change '…' --reviewer NAME"]


def _lifeline_lines(life: Optional[dict]) -> list[str]:
    """The dead-man and the pages: whether the owner would hear of any of the rest."""
    if life is None:
        return []
    if _error(life):
        return [f"lifeline     cannot be read: {life['error']}"]
    lease = life["lease"]
    since = f"last daily cycle {lease['last_cycle_at'] or 'never'}" + (
        f" ({lease['hours_since_cycle']} h ago)" if lease["hours_since_cycle"] is not None else "")
    out = [f"{'DEAD-MAN' if lease['deadman'] else 'lease':12} {lease['state']} — {since}"]
    out += [f"             - {reason}" for reason in lease["reasons"]]
    last = life["last_delivered"]
    delivered = f"last page delivered {last['at']} ({last['kind']})" if last else "no page delivered yet"
    if life["broken"]:
        return out + [f"PAGES        NOT GETTING THROUGH: {life['broken']}", f"             {delivered}"]
    owed = f"; {life['owed']} owed, retried" if life["owed"] else "; none owed"
    return out + [f"pages        webhook {life['webhook']}; {delivered}{owed}"]


def _bridge_lines(bridges) -> list[str]:
    if _error(bridges):
        return [f"bridges      cannot be read: {bridges['error']}"]
    if not bridges:
        return ["bridges      none pending"]
    return [f"bridge       {b['model_family']}: {b['old_model_id']} → {b['new_model_id']} "
            f"(raised {b['date']}, {b['status']}) — `llmarchive bridge run`" for b in bridges]


def _review_lines(reviews) -> list[str]:
    if _error(reviews):
        return [f"needs_review cannot be read: {reviews['error']}"]
    if not reviews:
        return ["needs_review none pending"]
    return [f"needs_review {r.get('model_family')}: {r.get('model_id')} {(r.get('review_id') or '')[:8]} — "
            "`llmarchive review`" for r in reviews]


def _budget_lines(budget: Optional[dict]) -> list[str]:
    """The month's rung and spend, or why there is none."""
    if budget is None:
        return ["budget       no budget.json (no paid call can run)"]
    if _error(budget):
        return [f"budget       cannot be read: {budget['error']}"]
    spent = budget["spent_eur"]
    return [f"budget       {budget['month']}: {eur(spent.get('general', 0.0))} of "
            f"{eur(budget['general_pool_eur'])} general pool used ({budget['used_pct']:.1f} %); "
            f"rung: {budget['rung'] or 'no cut'}",
            f"             bridge reserve left {eur(budget['bridge_left_eur'])}, heartbeat "
            f"{eur(budget['heartbeat_left_eur'])}"]


def _coverage_lines(cov: dict) -> list[str]:
    """The running month's counts, the first unexplained holes, the gaps by cause."""
    if _error(cov):
        return [f"coverage     cannot be read: {cov['error']}"]
    if cov["archive_start"] is None:
        return [f"coverage     {cov['month']}: the archive has not started (no run or check yet)"]
    out = [f"coverage     {cov['month']}: {cov['ran']} ran, {len(cov['gaps'])} gaps with a cause, "
           f"{len(cov['unexplained'])} unexplained, {len(cov['pending'])} still open"]
    out += [f"             UNEXPLAINED {g['job']} {g['period']} {g['protocol_id'] or ''}".rstrip()
            for g in cov["unexplained"][:5]]
    causes: dict = {}
    for g in cov["gaps"]:
        causes[g["cause"]] = causes.get(g["cause"], 0) + 1
    if causes:
        out.append("             gaps by cause: " + ", ".join(f"{c} {n}" for c, n in sorted(causes.items())))
    return out


def _runs_lines(runs: Optional[dict]) -> list[str]:
    """The run folders, and the first of those publication would refuse."""
    if _error(runs):
        return [f"runs         cannot be read: {runs['error']}"]
    if runs is None:
        return []
    refused = runs["refused"]
    out = [f"runs         {runs['complete']} complete, {runs['open']} open"
           + (f"; {len(refused)} that publication refuses:" if refused else "; every one reads as recorded")]
    out += [f"             REFUSED {r['problem']}" for r in refused[:10]]
    if len(refused) > 10:
        out.append(f"             and {len(refused) - 10} more (`llmarchive status --json`)")
    return out


def _publication_lines(pub: dict) -> list[str]:
    if _error(pub):
        return [f"publication  cannot be read: {pub['error']}"]
    if not pub["published"]:
        return ["publication  never published — `llmarchive publish`"]
    newest = pub["newest_input"] or {}
    state = ("current" if pub["current"] else
             f"STALE: newer inputs than the build (newest: {newest.get('what')} at {newest.get('at')}) — "
             f"`llmarchive publish`")
    return [f"publication  built {pub['build_time']} — {state}"]


def publication_inputs_current(paths) -> bool:
    """Whether ``public/render_manifest.json`` was built from the inputs as they are now (the publisher's digest,
    over only what it digests: :func:`publish.data.sources.digest_inputs`, not a build's whole reading)."""
    # publish is imported in the handlers, not above: it loads sqlite_utils and pandas (~0.4 s), and the CLI
    # imports every subcommand module at start, so every command would pay for it.  Not a cycle.
    from publish.data import sources, status

    manifest = read_json(paths.public / status.MANIFEST_FILE)
    return status.inputs_digest(sources.digest_inputs(paths)) == manifest.get("inputs_sha256")


def do_status(args: argparse.Namespace) -> int:
    when = day(args)
    # Read only: a home that does not exist yet is reported as empty, and is not created.
    result = morning_status(archive(args), when, inputs_current=publication_inputs_current,
                            webhook_url=webhook_from(os.environ))
    if args.json:
        print_json(result)
    else:
        print(terminal("\n".join(render(result)), keep_newlines=True))   # model ids come from outside: escaped
    return 0
