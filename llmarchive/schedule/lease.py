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
"""
from dataclasses import dataclass, field
from datetime import date as Date, datetime, timedelta, timezone
from typing import Optional

from llmarchive.archive import record_logs as records
from llmarchive.archive.cadence import Cadence, load_cadence
from llmarchive.archive.skips import CONDITIONS
from llmarchive.archive.store import complete_runs
from llmarchive.archive.paths import ArchivePaths
from llmarchive.archive.queries import times_recorded

# Run-clock states, from the longest absence down.
RUN_STATES = (("concluded", "concluded_after"), ("succession_offer", "succession_offer"),
              ("dormant", "dormant_after"), ("vacation", "vacation_after"))


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


def check(paths: ArchivePaths, now: Optional[datetime] = None, cadence: Optional[Cadence] = None) -> LeaseState:
    """The archive's lease state at ``now`` (UTC)."""
    cadence = cadence or load_cadence()
    now = now or datetime.now(timezone.utc)
    beats = times_recorded(records.read(paths, "runtime_fingerprint"))    # the daily cycle's heartbeats
    last_cycle = max(beats) if beats else None
    runs = [str(r["run_date"])[:10] for r in complete_runs(paths)]
    last_run = max(runs) if runs else None
    contacts = times_recorded(records.read(paths, "model_observed"))    # the provider's answers to the watch

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
    degraded = bool(contacts) and now - max(contacts) >= cadence.every("source_degraded_after")
    if degraded:
        reasons.append(f"source degraded: the provider has not answered since {max(contacts).isoformat()}")
    return LeaseState(now.replace(microsecond=0).isoformat().replace("+00:00", "Z"), state,
                      last_cycle.isoformat() if last_cycle else None, None if hours is None else round(hours, 1),
                      last_run, days, deadman, degraded, reasons)


def record_state(paths: ArchivePaths, state: LeaseState) -> Optional[dict]:
    """Record a non-alive state once per day and state; return the record (None when nothing new)."""
    if state.state == "alive" and not state.source_degraded:
        return None
    day = state.now[:10]
    label = state.state if state.state != "alive" else "source_degraded"
    for r in records.read(paths, "lease"):
        if r.get("date") == day and r.get("state") == label:
            return None
    return records.append(paths, "lease", {"date": day, "state": label, "hours_since_cycle": state.hours_since_cycle,
                                           "days_since_run": state.days_since_run, "reason": state.reason,
                                           "deadman": state.deadman, "coverage_cause": state.coverage_cause})
