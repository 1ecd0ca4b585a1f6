"""The drill's Dagster: an instance of its own, the code location in process, the daemon's own functions.

Nothing here decides when a schedule or a sensor fires.  Each *daemon pass*
calls, at the moved clock's instant, the functions Dagster's daemon loops
call — :func:`dagster._scheduler.scheduler.launch_scheduled_runs` (with the
scheduler's ``max_catchup_runs`` and ``max_tick_retries``, and the in-memory
``iteration_times`` the loop keeps), :func:`dagster._daemon.sensor.execute_sensor_iteration`,
:func:`dagster._daemon.backfill.execute_backfill_iteration` and the queued
run coordinator daemon's ``run_iteration`` — so cron, catch-up after a
restart, sensor intervals, run keys, the run queue and backfills are
Dagster's.  :meth:`Daemon.restart` forgets what a daemon process keeps in
memory, as a restart does.

Which instants to step to is the one thing computed here, and with
Dagster's helpers: the next tick of each running schedule
(:func:`dagster._utils.schedules.cron_string_iterator`) and each running
sensor's next evaluation (its last tick plus its ``minimum_interval_seconds``).

Actions a person takes in the UI go through the UI's own GraphQL mutations
(:func:`graphql`): launching a run, a re-execution, a backfill.
"""
import datetime as dt
import logging
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from dagster import DagsterInstance
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.scheduler.instigation import InstigatorStatus, InstigatorType
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.backfill import execute_backfill_iteration
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
from dagster._daemon.sensor import execute_sensor_iteration
from dagster._scheduler.scheduler import launch_scheduled_runs
from dagster._time import get_current_datetime
from dagster._utils.schedules import cron_string_iterator

from llmarchive.archive import REPO_ROOT
from scripts import drill_sqlite

LOCATION_MODULE = "scripts.drill_definitions"


LAUNCHERS = {"process": "ProcessPerRunLauncher", "thread": "ThreadedInProcessRunLauncher"}
"""The drill's ``--runs``: each run in a process of its own (as production), or in a thread of the drill's."""


def dagster_yaml(max_concurrent_runs: int, extra: str = "", runs: str = "process") -> str:
    """The drill instance's ``dagster.yaml``: the run queue an owner would configure, the drill's run launcher."""
    return (
        "telemetry:\n  enabled: false\n"
        "run_coordinator:\n"
        "  module: dagster._core.run_coordinator.queued_run_coordinator\n"
        "  class: QueuedRunCoordinator\n"
        f"  config:\n    max_concurrent_runs: {max_concurrent_runs}\n"
        f"run_launcher:\n  module: scripts.drill_launcher\n  class: {LAUNCHERS[runs]}\n"
        # Capturing a run's stdout redirects the process's file descriptors: one run at a time per process.
        # The threaded drill's runs share a process, so runs' logs stay in the event log (what the UI shows) only.
        "compute_logs:\n  module: dagster._core.storage.noop_compute_log_manager\n"
        "  class: NoOpComputeLogManager\n"
        # Every tick is kept (Dagster purges a sensor's skipped ticks after 7 days): the drill's verdict times
        # them all at the end (scripts.drill_checks.ticks_bounded).
        "retention:\n  sensor:\n    purge_after_days:\n      skipped: -1\n"
        + extra)


def make_instance(home: Path, max_concurrent_runs: int, extra: str = "", runs: str = "process") -> DagsterInstance:
    """A persistent instance of the drill's own in ``home`` (its ``dagster.yaml`` written first)."""
    drill_sqlite.install()
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml(max_concurrent_runs, extra, runs), encoding="utf-8")
    instance = DagsterInstance.from_config(str(home))
    # Each run's log manager asks for the python_logs handlers of dagster.yaml, and Dagster builds them with
    # logging.config.dictConfig, which closes every handler of the process: safe in a run's own subprocess,
    # a deadlock between two runs executing in threads of one process.  The drill's dagster.yaml configures
    # none, so the answer is the same empty list, without the reconfiguration.
    instance.get_yaml_python_handlers = lambda: []     # type: ignore[method-assign]
    return instance


