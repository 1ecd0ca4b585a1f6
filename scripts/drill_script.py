"""The drill's script: what happens on which day, and what each event must leave behind.

One table per drill (:data:`FULL`, 24 months for ``make drill``; :data:`SHORT`,
three months for the test suite).  Each :class:`Event` is something the
world or a person does at an instant — the provider lists a new model, the
daemon stops, a person launches a run in the UI — and
:class:`Expect` is what the archive must show for it: the gaps coverage must
explain with exactly this cause, the refusals, the alarm days.  The checks
(:mod:`scripts.drill_checks`) hold the archive to the table; anything the
table does not expect is reported as unexpected.

The kinds of event (see :mod:`scripts.drill_world` and :mod:`scripts.drill_actions`):

``models``        the provider's models list becomes ``ids`` (an entry may be a dict: ``successor`` declares)
``fault``         chat calls and the models list answer ``codes`` in turn for ``hours``, from the
                  ``after_calls``-th chat call made after the event's instant (so it can start mid-sweep)
``daemon``        ``state`` down (no tick is evaluated) or up (a new daemon process: Dagster's catch-up)
``budget``        the owner rewrites budget.json with ``ceiling`` (the other figures kept)
``enospc``        the next write of ``protocol``'s trial log fails once with ENOSPC
``fingerprint``   the scripted reference engine's fingerprint changes from this day on
``launch``        a person launches one partition of ``job`` from the UI (``partition``: its key); with
                  ``while_running`` once the runs launched at that instant are in flight
``reexecute``     a person re-executes, from failure, every failed run of ``job`` since ``since``
``backfill``      a person launches a backfill of ``asset`` over ``months`` (every protocol) from the UI
``acknowledge``   a person launches acknowledge_instrument_job with a core_change
``webhook``       the owner's webhook from now on: ``mode`` ``down`` (connection refused), ``error`` (answers
                  500), ``hang`` (reads each page, never answers) or ``ok`` (answers 204, on the same port)
"""
import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from llmarchive.archive import parse_time

UTC = dt.timezone.utc
FAMILY_NEW = "claude-sonnet-5-1"
ACTIVE = "claude-sonnet-5"
DAILY_JOBS = ("runtime_fingerprint", "guard_margin_rotation", "revalidation_daily", "subject_fingerprint")


def at(text: str) -> dt.datetime:
    """``2027-03-01T10:00`` as a UTC instant."""
    moment = parse_time(f"{text}Z")
    if moment is None:
        raise ValueError(f"the drill's script has an instant that is not one: {text!r}")
    return moment


@dataclass(frozen=True)
class Event:
    when: dt.datetime
    kind: str
    args: dict = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Gap:
    """A coverage gap the script causes: ``job`` in ``period`` (``protocol`` None: any) has ``cause``."""

    job: str
    period: str
    cause: str
    protocol: Optional[str] = None
    why: str = ""
    may: bool = False          # the script makes it possible, not certain (it hangs on the order runs leave the queue)

    def matches(self, row: dict) -> bool:
        return (row.get("job") == self.job and row.get("period") == self.period
                and (self.protocol is None or row.get("protocol_id") == self.protocol))


@dataclass(frozen=True)
class Refusal:
    """Failed runs the script causes on ``day``: at least ``count`` refused as ``kind`` (assets/refusals.py)."""

    kind: str
    count: int
    day: str


@dataclass(frozen=True)
class Expect:
    """What the archive must show once the script has run."""

    gaps: tuple[Gap, ...] = ()
    refusals: tuple[Refusal, ...] = ()
    instrument_alarm_days: tuple[str, ...] = ()           # every day an instrument_alarm is dated, no other
    bridge: Optional[tuple[str, Optional[str]]] = None    # (raised on, left incomplete on; None: not yet)
    deadman_day: Optional[str] = None                     # the day the outside check first pages the dead-man
    deadman_over: Optional[str] = None                    # from this day on the lease is alive again


