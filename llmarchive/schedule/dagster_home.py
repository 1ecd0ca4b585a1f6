"""Where Dagster keeps its runs, cursors and dynamic partitions: ``$DAGSTER_HOME``.

Without a persistent home, ``dagster dev`` works in a temporary folder and
forgets every run, sensor cursor and generation partition on exit.  The
default is ``$LLMARCHIVE_HOME/dagster`` (so ``var/dagster``), with telemetry
off: this archive runs where the network is not ours to spend.

Dagster's own command opens the instance before it imports
``definitions.py``, so the definitions cannot make the folder in time:
``make demo``, ``make serve``, the systemd units and ``llmarchive dagster …``
(the owner's door to Dagster's CLI, :mod:`llmarchive.cli.orchestrator`) make
it first.  Pure filesystem work, no Dagster import: the CLI may call it.
"""
import os
from pathlib import Path

from llmarchive.archive import ArchivePaths

DAGSTER_YAML = "telemetry:\n  enabled: false\n"


def ensure_dagster_home(paths: ArchivePaths) -> Path:
    """Create ``$DAGSTER_HOME`` (default under the archive) with its ``dagster.yaml``; set the variable."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(paths.home / "dagster")))
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML, encoding="utf-8")
    return home
