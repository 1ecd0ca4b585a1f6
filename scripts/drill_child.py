"""A drill step in a process of its own: one Dagster run, or one ``llmarchive`` command, on the moved clock.

Production starts a process for every run (Dagster's ``DefaultRunLauncher``
spawns ``dagster api execute_run``) and for every crontab line, so each
starts with every per-process cache cold: a log's chain verification
(``llmarchive/archive/jsonio.py``), the protocols read, the definitions
built.  The drill's process keeps them warm across runs, so here each step
is a fresh interpreter, as production's, started by
:class:`scripts.drill_launcher.ProcessPerRunLauncher` and by the drill's
outside check and monthly ``status`` (:func:`run_command`).

The drill's world lives in the drill's process; what a step needs of it
comes in the *spec* (a JSON file named by the only argument): the moved
clock as an offset from the real one (the drill holds its clock still while
a step runs, and both clocks tick in real time), the scripted reference
engine's change days, the trial log armed to fail for lack of space.  What
the step did to the world goes back in the spec's ``result`` file: the
back-off it counted instead of sleeping, whether the armed write failed.
Everything else (the provider, the webhook, the archive, the Dagster
instance) the step reaches as production does: over HTTP and on disk.

Usage: ``python -m scripts.drill_child SPEC.json``.
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

from llmarchive.archive import REPO_ROOT


def spec_for(kind: str, offset_s: float, reference_changes: list[str], armed: Optional[str],
             **more: Any) -> dict:
    """What a step needs of the drill's world (see the module docstring)."""
    return {"kind": kind, "offset_s": offset_s, "reference_changes": list(reference_changes), "armed": armed,
            **more}


def clock_offset() -> float:
    """The moved clock minus the real one, in seconds (time-machine's escape hatch reads the real clock)."""
    import time_machine

    return time.time() - time_machine.escape_hatch.time.time()


def start(spec: dict, log: Path) -> tuple[subprocess.Popen, Path]:
    """Start a step's process; its output appended to ``log``; returns the process and its result file."""
    folder = Path(tempfile.mkdtemp(prefix="drill-step-", dir=log.parent))
    spec = {**spec, "result": str(folder / "result.json")}
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    with open(log, "ab") as sink:
        process = subprocess.Popen([sys.executable, "-m", "scripts.drill_child", str(folder / "spec.json")],
                                   stdout=sink, stderr=sink, stdin=subprocess.DEVNULL, cwd=REPO_ROOT,
                                   env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                       filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))})
    return process, folder / "result.json"


def finish(process: subprocess.Popen, result: Path) -> dict:
    """Wait for a step's process (its CPU then counts in this process's children's rusage); what it reported."""
    status = process.wait()
    try:
        out = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        out = {"error": f"the step's process exited {status} without a result"}
    for leftover in result.parent.iterdir():
        leftover.unlink()
    result.parent.rmdir()
    out["exit"] = status
    return out


def run_command(spec: dict, log: Path) -> dict:
    """An ``llmarchive`` command (``spec['argv']``) in a process of its own; its result (``status``, ``said``)."""
    return finish(*start(spec, log))


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
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    disk, counted = _world(spec)
    try:
        out = _execute(spec) if spec["kind"] == "run" else _command(spec)
    except BaseException as exc:        # noqa: BLE001 — reported to the drill, which keeps it for its verdicts
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out.update(backoff_s=counted.backoff_s, disk_failed=disk.failed)
    Path(spec["result"]).write_text(json.dumps(out), encoding="utf-8")
    return 0 if "error" not in out else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
