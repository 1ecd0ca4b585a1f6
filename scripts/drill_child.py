"""A drill step in a process of its own: one Dagster run, or one ``llmarchive`` command, on the moved clock.

Production starts a process for every run (Dagster's ``DefaultRunLauncher``
spawns ``dagster api execute_run``) and for every crontab line, so each
starts with every per-process cache cold: a log's chain verification
(``llmarchive/archive/jsonio.py``), the protocols read, the definitions
built.  The drill's own process keeps them warm across runs, so with
``--runs process`` each step is a process of its own: forked by
:class:`Zygote`, a single-threaded server the drill starts once, which has
imported the code and read nothing of the archive but the date of its
first admission (``assets/partitions.py`` reads it at import, and it never
changes); the drill's process has threads: it must never fork itself.  So each step starts cold as
production's does, without paying the interpreter's start and two seconds
of imports again: what a step costs is its own work (the definitions are
built in the step, as production builds them in each run's process).

The drill's world lives in the drill's process; what a step needs of it
comes in the *spec* (a JSON file): the moved clock as an offset from the
real one (the drill holds its clock still while steps run, and both clocks
tick in real time), the scripted reference engine's change days, the trial
log armed to fail for lack of space.  What the step did goes back in the
spec's ``result`` file: the back-off it counted instead of sleeping, whether
the armed write failed, its CPU seconds (its own and its children's: the
zygote reaps it, so they are not the drill's children).  Everything else
(the provider, the webhook, the archive, the Dagster instance) the step
reaches as production does: over HTTP and on disk.

Usage (the drill starts it): ``python -m scripts.drill_child LOG``, then one spec path a line on its input.
"""
import contextlib
import io
import json
import os
import resource
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

from llmarchive.archive import REPO_ROOT

PRELOAD = ("dagster", "dagster._core.execution.api", "dagster._utils.hosted_user_process", "time_machine",
           "assets.definitions_builder", "assets.resources", "llmarchive.cli", "scripts.drill_world",
           "scripts.drill_engine", "scripts.drill_sqlite")
"""What the zygote imports once: the code (of the archive, only its first admission's date is read)."""


def spec_for(kind: str, offset_s: float, reference_changes: list[str], armed: Optional[str],
             **more: Any) -> dict:
    """What a step needs of the drill's world (see the module docstring)."""
    return {"kind": kind, "offset_s": offset_s, "reference_changes": list(reference_changes), "armed": armed,
            **more}


def clock_offset() -> float:
    """The moved clock minus the real one, in seconds (time-machine's escape hatch reads the real clock)."""
    import time_machine

    return time.time() - time_machine.escape_hatch.time.time()


