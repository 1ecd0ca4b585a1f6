"""The blocking checks publication runs first find a broken log among many (the two-process path too).

And publication cannot hang: a many-log archive is published again and
again from a process with live threads and a signal handler that only
records SIGTERM (as a Dagster step has), the build's worker pools started
and shut down forty times, under a watchdog.  Forked workers hung there
(one defunct, the other waiting on the task queue's lock, the parent
joining for ever); the pools of :mod:`publish.workers` start clean.
"""
import json

import pytest

from llmarchive.archive import ArchivePaths, ChainedLog
from publish.pipeline import checks


@pytest.mark.parametrize("runs", [3, 70], ids=["few-logs", "many-logs-in-two-processes"])
def test_a_single_edited_trial_log_is_named_among_many(tmp_path, runs):
    paths = ArchivePaths(tmp_path / "home").ensure()
    for i in range(runs):
        log = ChainedLog(paths.run_dir(f"run-{i:03d}") / "trials.jsonl")
        for j in range(3):
            log.append({"record_type": "trial", "run_id": f"run-{i:03d}", "trial_index": j, "token": "A"})
    assert checks.chain_problems(paths) == []
    broken = paths.run_dir(f"run-{runs - 2:03d}") / "trials.jsonl"
    lines = broken.read_text().splitlines(keepends=True)
    record = json.loads(lines[1])
    record["token"] = "B"
    lines[1] = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
    broken.write_text("".join(lines))
    problems = checks.chain_problems(paths)
    assert len(problems) == 1 and problems[0].startswith(str(broken))
    assert "trial_log_chains" in checks.blocking_problems(paths)


# -- publication in a process that has threads and a step's signal handler -----------------------

PUBLISHES = 10      # each: a build (three pools of two workers: checks, open runs, boundary scan) and a check: 40 pools
WATCHDOG_S = 240                    # a hang fails the test (the child's process group is killed), never the suite


def many_log_archive(home):
    """The publication template with 70 measured runs of an open protocol: every pool of a build is used."""
    from tests import publish_helpers as ph

    paths = ph.template_archive(home)
    record = ph.protocol(paths, "risky_choice_framing__wording__v0")
    for i in range(70):
        ph.write_run(paths, record, f"run-{i:03d}", "2026-11-02")
    return paths


def publish_among_threads(home: str, publishes: int) -> None:
    """Publish ``publishes`` times from a process as publication really finds it (run in a child process).

    Live threads — a threading HTTP server serving, and a writer thread that
    keeps taking its lock to write rows to SQLite (as Datasette's write
    thread does) — and a SIGTERM/SIGINT handler that only records the
    signal, as Dagster's executor installs for a step (and a server's
    graceful shutdown does).  A worker forked from here inherits both.
    """
    import http.server
    import signal
    import sqlite3
    import threading
    from pathlib import Path

    from publish import publish_all

    paths = ArchivePaths(Path(home))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    lock, stop = threading.Lock(), threading.Event()

    def write_rows() -> None:
        db = sqlite3.connect(Path(home) / "writer.db")
        db.execute("create table if not exists t (n integer)")
        n = 0
        while not stop.is_set():
            with lock:
                db.execute("insert into t values (?)", (n,))
                db.commit()
            n += 1

    writer = threading.Thread(target=write_rows, daemon=True)
    writer.start()
    received: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, frame: received.append(number))
    for k in range(publishes):
        publish_all(paths, build_time=f"2026-11-03T00:00:{k:02d}Z")
        assert checks.chain_problems(paths) == []
        print(f"published {k + 1}", flush=True)
    stop.set()
    writer.join()
    server.shutdown()


def test_publishing_a_many_log_archive_from_a_process_with_threads_never_hangs(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    home = tmp_path / "home"
    many_log_archive(home)
    code = (f"from tests.test_publish_checks import publish_among_threads; "
            f"publish_among_threads({str(home)!r}, {PUBLISHES})")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = child.communicate(timeout=WATCHDOG_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)          # the child and every worker it forked
        out, _ = child.communicate()
        pytest.fail(f"publication hung after {out.count('published')} of {PUBLISHES} builds "
                    f"(killed after {WATCHDOG_S} s):\n{out[-3000:]}")
    assert child.returncode == 0, out[-3000:]
    assert out.count("published") == PUBLISHES
    assert (home / "public" / "archive.db").exists()
