"""The lease on life (method §8): is anyone still running this archive?

Two clocks, both read from what the archive recorded, never from a file
someone touches:

* **the daily cycle** — its heartbeat is the ``runtime_fingerprint`` record,
  the one step that runs in full every day whatever else happens (any
  status: a cycle that ran and failed still ran).  No heartbeat for
  ``deadman_alert`` (36 h) → the **dead-man alert**;
* **runs** — the latest complete run folder (any series).  No run for
  ``vacation_after`` (75 d) → ``vacation``; ``dormant_after`` (180 d) →
  ``dormant``, which is also the coverage cause of every gap from then on;
  ``succession_offer`` (365 d) and ``concluded_after`` (730 d) follow.

A third, softer signal: no successful contact with the provider (a
``model_observed`` record) for ``source_degraded_after`` (7 d) →
``source_degraded``, reported beside the state.

:func:`check` returns the state; ``llmarchive lease`` records any state but
``alive`` as a ``lease`` record (once per day and state), posts it to an
optional webhook, and exits non-zero so a scheduler shows it.

**Who checks.**  The dead-man alert exists to notice a dead scheduler, so it
must not be raised only by that scheduler: ``deploy/`` runs ``llmarchive
lease`` from a systemd timer or cron, beside the Dagster sensor, and either
may find the archive dead.

**When the webhook is told** (:func:`alert_due`, :func:`deliver`): a person is
paged on a *change* of state, not on every check — when a state other than
``alive`` begins (or gives way to another, or the dead-man alert starts or
stops beside a run-clock state), once more every
:data:`REMIND_EVERY` while it lasts, and once when the archive is ``alive``
again (``recovered``).  Each such alert is recorded in the owner's outbox
(:mod:`llmarchive.schedule.outbox`) before anything is posted, and the last
one recorded is kept in ``private/lease_alert.json``, apart from the
``lease`` records: those say what the archive was, this says what a person
is being told.  The outbox owes it until the webhook answers 2xx, so an
alert the webhook did not take is not recorded twice and not lost: the
next sender (this check, the sensors, the outside timer) posts it again.  An
alarm never clears itself — only a check that finds the archive alive
records the recovery.  Every checker goes through :func:`deliver`, under
one lock, so two of them do not page twice.
"""
from dataclasses import dataclass, field
from datetime import date as Date, datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

from llmarchive.archive import (ArchivePaths, CONDITIONS, Cadence, file_lock, latest_complete_run_date, load_cadence,
                                parse_time, read_json, record_logs as records, write_json)
from llmarchive.schedule import outbox, webhook

# Run-clock states, from the longest absence down.
RUN_STATES = (("concluded", "concluded_after"), ("succession_offer", "succession_offer"),
              ("dormant", "dormant_after"), ("vacation", "vacation_after"))

# While a state other than alive lasts, the webhook is reminded this often (its first post is at once).
REMIND_EVERY = timedelta(hours=24)


@dataclass
class LeaseState:
    now: str
    state: str                              # alive | deadman | vacation | dormant | succession_offer | concluded
    last_cycle_at: Optional[str]
    hours_since_cycle: Optional[float]
    last_run_date: Optional[str]
    days_since_run: Optional[int]
    deadman: bool
    source_degraded: bool
    reasons: list[str] = field(default_factory=list)

    @property
    def coverage_condition(self) -> Optional[str]:
        """The coverage condition this state implies for gaps (``archive_dormant`` once dormant)."""
        if self.state in ("dormant", "succession_offer", "concluded"):
            return "archive_dormant"
        if self.deadman:
            return "no_daily_cycle"
        return None

    @property
    def coverage_cause(self) -> Optional[str]:
        condition = self.coverage_condition
        return CONDITIONS[condition] if condition else None

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) or "alive: the daily cycle and the runs are current"

    @property
    def label(self) -> str:
        """The name a person is told: the state, or ``source_degraded`` when that is all that is wrong."""
        return "source_degraded" if self.state == "alive" and self.source_degraded else self.state


def check(paths: ArchivePaths, now: Optional[datetime] = None, cadence: Optional[Cadence] = None) -> LeaseState:
    """The archive's lease state at ``now`` (UTC)."""
    cadence = cadence or load_cadence()
    now = now or datetime.now(timezone.utc)
    last_cycle = records.newest_time(paths, "runtime_fingerprint")    # the daily cycle's last heartbeat
    last_run = latest_complete_run_date(paths)                       # the run index's newest complete run
    contact = records.newest_time(paths, "model_observed")    # the provider's last answer to the watch

    reasons: list[str] = []
    hours = None if last_cycle is None else (now - last_cycle).total_seconds() / 3600
    deadman_after = cadence.every("deadman_alert")
    deadman = last_cycle is None or now - last_cycle >= deadman_after
    if deadman:
        reasons.append("DEAD-MAN ALERT: no daily cycle has ever completed" if last_cycle is None else
                       f"DEAD-MAN ALERT: no daily cycle completed for {hours:.0f} h (since "
                       f"{last_cycle.isoformat()}; alert after {deadman_after.total_seconds() / 3600:.0f} h)")
    days = None if last_run is None else (now.date() - Date.fromisoformat(last_run)).days
    state = "deadman" if deadman else "alive"
    if days is not None:
        for name, key in RUN_STATES:
            if timedelta(days=days) >= cadence.every(key):
                state = name
                reasons.append(f"{name}: {days} days without a run (last run {last_run}; "
                               f"{key} = {cadence.raw.get(key)})")
                break
    degraded = contact is not None and now - contact >= cadence.every("source_degraded_after")
    if degraded:
        reasons.append(f"source degraded: the provider has not answered since {contact.isoformat()}")
    return LeaseState(now.replace(microsecond=0).isoformat().replace("+00:00", "Z"), state,
                      last_cycle.isoformat() if last_cycle else None, None if hours is None else round(hours, 1),
                      last_run, days, deadman, degraded, reasons)


