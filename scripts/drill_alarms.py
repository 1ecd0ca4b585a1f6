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
  it failing (reported, not judged: the webhook's words are the alerts module's).
"""
from llmarchive.archive import record_logs as records
from scripts.drill_state import State

Verdict = tuple[str, bool, str]


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
    posted = sorted({when.date().isoformat() for when, body in state.webhook.received
                     if body.get("kind") == "generation_bridge"})
    if alarms and posted != alarms:
        problems.append(f"the webhook was told of the bridge on {len(posted)} days, alarms were raised on {len(alarms)}")
    return ("the bridge alarm from the day the id appeared until it was left incomplete, never after",
            not problems, "; ".join(problems) or f"{len(alarms)} days of alarms, incomplete on {left or '(not yet)'}")


def deadman(state: State) -> Verdict:
    """Paged on the day due, on no day outside the daemon's downtime, and told of the recovery after it."""
    due, over = state.script.expect.deadman_day, state.script.expect.deadman_over
    if due is None:
        return "dead-man", True, "none scripted"
    start = state.script.start.date().isoformat()
    # A new archive has had no daily cycle until its first 04:00 tick: the outside check says so on its first day
    # (method §8), and that page is not the scripted outage's.
    pages = sorted({when.date().isoformat() for when, body in state.webhook.received
                    if body.get("kind") == "lease" and body.get("deadman") and body.get("event") in ("alert", "reminder")
                    and not (when.date().isoformat() == start and "ever completed" in str(body.get("text")))})
    recovered = [when.date().isoformat() for when, body in state.webhook.received
                 if body.get("kind") == "lease" and body.get("event") == "recovered"]
    problems = []
    if due not in pages:
        problems.append(f"no dead-man page on {due}, the day the 36 h ran out")
    stray = [day for day in pages if not due <= day < over]
    if stray:
        problems.append(f"dead-man paged on {', '.join(stray[:3])}, outside the daemon's downtime ({due} to {over})")
    if not any(day >= over for day in recovered):
        problems.append(f"no 'recovered' page from {over} on")
    return ("the dead-man paged from outside the daemon on the day due and on no other, recovered after",
            not problems, "; ".join(problems) or f"paged {', '.join(pages)}, recovered {recovered[-1] if recovered else '-'}")


def failing_checks(state: State) -> Verdict:
    open_checks: dict[str, str] = {}
    told = 0
    for when, body in state.webhook.received:
        if body.get("kind") != "asset_check":
            continue
        told += 1
        name = f"{body.get('asset')}:{body.get('check')}"
        if body.get("event") == "failed":
            open_checks.setdefault(name, when.date().isoformat())
        else:
            open_checks.pop(name, None)
    detail = ", ".join(f"{name} since {day}" for name, day in sorted(open_checks.items())[:4])
    return ("failing checks told to the webhook (still failing at the end)", True,
            f"{told} posts; still failing: {detail or 'none'}")


def alarm_checks(state: State) -> list[Verdict]:
    return [instrument(state), bridge(state), deadman(state), failing_checks(state)]
