"""The dead-man check outside Dagster (deploy/): it works with no Dagster daemon at all, as it is installed.

The crontab line is read from ``deploy/crontab`` and run the way cron runs
it — ``/bin/sh -c`` with cron's bare environment, in the user's home — with
the real ``llmarchive`` console script of ``.venv/bin``, the env file made
from ``deploy/llmarchive.env.example``, and a real HTTP webhook receiver on
127.0.0.1.  Nothing here starts a Dagster daemon, and the Dagster home the
env file names is a fresh empty folder, so no daemon can be serving it: the
alert reaches the webhook from the check alone.

The command runs in a subprocess on the machine's real clock (time-machine,
and a session started with ``LLMARCHIVE_TEST_CLOCK``, move only this
process), so the archive's heartbeats are dated from that clock as the
subprocess reads it (``date -u``): the story is the same on any day.
"""
import configparser
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

from llmarchive.archive import record_logs as records, write_json
from tests.instrument_helpers import webhook_server
from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
BIN = Path(sys.executable).parent            # the venv's bin: the console scripts pip installed
INSTALLED_AT = "/opt/llmarchive"             # where the deploy files expect the checkout
ENV_FILE = "/etc/llmarchive/llmarchive.env"  # and the env file
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
LIBFAKETIME = next(iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))), None)


def crontab_job() -> tuple[dict[str, str], list[str], str]:
    """``deploy/crontab``'s environment lines, its one job's five time fields and its command."""
    env, jobs = {}, []
    for line in (DEPLOY / "crontab").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if ASSIGNMENT.match(line):
            name, value = line.split("=", 1)
            env[name] = value
        else:
            jobs.append(line.split(None, 5))
    assert len(jobs) == 1, f"deploy/crontab should hold one job, found {len(jobs)}"
    return env, jobs[0][:5], jobs[0][5]


def as_installed(text: str, env_file: Path) -> str:
    """A deploy file as it reads once installed here: this checkout for /opt/llmarchive, a test env file."""
    return text.replace(ENV_FILE, str(env_file)).replace(f"{INSTALLED_AT}/.venv/bin/", f"{BIN}/") \
        .replace(INSTALLED_AT, str(REPO))


def env_file(tmp_path: Path, **values: str) -> Path:
    """``deploy/llmarchive.env.example`` with ``values`` filled in, where the units and the crontab read it."""
    lines = []
    for line in (DEPLOY / "llmarchive.env.example").read_text(encoding="utf-8").splitlines():
        name = line.split("=", 1)[0]
        lines.append(f"{name}='{values[name]}'" if ASSIGNMENT.match(line) and name in values else line)
    path = tmp_path / "llmarchive.env"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def real_now() -> datetime:
    """The clock the subprocess will read (this process's may be moved by time-machine)."""
    out = subprocess.run(["date", "-u", "+%Y-%m-%dT%H:%M:%S"], capture_output=True, text=True, check=True).stdout
    return datetime.fromisoformat(out.strip()).replace(tzinfo=timezone.utc)


def iso(when: datetime) -> str:
    return when.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def beat(paths, at: datetime) -> None:
    """A completed daily cycle at ``at``: its heartbeat is the runtime fingerprint's record."""
    records.append(paths, "runtime_fingerprint", {
        "date": iso(at)[:10], "status": "pass", "digest": "d" * 64, "expected_digest": "d" * 64,
        "model_sha256": "m" * 64, "template_sha256": "t" * 64, "llama_cpp_version": "0.3.36",
        "runner_arch": "x86_64-linux", "n_threads": 1, "n_batch": 512, "seed": 0}, recorded_at=iso(at))


def run_on(paths, run_date: str) -> None:
    write_json(paths.run_dir("r1") / "run.json", {"run_id": "r1", "run_date": run_date, "protocol_id": "p",
                                                  "series": "commercial"})
    write_json(paths.run_dir("r1") / "measurement.json", {"run_id": "r1"})


class Cron:
    """``deploy/crontab``'s job, run as cron runs it against one archive home and webhook."""

    def __init__(self, tmp_path: Path, home: Path, webhook: str):
        self.user_home = tmp_path / "user"
        self.user_home.mkdir(exist_ok=True)
        self.env_file = env_file(tmp_path, LLMARCHIVE_HOME=str(home), DAGSTER_HOME=str(tmp_path / "dagster"),
                                 LLMARCHIVE_WEBHOOK_URL=webhook)
        self.assignments, self.when, self.command = crontab_job()

    def run(self, later: Optional[timedelta] = None) -> subprocess.CompletedProcess:
        """The job as cron runs it now — or, with ``later``, as it runs that much later (under libfaketime: the
        machine's clock moved for the job's processes only, its monotonic clock left alone)."""
        command = as_installed(self.command, self.env_file)
        env = {"HOME": str(self.user_home), "LOGNAME": "llmarchive", "PATH": "/usr/bin:/bin", "SHELL": "/bin/sh",
               **self.assignments}      # what cron sets, and then the crontab's own lines
        if later is not None:
            assert LIBFAKETIME is not None, "Debian's faketime is installed by `make test`"
            env.update(LD_PRELOAD=str(LIBFAKETIME), FAKETIME=f"+{int(later.total_seconds())}s",
                       FAKETIME_DONT_FAKE_MONOTONIC="1", FAKETIME_NO_CACHE="1")
        return subprocess.run([env["SHELL"], "-c", command], env=env, cwd=self.user_home, capture_output=True,
                              text=True, timeout=300)


