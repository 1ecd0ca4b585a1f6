"""Which schedule ticks Dagster launches around a month's end and after the daemon was down over the 1st and the 2nd.

The two-year drill moves the clock in process (time-machine) and calls Dagster's own scheduler and sensor
functions; an owner runs the real ``dagster-daemon`` for years.  These tests tell the same story to both
and hold them to one table (:data:`EXPECTED`), so the drill's assumptions about the real daemon are pinned:

* a running daemon launches the 1st's ticks, each with its own time: 04:00 as the clock reaches it, then
  04:30, 08:00 and 09:00 in one pass when the clock moves on from 04:00 to 09:00 (one tick per schedule);
* **no schedule is caught up**: when ticks were missed — the clock skipped two months under a running
  daemon, or the daemon was down from 2027-01-31 23:00 to 2027-02-03 12:00 — each schedule launches its
  *latest* missed tick only, with that tick's ``scheduled_execution_time``; the earlier ones are never
  launched.  Dagster 1.13 gives no schedule defined in code a partition set, so ``max_catchup_runs``
  (``scheduler: config:`` in ``dagster.yaml``, default 5) never applies; the in-process test proves that
  raising it changes nothing;
* a sensor is not caught up either: one evaluation when the daemon comes back, not one per missed interval.

The real daemon runs under Debian's libfaketime with a relative offset read from a timestamp file, so the
daemon, its code server and anything they start share one moved clock that the test can step.  Two faults
of libfaketime 0.9.10 with Python 3.11 shape the setup: a faked monotonic clock makes every timed
``threading`` wait hang (glibc's ``sem_clockwait`` is not intercepted), and ``FAKETIME_DONT_FAKE_MONOTONIC``
makes ``time.sleep`` fail with EINVAL (``clock_nanosleep(TIMER_ABSTIME)``, libfaketime issue #426).  So the
monotonic clock stays real and a ``sitecustomize`` of the test's own gives the daemon's processes a
``time.sleep`` that waits in ``select``.  A wait is then real seconds: the scheduler sleeps until the next
minute of the clock it read, so :class:`FakeClock` sets the clock for the real instant it will wake.
Moving the clock by hours also makes the daemon warn that its threads sent no heartbeat for 1800 s and
its code server stop for want of one ("No heartbeat received in 20 seconds"); the daemon starts another
and goes on, as it would after a machine's suspend.

Runs are only queued (``run_queue: max_concurrent_runs: 0`` on the owner's ``dagster.yaml``): what is
pinned is which ticks submit which runs, not what the runs do.
"""
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Optional

import pytest
import time_machine
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFS = ROOT / "tests" / "daemon_faketime_defs.py"
DAEMON = Path(sys.executable).parent / "dagster-daemon"
UTC = dt.timezone.utc
LIBFAKETIME = next(iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))), None)


def real_time() -> float:
    """The machine's clock, which libfaketime offsets, even while this process travels (``LLMARCHIVE_TEST_CLOCK``)."""
    hatch = time_machine.escape_hatch
    return hatch.time.time() if hatch.is_travelling() else time.time()


SLEEP_SHIM = '''"""time.sleep for a process under libfaketime with FAKETIME_DONT_FAKE_MONOTONIC (libfaketime #426)."""
import select
import time


def _sleep(seconds):
    select.select([], [], [], seconds)


time.sleep = _sleep
'''

DAILY, FINGERPRINT, SWEEP = "daily_instrument_schedule", "daily_subject_fingerprint_schedule", "monthly_sweep_schedule"
COVERAGE, PUBLICATION = "monthly_coverage_schedule", "monthly_publication_schedule"
INTEGRITY = "daily_log_integrity_schedule"     # the deep verification's daily slice (method §10.1.1)
SCHEDULE_NAMES = (DAILY, FINGERPRINT, SWEEP, COVERAGE, PUBLICATION, INTEGRITY)


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


