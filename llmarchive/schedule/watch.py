"""The model watch (method §4.3): read the provider's models list, act on what changed.

Every run of :func:`watch` reads the whole models list (all pages) through
:func:`llmarchive.subjects.list_models`, records one ``model_observed`` per
listed id per day, and then applies the three cases — no guessing:

1. **A declared successor** of the active model (a machine-readable field on
   its models-list entry, or a dated archived deprecation page naming it,
   see :mod:`llmarchive.succession.subject_models`), listed and in the family →
   ``generation_bridge`` (pending) **and** the switch: a ``subject_model``
   record naming the successor and who declared it.
2. **A new id in the family with no declaration** → ``generation_bridge``
   (pending) + ``needs_review``; the active model does not change.  A
   similar name is a reason to bridge (the window never reopens), never a
   reason to switch.
3. **The active model is gone** from the list and nobody declared a
   successor → ``series_closed``; from then on the commercial jobs' gaps have
   cause ``generation_retired_early`` until a new series is decided by hand.

Any pending bridge whose old model has left the list before its half of
the bridge was complete is recorded ``bridge_incomplete``; once the old
model's runs are all complete, its leaving closes nothing.  A declaration
that names an id whose ``needs_review`` is still open resolves that review
(:mod:`llmarchive.succession.review`): the held bridge runs join the curve.  The first watch of an archive records the list as it
stands (the baseline) plus the initial ``subject_model`` from the file; ids
already listed then are not "new".

The alarm.  Every pending bridge raises its alarm on every watch day —
printed, recorded as a ``bridge_alarm`` (once per bridge per day) and, when
a webhook URL is given, recorded in the owner's outbox and sent from there
(:mod:`llmarchive.schedule.outbox`) — until complete runs of both the old
and the new model exist, when the bridge is recorded ``complete`` and the
alarm stops.

An unreachable provider is not a crash: the watch records a ``skip`` with
condition ``provider_unreachable`` (cause ``provider_outage``) and still
repeats the pending alarms.  A mistake of ours is not the provider's outage:
a missing key or a malformed base URL stops the watch before anything is
recorded (:class:`~llmarchive.subjects.base.SubjectSettingsError`).
"""
import json
from dataclasses import dataclass, field
from typing import Callable, Optional

from llmarchive.archive import ArchivePaths, load_cadence, parse_date, record_logs as records, record_skip
from llmarchive.succession import SubjectModels, active_model, declared_successor, review, snapshots
from llmarchive.schedule import outbox
from llmarchive.schedule.bridge import (bridge_key, bridge_protocols, bridges, close_if_complete, old_model_left,
                                        open_bridges, record_incomplete)
from llmarchive.subjects import SubjectError, SubjectSettingsError, check_api_settings, list_models
from measure.errors import ArchiveError


@dataclass
class WatchOutcome:
    date: str
    listed: list[str] = field(default_factory=list)
    new_ids: list[str] = field(default_factory=list)
    written: list[dict] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    outage: Optional[str] = None

    def kinds(self) -> list[str]:
        return [r["record_type"] for r in self.written]


def _models(config: SubjectModels, base_url: Optional[str], max_attempts: int) -> list[dict]:
    return list_models(config.provider, base_url=base_url, max_attempts=max_attempts)


def watch(paths: ArchivePaths, day: str, config: SubjectModels, *, base_url: Optional[str] = None,
          webhook: Optional[str] = None, fetch: Optional[Callable[[], list[dict]]] = None,
          max_attempts: int = 6) -> WatchOutcome:
    """One model-watch pass for ``day`` (see the module docstring).

    ``day`` is checked first and, unless ``fetch`` replaces the provider,
    so are the key and the base URL (:func:`llmarchive.subjects.check_api_settings`):
    either mistake raises before anything is recorded.  Then the steps:
    read the list (an outage or an empty list decides nothing but the
    alarms), observe it, record the initial subject model, apply the three
    cases, settle the reviews, repeat the alarms.
    """
    parse_date(day, "the watch date (--date)")
    if fetch is None:
        check_api_settings(config.provider, base_url)
    out = WatchOutcome(day)
    entries = _read_listing(paths, day, config, out, lambda: fetch() if fetch is not None
                            else _models(config, base_url, max_attempts))
    if entries is None:
        _repeat_alarms(paths, day, config, out, webhook, listed=None)
        return out
    step = _Pass(paths, day, config, out)
    first_watch, seen_before = step.observe(entries)
    step.initial_subject_model()
    step.active = active_model(paths, config)
    step.known = bridges(paths)
    found_snapshots, problems = snapshots(paths, config)
    out.notes += [f"snapshot ignored: {p}" for p in problems]
    out.new_ids = [] if first_watch else step.new_in_family(seen_before)
    step.bridge_count = load_cadence().count("generation_bridge_protocols")
    successor = step.declared_successor_case(entries, found_snapshots)
    step.new_ids_case(successor)
    step.retired_case(entries, successor)
    out.written += review.settle(paths, day, config.model_family)
    _repeat_alarms(paths, day, config, out, webhook, listed=set(entries))
    return out


