"""Reading the repository's YAML configuration files (``cadence.yaml``, ``subject_models.yaml``).

A YAML file is read far more often than it changes: the lease is checked
every hour by two schedulers, each in a process of its own, and importing
the ``yaml`` package and parsing a file with it cost about ten times the
rest of that check.  So a parsed document is kept as JSON in the user's
cache, named by the sha256 of the file's bytes: a file whose bytes are the
same is read from there without importing ``yaml``; any edit changes the
name, so the file is parsed again.  Only what YAML loading decides is
cached — every caller still validates the document it gets — and only a
document JSON gives back unchanged (plain mappings with string keys, lists,
strings, whole numbers, finite floats, booleans, nulls); a document with a
date or a non-string key is parsed every time.  The cache is an
optimisation: when it cannot be read or written, the file is parsed.
When parsing, the C loader is used where libyaml is present: the same
safe constructors over libyaml's parser (its error messages differ, and the
repository's files load to the same documents; tests/test_cadence.py).
"""
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_ENV = "LLMARCHIVE_YAML_CACHE"


def cache_dir() -> Path:
    """Where parsed documents are kept: ``$LLMARCHIVE_YAML_CACHE``, else the user's cache (XDG)."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "llmarchive" / "yaml"


def _plain(value: Any) -> bool:
    """Does JSON give ``value`` back as the same objects of the same types?"""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _cached(digest: str) -> tuple[bool, Any]:
    """``(True, document)`` when a whole parsed copy of the bytes named ``digest`` is kept, else ``(False, None)``."""
    try:
        kept = json.loads((cache_dir() / f"{digest}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    if not isinstance(kept, dict) or kept.get("source_sha256") != digest or "document" not in kept:
        return False, None
    return True, kept["document"]


def _keep(digest: str, document: Any) -> None:
    """Keep ``document`` as the parse of the bytes named ``digest`` (atomically; nothing when it cannot)."""
    if not _plain(document):
        return
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{digest}.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as fh:
            json.dump({"source_sha256": digest, "document": document}, fh, ensure_ascii=False)
        os.replace(temporary, folder / f"{digest}.json")
    except OSError:
        pass


def parse_yaml(raw: bytes, file: Path, error: type[Exception]) -> Any:
    """``raw`` parsed by YAML's safe loader (its C version when libyaml is present)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    try:
        return yaml.load(raw.decode("utf-8"), Loader=loader)
    except UnicodeDecodeError as exc:
        raise error(f"{file}: not valid YAML ({exc})") from None
    except yaml.YAMLError as exc:
        raise error(f"{file}: not valid YAML ({exc})") from None


def read_yaml(file: Path, error: type[Exception]) -> Any:
    """The parsed document; ``error`` names the file when it is missing or not valid YAML."""
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise error(f"{file}: no such file") from None
    digest = hashlib.sha256(raw).hexdigest()
    found, document = _cached(digest)
    if not found:
        document = parse_yaml(raw, file, error)
        _keep(digest, document)
    return document