# The story, one Dagster home throughout: (step, the step's instant — the scheduler is made to wake just after
# it (FakeClock.wake_scheduler_after); at OUTAGE the daemon is stopped and started again at that instant —,
# the ticks the step launches: schedule → (tick time, the partitions of its runs as {key, or month: count})).
BOOT = at("2026-12-01 03:00:00")
RESTART = at("2027-02-03 12:00:00")
SWEEP_RUNS = 12   # one run per protocol of the sweep's series
EXPECTED: list[tuple[str, dt.datetime, dict[str, tuple[str, dict[str, int]]]]] = [
    ("the month's end: the daily tick of the 1st, at its time", at("2026-12-01 04:00:00"),
     {DAILY: ("2026-12-01T04:00:00+00:00", {"2026-12-01": 1})}),
    ("the rest of the 1st at once: 04:30, coverage of November at 08:00, publication at 09:00",
     at("2026-12-01 09:00:00"),
     {FINGERPRINT: ("2026-12-01T04:30:00+00:00", {"2026-12-01": 1}),
      INTEGRITY: ("2026-12-01T05:30:00+00:00", {"": 1}),
      COVERAGE: ("2026-12-01T08:00:00+00:00", {"2026-11-01": 1}),
      PUBLICATION: ("2026-12-01T09:00:00+00:00", {"": 1})}),
    ("two months skipped under a running daemon: the latest tick of each schedule, nothing before it",
     at("2027-01-31 23:00:00"),
     {DAILY: ("2027-01-31T04:00:00+00:00", {"2027-01-31": 1}),
      FINGERPRINT: ("2027-01-31T04:30:00+00:00", {"2027-01-31": 1}),
      INTEGRITY: ("2027-01-31T05:30:00+00:00", {"": 1}),
      SWEEP: ("2027-01-02T06:00:00+00:00", {"2027-01-01": SWEEP_RUNS}),
      COVERAGE: ("2027-01-01T08:00:00+00:00", {"2026-12-01": 1}),
      PUBLICATION: ("2027-01-01T09:00:00+00:00", {"": 1})}),
    ("stopped at 01-31 23:00, started at 02-03 12:00: the latest missed tick of each schedule", RESTART,
     {DAILY: ("2027-02-03T04:00:00+00:00", {"2027-02-03": 1}),
      FINGERPRINT: ("2027-02-03T04:30:00+00:00", {"2027-02-03": 1}),
      INTEGRITY: ("2027-02-03T05:30:00+00:00", {"": 1}),
      SWEEP: ("2027-02-02T06:00:00+00:00", {"2027-02-01": SWEEP_RUNS}),
      COVERAGE: ("2027-02-01T08:00:00+00:00", {"2027-01-01": 1}),
      PUBLICATION: ("2027-02-01T09:00:00+00:00", {"": 1})}),
]
WAKE_AFTER = dt.timedelta(seconds=50)   # see FakeClock.wake_scheduler_after
OUTAGE = len(EXPECTED) - 1   # the step that stops the daemon and starts it again


def instance_yaml(one_event_log: Optional[Path] = None) -> str:
    """The owner's ``dagster.yaml`` (what ``make serve`` and the systemd unit write), runs held in the queue.

    ``one_event_log``: every run's events in one SQLite file there, not a file per run — creating a run's
    own file costs about a second, which the in-process test need not spend on 36 runs.
    """
    from llmarchive.schedule import DAGSTER_YAML

    config = yaml.safe_load(DAGSTER_YAML) or {}
    config.setdefault("run_queue", {})["max_concurrent_runs"] = 0
    if one_event_log is not None:
        config["event_log_storage"] = {"module": "dagster.core.storage.event_log",
                                       "class": "ConsolidatedSqliteEventLogStorage",
                                       "config": {"base_dir": str(one_event_log)}}
    return yaml.safe_dump(config)


def expected_until(step: int) -> dict[str, list[tuple[str, str, dict[str, int]]]]:
    """Every tick the story has launched once ``step`` is done: schedule → [(tick, status, runs)]."""
    table: dict[str, list] = {name: [] for name in SCHEDULE_NAMES}
    for _, _, ticks in EXPECTED[:step + 1]:
        for name, (tick, runs) in ticks.items():
            table[name].append((tick, "SUCCESS", runs))
    return table


def observed(instance) -> dict[str, list[tuple[str, str, dict[str, int]]]]:
    """Every schedule tick on ``instance``: schedule → [(tick time, status, {partition: runs})], oldest first.

    Also checks what the drill reads off a run: each run of a tick carries the tick's time as its
    ``scheduled_execution_time`` tag.
    """
    from dagster._core.scheduler.instigation import InstigatorType
    from dagster._core.storage.tags import PARTITION_NAME_TAG, SCHEDULED_EXECUTION_TIME_TAG

    table: dict[str, list] = {name: [] for name in SCHEDULE_NAMES}
    for state in instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE):
        for tick in reversed(instance.get_ticks(state.instigator_origin_id, state.selector_id)):
            when = dt.datetime.fromtimestamp(tick.timestamp, UTC).isoformat()
            runs: Counter = Counter()
            for run_id in tick.run_ids:
                run = instance.get_run_by_id(run_id)
                assert run.tags[SCHEDULED_EXECUTION_TIME_TAG] == when, (state.instigator_name, run.tags)
                runs[run.tags.get(PARTITION_NAME_TAG, "").split("|")[0]] += 1
            table[state.instigator_name].append((when, tick.status.value, dict(runs)))
    return table