def _read_listing(paths: ArchivePaths, day: str, config: SubjectModels, out: WatchOutcome,
                  listing: Callable[[], list[dict]]) -> Optional[dict[str, dict]]:
    """The listed models by id, or None when the list decides nothing today (an outage, recorded; an empty list)."""
    try:
        listed = listing()
    except SubjectSettingsError:
        raise                     # our own mistake, found by the check above: nothing recorded, never an outage
    except SubjectError as exc:
        text = str(exc)
        refused = exc.status is not None and 400 <= exc.status < 500   # the provider's own 4xx answer
        condition = "provider_refused_request" if refused else "provider_unreachable"
        out.outage = text
        out.written.append(record_skip(paths, day, "model_watch", None, condition,
                                       f"{config.provider} models list could not be read: {text}"))
        return None
    entries = {m["id"]: m for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)}
    out.listed = sorted(entries)
    if not entries:
        out.notes.append("the provider listed no model at all; an empty list decides nothing")
        return None
    return entries


@dataclass
class _Pass:
    """One pass's steps after the list was read: what they share, and the records they add to the outcome."""
    paths: ArchivePaths
    day: str
    config: SubjectModels
    out: WatchOutcome
    active: str = ""
    known: dict = field(default_factory=dict)
    bridge_count: int = 0

    @property
    def family(self) -> str:
        return self.config.model_family

    def write(self, kind: str, fields: dict) -> dict:
        record = records.append(self.paths, kind, fields)
        self.out.written.append(record)
        return record

    def observe(self, entries: dict[str, dict]) -> tuple[bool, set]:
        """One ``model_observed`` per listed id per day; (whether this is the first watch, every id seen before)."""
        provider = self.config.provider
        # Every id an earlier pass recorded, the same day included: the sensor polls several times a day,
        # and an id first listed this morning is not new again this afternoon.
        seen_before = {m for p, m in records.distinct(self.paths, "model_observed", ("provider", "model_id"))
                       if p == provider}
        first_watch = not seen_before
        today = {r.get("model_id") for r in records.dated(self.paths, "model_observed", self.day)
                 if r.get("provider") == provider}
        for model_id in self.out.listed:
            if model_id not in today:
                self.write("model_observed", {"date": self.day, "provider": provider, "model_id": model_id,
                                              "in_family": self.config.in_family(model_id),
                                              "entry": entries[model_id]})
        return first_watch, seen_before

    def initial_subject_model(self) -> None:
        """The family's first ``subject_model``, from the file, when none is recorded yet."""
        if not any(r.get("model_family") == self.family for r in records.read(self.paths, "subject_model")):
            source = self.config.source.name if self.config.source else "subject_models.yaml"
            self.write("subject_model", {"date": self.day, "model_family": self.family,
                                         "model_id": self.config.active_model, "previous_model_id": None,
                                         "declared_by": f"initial configuration ({source})"})

    def new_in_family(self, seen_before: set) -> list[str]:
        """Ids of the family listed for the first time: not the active model, not already bridged."""
        bridged = {key[2] for key in self.known if key[0] == self.family}
        return [m for m in self.out.listed if self.config.in_family(m) and m not in seen_before
                and m != self.active and m not in bridged]

    def raise_bridge(self, new_id: str, why: str) -> None:
        """A pending ``generation_bridge`` from the active model to ``new_id``, once."""
        if (self.family, self.active, new_id) in self.known:
            return
        try:
            pids = bridge_protocols(self.paths, self.config, self.bridge_count)
            plan_note = None
        except ArchiveError as exc:  # the alarm must still fire without a full protocol set
            pids, plan_note = [], str(exc)
        fields = {"date": self.day, "model_family": self.family, "old_model_id": self.active, "new_model_id": new_id,
                  "protocol_ids": pids, "status": "pending", "why": why}
        if plan_note:
            fields["plan_problem"] = plan_note
        self.known[(self.family, self.active, new_id)] = {"raised": self.write("generation_bridge", fields),
                                                          "status": "pending", "closed": False}

    def declared_successor_case(self, entries: dict[str, dict], found_snapshots) -> Optional[str]:
        """Case 1: a declared successor, listed and in the family → a bridge and the switch; returns it."""
        declared = declared_successor(entries, self.active, self.config, found_snapshots, self.day)
        if declared is None:
            return None
        successor, declared_by = declared
        if not self.config.in_family(successor):
            self.out.notes.append(f"{declared_by} names {successor}, which is outside the family "
                                  f"{self.config.pattern}: not a switch within this series")
            return None
        if successor not in entries:
            self.out.notes.append(f"{declared_by} names {successor}, which the provider does not list yet; "
                                  "the switch waits until it is listed")
            return None
        self.raise_bridge(successor, f"declared successor ({declared_by})")
        self.write("subject_model", {"date": self.day, "model_family": self.family, "model_id": successor,
                                     "previous_model_id": self.active, "declared_by": declared_by})
        pending = review.review_of(self.paths, self.family, successor)
        if pending is not None and pending.state == "pending":
            # The declaration answers the open question: the held bridge runs join the curve.
            done = review.resolve(self.paths, pending.review_id, "successor", declared_by, self.day, review=pending,
                                  note="resolved by the provider's declaration, seen by the model watch")
            self.out.written.append(done.record)
        return successor

    def new_ids_case(self, successor: Optional[str]) -> None:
        """Case 2: a new id in the family with no declaration → a bridge and ``needs_review``; no switch."""
        for new_id in self.out.new_ids:
            if new_id == successor:
                continue
            self.raise_bridge(new_id, "new model id in the family, no declaration")
            self.write("needs_review", {
                "date": self.day, "model_family": self.family, "model_id": new_id,
                "reason": f"{new_id} appeared in the family with no provider declaration of succession; a bridge "
                          f"alarm was raised and {self.active} stays active — switch only on an explicit "
                          "declaration"})

    def retired_case(self, entries: dict[str, dict], successor: Optional[str]) -> None:
        """Case 3: the active model is gone and nobody declared a successor → ``series_closed``, once."""
        if self.active in entries or successor is not None:
            return
        closed = any(r.get("model_family") == self.family and r.get("model_id") == self.active
                     for r in records.read(self.paths, "series_closed"))
        if not closed:
            self.write("series_closed", {
                "date": self.day, "model_family": self.family, "model_id": self.active,
                "reason": f"{self.active} is no longer listed by {self.config.provider} and no successor was "
                          "declared; a new series starts only when decided"})


