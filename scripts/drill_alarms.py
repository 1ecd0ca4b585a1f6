"""The drill's alarm verdicts: each alarm raised on the day it is due, and never again once resolved.

* instrument — ``instrument_alarm`` records dated on exactly the script's days
  (the fingerprint changed, then failed each day until a person acknowledged);
* bridge — the model watch's ``bridge_alarm``: first on the day the new id was
  listed, then daily while the daemon ran, none once the bridge was left
  incomplete (the old id withdrawn), which is recorded on the script's day;
* dead-man — the outside check (deploy/crontab's ``llmarchive lease``) pages
  the owner's webhook on the day the 36 hours ran out while the daemon was
  down, and says it recovered once the daemon was back; no dead-man page after;
* failing checks — every ``FAILED CHECK`` the webhook received is resolved by a
  ``RESOLVED CHECK`` of the same check before the end, unless the script left
  it failing (reported, not judged: the webhook's words are the alerts module's);
* pages — every page ever recorded in the outbox (``private/outbox/pages.jsonl``)
  delivered exactly once, after it was recorded, and taken exactly once by the
  webhook; a repeat only of a post that got no answer (a hung webhook) or was
  refused (a 500); none owed at the end but what the last hour recorded
  (:func:`page_problems`).

A page's day is the day it was *recorded* (its ``recorded_at``): a page the
webhook could not take on its day is delivered later, once, and still counts
for the day it was due.
"""
import datetime as dt
from typing import Any, Optional

from llmarchive.archive import parse_time, read_jsonl, record_logs as records
from llmarchive.schedule import outbox
from scripts.drill_state import State

Verdict = tuple[str, bool, str]
RECOVERY = dt.timedelta(hours=7)
"""After the webhook answers again, the drill's next sender may be six hours off (the outside check's pace while
the daemon is down) and the sender's back-off one more: only then must nothing older than an hour be owed."""


def recorded_day(received: Any) -> str:
    """The day the page a request carried was recorded in the outbox (the day it was due)."""
    return str(received.body.get("recorded_at") or received.at.isoformat())[:10]


def page_problems(log: list[dict], received: list[Any], end: dt.datetime,
                  judge_owed: bool = True) -> tuple[list[str], dict[str, int]]:
    """What is wrong with the delivery of the pages of the outbox ``log``, as the webhook ``received`` them.

    ``received``: :class:`tests.webhook_receiver.Received` (instant, key, body, status answered).  Each recorded
    key has exactly one delivered attempt in the log, at or after its recording, and no attempt after it; the
    webhook took (2xx) each delivered key exactly once and no other; every other request of a key came before the
    one taken and was unanswered (a hang) or refused.  With ``judge_owed``, a page still owed at ``end`` that was
    recorded more than an hour (``outbox.OVERDUE_AFTER``) before is a problem too.
    """
    problems: list[str] = []
    recorded: dict[str, str] = {}
    attempts: dict[str, list[dict]] = {}
    for entry in log:
        if entry.get("record_type") == "page":
            if entry["key"] in recorded:
                problems.append(f"{entry['key']}: recorded twice")
            recorded.setdefault(entry["key"], entry["recorded_at"])
        elif entry.get("record_type") == "page_attempt":
            attempts.setdefault(entry["key"], []).append(entry)
    by_key: dict[Optional[str], list[Any]] = {}
    for r in received:
        by_key.setdefault(r.key, []).append(r)
    counts = {"recorded": len(recorded), "delivered": 0, "owed": 0, "unanswered": 0, "refused": 0}
    horizon = end - outbox.OVERDUE_AFTER
    for key in sorted(set(attempts) - set(recorded)):
        problems.append(f"{key}: posted, never recorded")
    for key in sorted(set(by_key) - set(recorded)):
        problems.append(f"{key}: reached the webhook, never recorded" if key else "a post without its key")
    for key, at in recorded.items():
        tried = attempts.get(key, [])
        delivered = [a for a in tried if a.get("delivered")]
        if not delivered:
            counts["owed"] += 1
            since = parse_time(at)
            if judge_owed and since is not None and since < horizon:
                problems.append(f"{key}: owed since {at}")
        elif len(delivered) > 1:
            problems.append(f"{key}: delivered {len(delivered)} times")
        else:
            counts["delivered"] += 1
            if delivered[0]["at"] < at:
                problems.append(f"{key}: delivered at {delivered[0]['at']}, before it was recorded ({at})")
            if tried[-1] is not delivered[0]:
                problems.append(f"{key}: posted again after it was delivered")
        seen = by_key.get(key, [])
        taken = [r for r in seen if r.taken]
        if len(taken) != len(delivered[:1]) or len(taken) > 1:
            problems.append(f"{key}: the webhook took it {len(taken)} time(s), the outbox delivered it "
                            f"{len(delivered)} time(s)")
        if taken and seen[-1] is not taken[0]:
            problems.append(f"{key}: reached the webhook again after it was taken")
        for r in seen:
            if not r.taken:
                counts["unanswered" if r.answered is None else "refused"] += 1
        reaching = [a for a in tried if a.get("result") in ("sent", "refused", "uncertain")]
        if len(seen) != len(reaching):
            problems.append(f"{key}: the webhook got {len(seen)} post(s) of it, the outbox made {len(reaching)} "
                            "that reached it")
    return problems, counts


def _owed_judged(state: State, end: dt.datetime) -> bool:
    """Owed pages are judged unless the webhook was out of order in the last :data:`RECOVERY`."""
    webhook = state.webhook
    return not webhook.faulty(end) and not any(end - RECOVERY <= when <= end for when, _ in webhook.modes)