def _project_modules() -> list[str]:
    return [name for name in sys.modules
            if name in ("assets", LOCATION_MODULE) or name.startswith("assets.")]


@contextmanager
def fresh_modules() -> Iterator[None]:
    """The project's Dagster modules imported anew for the drill, and the ones imported before put back after.

    ``assets.partitions`` fixes where the day and month partitions start
    when it is imported, from the home's first admission: the drill's code
    location must be imported after the drill's home exists, even in a
    process (the test suite) that imported it for another home before.
    """
    saved = {name: sys.modules.pop(name) for name in _project_modules()}
    try:
        yield
    finally:
        for name in _project_modules():
            del sys.modules[name]
        sys.modules.update(saved)


@contextmanager
def workspace(instance: DagsterInstance) -> Iterator[WorkspaceProcessContext]:
    """The drill's code location (:mod:`scripts.drill_definitions`), loaded in this process."""
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(executable_path=sys.executable, module_name=LOCATION_MODULE, attribute="defs",
                             working_directory=str(REPO_ROOT)),
        location_name="llm_archive")
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as context:
        yield context


def repository(context: WorkspaceProcessContext) -> Any:
    """The one repository of the drill's code location."""
    entry = next(iter(context.create_request_context().get_code_location_entries().values()))
    if entry.code_location is None:
        raise RuntimeError(f"the drill's code location did not load: {entry.load_error}")
    [repo] = entry.code_location.get_repositories().values()
    return repo


def turn_everything_on(context: WorkspaceProcessContext) -> list[str]:
    """Start every schedule and sensor that is not running — the paid ones an owner turns on in the UI."""
    instance, repo, started = context.instance, repository(context), []
    states = {s.selector_id: s for s in instance.all_instigator_state()}
    for schedule in repo.get_schedules():
        if not schedule.get_current_instigator_state(states.get(schedule.selector_id)).is_running:
            instance.start_schedule(schedule)
            started.append(schedule.name)
    for sensor in repo.get_sensors():
        if not sensor.get_current_instigator_state(states.get(sensor.selector_id)).is_running:
            instance.start_sensor(sensor)
            started.append(sensor.name)
    return started


@dataclass
class Daemon:
    """One daemon process's passes over the scheduler, the sensors, the backfills and the run queue."""

    context: WorkspaceProcessContext
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("drill.daemon"))
    iteration_times: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    passes: int = 0
    timed_passes: list = field(default_factory=list)    # (the moved clock's timestamp as a pass began, its real s)

    def restart(self) -> None:
        """A new daemon process: whatever the old one kept in memory is gone."""
        self.iteration_times = {}

    def run_pass(self) -> None:
        """One pass of each loop, in the daemon's order of concerns, at the clock's instant."""
        self.passes += 1
        scheduler = self.context.instance.scheduler
        now = get_current_datetime()
        started = time.monotonic()
        try:
            self._drain(launch_scheduled_runs(self.context, self.logger, end_datetime_utc=now,
                                              iteration_times=self.iteration_times,
                                              max_catchup_runs=scheduler.max_catchup_runs,
                                              max_tick_retries=scheduler.max_tick_retries))
            self._drain(execute_sensor_iteration(self.context, self.logger, threadpool_executor=None,
                                                 submit_threadpool_executor=None))
            self.backfills_and_queue()
        finally:
            self.timed_passes.append((now.timestamp(), time.monotonic() - started))

    def backfills_and_queue(self) -> None:
        """The backfill daemon's pass, then the run queue's (the loops that move queued work along)."""
        self._drain(execute_backfill_iteration(self.context, self.logger))
        self._drain(QueuedRunCoordinatorDaemon(interval_seconds=5).run_iteration(self.context))

    def _drain(self, iterator: Any) -> None:
        for value in iterator or ():
            if value is not None and hasattr(value, "message") and hasattr(value, "stack"):
                self.errors.append((get_current_datetime().isoformat(), value.message.strip()))


