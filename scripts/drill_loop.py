"""The drill's loop: step the clock, apply the script, let Dagster's daemon functions do the rest.

:class:`Loop` opens the world (provider, the owner's webhook), the home, the Dagster
instance and the code location, turns every schedule and sensor on, then
walks the clock day by day through the instants of :func:`instants`.  At
each instant it applies the script's events that are due
(:mod:`scripts.drill_events`), runs one daemon pass when the daemon is up
(:class:`scripts.drill_dagster.Daemon`) and waits for the runs that pass
launched, then the outside dead-man check when the crontab's line is due.
After a publication run it runs the month's checks; at each month's end,
``llmarchive status`` as an owner runs it, once.

Each month's cost is counted in CPU seconds of the work (:meth:`Loop.cpu`):
this process's (the daemon's passes, the sensors, the fake provider's and
the webhook's serving, and with ``--runs thread`` the runs) and that of the
steps' processes (with ``--runs process`` every run, outside check and
``status`` in a process of its own, :mod:`scripts.drill_child`), less what
the drill's own checks took.  The moved clock's wall time says nothing of
it.  With ``--runs thread``, publication's worker pools live in a server
process that outlives the month, so their CPU is missing from the months.

*Hourly days* (``--hourly-days``, by default the 1st, the 15th and the last
of each month): the sensors are evaluated and the outside check runs every
hour, as production runs both, instead of every ``--sensor-every`` and
every :data:`OUTSIDE_CHECK_EVERY`; so a sample of days costs what an
owner's day costs.
"""
import calendar
import contextlib
import datetime as dt
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from dagster import DagsterRunStatus, RunsFilter
from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus

from scripts import drill_checks, drill_dagster, drill_events, drill_report
from scripts.drill_state import State
from scripts.drill_script import Script
from scripts.drill_world import FullDisk, Provider, Webhook, no_real_backoff

OUTSIDE_CHECK_MINUTE = 17          # deploy/crontab: `17 * * * * … llmarchive lease --quiet`
# The crontab's line runs hourly; the drill runs it every six hours (a dead-man is paged at most six hours after
# it falls due, on the same day for the script's outages) — 24 checks a simulated day would cost a quarter hour
# over two years.
OUTSIDE_CHECK_EVERY = dt.timedelta(hours=6)
HOUR = dt.timedelta(hours=1)


def hourly_days(spec: str) -> Callable[[dt.date], bool]:
    """``--hourly-days``: days of the month, comma-separated, ``last`` for the last (``""``: none); the test."""
    words = [w.strip() for w in spec.split(",") if w.strip()]
    for word in words:
        if word != "last" and not (word.isdigit() and 1 <= int(word) <= 31):
            raise ValueError(f"--hourly-days: {word!r} is neither a day of the month (1-31) nor 'last'")

    def hourly(day: dt.date) -> bool:
        last = calendar.monthrange(day.year, day.month)[1]
        return any((w == "last" and day.day == last) or (w != "last" and int(w) == day.day) for w in words)
    return hourly


HOURLY_DAYS = "1,15,last"


def instants(context: Any, after: dt.datetime, until: dt.datetime, sensor_every: dt.timedelta,
              extra: list[dt.datetime], hourly: bool = False) -> list[tuple[dt.datetime, bool]]:
    """The instants to visit in (after, until], each with whether the daemon makes a pass then.

    A pass at every schedule tick, every sensor evaluation (no finer than
    ``sensor_every``, on a grid from midnight) and every scripted instant;
    the outside check at minute 17 every :data:`OUTSIDE_CHECK_EVERY`, without a pass.
    On an ``hourly`` day, both grids are hourly.
    """
    if hourly:
        sensor_every = min(sensor_every, HOUR)
    passes = set(drill_dagster.next_instants(context, after, until, coarsest=sensor_every))
    midnight = after.replace(hour=0, minute=0, second=0, microsecond=0)
    passes.update(_grid(midnight, until, sensor_every))
    outside = {t + dt.timedelta(minutes=OUTSIDE_CHECK_MINUTE)
               for t in _grid(midnight, until, HOUR if hourly else OUTSIDE_CHECK_EVERY)}
    passes.update(extra)
    every = {t: True for t in passes if after < t <= until}
    every.update({t: every.get(t, False) for t in outside if after < t <= until})
    return sorted(every.items())


def _grid(start: dt.datetime, until: dt.datetime, step: dt.timedelta) -> list[dt.datetime]:
    out, moment = [], start
    while moment <= until:
        out.append(moment)
        moment += step
    return out