def _repeat_alarms(paths: ArchivePaths, day: str, config: SubjectModels, out: WatchOutcome,
                   webhook: Optional[str], listed: Optional[set]) -> None:
    """Close finished bridges, mark those whose old model left, and alarm for the rest."""
    alarmed_today = {(r.get("model_family"), r.get("old_model_id"), r.get("new_model_id"))
                     for r in records.dated(paths, "bridge_alarm", day)}
    for bridge in open_bridges(paths, config.model_family):
        closed = close_if_complete(paths, bridge, day)
        if closed is not None:
            out.written.append(closed)
            out.notes.append(f"bridge {bridge['old_model_id']} → {bridge['new_model_id']} is complete")
            continue
        if old_model_left(paths, bridge, listed):
            out.written.append(record_incomplete(
                paths, bridge, day, f"{bridge['old_model_id']} left the provider's list before its half of the "
                                    "bridge was complete: a permanent discontinuity"))
            continue
        if listed is not None and bridge["old_model_id"] not in listed:
            out.notes.append(f"{bridge['old_model_id']} is no longer listed, but its half of the bridge is "
                             f"complete: the bridge completes with {bridge['new_model_id']}'s runs")
        message = (f"GENERATION BRIDGE PENDING since {bridge['date']}: {bridge['old_model_id']} → "
                   f"{bridge['new_model_id']} ({bridge['model_family']}). Run both models on "
                   f"{', '.join(bridge.get('protocol_ids') or []) or '(no protocol plan: admit one protocol per type)'} "
                   f"this week: `llmarchive bridge run`. The old model can be retired at any time and never "
                   "measured again.")
        out.alarms.append(message)
        if bridge_key(bridge) in alarmed_today:
            continue
        notified = None
        if webhook:
            page = outbox.Page(f"bridge|{bridge['model_family']}|{bridge['old_model_id']}|{bridge['new_model_id']}|"
                               f"{day}", "generation_bridge", message,
                               {"date": day, "model_family": bridge["model_family"],
                                "old_model_id": bridge["old_model_id"], "new_model_id": bridge["new_model_id"]})
            outbox.record(paths, [page])
            notified = outbox.send(paths, webhook).of(page.key)
        out.written.append(records.append(paths, "bridge_alarm", {
            "date": day, "model_family": bridge["model_family"], "old_model_id": bridge["old_model_id"],
            "new_model_id": bridge["new_model_id"], "message": message, "notified": notified}))


def describe(out: WatchOutcome) -> str:
    lines = [f"model watch {out.date}: {len(out.listed)} model(s) listed"]
    if out.outage:
        lines.append(f"provider unreachable: {out.outage} (recorded: provider_outage)")
    if out.new_ids:
        lines.append(f"new in the family: {', '.join(out.new_ids)}")
    for r in out.written:
        if r["record_type"] not in ("model_observed", "bridge_alarm"):
            lines.append(f"recorded {r['record_type']}: " + json.dumps(
                {k: r.get(k) for k in ("model_id", "old_model_id", "new_model_id", "status", "reason", "declared_by")
                 if r.get(k) is not None}, ensure_ascii=False))
    lines += [f"note: {n}" for n in out.notes]
    return "\n".join(lines)