def next_instants(context: WorkspaceProcessContext, after: dt.datetime, until: dt.datetime,
                  coarsest: Optional[dt.timedelta] = None) -> list[dt.datetime]:
    """Every instant in (after, until] at which a running schedule ticks or a running sensor is due.

    Schedules from their cron strings (Dagster's iterator, in their
    execution timezone); sensors every ``minimum_interval_seconds`` from the
    last tick the instance recorded (or from ``after`` before the first).
    A sensor whose interval is no longer than ``coarsest`` is left to the
    caller's grid of that step (the drill's ``--sensor-every``): every pass
    evaluates it, the grid's and the schedules'.
    """
    instance, repo = context.instance, repository(context)
    states = {s.selector_id: s for s in instance.all_instigator_state()}
    found: set[dt.datetime] = set()
    for schedule in repo.get_schedules():
        if not schedule.get_current_instigator_state(states.get(schedule.selector_id)).is_running:
            continue
        for tick in cron_string_iterator(after.timestamp() + 1, schedule.cron_schedule,
                                         schedule.execution_timezone or "UTC"):
            if tick > until:
                break
            found.add(tick.astimezone(dt.timezone.utc))
    for sensor in repo.get_sensors():
        if not sensor.get_current_instigator_state(states.get(sensor.selector_id)).is_running:
            continue
        interval = dt.timedelta(seconds=sensor.min_interval_seconds or 30)
        if coarsest is not None and interval <= coarsest:
            continue
        ticks = instance.get_ticks(sensor.get_remote_origin_id(), sensor.selector_id, limit=1)
        last = (dt.datetime.fromtimestamp(ticks[0].timestamp, dt.timezone.utc) if ticks else after)
        moment = last + interval
        while moment <= after:
            moment += interval
        while moment <= until:
            found.add(moment)
            moment += interval
    return sorted(found)


def due_soon(context: WorkspaceProcessContext, moment: dt.datetime, within: dt.timedelta,
             finest: dt.timedelta) -> Optional[dt.datetime]:
    """The latest instant in (moment, moment + within] at which a running sensor evaluated every ``finest`` or
    more often falls due (a second after its interval has elapsed since its last tick began); None if none does.

    Dagster evaluates a sensor once its interval has elapsed since its last
    tick began, and a tick begins seconds into a pass, so a pass on an
    hourly grid finds an hourly sensor a few seconds short of due and would
    evaluate it every other hour only.
    """
    instance, repo = context.instance, repository(context)
    states = {s.selector_id: s for s in instance.all_instigator_state()}
    latest = None
    for sensor in repo.get_sensors():
        interval = sensor.min_interval_seconds or 30
        state = sensor.get_current_instigator_state(states.get(sensor.selector_id))
        data = state.instigator_data
        if not state.is_running or interval > finest.total_seconds() or data is None:
            continue
        last = max(getattr(data, "last_tick_timestamp", None) or 0, getattr(data, "last_tick_start_timestamp", None) or 0)
        due = dt.datetime.fromtimestamp(last + interval + 1, dt.timezone.utc)
        if moment < due <= moment + within and (latest is None or due > latest):
            latest = due
    return latest


def running_instigators(context: WorkspaceProcessContext) -> dict[str, str]:
    """Each schedule's and sensor's name → RUNNING or STOPPED, as the instance holds it now."""
    instance, repo = context.instance, repository(context)
    states = {s.selector_id: s for s in instance.all_instigator_state()}
    out = {}
    for item in [*repo.get_schedules(), *repo.get_sensors()]:
        state = item.get_current_instigator_state(states.get(item.selector_id))
        out[item.name] = "RUNNING" if state.status in (InstigatorStatus.RUNNING, InstigatorStatus.DECLARED_IN_CODE) \
            and state.is_running else "STOPPED"
    return out


__all__ = ["Daemon", "InstigatorType", "due_soon", "make_instance", "next_instants", "repository", "running_instigators",
           "turn_everything_on", "workspace"]