class Zygote:
    """The fork server of the module docstring, seen from the drill: :meth:`run` a step, wait for its result.

    Thread-safe: the launcher's threads run steps side by side.
    """

    def __init__(self, log: Path) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}
        self._changed = threading.Condition(self._lock)
        self._process: Optional[subprocess.Popen] = None

    def __enter__(self) -> "Zygote":
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                            os.environ.get("PYTHONPATH")]))}
        with open(self.log, "ab") as sink:
            self._process = subprocess.Popen([sys.executable, "-m", "scripts.drill_child", str(self.log)],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink,
                                             cwd=REPO_ROOT, env=env, text=True, bufsize=1)
        threading.Thread(target=self._read, name="drill-zygote", daemon=True).start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            path, _, status = line.rstrip("\n").rpartition(" ")
            if not path.endswith("spec.json") or not status.lstrip("-").isdigit():
                continue          # not the zygote's word: something it imported printed
            with self._changed:
                self._done[path] = int(status)
                self._changed.notify_all()
        with self._changed:
            self._done["<closed>"] = -1
            self._changed.notify_all()

    @property
    def pid(self) -> Optional[int]:
        return self._process.pid if self._process is not None else None

    def run(self, spec: dict) -> dict:
        """Fork a step for ``spec``, wait for it, and return what it reported (``error`` when it failed)."""
        folder = Path(tempfile.mkdtemp(prefix="drill-step-", dir=self.log.parent))
        path = str(folder / "spec.json")
        spec = {**spec, "result": str(folder / "result.json")}
        Path(path).write_text(json.dumps(spec), encoding="utf-8")
        with self._changed:
            assert self._process is not None and self._process.stdin is not None
            self._process.stdin.write(path + "\n")
            self._process.stdin.flush()
            self._changed.wait_for(lambda: path in self._done or "<closed>" in self._done)
            status = self._done.pop(path, None)
        try:
            out = json.loads(Path(spec["result"]).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            out = {"error": f"the step's process ended ({status}) without a result"}
        for leftover in folder.iterdir():
            leftover.unlink()
        folder.rmdir()
        return out

    def __exit__(self, *exc: Any) -> None:
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()
            self._process.wait(60)


def _serve(log: str) -> None:
    """The zygote: import :data:`PRELOAD`, then fork a step for each spec path read; say when each ended."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    if threading.active_count() != 1:
        raise RuntimeError(f"the drill's zygote has {threading.active_count()} threads after its imports: "
                           "it must not fork")
    children: dict[int, str] = {}
    pending, open_input = b"", True
    while open_input or children:
        if open_input and select.select([0], [], [], 0.02)[0]:
            data = os.read(0, 65536)
            open_input = bool(data)
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                pid = os.fork()
                if pid == 0:
                    _child(line.decode(), log)
                children[pid] = line.decode()
        elif not open_input:
            time.sleep(0.02)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            os.write(1, f"{children.pop(pid)} {os.waitstatus_to_exitcode(status)}\n".encode())


def _child(spec_path: str, log: str) -> None:
    """In the forked step: output to the steps' log, the step, then out without the zygote's exit handlers."""
    code = 1
    try:
        sink = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        os.close(0)
        code = main([spec_path])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _cpu() -> float:
    """This process's CPU seconds and its ended children's: a forked step's counters start at zero."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _stop_pools() -> None:
    """Stop the server of publication's worker pools (``publish/workers.py``) if the step started one, and wait
    for it: its workers' CPU then counts in this step's children's."""
    from multiprocessing import forkserver

    server = forkserver._forkserver              # type: ignore[attr-defined]
    if getattr(server, "_forkserver_pid", None):
        server._stop()


def _world(spec: dict) -> tuple[Any, Any]:
    """The moved clock, the reference engine and the armed disk of the drill, in this process."""
    import time_machine

    time_machine.travel(time.time() + spec["offset_s"], tick=True).start()
    from scripts.drill_engine import REFERENCE
    from scripts.drill_world import FullDisk, no_real_backoff

    REFERENCE.changes[:] = spec["reference_changes"]
    disk = FullDisk(armed=spec["armed"])
    disk.install()
    counted = SimpleNamespace(backoff_s=0.0)
    no_real_backoff(counted)      # type: ignore[arg-type]
    return disk, counted


def _execute(spec: dict) -> dict:
    from dagster import DagsterInstance
    from dagster._core.execution.api import execute_run
    from dagster._utils.hosted_user_process import recon_job_from_origin

    from scripts import drill_sqlite

    drill_sqlite.install()
    instance = DagsterInstance.get()
    run = instance.get_run_by_id(spec["run_id"])
    if run is None:
        return {"error": f"no run {spec['run_id']} in the drill's instance"}
    profile = None
    if spec.get("profile"):
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    try:
        execute_run(recon_job_from_origin(run.job_code_origin), run, instance)  # type: ignore[arg-type]
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(spec["profile"])
        instance.dispose()
    return {}


def _command(spec: dict) -> dict:
    from llmarchive.cli import main as cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli(spec["argv"])
    return {"status": int(status or 0), "said": (out.getvalue() + err.getvalue()).strip()}


def main(argv: list[str]) -> int:
    """One step, for the spec file ``argv[0]`` (in a process forked by the zygote)."""
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    disk, counted = _world(spec)
    try:
        out = _execute(spec) if spec["kind"] == "run" else _command(spec)
    except BaseException as exc:        # noqa: BLE001 — reported to the drill, which keeps it for its verdicts
        out = {"error": f"{type(exc).__name__}: {exc}"}
    with contextlib.suppress(Exception):
        _stop_pools()
    out.update(backoff_s=counted.backoff_s, disk_failed=disk.failed, cpu=_cpu(), pid=os.getpid())
    Path(spec["result"]).write_text(json.dumps(out), encoding="utf-8")
    return 0 if "error" not in out else 1


if __name__ == "__main__":
    _serve(sys.argv[1])
