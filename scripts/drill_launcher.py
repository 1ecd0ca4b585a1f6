"""The drill's run launcher: each run executes in this process, in a thread of its own.

Dagster's ``DefaultRunLauncher`` starts every run as a subprocess, and the
``SyncInMemoryRunLauncher`` of its tests executes a run inside ``launch_run``,
so nothing overlaps.  The drill needs both what a subprocess gives — runs
that overlap (a queue releasing the month's partitions, a person's launch
beside them) — and what only this process has: the moved clock
(time-machine patches this interpreter, not a child).  So a launched run is
executed by :func:`dagster._core.execution.api.execute_run`, exactly as the
in-memory launcher does it, but in a thread; :meth:`wait` lets the drill
wait for the runs in flight before it moves the clock on.  Configured in the
drill's ``dagster.yaml`` (``run_launcher: module: scripts.drill_launcher``).
"""
import cProfile
import threading
from collections.abc import Mapping
from typing import Any, Optional

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
        self.profiles: list[cProfile.Profile] = []
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

        thread = threading.Thread(target=execute, name=f"run-{run.run_id[:8]}", daemon=True)
        with self._lock:
            self._threads[run.run_id] = thread
        thread.start()

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
