"""``make serve``: the Dagster UI (with its daemon) and Datasette side by side, stopped together.

``dagster dev -f definitions.py`` on 127.0.0.1:3000 runs the webserver and
the daemon, so schedules and sensors tick while it is up; ``llmarchive
serve`` runs Datasette read-only over the published database on
127.0.0.1:8001.  Each runs in its own process group; Ctrl-C (or SIGTERM)
interrupts both, waits for them to shut down cleanly, and kills what is
still running after a grace period — nothing is left listening.  If either
exits on its own (Datasette refuses to start before ``make demo`` has
published anything), the other is stopped too and its exit code returned.
"""
import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from llmarchive.schedule import ensure_dagster_home
from llmarchive.archive import ArchivePaths, REPO_ROOT

GRACE_S = 20.0


def commands(dagster_port: int, datasette_port: int) -> list[list[str]]:
    bin_dir = Path(sys.executable).parent
    return [
        [str(bin_dir / "dagster"), "dev", "-f", str(REPO_ROOT / "definitions.py"), "-h", "127.0.0.1",
         "-p", str(dagster_port)],
        [sys.executable, "-m", "llmarchive", "serve", "--port", str(datasette_port)],
    ]


def _stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
    deadline = time.monotonic() + GRACE_S
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the group: dagster dev's children too
        except ProcessLookupError:
            pass


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dagster-port", type=int, default=3000)
    parser.add_argument("--datasette-port", type=int, default=8001)
    args = parser.parse_args(argv)
    paths = ArchivePaths.from_env().ensure()
    os.environ["LLMARCHIVE_HOME"] = str(paths.home)
    ensure_dagster_home(paths)

    def terminate(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    processes = [subprocess.Popen(cmd, cwd=REPO_ROOT, start_new_session=True)
                 for cmd in commands(args.dagster_port, args.datasette_port)]
    print(f"Dagster UI  http://127.0.0.1:{args.dagster_port}\n"
          f"Datasette   http://127.0.0.1:{args.datasette_port}   (Ctrl-C stops both)", flush=True)
    code = 0
    try:
        while all(p.poll() is None for p in processes):
            time.sleep(0.5)
        code = next(p.returncode for p in processes if p.poll() is not None)
    except KeyboardInterrupt:
        pass
    finally:
        _stop(processes)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