def sensor_ticks(instance) -> list[float]:
    from dagster._core.scheduler.instigation import InstigatorType

    from tests.daemon_faketime_defs import PROBE_SENSOR

    return sorted(tick.timestamp for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
                  if state.instigator_name == PROBE_SENSOR
                  for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id))


class FakeClock:
    """The moved clock of every process started with :meth:`env`: a libfaketime offset in a timestamp file.

    The offset is relative (``+N`` seconds), not a start instant (``@…``), so a process started later — the
    code server, a run — reads the same time as the daemon.  It only moves forward.
    """

    def __init__(self, path: Path, start: dt.datetime):
        self.path = path
        self.offset = round(start.timestamp() - real_time())
        self._write()

    def _write(self) -> None:
        self.path.write_text(f"{self.offset:+d}\n", encoding="ascii")

    def now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(real_time() + self.offset, UTC)

    def wake_scheduler_after(self, tick: dt.datetime) -> None:
        """Move the clock so that the sleeping scheduler wakes :data:`WAKE_AFTER` after ``tick``.

        The scheduler sleeps, in real seconds, until the next minute of the clock it read when it went to
        sleep, so it wakes at a real instant this clock knows; the clock is set so that that instant reads
        ``tick`` + :data:`WAKE_AFTER`.  The pass then launches ``tick``, and its next sleep lasts what is
        left of that minute — seconds, not a minute, so the next step of the story comes soon.
        """
        now = self.now()
        wakes = real_time() + (now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1) - now).total_seconds()
        offset = round((tick + WAKE_AFTER).timestamp() - wakes)
        assert offset > self.offset, "the clock only moves forward"
        self.offset = offset
        self._write()

    def set(self, when: dt.datetime) -> None:
        """Put the clock at ``when`` (a restart: no process is running)."""
        assert when > self.now(), "the clock only moves forward"
        self.offset = round(when.timestamp() - real_time())
        self._write()

    def env(self, shim_dir: Path) -> dict[str, str]:
        return {"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME_TIMESTAMP_FILE": str(self.path),
                "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                "PYTHONPATH": os.pathsep.join([str(shim_dir), *filter(None, [os.environ.get("PYTHONPATH")])])}


class Daemon:
    """``dagster-daemon run -f tests/daemon_faketime_defs.py`` in its own process group, its output in a file."""

    def __init__(self, env: dict[str, str], log: Path):
        self.log = log
        with open(log, "ab") as out:
            self.process = subprocess.Popen([str(DAEMON), "run", "-f", str(DEFS.relative_to(ROOT))], cwd=ROOT, env=env,
                                            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        """SIGTERM the daemon's process group (the daemon and its code server); SIGKILL what is left after 30 s."""
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


def wait_until(done: Callable[[], bool], what: str, daemon: Daemon, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert daemon.process.poll() is None, f"the daemon exited ({daemon.process.returncode}) before {what}:\n" \
                                              + daemon.tail()
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:g} s\n{daemon.tail()}")
        time.sleep(0.5)


def ticks_done(instance, step: int) -> Callable[[], bool]:
    """True once every tick the story launches up to ``step`` is recorded as finished (not STARTED)."""
    want = {(name, tick) for name, rows in expected_until(step).items() for tick, _, _ in rows}

    def done() -> bool:
        have = {(name, tick) for name, rows in observed(instance).items() for tick, status, _ in rows
                if status != "STARTED"}
        return want <= have
    return done


@pytest.mark.slow   # the real daemon: two boots and three steps of its moved clock, about two minutes
def test_the_real_daemon_launches_each_tick_at_a_month_end_and_only_the_latest_missed_one_after_an_outage(tmp_path):
    from dagster import DagsterInstance
    from dagster._core.scheduler.instigation import InstigatorType

    if LIBFAKETIME is None:
        pytest.fail("libfaketime is missing: `make test` installs it (apt-get install -y faketime)")
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SLEEP_SHIM, encoding="utf-8")
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(), encoding="utf-8")
    clock = FakeClock(tmp_path / "faketime", BOOT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKETIME") and k != "ANTHROPIC_API_KEY"}
    env.update(DAGSTER_HOME=str(home), LLMARCHIVE_HOME=str(tmp_path / "archive"), **clock.env(shim))
    log = tmp_path / "daemon.log"
    daemon: Optional[Daemon] = None
    with DagsterInstance.from_config(str(home)) as instance:
        try:
            daemon = Daemon(env, log)
            wait_until(lambda: len(instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE))
                       == len(SCHEDULE_NAMES), "the scheduler's first pass records every schedule", daemon)
            for step, (story, when, _) in enumerate(EXPECTED):
                if step == OUTAGE:
                    daemon.stop()
                    clock.set(when)
                    daemon = Daemon(env, log)
                else:
                    clock.wake_scheduler_after(when)
                wait_until(ticks_done(instance, step), story, daemon)
                assert observed(instance) == expected_until(step), story
            restarted = RESTART.timestamp()
            wait_until(lambda: any(t >= restarted for t in sensor_ticks(instance)),
                       "the sensor evaluated after the restart", daemon)
            assert len([t for t in sensor_ticks(instance) if t >= restarted]) == 1, "one evaluation, not one an hour"
            assert observed(instance) == expected_until(OUTAGE), "nothing launched after the catch-up"
        finally:
            if daemon is not None:
                daemon.stop()
    assert "has no partition set, so not trying to catch up" in log.read_text(encoding="utf-8", errors="replace")


