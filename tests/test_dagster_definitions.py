"""The Dagster definitions as a Dagster user checks them: they validate, and paid work is never on by default."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STATUSES = """
import json
from assets.definitions_builder import build_definitions
defs = build_definitions()
print(json.dumps({
    "schedules": {s.name: s.default_status.value for s in defs.schedules},
    "sensors": {s.name: s.default_status.value for s in defs.sensors},
    "descriptions": {s.name: s.description for s in list(defs.schedules) + list(defs.sensors)},
}))
"""


def _env(tmp_path: Path, key: str = None) -> dict:
    home = tmp_path / "dagster"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(DAGSTER_HOME=str(home), LLMARCHIVE_HOME=str(tmp_path / "archive"))
    if key:
        env["ANTHROPIC_API_KEY"] = key
    return env


def test_dagster_definitions_validate_passes_on_the_project_entry_point(tmp_path):
    dagster = Path(sys.executable).parent / "dagster"
    done = subprocess.run([str(dagster), "definitions", "validate", "-f", "definitions.py"], cwd=ROOT,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "Validation successful" in output and "Invalid partition mapping" not in output


def test_paid_schedules_and_the_model_watch_are_created_stopped_even_with_a_key_and_say_how_to_start(tmp_path):
    done = subprocess.run([sys.executable, "-c", STATUSES], cwd=ROOT, env=_env(tmp_path, "fake-credential-set"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    paid = ("daily_subject_fingerprint_schedule", "monthly_sweep_schedule")
    for name in paid:
        assert got["schedules"][name] == "STOPPED"
    assert got["sensors"]["model_watch"] == "STOPPED"
    assert got["schedules"]["daily_instrument_schedule"] == "RUNNING"
    assert got["sensors"]["lease_on_life"] == "RUNNING"
    for name in paid + ("model_watch",):
        text = got["descriptions"][name]
        assert "STOPPED" in text and "Automation" in text and "toggle" in text, text


def test_the_paid_asset_says_what_a_partition_costs_and_that_it_is_manual():
    from assets.commercial import commercial_measurements, commercial_trials

    [text] = commercial_trials.descriptions_by_key.values()
    assert text.startswith("PAID.")
    assert "120 calls for a v0 protocol" in text and "480 calls for a v1 protocol" in text
    assert "calls × rates_eur_per_call.scenario" in text and "Manual" in text
    [free] = commercial_measurements.descriptions_by_key.values()
    assert "Free" in free