def record_state(paths: ArchivePaths, state: LeaseState) -> Optional[dict]:
    """Record a non-alive state once per day and state; return the record (None when nothing new)."""
    if state.state == "alive" and not state.source_degraded:
        return None
    day = state.now[:10]
    if records.dated(paths, "lease", day, lambda r: r.get("state") == state.label):
        return None
    return records.append(paths, "lease", {"date": day, "state": state.label,
                                           "hours_since_cycle": state.hours_since_cycle,
                                           "days_since_run": state.days_since_run, "reason": state.reason,
                                           "deadman": state.deadman, "coverage_cause": state.coverage_cause})


def alert_file(paths: ArchivePaths) -> Path:
    """Where the last lease alert put in the outbox is kept (private: a person's pager, not the archive's record)."""
    return paths.private / "lease_alert.json"


def last_alert(paths: ArchivePaths) -> Optional[dict]:
    """The last lease alert recorded for the owner (``state``, ``deadman``, ``since``, ``posted_at``), or None."""
    path = alert_file(paths)
    return read_json(path) if path.exists() else None


def alert_due(state: LeaseState, last: Optional[dict]) -> Optional[dict]:
    """The webhook payload this check owes, or None (see the module docstring: on a change, daily while it lasts)."""
    now = parse_time(state.now)
    previous = last["state"] if last else "alive"
    # A dead daemon during a vacation is news too: the dead-man flag is part of what a person was told.
    if (state.label, state.deadman) == (previous, bool(last and last.get("deadman"))):
        posted = parse_time(last.get("posted_at")) if last else None
        if state.label == "alive" or (posted is not None and now is not None and now - posted < REMIND_EVERY):
            return None
        event, since = "reminder", last.get("since") or state.now
        text = f"llmarchive lease: still {state.label} (since {since}): {state.reason}"
    elif state.label == "alive":
        event, since = "recovered", state.now
        text = (f"llmarchive lease: recovered, alive again at {state.now} "
                f"({previous} since {(last or {}).get('since')}): {state.reason}")
    else:
        event, since = "alert", state.now
        text = f"llmarchive lease: {state.label}: {state.reason}"
    return {"kind": "lease", "event": event, "state": state.label, "since": since, "at": state.now,
            "deadman": state.deadman, "text": text}


def page_of(payload: dict) -> outbox.Page:
    """The lease's alert as an outbox page, keyed by what it tells: the event, the state and since when."""
    key = f"lease|{payload['event']}|{payload['state']}|{payload['since']}"
    if payload["event"] == "reminder":
        key += f"|{payload['at'][:13]}"
    fields = {k: v for k, v in payload.items() if k not in ("kind", "text")}
    return outbox.Page(key, "lease", payload["text"], fields)


def deliver(paths: ArchivePaths, state: LeaseState, url: str,
            post: Optional[outbox.Post] = None) -> Optional[tuple[dict, str]]:
    """Record the alert this check owes in the outbox, if any, and send what is owed; ``(payload, outcome)``.

    ``outcome`` is what became of this alert in this call (``sent (HTTP
    204)``, or why it is still owed); None when nothing was due.  What the
    lease remembers is what it *recorded* for the owner: the outbox then
    owes it until the webhook takes it, so a failed post is not recorded
    twice, and is tried again by the next sender, this one or another
    (the sensors, the outside timer).  Held under a lock: the timer and the
    sensor may check at the same moment.
    """
    webhook.check_url(url)
    path = alert_file(paths)
    with file_lock(path):
        last = last_alert(paths)
        payload = alert_due(state, last)
        if payload is not None:
            page = page_of(payload)
            outbox.record(paths, [page], now=parse_time(state.now))
            write_json(path, {"state": payload["state"], "deadman": state.deadman, "since": payload["since"],
                              "posted_at": state.now, "event": payload["event"], "key": page.key})
    delivery = outbox.send(paths, url, now=parse_time(state.now), **({"post": post} if post else {}))
    if payload is None:
        return None
    return payload, delivery.of(page.key)