@dataclass(frozen=True)
class Script:
    name: str
    start: dt.datetime
    end: dt.datetime                                      # the drill stops here (after that month's publication)
    events: tuple[Event, ...]
    expect: Expect
    budget: dict = field(default_factory=lambda: dict(BUDGET))
    max_concurrent_runs: int = 3

    def months(self) -> list[str]:
        out, day = [], self.start.date().replace(day=1)
        while day < self.end.date():
            out.append(day.strftime("%Y-%m"))
            day = (day + dt.timedelta(days=32)).replace(day=1)
        return out

    def _daemon_back(self, end: dt.datetime) -> dt.datetime:
        """``end``, or when the script has the daemon down at that moment, the first ``end``-o'clock after it is
        started again (a cut that ended in the outage would judge a month no daemon was there to record)."""
        daemon = sorted((e for e in self.events if e.kind == "daemon"), key=lambda e: e.when)
        down = [e for e in daemon if e.when <= end]
        if not down or down[-1].args.get("state") != "down":
            return end
        back = next((e.when for e in daemon if e.when > end and e.args.get("state") == "up"), None)
        if back is None:
            return end
        later = back.replace(hour=end.hour, minute=end.minute, second=0, microsecond=0)
        return later if later > back else later + dt.timedelta(days=1)

    def cut(self, months: Optional[int]) -> "Script":
        """The script's first ``months`` months, and only what it expects of them.

        The drill then ends, as the whole script does, at noon on the 1st after its last month (that month's
        publication) — or, when the daemon is down then, at noon of the day it is started again, so the last
        month is recorded and published by its catch-up as it would be. An expectation dated after the end is
        dropped, one that spans it keeps its start: a bridge not yet left incomplete, a dead-man outage not yet
        over are judged by what they show so far.
        """
        wanted = self.months()
        if not months or months >= len(wanted):
            return self
        first = at(f"{wanted[months - 1]}-01T00:00")
        end = self._daemon_back((first + dt.timedelta(days=32)).replace(day=1, hour=self.end.hour,
                                                                      minute=self.end.minute))
        last_day = end.date().isoformat()
        expect = self.expect
        bridge = expect.bridge
        if bridge is not None:
            bridge = None if bridge[0] > last_day else (bridge[0], bridge[1] if bridge[1] <= last_day else None)
        deadman_day, deadman_over = expect.deadman_day, expect.deadman_over
        if deadman_day is not None and (deadman_day > last_day or (deadman_over or "") > last_day):
            deadman_day = deadman_over = None
        return replace(
            self, end=end, events=tuple(e for e in self.events if e.when < end),
            expect=replace(expect,
                           gaps=tuple(g for g in expect.gaps if g.period[:7] <= wanted[months - 1]),
                           refusals=tuple(r for r in expect.refusals if r.day <= last_day),
                           instrument_alarm_days=tuple(d for d in expect.instrument_alarm_days if d <= last_day),
                           bridge=bridge, deadman_day=deadman_day, deadman_over=deadman_over))


# A month of the full programme costs 12 × 120 calls × €0.01 = €14.40 plus €0.72 of subject fingerprints,
# well under the general pool (€40 − €6.50 − €1 = €32.50) and its first rung (60 %).  Flat rates, no token
# prices: what the ledger charges per call is then exactly the plan's figure.
BUDGET = {"ceiling": 40.0, "bridge_reserve": 6.5, "heartbeat_reserve": 1.0, "scenario": 0.01, "fingerprint": 0.001}
# A month that pays for only part of the sweep: a general pool of €4.50 holds three 120-call runs and a half.
SHORT_OF_MONEY = 12.0


def _down(start: str, end: str) -> tuple[Event, Event]:
    return (Event(at(start), "daemon", {"state": "down"}, "the daemon host goes down"),
            Event(at(end), "daemon", {"state": "up"}, "the daemon is started again"))


def _webhook(mode: str, start: str, end: str, note: str) -> tuple[Event, Event]:
    return (Event(at(start), "webhook", {"mode": mode}, note),
            Event(at(end), "webhook", {"mode": "ok"}, "the webhook answers again"))


def _absent(days: tuple[str, ...], why: str) -> tuple[Gap, ...]:
    return tuple(Gap(job, day, "human_absent", why=why) for day in days for job in DAILY_JOBS)


