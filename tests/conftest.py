"""Shared fixtures: every test gets its own archive home under a temp dir."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def archive_home(tmp_path, monkeypatch):
    """A fresh ``$LLMARCHIVE_HOME`` so no test touches the developer's var/."""
    home = tmp_path / "archive"
    monkeypatch.setenv("LLMARCHIVE_HOME", str(home))
    return home


@pytest.fixture
def instance():
    """An ephemeral Dagster instance (in memory, gone after the test)."""
    from dagster import DagsterInstance

    with DagsterInstance.ephemeral() as instance:
        yield instance
