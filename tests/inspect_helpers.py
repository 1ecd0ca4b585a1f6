"""Running a published open panel's Inspect AI task the way an outsider does, for the Inspect tests.

* :func:`publish_panels` — the ``panels/`` folder exactly as publication
  writes it (:func:`publish.data.panels.files`: each panel file and its task file);
* :func:`inspect_eval` — ``inspect eval <protocol_id>.py --model
  openai-api/<service>/<model>`` as a user types it: Inspect's own command, in
  the folder of the downloaded files (Inspect takes the task file by a
  relative path), with ``<SERVICE>_BASE_URL`` pointing at a server on
  127.0.0.1 and a placeholder ``<SERVICE>_API_KEY`` (Inspect's openai-api
  provider wants one; a local server ignores it); its wall time is returned;
* :func:`logs_by_model` — each eval log of a log folder by the model string
  Inspect ran it with;
* :func:`reader_run` — the three known-answer readers run once per test
  session with the published task against the simulated readers' server
  (one ``inspect eval`` for all three models: starting Inspect is most of
  the cost), shared by tests/test_inspect_task.py and
  tests/test_inspect_import.py; the logs are read-only, and a test that
  submits copies the archive home first.
"""
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pytest

from llmarchive.archive import ArchivePaths
from llmarchive.protocols import registry
from panels import readers

INSPECT = Path(sys.executable).with_name("inspect")
SERVICE = "readers"
OPEN = "risky_choice_framing__wording__v0"


def publish_panels(paths: ArchivePaths, public: Path) -> Path:
    """Write ``public/panels/`` as publication does for the admitted archive at ``paths``; returns the folder."""
    from publish.data.panels import files

    for name, data in files(paths, registry.list_protocols(paths)).items():
        (public / name).parent.mkdir(parents=True, exist_ok=True)
        (public / name).write_bytes(data)
    return public / "panels"


def inspect_eval(folder: Path, protocol_id: str, models: Iterable[str], log_dir: Path, base_url: str,
                 service: str = SERVICE, extra: Iterable[str] = (), timeout: float = 600
                 ) -> tuple[subprocess.CompletedProcess, float]:
    """``inspect eval <protocol_id>.py`` in ``folder`` for each model; (the finished process, wall seconds)."""
    env = {**os.environ, f"{service.upper()}_BASE_URL": base_url, f"{service.upper()}_API_KEY": "unused",
           "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", "XDG_DATA_HOME": str(log_dir.parent / "xdg-data")}
    for key in ("OPENAI_API_KEY", "INSPECT_EVAL_MODEL", "INSPECT_LOG_DIR"):
        env.pop(key, None)
    command = [str(INSPECT), "eval", f"{protocol_id}.py",
               "--model", ",".join(f"openai-api/{service}/{m}" for m in models),
               "--log-dir", str(log_dir), "--display", "none", *extra]
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


def logs_by_model(log_dir: Path) -> dict[str, Path]:
    """``{model name as given to --model (after the provider and service): log file}`` for a log folder."""
    from inspect_ai.log import read_eval_log

    out = {}
    for file in sorted(log_dir.glob("*.eval")):
        model = read_eval_log(str(file), header_only=True).eval.model
        out[model.split("/", 2)[-1]] = file
    return out


@dataclass(frozen=True)
class ReaderRun:
    """The three readers' Inspect run: the archive it was published from, the panels folder, a log per reader."""

    home: Path
    panels: Path
    logs: dict
    seconds: float
    calls: int
    stdout: str


_SHARED: dict[str, ReaderRun] = {}


def reader_run(tmp_path_factory) -> ReaderRun:
    """Run (once per session) the published task for the three known-answer readers on the reader server."""
    from llmarchive.comparison import ReaderServer
    from tests.instrument_helpers import admitted_archive

    if "run" not in _SHARED:
        root = tmp_path_factory.mktemp("inspect-readers")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("LLMARCHIVE_HOME", str(root / "archive"))
            paths = admitted_archive(mp)
            folder = publish_panels(paths, root / "public")
        models = {readers.simulated_model_id(name): name for name in readers.KNOWN_ANSWER_READERS}
        with ReaderServer([folder / f"{OPEN}.json"]) as server:
            done, seconds = inspect_eval(folder, OPEN, list(models), root / "logs", server.base_url)
            calls = sum(server.book._counts.values())
        assert done.returncode == 0, done.stdout + done.stderr
        logs = {models[model]: file for model, file in logs_by_model(root / "logs").items()}
        _SHARED["run"] = ReaderRun(root / "archive", folder, logs, seconds, calls, done.stdout)
    return _SHARED["run"]