def one_pass(loop) -> None:
    """Pull ``execute_scheduler_iteration_loop`` through one pass of the scheduler (its shutdown event is set, so
    the wait between passes returns at once)."""
    from dagster._daemon.daemon import SpanMarker

    for item in loop:
        if item is SpanMarker.END_SPAN:
            return


@pytest.mark.parametrize("max_catchup_runs", [None, 50], ids=["default", "max_catchup_runs=50"])
def test_dagsters_scheduler_in_process_under_time_machine_launches_the_same_ticks_as_the_real_daemon(
        tmp_path, max_catchup_runs):
    """The drill's way: Dagster's scheduler loop and sensor iteration, in this process, on a time-machine clock.

    The same story as the real daemon's test, held to the same :data:`EXPECTED`; a restart is a new
    workspace and a new loop (the daemon's in-memory state gone).  ``max_catchup_runs`` raised to 50
    changes nothing: no schedule of this Dagster has a partition set, so only the latest tick is launched.
    """
    import logging
    import threading

    from dagster import DagsterInstance
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
    from dagster._daemon.sensor import execute_sensor_iteration
    from dagster._scheduler.scheduler import execute_scheduler_iteration_loop

    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(one_event_log=home / "events"), encoding="utf-8")
    logger = logging.getLogger("test_daemon_faketime")
    target = InProcessWorkspaceLoadTarget(InProcessCodeLocationOrigin(LoadableTargetOrigin(
        python_file=str(DEFS), attribute="defs", working_directory=str(ROOT))))

    shutdown = threading.Event()
    shutdown.set()

    def start(instance, catchup: int, running: ExitStack) -> Callable[[], None]:
        """A daemon started in process: each call of what it returns is one pass of the scheduler's loop and
        one of the sensors'; ``running.close()`` stops it (its workspace and loop, and what they held in memory)."""
        context = running.enter_context(WorkspaceProcessContext(instance, target))
        loop = execute_scheduler_iteration_loop(context, logger, catchup, 0, shutdown)
        running.callback(loop.close)

        def one_pass_each() -> None:
            one_pass(loop)
            list(execute_sensor_iteration(context, logger, None, None))
        return one_pass_each

    with (DagsterInstance.from_config(str(home)) as instance, time_machine.travel(BOOT, tick=False) as clock,
          ExitStack() as running):
        catchup = instance.scheduler.max_catchup_runs if max_catchup_runs is None else max_catchup_runs
        passes = start(instance, catchup, running)
        passes()
        for step, (story, when, _) in enumerate(EXPECTED):
            clock.move_to(when if step == OUTAGE else when + WAKE_AFTER)   # when the real daemon's pass came
            if step == OUTAGE:
                running.close()
                passes = start(instance, catchup, running)
            passes()
            assert observed(instance) == expected_until(step), story
        assert len([t for t in sensor_ticks(instance) if t >= RESTART.timestamp()]) == 1, "one evaluation"