@dataclass
class Outcome:
    """What a drill leaves: the verdicts, the table, the timings."""

    verdicts: list = field(default_factory=list)        # (name, passed, detail)
    table: str = ""
    seconds: float = 0.0
    month_seconds: dict = field(default_factory=dict)
    month_cpu: dict = field(default_factory=dict)       # CPU seconds of the work, by month (Loop.cpu)
    status_cpu: dict = field(default_factory=dict)      # CPU seconds of the month's `llmarchive status`
    passes: int = 0
    notes: list = field(default_factory=list)
    parts: dict = field(default_factory=dict)          # wall seconds by part of the loop

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.verdicts)


class Loop:
    """One drill (see the module docstring)."""

    def __init__(self, script: Script, root: Path, sensor_every: dt.timedelta, coordinates: Any,
                 runs: str = "process", hourly: Callable[[dt.date], bool] = hourly_days(HOURLY_DAYS)) -> None:
        """``script`` whole, or cut to its first months (:meth:`Script.cut`): the drill ends at its end.

        ``runs``: ``process`` (each run, outside check and ``status`` in a
        process of its own) or ``thread``; ``hourly``: the days whose
        sensors and outside check run hourly.
        """
        self.script, self.root, self.sensor_every, self.coordinates = script, root, sensor_every, coordinates
        self.runs, self.hourly = runs, hourly
        self.end = script.end
        self._stack = contextlib.ExitStack()
        self.state: Optional[State] = None

    def __enter__(self) -> "Loop":
        from scripts import drill_home

        stack = self._stack
        provider = stack.enter_context(Provider(["claude-sonnet-5"]))
        webhook = stack.enter_context(Webhook())
        stack.callback(no_real_backoff(provider))
        disk = FullDisk()
        stack.callback(disk.install())
        drill_home.set_environment(self.root, provider.fake.base_url, webhook.url)
        from scripts.drill_engine import REFERENCE
        REFERENCE.changes.clear()
        paths, protocols, patch = drill_home.fresh_home(self.script.budget, self.script.start.date().isoformat())
        stack.callback(patch.undo)
        instance = drill_dagster.make_instance(self.root / "dagster", self.script.max_concurrent_runs,
                                               runs=self.runs)
        stack.callback(instance.dispose)
        stack.enter_context(drill_dagster.fresh_modules())
        context = stack.enter_context(drill_dagster.workspace(instance))
        started = drill_dagster.turn_everything_on(context)
        self.state = State(self.script, paths, protocols, provider, webhook, disk, instance, context,
                           drill_dagster.Daemon(context), turned_on=started, runs=self.runs)
        if self.runs == "process":
            from scripts.drill_child import Zygote

            self.state.zygote = stack.enter_context(Zygote(self.root / "steps.log"))
            launcher = instance.run_launcher
            launcher.zygote, launcher.world, launcher.absorb = self.state.zygote, self.state.world_spec, \
                self.state.absorb
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.state is not None:
            self.state.launcher.wait(60)
        self._stack.close()

    def drive(self) -> None:
        """Day by day to the end: every instant of the day, in order."""
        state = self.state
        assert state is not None
        cursor = self.script.start
        pending = sorted(self.script.events, key=lambda e: e.when)
        month_started, month = self._mark(), cursor.strftime("%Y-%m")
        while cursor < self.end:
            horizon = min(cursor + dt.timedelta(days=1), self.end)
            hourly = self.hourly(cursor.date())
            for moment, daemon_pass in instants(state.context, cursor, horizon, self.sensor_every,
                                                [e.when for e in pending], hourly):
                self._visit(moment, pending, daemon_pass, hourly)
            cursor = horizon
            if cursor.strftime("%Y-%m") != month:
                self._status(month)
                self._close_month(month, month_started)
                month_started, month = self._mark(), cursor.strftime("%Y-%m")
        self._close_month(month, month_started)

    def cpu(self) -> float:
        """CPU seconds so far of this process, of its children that ended and of the steps' processes that did
        (they are the zygote's children, and report their own: :mod:`scripts.drill_child`), user and system."""
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        forked = self.state.forked_cpu if self.state is not None else 0.0
        return time.process_time() + children.ru_utime + children.ru_stime + forked

    def _mark(self) -> tuple[float, float, float]:
        """Wall seconds, the work's CPU seconds (the drill's checks taken out) and the steps' processes' share."""
        return time.monotonic(), self.cpu() - self.state.check_cpu, self.state.forked_cpu

    def _close_month(self, month: str, started: tuple[float, float, float]) -> None:
        state = self.state
        now = self._mark()
        state.month_seconds[month] = state.month_seconds.get(month, 0.0) + now[0] - started[0]
        state.month_cpu[month] = state.month_cpu.get(month, 0.0) + now[1] - started[1]
        forked = now[2] - started[2]
        print(f"  {month} simulated in {state.month_seconds[month]:.0f} s, the work's CPU "
              f"{state.month_cpu[month]:.0f} s" + (f" ({forked:.0f} s of it in the steps' processes)" if forked else ""),
              file=sys.__stdout__, flush=True)

    def _status(self, month: str) -> None:
        """``llmarchive status`` once, at the month's end, as an owner runs it; its CPU seconds noted."""
        state = self.state
        self.settle()
        before = self.cpu()
        with state.timed("llmarchive status (monthly)"):
            status, said = drill_events.command(state, ["status"])
        state.status_cpu[month] = self.cpu() - before
        if status:
            state.notes.append(f"{month}: llmarchive status exited {status}: {said.splitlines()[-1:]}")

    def _visit(self, moment: dt.datetime, pending: list, daemon_pass: bool, hourly: bool = False) -> None:
        """The events due, then the daemon's pass, then the runs they launched; the outside check; the checks.

        An event and a tick at the same instant meet in the same queue: a
        launch by hand at the sweep's tick is dequeued beside the tick's
        runs.  An event marked ``while_running`` waits until runs are in
        flight (:meth:`_settle`).
        """
        state = self.state
        assert state is not None
        if daemon_pass and hourly:
            # An hourly sensor's last tick began seconds into the last pass: an hour later it is seconds short.
            due = drill_dagster.due_soon(state.context, moment, dt.timedelta(minutes=5), HOUR)
            moment = max(moment, due or moment)
        if moment > drill_events.now():
            self.coordinates.move_to(moment)
        with state.timed("events"):
            while pending and pending[0].when <= moment:
                event = pending.pop(0)
                if event.args.get("while_running"):
                    state.while_running.append(event)
                else:
                    drill_events.apply(state, event)
        if daemon_pass and not state.down:
            with state.timed("daemon passes"):
                state.daemon.run_pass()
        self.settle()
        if moment.minute == OUTSIDE_CHECK_MINUTE:
            with state.timed("outside dead-man check"):
                drill_events.outside_check(state)
        with state.timed("monthly checks"):
            before = self.cpu()
            published = drill_checks.new_publications(state)
            if published:
                state.monthly.append(drill_checks.month_checks(state, published))
            state.check_cpu += self.cpu() - before

    def settle(self, limit_s: float = 900.0) -> None:
        """Wait for the runs in flight and let the queue and the backfills move until nothing is left to move."""
        state = self.state
        assert state is not None
        with state.timed("runs (launched by the pass, executing)"):
            self._settle(limit_s)

    def _settle(self, limit_s: float) -> None:
        """Poll as the queue daemon would: a slot that frees is filled at once; stop when nothing moves."""
        state = self.state
        deadline, stalled = time.monotonic() + limit_s, 0
        while time.monotonic() < deadline and stalled < 20:
            if not state.down:
                state.daemon.backfills_and_queue()
            flying = state.launcher.in_flight()
            stalled = 0 if flying else stalled + 1
            if flying and state.while_running:
                for event in state.while_running:
                    drill_events.apply(state, event)
                state.while_running.clear()
                continue
            if not flying and (state.down or not self._waiting()):
                self._note_runs()
                return
            state.launcher.wait_any(0.5 if flying else 0.05)
        self._note_runs()
        state.notes.append(f"{drill_events.now():%Y-%m-%d %H:%M}: queued runs or backfills did not move "
                           f"(or still ran after {limit_s:.0f} s)")

    def _note_runs(self) -> None:
        """The month each new run was first seen in (the table counts runs by it)."""
        state = self.state
        month = drill_events.now().strftime("%Y-%m")
        cursor = None
        while True:                       # newest first, a page at a time, until a run already noted
            page = state.instance.get_runs(limit=25, cursor=cursor)
            for run in page:
                if run.run_id in state.run_month:
                    return
                state.run_month[run.run_id] = month
            if len(page) < 25:
                return
            cursor = page[-1].run_id

    def _waiting(self) -> bool:
        instance = self.state.instance
        queued = instance.get_runs_count(RunsFilter(statuses=[DagsterRunStatus.QUEUED]))
        backfills = instance.get_backfills(filters=BulkActionsFilter(statuses=[BulkActionStatus.REQUESTED]))
        return bool(queued or backfills)

    def finish(self) -> Any:
        """The final checks, the table, the outcome."""

        state = self.state
        assert state is not None
        self.settle()
        verdicts = drill_checks.final_checks(state)
        table = drill_report.table(state)
        parts = dict(state.seconds)
        parts.update({f"  of which {job} runs (summed: runs overlap)": seconds for job, seconds in drill_report.run_seconds(state).items()})
        return Outcome(verdicts=verdicts, table=table, month_seconds=dict(state.month_seconds),
                       month_cpu=dict(state.month_cpu), status_cpu=dict(state.status_cpu),
                       passes=state.daemon.passes, notes=list(state.notes), parts=parts)
