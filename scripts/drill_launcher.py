"""The drill's run launchers: each run in a process of its own, as production (or in a thread of this one).

:class:`ProcessPerRunLauncher` (the drill's default) starts every run in a
process of its own (:mod:`scripts.drill_child`), as Dagster's
``DefaultRunLauncher`` does, so every per-process cache is cold at each
step's start; the process reports its CPU seconds back.
:class:`ThreadedInProcessRunLauncher` (``--runs thread``, the suite's
drills) executes each run in a thread of this process: a second and more
saved per run, and the caches stay warm across runs.

The threaded launcher.  Dagster's ``SyncInMemoryRunLauncher`` (its tests')
executes a run inside ``launch_run``, so nothing overlaps; the drill needs
runs that overlap (a queue releasing the month's partitions, a person's
launch beside them).  So a launched run is executed by
:func:`dagster._core.execution.api.execute_run`, exactly as the in-memory
launcher does it, but in a thread (the process launcher's thread only waits
for the run's process); :meth:`wait` lets the drill wait for the runs in
flight before it moves the clock on.  Configured in the drill's
``dagster.yaml`` (``run_launcher: module: scripts.drill_launcher``).
"""
import cProfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Optional

from dagster._core.execution.api import execute_run
from dagster._core.launcher import LaunchRunContext, RunLauncher
from dagster._serdes import ConfigurableClass
from dagster._serdes.config_class import ConfigurableClassData
from dagster._utils.hosted_user_process import recon_job_from_origin


class ThreadedInProcessRunLauncher(RunLauncher, ConfigurableClass):
    """Launch each run in a thread of this process (see the module docstring)."""

    def __init__(self, inst_data: Optional[ConfigurableClassData] = None) -> None:
        self._inst_data = inst_data
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self.crashes: dict[str, BaseException] = {}
        self.profiles: list[Any] = []      # cProfile.Profile objects, or the files a run's process wrote
        self.profiling = False       # the drill's --profile: each run's thread is profiled too
        super().__init__()

    @property
    def inst_data(self) -> Optional[ConfigurableClassData]:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData,
                          config_value: Mapping[str, Any]) -> "ThreadedInProcessRunLauncher":
        return cls(inst_data=inst_data)

    def launch_run(self, context: LaunchRunContext) -> None:
        self._start(context.dagster_run.run_id, self._in_thread(context))

    def _start(self, run_id: str, execute: Callable[[], None]) -> None:
        thread = threading.Thread(target=execute, name=f"run-{run_id[:8]}", daemon=True)
        with self._lock:
            self._threads[run_id] = thread
        thread.start()

    def _in_thread(self, context: LaunchRunContext) -> Callable[[], None]:
        recon_job = recon_job_from_origin(context.job_code_origin)  # type: ignore[arg-type]
        run, instance = context.dagster_run, self._instance

        def execute() -> None:
            profile = cProfile.Profile() if self.profiling else None
            if profile is not None:
                profile.enable()
            try:
                execute_run(recon_job, run, instance)
            except BaseException as exc:   # noqa: BLE001 — kept for the drill's verdict, never swallowed silently
                self.crashes[run.run_id] = exc
            finally:
                if profile is not None:
                    profile.disable()
                    with self._lock:
                        self.profiles.append(profile)
        return execute

    def in_flight(self) -> list[str]:
        """Run ids whose thread is still executing."""
        with self._lock:
            return [run_id for run_id, thread in self._threads.items() if thread.is_alive()]

    def wait(self, timeout_s: float = 600.0) -> list[str]:
        """Wait for every run in flight; the ids of those still running after ``timeout_s``."""
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join(timeout_s)
        return self.in_flight()

    def wait_any(self, timeout_s: float) -> None:
        """Wait until one run in flight ends, or ``timeout_s``."""
        with self._lock:
            threads = [t for t in self._threads.values() if t.is_alive()]
        if threads:
            threads[0].join(timeout_s)

    def terminate(self, run_id: str) -> bool:
        return False      # a thread cannot be stopped from outside; the drill never asks

    @property
    def supports_check_run_worker_health(self) -> bool:
        return False


class ProcessPerRunLauncher(ThreadedInProcessRunLauncher):
    """Launch each run in a process of its own (see the module docstring); a thread of this process waits for it.

    The drill's loop sets :attr:`zygote` (:class:`scripts.drill_child.Zygote`, which forks the run's process),
    :attr:`world` (the spec of the drill's world a step needs, :func:`scripts.drill_child.spec_for`) and
    :attr:`absorb` (what to do with what a step reports back) before the first run is launched.
    """

    zygote: Any = None
    world: Optional[Callable[[], dict]] = None
    absorb: Optional[Callable[[dict], None]] = None

    def launch_run(self, context: LaunchRunContext) -> None:
        run_id = context.dagster_run.run_id
        if self.zygote is None or self.world is None:
            raise RuntimeError("the drill's loop did not give the process launcher its zygote and world")
        spec = {**self.world(), "kind": "run", "run_id": run_id}
        if self.profiling:
            spec["profile"] = str(self.zygote.log.parent / f"profile-{run_id}.prof")

        def execute() -> None:
            out = self.zygote.run(spec)
            if out.get("error"):
                self.crashes[run_id] = RuntimeError(out["error"])
            if self.absorb is not None:
                self.absorb(out)
            if spec.get("profile") and Path(spec["profile"]).exists():
                with self._lock:
                    self.profiles.append(spec["profile"])

        self._start(run_id, execute)
