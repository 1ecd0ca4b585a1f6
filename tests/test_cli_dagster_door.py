"""``llmarchive dagster …`` works in a fresh home, where Dagster's own command stops with its traceback.

Dagster opens its instance before it imports ``definitions.py``, so a missing
``$DAGSTER_HOME`` cannot be made by the definitions: the owner's door makes
it, with telemetry off, and points the definitions at the same archive.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "LLMARCHIVE_HOME")}
    return {**env, "LLMARCHIVE_HOME": str(home), "PYTHONPATH": str(ROOT)}


def test_dagster_through_llmarchive_makes_its_home_where_dagster_alone_fails(tmp_path):
    home = tmp_path / "archive"
    alone = subprocess.run([str(Path(sys.executable).with_name("dagster")), "instance", "info"], cwd=ROOT,
                           env={**_env(home), "DAGSTER_HOME": str(home / "dagster")}, capture_output=True,
                           text=True, timeout=120)
    assert alone.returncode != 0 and "is not a directory" in alone.stderr + alone.stdout   # today's trap
    door = subprocess.run([str(Path(sys.executable).with_name("llmarchive")), "dagster", "instance", "info"], cwd=ROOT,
                          env=_env(home), capture_output=True, text=True, timeout=120)
    assert door.returncode == 0, door.stderr[-2000:]
    assert (home / "dagster" / "dagster.yaml").read_text(encoding="utf-8") == "telemetry:\n  enabled: false\n"
    assert str(home / "dagster") in door.stdout, "Dagster's own output: the instance it opened"


def test_dagster_through_llmarchive_without_a_command_is_one_line(tmp_path):
    done = subprocess.run([str(Path(sys.executable).with_name("llmarchive")), "dagster"], cwd=ROOT, env=_env(tmp_path / "a"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "name the dagster command" in done.stderr
