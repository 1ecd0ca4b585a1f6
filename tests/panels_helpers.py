"""Test helper: an archive home with the 24 protocol files, built once per seed per session.

Building is deterministic (a test proves it), so the files built for one
archive home can be copied into the next instead of being rebuilt.
"""
from pathlib import Path
from typing import Optional

from llmarchive.protocols import registry
from llmarchive.protocols.panel_seed import ENV_VAR
from llmarchive.archive import ArchivePaths

_CACHE: dict[Optional[str], dict[str, bytes]] = {}


def built_paths(monkeypatch, seed: Optional[str]) -> ArchivePaths:
    """``$LLMARCHIVE_HOME``'s paths with every protocol file in place (guard seed ``seed``)."""
    if seed is None:
        monkeypatch.delenv(ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(ENV_VAR, seed)
    paths = ArchivePaths.from_env()
    if seed not in _CACHE:
        registry.build_all(paths)
        _CACHE[seed] = {f.name: f.read_bytes() for f in paths.protocols.glob("*.json")}
    else:
        paths.protocols.mkdir(parents=True, exist_ok=True)
        for name, data in _CACHE[seed].items():
            Path(paths.protocols / name).write_bytes(data)
    return paths
