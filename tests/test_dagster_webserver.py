"""``dagster-webserver -f definitions.py`` starts and serves the whole graph (what ``make serve`` runs)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port, stop

ROOT = Path(__file__).resolve().parent.parent
QUERY = """{
  assetNodes { assetKey { path } }
  repositoriesOrError { ... on RepositoryConnection { nodes {
    jobs { name }
    schedules { name scheduleState { status } }
    sensors { name sensorState { status } }
  } } }
}"""



@pytest.mark.slow
@pytest.mark.parametrize("key", [None, "fake-credential-configured"])
def test_the_webserver_serves_every_asset_and_paid_schedules_start_stopped_even_with_a_key(tmp_path, key):
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(DAGSTER_HOME=str(home), LLMARCHIVE_HOME=str(tmp_path / "archive"), NO_PROXY="127.0.0.1")
    if key:
        env["ANTHROPIC_API_KEY"] = key
    port = free_port()
    webserver = Path(sys.executable).parent / "dagster-webserver"
    process = subprocess.Popen([str(webserver), "-f", "definitions.py", "-h", "127.0.0.1", "-p", str(port)],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        answer = None
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read().decode(errors="replace")[-3000:]
            try:
                answer = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": QUERY}, timeout=10).json()
                if answer.get("data", {}).get("assetNodes"):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        assert answer and answer.get("data"), answer
        assets = {"/".join(node["assetKey"]["path"]) for node in answer["data"]["assetNodes"]}
        assert assets == {"protocols", "preregistration_manifest", "commercial_trials", "commercial_measurements",
                          "open_weights_trials", "open_weights_measurements", "runtime_fingerprint",
                          "guard_rotation", "subject_fingerprint", "revalidation", "coverage", "public_archive",
                          "archive_health", "log_integrity"}
        [repo] = answer["data"]["repositoriesOrError"]["nodes"]
        schedules = {s["name"]: s["scheduleState"]["status"] for s in repo["schedules"]}
        sensors = {s["name"]: s["sensorState"]["status"] for s in repo["sensors"]}
        paid = "STOPPED"   # key or no key: the owner starts paid work by hand
        assert schedules == {"daily_instrument_schedule": "RUNNING", "daily_subject_fingerprint_schedule": paid,
                             "monthly_sweep_schedule": paid, "monthly_coverage_schedule": "RUNNING",
                             "monthly_publication_schedule": "RUNNING", "daily_log_integrity_schedule": "RUNNING"}
        assert sensors == {"model_watch": paid, "lease_on_life": "RUNNING", "preregistration_manifests": "RUNNING",
                           "failed_check_webhook": "RUNNING", "failed_run_webhook": "RUNNING"}
        assert {"commercial_job", "open_weights_job", "daily_instrument_job", "panels_job", "manifest_job",
                "write_manifest_job"} <= {j["name"] for j in repo["jobs"]}
    finally:
        stop(process)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.slow
def test_make_serve_starts_dagster_and_datasette_and_sigterm_stops_both(tmp_path):
    from llmarchive.archive import ArchivePaths
    from llmarchive.protocols import registry
    from publish import publish_all

    archive = tmp_path / "archive"
    paths = ArchivePaths(archive).ensure()
    registry.build_all(paths)          # reading never builds (method §3): what `make demo` did before serving
    publish_all(paths)
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(LLMARCHIVE_HOME=str(archive), DAGSTER_HOME=str(tmp_path / "dagster"), NO_PROXY="127.0.0.1")
    dagster_port, datasette_port = free_port(), free_port()
    process = subprocess.Popen([sys.executable, "-m", "scripts.serve", "--dagster-port", str(dagster_port),
                                "--datasette-port", str(datasette_port)], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    urls = [f"http://127.0.0.1:{dagster_port}/server_info", f"http://127.0.0.1:{datasette_port}/archive.json"]
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not all(_answers(u) for u in urls):
            assert process.poll() is None, process.stdout.read().decode(errors="replace")[-3000:]
            time.sleep(1)
        assert all(_answers(u) for u in urls)
        assert (tmp_path / "dagster" / "dagster.yaml").exists(), "a persistent DAGSTER_HOME under the archive"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        assert not any(_answers(u) for u in urls), "nothing is left listening"
    finally:
        if process.poll() is None:
            process.kill()