def pages(state: State, end: dt.datetime) -> Verdict:
    """Every page recorded delivered exactly once after it was recorded (:func:`page_problems`)."""
    path = outbox.log_file(state.paths)
    log = read_jsonl(path) if path.exists() else []
    judged = _owed_judged(state, end)
    problems, counts = page_problems(log, list(state.webhook.received), end, judged)
    said = (f"{counts['recorded']} pages recorded, {counts['delivered']} delivered once each; the webhook saw "
            f"{counts['unanswered']} unanswered and {counts['refused']} refused post(s) of them before taking them"
            + (f"; {counts['owed']} owed, recorded in the last hour" if counts["owed"] else "")
            + ("" if judged else " (the webhook was out of order in the last 7 h: owed pages not judged)"))
    return ("every page recorded is delivered exactly once, after it was recorded", not problems,
            "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "") or said)


def _days(rows: list[dict]) -> list[str]:
    return sorted({str(r.get("date"))[:10] for r in rows})


def instrument(state: State) -> Verdict:
    expected = list(state.script.expect.instrument_alarm_days)
    got = _days(records.read(state.paths, "instrument_alarm"))
    ok = got == expected
    detail = "" if ok else f"instrument_alarm on {', '.join(got) or 'no day'}; the script says {', '.join(expected)}"
    return "each instrument alarm on the day due, none after the acknowledgement", ok, detail or f"{len(got)} days"


def bridge(state: State) -> Verdict:
    if state.script.expect.bridge is None:
        return "bridge alarms", True, "none scripted"
    raised, left = state.script.expect.bridge
    alarm_records = records.read(state.paths, "bridge_alarm")
    alarms = _days(alarm_records)
    incomplete = records.read(state.paths, "bridge_incomplete")
    closed = _days(incomplete)
    problems = []
    if not alarms or alarms[0] != raised:
        problems.append(f"first bridge alarm on {alarms[0] if alarms else 'no day'}, due {raised}")
    ended = min((str(r.get("recorded_at")) for r in incomplete), default="9999")
    after = [str(r.get("recorded_at")) for r in alarm_records if str(r.get("recorded_at")) > ended]
    if after:
        problems.append(f"bridge alarms after the bridge was left incomplete ({ended}): {', '.join(after[:3])}")
    if closed != ([left] if left else []):
        problems.append(f"bridge_incomplete on {', '.join(closed) or 'no day'}, due {left or 'after the drill'}")
    posted = sorted({recorded_day(r) for r in state.webhook.taken() if r.body.get("kind") == "generation_bridge"})
    if alarms and posted != alarms:
        problems.append(f"the webhook took bridge pages recorded on {len(posted)} days, alarms were raised on "
                        f"{len(alarms)}")
    return ("the bridge alarm from the day the id appeared until it was left incomplete, never after",
            not problems, "; ".join(problems) or f"{len(alarms)} days of alarms, incomplete on {left or '(not yet)'}")


def deadman(state: State) -> Verdict:
    """Recorded for the owner on the day due, on no day outside the daemon's downtime, and the recovery after it —
    each as a page the webhook took (once the webhook answers again, when it did not on the day)."""
    due, over = state.script.expect.deadman_day, state.script.expect.deadman_over
    if due is None:
        return "dead-man", True, "none scripted"
    start = state.script.start.date().isoformat()
    # A new archive has had no daily cycle until its first 04:00 tick: the outside check says so on its first day
    # (method §8), and that page is not the scripted outage's.
    taken = [r for r in state.webhook.taken() if r.body.get("kind") == "lease"]
    deadman_pages = [r for r in taken if r.body.get("deadman") and r.body.get("event") in ("alert", "reminder")
                     and not (recorded_day(r) == start and "ever completed" in str(r.body.get("text")))]
    pages = sorted({recorded_day(r) for r in deadman_pages})
    recovered = [recorded_day(r) for r in taken if r.body.get("event") == "recovered"]
    problems = []
    if due not in pages:
        problems.append(f"no dead-man page recorded on {due}, the day the 36 h ran out, reached the webhook")
    stray = [day for day in pages if not due <= day < over]
    if stray:
        problems.append(f"dead-man paged on {', '.join(stray[:3])}, outside the daemon's downtime ({due} to {over})")
    if not any(day >= over for day in recovered):
        problems.append(f"no 'recovered' page from {over} on")
    late = [f"recorded {r.body.get('recorded_at', '?')[:16]}, taken {r.at:%Y-%m-%d %H:%M}" for r in deadman_pages
            if recorded_day(r) != r.at.date().isoformat()]
    return ("the dead-man recorded from outside the daemon on the day due and on no other, delivered, recovered after",
            not problems, "; ".join(problems) or f"paged {', '.join(pages)}" + (f" ({'; '.join(late)})" if late else "")
            + f", recovered {recovered[-1] if recovered else '-'}")


def failing_checks(state: State) -> Verdict:
    open_checks: dict[str, str] = {}
    told = 0
    for r in state.webhook.taken():
        body = r.body
        if body.get("kind") != "asset_check":
            continue
        told += 1
        name = f"{body.get('asset')}:{body.get('check')}" + (f"[{body['partition']}]" if body.get("partition") else "")
        if body.get("event") == "failed":
            open_checks.setdefault(name, recorded_day(r))
        else:
            open_checks.pop(name, None)
    detail = ", ".join(f"{name} since {day}" for name, day in sorted(open_checks.items())[:4])
    return ("failing checks told to the webhook (still failing at the end)", True,
            f"{told} posts; still failing: {detail or 'none'}")


def alarm_checks(state: State, end: dt.datetime) -> list[Verdict]:
    return [instrument(state), bridge(state), deadman(state), pages(state, end), failing_checks(state)]
