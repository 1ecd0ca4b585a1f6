"""No test depends on the day it runs: the date-sensitive modules pass on a month's last day, its first, a new year.

The normal run of the suite is "today".  Here the modules whose tests read
the clock in process — through the library's ``utc_today()``/``utc_now()``,
an admission or a spend stamped now, a Dagster partition of this month —
run again in a fresh pytest whose session starts at each awkward instant
(``LLMARCHIVE_TEST_CLOCK``, see tests/conftest.py).  A test that mixes a
fixed date with the real clock, or takes a branch by today's month, fails
at one of them.  Left out: modules whose clock is pinned by a
``time_machine`` marker (the session clock cannot reach them: that is their
fix — test_sweep, test_bridge, test_instrument_publication), modules that
need the real model or a browser (slow), and modules whose dated work runs
in subprocesses, which do not travel (they pass their dates as flags).
"""
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import pytest
import time_machine

from tests.conftest import CLOCK_ENV, ROOT

DATE_SENSITIVE = (
    "tests/test_coverage.py",
    "tests/test_budget.py",
    "tests/test_lease.py",
    "tests/test_cadence.py",
    "tests/test_paid_run.py",
    "tests/test_review.py",
    "tests/test_instrument_latch.py",
    "tests/test_instrument.py",
    "tests/test_instrument_rotation.py",
    "tests/test_instrument_subject.py",
    "tests/test_watch.py",
    "tests/test_status.py",
    "tests/test_comparison.py",
    "tests/test_revalidate.py",
    "tests/test_prereg.py",
    "tests/test_open_weights_resume.py",
    "tests/test_dagster_assets.py",
    "tests/test_dagster_sensors.py",
)

PROBE = "tests/test_any_day.py::test_the_clock_is_the_sessions"

AWKWARD = {
    "a-months-last-day": "2026-11-30T23:50:00Z",
    "a-months-first-day": "2026-12-01T00:10:00Z",
    "a-new-year": "2027-01-01T00:10:00Z",
}


def test_the_clock_is_the_sessions():
    """With ``LLMARCHIVE_TEST_CLOCK`` the session's clock started there and ticks; without it, it is real."""
    from llmarchive.archive import utc_now, utc_today

    instant = os.environ.get(CLOCK_ENV)
    if instant is None:
        assert not time_machine.escape_hatch.is_travelling()
        return
    start = datetime.fromisoformat(instant.replace("Z", "+00:00"))
    now = datetime.now(timezone.utc)
    assert time_machine.escape_hatch.is_travelling()
    assert start <= now < start + timedelta(minutes=10), "the probe runs first, minutes after the start"
    assert utc_today() == start.date().isoformat() and utc_now()[:13] == instant[:13]


@pytest.fixture(scope="module")
def runs_at_each_instant(tmp_path_factory) -> dict[str, tuple[int, str, str]]:
    """``instant -> (exit code, stdout, stderr)`` of the date-sensitive modules run at each awkward instant.

    The three sessions run side by side (each its own process, home and
    basetemp): they share nothing, and side by side they take about the
    time of the longest instead of the sum.
    """
    started = {}
    for instant in AWKWARD.values():
        env = {**os.environ, CLOCK_ENV: instant}
        env.pop("PYTEST_ADDOPTS", None)
        folder = tmp_path_factory.mktemp("any-day")
        command = [sys.executable, "-m", "pytest", PROBE, *DATE_SENSITIVE, "-q", "-m", "not slow",
                   "-p", "no:cacheprovider", "--basetemp", str(folder / "basetemp")]
        with open(folder / "out", "w") as out, open(folder / "err", "w") as err:   # files: no pipe fills up
            started[instant] = (folder, subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err))
    done = {}
    deadline = time.monotonic() + 1200
    for instant, (folder, child) in started.items():
        try:
            child.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:      # a hang fails, it never blocks the suite
            child.kill()
            child.wait()
        done[instant] = (child.returncode, (folder / "out").read_text(), (folder / "err").read_text())
    return done


@pytest.mark.slow     # three whole pytest sessions side by side: minutes
@pytest.mark.parametrize("instant", list(AWKWARD.values()), ids=list(AWKWARD))
def test_the_date_sensitive_modules_pass_on_any_day(instant, runs_at_each_instant):
    returncode, stdout, stderr = runs_at_each_instant[instant]
    lines = stdout.strip().splitlines()
    summary = lines[-1] if lines else stderr.strip()[-2000:]
    failures = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    assert returncode == 0, f"at {instant}: {summary}\n" + "\n".join(failures) + "\n" + stdout[-4000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
