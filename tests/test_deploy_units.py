"""deploy/'s systemd units as systemd reads them, installed on a staged root, with no systemd running.

The units name programs under /opt/llmarchive/.venv that do not exist on a
test machine, so they are installed into a root of their own under
``tmp_path``, as an owner installs them on a server: the units in
``etc/systemd/system/``, the env file made from the example at
``etc/llmarchive/llmarchive.env``, ``deploy/llmarchive.sysusers`` as
``etc/sysusers.d/llmarchive.conf`` applied there by ``systemd-sysusers
--root``, an executable stand-in at every program path the units name, and
the distribution's own units (the targets ours are ordered after or wanted
by).  ``systemd-analyze verify --root`` then loads them as the service
manager would.  It exits 0 on some mistakes it only warns about (an unknown
key, a state folder it ignores), so a line of its output that names one of
ours fails the test too; ``security --offline`` says which hardening it
applies, ``calendar`` when the timer fires.

The tools are Debian's ``systemd`` package (systemd-analyze,
systemd-sysusers), which ``make test`` installs when missing; nothing here
starts a service.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
UNITS = ("llmarchive-dagster-daemon.service", "llmarchive-dagster-webserver.service", "llmarchive-lease.service",
         "llmarchive-lease.timer")
SERVICES = [name for name in UNITS if name.endswith(".service")]
ENV_FILE = "etc/llmarchive/llmarchive.env"
SYSUSERS = "etc/sysusers.d/llmarchive.conf"
USER = "llmarchive"
STATE = "/var/lib/llmarchive"
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
EXEC_KEYS = ("ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost",
             "ExecCondition")


def unit_settings(path: Path) -> list[tuple[str, str, str]]:
    """Every ``Key=value`` line of a unit file as (section, key, value), repeated keys kept, in order."""
    settings, section = [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        assert not line.endswith("\\"), f"{path.name}:{number}: a continued line (read it as systemd does)"
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        assert sep and section, f"{path.name}:{number}: not a setting: {line}"
        settings.append((section, key.strip(), value.strip()))
    return settings


def service_values(name: str, key: str) -> list[str]:
    return [value for section, k, value in unit_settings(DEPLOY / name) if section == "Service" and k == key]


def command_lines() -> dict[str, str]:
    """Every command the deploy files run, by where it is: the units' Exec*= lines and the crontab's job."""
    commands = {f"{name} {key}=": value for name in UNITS
                for section, key, value in unit_settings(DEPLOY / name) if key in EXEC_KEYS}
    for number, line in enumerate((DEPLOY / "crontab").read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#") and not ASSIGNMENT.match(line):
            commands[f"crontab line {number}"] = line.split(None, 5)[5]
    return commands


def env_example() -> dict[str, str]:
    values = {}
    for line in (DEPLOY / "llmarchive.env.example").read_text(encoding="utf-8").splitlines():
        match = ASSIGNMENT.match(line)
        if match:
            values[match[1]] = match[2]
    return values


def programs() -> set[str]:
    """The absolute program path of every Exec*= line (its prefixes - @ : + ! stripped)."""
    found = set()
    for name in UNITS:
        for section, key, value in unit_settings(DEPLOY / name):
            if key in EXEC_KEYS:
                found.add(value.lstrip("-@:+!").split()[0])
    return found


def staged_root(tmp_path: Path) -> Path:
    """A root holding deploy/ installed as on a server, the user made by its sysusers file."""
    root = tmp_path / "root"
    distribution = Path("/usr/lib/systemd/system")
    shutil.copytree(distribution, root / distribution.relative_to("/"), symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    for name in UNITS:
        shutil.copy(DEPLOY / name, root / "etc/systemd/system" / name)
    (root / ENV_FILE).parent.mkdir(parents=True)
    shutil.copy(DEPLOY / "llmarchive.env.example", root / ENV_FILE)
    (root / SYSUSERS).parent.mkdir(parents=True)
    shutil.copy(DEPLOY / "llmarchive.sysusers", root / SYSUSERS)
    for program in programs():
        assert program.startswith("/"), f"a unit runs {program}: systemd needs an absolute path"
        stand_in = root / program.lstrip("/")
        stand_in.parent.mkdir(parents=True, exist_ok=True)
        stand_in.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        stand_in.chmod(0o755)
    made = subprocess.run(["systemd-sysusers", f"--root={root}"], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stdout + made.stderr
    return root


def analyze(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["systemd-analyze", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SYSTEMD_LOG_LEVEL": "info", "SYSTEMD_COLORS": "0"})


def test_systemd_verifies_the_units_installed_on_a_staged_root(tmp_path):
    root = staged_root(tmp_path)
    installed = [str(root / "etc/systemd/system" / name) for name in UNITS]
    result = analyze("verify", f"--root={root}", "--man=no", "--generators=no", *installed)
    said = (result.stdout + result.stderr).splitlines()
    ours = [line for line in said if "llmarchive" in line]
    assert result.returncode == 0 and ours == [], "\n".join(said)
    timer = {key: value for section, key, value in unit_settings(DEPLOY / "llmarchive-lease.timer")
             if section == "Timer"}
    assert timer["Unit"] == "llmarchive-lease.service"    # verify does not check that the unit a timer starts exists
    calendar = analyze("calendar", timer["OnCalendar"])
    assert calendar.returncode == 0 and "*-*-* *:00:00" in calendar.stdout, calendar.stdout + calendar.stderr


def test_the_sysusers_file_makes_the_system_user_whose_home_is_the_state_folder(tmp_path):
    root = staged_root(tmp_path)
    passwd = {line.split(":")[0]: line.split(":") for line in (root / "etc/passwd").read_text().splitlines()}
    groups = {line.split(":")[0]: line.split(":") for line in (root / "etc/group").read_text().splitlines()}
    name, _, uid, gid, _, home, shell = passwd[USER]
    assert 0 < int(uid) < 1000, f"not a system user: uid {uid}"
    assert groups[USER][2] == gid, "the user's group is not the group llmarchive"
    assert home == STATE and shell == "/usr/sbin/nologin"
    for service in SERVICES:
        assert service_values(service, "User") == service_values(service, "Group") == [USER], service
    # The useradd line given where systemd-sysusers is missing makes the same user.
    for text in [(DEPLOY / "llmarchive.sysusers").read_text(encoding="utf-8"),
                 (DEPLOY / "llmarchive-dagster-daemon.service").read_text(encoding="utf-8")]:
        assert (f"useradd --system --user-group --home-dir {STATE} --shell /usr/sbin/nologin {USER}") in text


def test_every_service_keeps_its_state_in_the_one_folder_systemd_makes_for_it():
    for service in SERVICES:
        assert service_values(service, "StateDirectory") == [USER], f"{service}: no StateDirectory={USER}"
        assert service_values(service, "StateDirectoryMode") == ["0750"], service
    env = env_example()
    assert env["LLMARCHIVE_HOME"] == STATE == f"/var/lib/{USER}"
    assert Path(env["DAGSTER_HOME"]).parent == Path(STATE)


def test_no_command_line_carries_the_webhook_or_any_setting_of_the_env_file():
    """A command line is in the process list, which every local user reads: settings come by the environment."""
    names = sorted(env_example())
    assert "LLMARCHIVE_WEBHOOK_URL" in names and "ANTHROPIC_API_KEY" in names
    commands = command_lines()
    assert len([where for where in commands if where.startswith("crontab")]) == 1
    assert "llmarchive-lease.service ExecStart=" in commands
    for where, command in commands.items():
        assert "--webhook" not in command, f"{where}: {command}"
        for name in names:
            assert f"${name}" not in command and f"${{{name}}}" not in command, f"{where} expands ${name}: {command}"


def test_systemd_reads_the_hardening_of_every_service(tmp_path):
    root = staged_root(tmp_path)
    for service in SERVICES:
        result = analyze("security", "--offline=true", f"--root={root}", "--json=short", "--no-pager", service)
        assert result.stdout.strip(), result.stderr
        checks = {check["json_field"]: check for check in json.loads(result.stdout)}
        for field in ("UserOrDynamicUser", "NoNewPrivileges", "ProtectHome"):
            assert checks[field]["set"], f"{service}: {checks[field]['description']}"
        assert "full access" not in checks["ProtectSystem"]["description"], f"{service}: /usr and /etc writable"
    assert service_values("llmarchive-lease.service", "PrivateTmp") == ["yes"]
    # The two Dagster units share /tmp: the daemon's code server socket is reached there by the webserver.
    for service in ("llmarchive-dagster-daemon.service", "llmarchive-dagster-webserver.service"):
        assert service_values(service, "PrivateTmp") == [], service
    assert not any(service_values(service, "DynamicUser") for service in SERVICES)