def dead_archive(paths) -> datetime:
    """An archive whose last daily cycle completed 40 h ago (dead-man after 36 h); a run ten days ago."""
    now = real_now()
    beat(paths, now - timedelta(hours=40))
    run_on(paths, (now - timedelta(days=10)).date().isoformat())
    return now


def one_line(result: subprocess.CompletedProcess) -> str:
    output = (result.stdout + result.stderr).splitlines()
    assert "Traceback" not in result.stderr
    assert len(output) == 1, f"expected one line, got {output}"
    return output[0]


def test_the_crontab_line_alerts_once_with_no_daemon_and_posts_the_recovery(paths, tmp_path):
    dead_archive(paths)
    with webhook_server() as (url, received):
        cron = Cron(tmp_path, paths.home, url)
        first = cron.run()
        assert first.returncode == 1, first.stderr
        line = one_line(first)
        assert "alert (deadman) posted to the webhook: sent (HTTP 204)" in line
        assert [(r["event"], r["state"]) for r in received] == [("alert", "deadman")]
        assert re.search(r"DEAD-MAN ALERT: no daily cycle completed for 40 h \(since .*; alert after 36 h\)",
                         received[0]["text"])
        assert "\n" not in received[0]["text"]

        second = cron.run()                   # an hour later, still dead: no second page, still failing
        assert second.returncode == 1, second.stderr
        assert (second.stdout, second.stderr) == ("", "")
        assert len(received) == 1

        beat(paths, real_now())               # the daily cycle completed again
        third = cron.run()
        assert third.returncode == 0, third.stderr
        assert "recovered (alive) posted to the webhook: sent (HTTP 204)" in one_line(third)
        assert [(r["event"], r["state"]) for r in received] == [("alert", "deadman"), ("recovered", "alive")]

        fourth = cron.run()                   # alive and already said so: silent, green
        assert (fourth.returncode, fourth.stdout, fourth.stderr) == (0, "", "")
        assert len(received) == 2
    assert [r["state"] for r in records.read(paths, "lease")] == ["deadman"]


def test_an_unreachable_webhook_is_one_line_exit_1_and_the_alert_is_tried_again(paths, tmp_path):
    dead_archive(paths)
    nobody = f"http://127.0.0.1:{free_port()}/hook"      # nothing listens there
    cron = Cron(tmp_path, paths.home, nobody)
    result = cron.run()
    assert result.returncode == 1
    line = one_line(result)
    assert "the alert (deadman) could not be delivered to the webhook (ConnectError)" in line
    assert "DEAD-MAN ALERT" in line and "tried again at the next check" in line
    with webhook_server() as (url, received):
        cron = Cron(tmp_path, paths.home, url)
        assert cron.run(later=timedelta(hours=1)).returncode == 1      # the next hourly check
        assert [(r["event"], r["state"]) for r in received] == [("alert", "deadman")]


def test_the_timer_and_the_crontab_run_the_same_command_on_a_valid_schedule(tmp_path):
    _, when, command = crontab_job()
    assert when[0].isdigit() and when[1:] == ["*", "*", "*", "*"], f"not hourly: {when}"
    assert command.endswith(f"{INSTALLED_AT}/.venv/bin/llmarchive lease --quiet")   # the webhook from the env file
    assert f". {ENV_FILE}" in command
    units = {path.name: unit(path) for path in DEPLOY.glob("llmarchive-*.*")}
    assert set(units) == {"llmarchive-dagster-daemon.service", "llmarchive-dagster-webserver.service",
                          "llmarchive-lease.service", "llmarchive-lease.timer"}
    timer = units["llmarchive-lease.timer"]
    assert timer["Timer"]["OnCalendar"] == "hourly" and timer["Timer"]["Unit"] == "llmarchive-lease.service"
    lease = units["llmarchive-lease.service"]
    assert command.endswith(lease["Service"]["ExecStart"] + " --quiet")
    # Not tied to the daemon it watches: no ordering or dependency on it.
    assert not [k for k, v in lease["Unit"].items() if "dagster" in v]
    daemon, web = units["llmarchive-dagster-daemon.service"], units["llmarchive-dagster-webserver.service"]
    assert daemon["Service"]["ExecStart"].split()[1:] == ["run", "-f", "definitions.py"]
    assert web["Service"]["ExecStart"].split()[1:] == ["-f", "definitions.py", "-h", "127.0.0.1", "-p", "3000"]
    for name, parsed in units.items():
        if name.endswith(".service"):
            service = parsed["Service"]
            assert service["EnvironmentFile"] == ENV_FILE and service["WorkingDirectory"] == INSTALLED_AT
            program = Path(as_installed(service["ExecStart"].split()[0], tmp_path / "env"))
            assert program.parent == BIN and os.access(program, os.X_OK), f"{name}: {program} is not installed"


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True, comment_prefixes=("#", ";"))
    parser.optionxform = str              # systemd keys are case-sensitive
    parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
    return parser
