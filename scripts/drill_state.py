"""What one drill holds while it runs: its world, its home, its Dagster, and what it has seen."""
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
import threading
from typing import Any, Iterator

from llmarchive.archive import ArchivePaths
from scripts.drill_script import Script


_ABSORBING = threading.Lock()


@dataclass
class State:
    script: Script
    paths: ArchivePaths
    protocols: list[str]                      # the sweep's protocols, in the monthly tick's order
    provider: Any                             # scripts.drill_world.Provider
    webhook: Any                              # scripts.drill_world.Webhook (a tests.webhook_receiver.Receiver)
    disk: Any                                 # scripts.drill_world.FullDisk
    instance: Any                             # the drill's DagsterInstance
    context: Any                              # its WorkspaceProcessContext
    daemon: Any                               # scripts.drill_dagster.Daemon
    turned_on: list = field(default_factory=list)
    down: bool = False
    applied: list = field(default_factory=list)         # (instant, event, what happened)
    monthly: list = field(default_factory=list)         # scripts.drill_checks.MonthCheck, one per publication
    month_seconds: dict = field(default_factory=dict)
    checked_publications: set = field(default_factory=set)
    notes: list = field(default_factory=list)
    outside: list = field(default_factory=list)         # (instant, exit status, what the outside check said)
    run_month: dict = field(default_factory=dict)       # run id → the month it was first seen in
    while_running: list = field(default_factory=list)  # events that wait for runs in flight (a launch beside them)
    seconds: dict = field(default_factory=dict)         # where the wall time went, by part of the loop
    runs: str = "thread"                                # "process": every step in a process of its own
    zygote: Any = None                                  # scripts.drill_child.Zygote with --runs process
    forked_cpu: float = 0.0                             # CPU seconds the steps' processes reported
    check_cpu: float = 0.0                              # CPU seconds the drill's own checks took (not the work)
    month_cpu: dict = field(default_factory=dict)       # CPU seconds of the work, by month
    status_cpu: dict = field(default_factory=dict)      # CPU seconds of each month's `llmarchive status`

    @property
    def launcher(self) -> Any:
        return self.instance.run_launcher

    def world_spec(self) -> dict:
        """What a step in a process of its own needs of the drill's world (:mod:`scripts.drill_child`)."""
        from scripts import drill_child
        from scripts.drill_engine import REFERENCE

        return drill_child.spec_for("run", drill_child.clock_offset(), REFERENCE.changes, self.disk.armed)

    def absorb(self, out: dict) -> None:
        """What a step's process did to the world: the back-off it counted, the armed write that failed."""
        with _ABSORBING:
            self.forked_cpu += float(out.get("cpu") or 0.0)
            self.provider.backoff_s += float(out.get("backoff_s") or 0.0)
        if out.get("disk_failed"):
            self.disk.failed.extend(out["disk_failed"])
            self.disk.armed = None

    @contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """Add the wall time of the block to ``seconds[part]`` (nested blocks count in both)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[part] = self.seconds.get(part, 0.0) + time.monotonic() - started