SHORT = Script(
    name="three months",
    start=at("2026-11-01T00:00"),
    end=at("2027-02-01T12:00"),
    events=(
        Event(at("2026-11-10T00:30"), "fingerprint", {}, "the reference engine's fingerprint changes"),
        Event(at("2026-11-17T12:00"), "acknowledge", {"core_change": "drill: scripted engine update accepted",
                                                      "reviewer": "drill owner"}, "a person acknowledges"),
        Event(at("2026-11-20T00:05"), "models", {"ids": [ACTIVE, FAMILY_NEW]}, "a new id in the family"),
        Event(at("2026-12-02T06:00"), "launch", {"job": "commercial_job", "partition": "2026-12-01|{first}"},
              "a person launches a partition by hand as the 06:00 tick launches it too"),
        Event(at("2026-12-02T05:59:30"), "enospc", {"protocol": "{last}"}, "the disk fills once"),
        *_down("2026-12-31T10:00", "2027-01-03T10:00"),
        Event(at("2027-01-03T09:59"), "fault", {"codes": [529, 429], "hours": 8, "after_calls": 300},
              "the provider is overloaded for eight hours during the sweep"),
        Event(at("2027-01-04T10:00"), "reexecute", {"job": "commercial_job", "since": "2027-01-03"},
              "a person re-executes the sweep's failed runs"),
        Event(at("2027-01-15T00:05"), "models", {"ids": [{"id": ACTIVE, "successor": FAMILY_NEW}, FAMILY_NEW]},
              "the provider declares the successor"),
        Event(at("2027-01-20T00:05"), "models", {"ids": [FAMILY_NEW]}, "the old id is withdrawn"),
        Event(at("2027-01-25T10:00"), "backfill", {"asset": "commercial_trials", "months": ["2026-11-01"]},
              "a person backfills a past month from the UI"),
    ),
    expect=Expect(
        gaps=(*_absent(("2027-01-01", "2027-01-02"), "the daemon was down"),
              Gap("full_sweep", "2026-12", "provider_outage", "{last}", "the failed write; nobody resumed it"),
              Gap("subject_fingerprint", "2027-01-03", "provider_outage", may=True,
                  why="the restarted daemon launches the missed fingerprint beside the sweep; whether its calls come "
                      "before or after the overload begins is the run queue's order")),
        # The partitions the overloaded provider stopped before any call are refused (provider_outage, paged once
        # for the month) and measured when the person re-executes them the next day: no gap is left of them.
        refusals=(Refusal("run_busy", 1, "2026-12-02"), Refusal("provider_outage", 1, "2027-01-03"),
                  Refusal("not_this_month", 12, "2027-01-25")),
        instrument_alarm_days=tuple(f"2026-11-{d}" for d in range(10, 18)),
        bridge=("2026-11-20", "2027-01-20"),
        deadman_day="2027-01-01",
        deadman_over="2027-01-03",
    ),
)


FULL = Script(
    name="two years",
    start=at("2026-11-01T00:00"),
    end=at("2028-11-01T12:00"),
    events=(
        Event(at("2027-01-12T00:05"), "models", {"ids": [ACTIVE, FAMILY_NEW]}, "a new id in the family"),
        *_down("2027-02-28T10:00", "2027-03-03T10:00"),
        *_webhook("error", "2027-03-01T12:00", "2027-03-02T12:00",
                  "the webhook answers 500 for a day: the outside check records the dead-man at 18:17 and delivers "
                  "it the next day, once the webhook answers again"),
        Event(at("2027-04-06T00:05"), "models", {"ids": [{"id": ACTIVE, "successor": FAMILY_NEW}, FAMILY_NEW]},
              "the provider declares the successor"),
        Event(at("2027-04-20T00:05"), "models", {"ids": [FAMILY_NEW]}, "the old id is withdrawn"),
        Event(at("2027-06-02T05:59"), "fault", {"codes": [529, 429], "hours": 8, "after_calls": 300},
              "the provider is overloaded for eight hours during the sweep"),
        Event(at("2027-06-03T10:00"), "reexecute", {"job": "commercial_job", "since": "2027-06-02"},
              "a person re-executes the sweep's failed runs"),
        Event(at("2027-09-01T00:00"), "budget", {"ceiling": SHORT_OF_MONEY}, "the owner cuts September's budget"),
        Event(at("2027-09-02T06:00"), "launch", {"job": "commercial_job", "partition": "2027-09-01|{last}",
                                                 "while_running": True},
              "a person launches one more partition while the tick's run and wait in the queue"),
        Event(at("2027-10-01T00:00"), "budget", {"ceiling": BUDGET["ceiling"]}, "the owner restores the budget"),
        *_webhook("down", "2027-11-01T18:00", "2027-11-02T18:00",
                  "the webhook is down for a day over the failed run (the full disk's), paged at the 12:00 pass"),
        Event(at("2027-11-02T05:59:30"), "enospc", {"protocol": "{last}"}, "the disk fills once"),
        Event(at("2028-01-02T06:00"), "launch", {"job": "commercial_job", "partition": "2028-01-01|{first}"},
              "a person launches a partition by hand as the 06:00 tick launches it too"),
        Event(at("2028-03-10T10:00"), "backfill",
              {"asset": "commercial_trials", "months": ["2027-12-01", "2028-01-01", "2028-02-01"]},
              "a person backfills three past months from the UI"),
        *_webhook("hang", "2028-05-09T00:00", "2028-05-10T00:00",
                  "the webhook hangs for a day (it reads each page and never answers) over the instrument alarm's "
                  "failing checks"),
        Event(at("2028-05-09T00:30"), "fingerprint", {}, "the reference engine's fingerprint changes"),
        Event(at("2028-05-16T12:00"), "acknowledge", {"core_change": "drill: scripted engine update accepted",
                                                      "reviewer": "drill owner"}, "a person acknowledges"),
        Event(at("2028-08-14T04:30"), "launch", {"job": "subject_fingerprint_job", "partition": "2028-08-14"},
              "a person launches today's subject fingerprint as the 04:30 tick launches it too"),
    ),
    expect=Expect(
        gaps=(*_absent(("2027-03-01", "2027-03-02"), "the daemon was down"),
              Gap("full_sweep", "2027-09", "budget_halted", why="the month's pool pays for part of the sweep"),
              Gap("full_sweep", "2027-11", "provider_outage", "{last}", "the failed write; nobody resumed it")),
        # September's hand launch is refused by the budget before any call as a green run whose metadata says
        # skipped (budget_refused) — the sweep's rule, as the CLI's — and its gap is budget_halted (above), so no
        # failed run is expected of it.  The overloaded provider's partitions stopped before any call are refused
        # (provider_outage) and measured when re-executed the next day.  The backfill's 36 are: a past month is
        # never measured again.
        # The two subject fingerprints of 2028-08-14 leave the queue together: one takes the day's lock and
        # earmark, the other is refused run_busy before any call.
        refusals=(Refusal("run_busy", 1, "2028-01-02"), Refusal("provider_outage", 1, "2027-06-02"),
                  Refusal("not_this_month", 36, "2028-03-10"), Refusal("run_busy", 1, "2028-08-14")),
        instrument_alarm_days=tuple(f"2028-05-{d:02d}" for d in range(9, 17)),
        bridge=("2027-01-12", "2027-04-20"),
        deadman_day="2027-03-01",
        deadman_over="2027-03-03",
    ),
)

# The faults of FULL in one month, for their own test (tests/test_drill_faults.py): the owner's webhook answering 500
# over the new archive's first dead-man page and its recovery, down over the full disk's failed run, hung over the
# instrument alarm's failing checks and their resolution; two subject fingerprints launched together.
FAULTS = Script(
    name="the webhook's faults in one month",
    start=at("2026-11-01T00:00"),
    end=at("2026-12-01T12:00"),
    events=(
        *_webhook("error", "2026-11-01T00:00", "2026-11-01T23:00",
                  "the webhook answers 500 over the new archive's first dead-man page and its recovery"),
        *_webhook("down", "2026-11-02T00:00", "2026-11-03T00:00",
                  "the webhook is down for a day over the failed run (the full disk's), paged at the 12:00 pass"),
        Event(at("2026-11-02T05:59:30"), "enospc", {"protocol": "{last}"}, "the disk fills once"),
        Event(at("2026-11-03T04:30"), "launch", {"job": "subject_fingerprint_job", "partition": "2026-11-03"},
              "a person launches today's subject fingerprint as the 04:30 tick launches it too"),
        *_webhook("hang", "2026-11-10T00:00", "2026-11-11T00:00",
                  "the webhook hangs for a day over the instrument alarm's failing checks"),
        Event(at("2026-11-10T00:30"), "fingerprint", {}, "the reference engine's fingerprint changes"),
        Event(at("2026-11-12T12:00"), "acknowledge", {"core_change": "drill: scripted engine update accepted",
                                                      "reviewer": "drill owner"}, "a person acknowledges"),
    ),
    expect=Expect(
        gaps=(Gap("full_sweep", "2026-11", "provider_outage", "{last}", "the failed write; nobody resumed it"),),
        refusals=(Refusal("run_busy", 1, "2026-11-03"),),
        instrument_alarm_days=("2026-11-10", "2026-11-11", "2026-11-12"),
    ),
)

SCRIPTS = {"full": FULL, "short": SHORT, "faults": FAULTS}


def resolve(value: Any, protocols: list[str]) -> Any:
    """``{first}`` / ``{last}`` in an event's argument → the first / last protocol the monthly tick launches."""
    if isinstance(value, str):
        return value.replace("{first}", protocols[0]).replace("{last}", protocols[-1])
    if isinstance(value, list):
        return [resolve(v, protocols) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, protocols) for k, v in value.items()}
    return value
