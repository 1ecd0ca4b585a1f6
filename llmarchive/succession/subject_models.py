"""``subject_models.yaml``: the tracked family, its active model, and who may declare a successor.

The file states the decisions made at the start (method §4.3, §5, §13.4).  What
happened afterwards lives in the record logs: the active model is the
``model_id`` of the latest ``subject_model`` record of the family (written by
the model watch on a declared switch), or the file's ``active_model`` before
any such record exists.

A successor is *declared* by exactly one of two things (method §4.3):

* a machine-readable field on the active model's entry in the provider's
  models list, named by ``successor_declaration.models_endpoint_field``;
* a dated archived snapshot of the provider's deprecation page naming the
  successor: a JSON file in ``private/<deprecation_snapshots>/`` with
  ``captured_on``, ``archive_url``, ``page_sha256``, ``model_id``,
  ``successor_model_id`` and ``quote`` — the quote must contain both ids,
  so the file records the page's own words rather than our reading of it.

A model id that merely matches ``pattern`` declares nothing.
"""
import fnmatch
import os
import re
from dataclasses import dataclass
from datetime import date as Date
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from measure.errors import ArchiveError
from llmarchive.archive import (ArchivePaths, REPO_ROOT, RecordFileError, either, latest_subject_model, read_json,
                                read_yaml)
from llmarchive.subjects import registry

SUBJECT_MODELS_FILE = REPO_ROOT / "subject_models.yaml"
REQUIRED = ("model_family", "provider", "pattern", "active_model", "tier", "effort", "auto_bridge",
            "protocol_series", "successor_declaration")
SNAPSHOT_FIELDS = ("captured_on", "archive_url", "page_sha256", "model_id", "successor_model_id", "quote")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class SubjectModelsError(ArchiveError, ValueError):
    """A subject_models.yaml or snapshot file that cannot be used; the message names file and field."""


@dataclass(frozen=True)
class SubjectModels:
    model_family: str
    provider: str
    pattern: str
    active_model: str
    tier: str
    effort: str
    auto_bridge: str
    protocol_series: str
    successor_field: Optional[str]
    snapshot_dir: Optional[str]
    source: Optional[Path] = None

    def in_family(self, model_id: str) -> bool:
        """Does ``model_id`` match the family's pattern (a bridge trigger, never a declaration)?"""
        return fnmatch.fnmatchcase(model_id, self.pattern)


def parse_subject_models(data: Any, where: str = "subject_models.yaml") -> SubjectModels:
    if not isinstance(data, dict):
        raise SubjectModelsError(f"{where}: must be a mapping")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise SubjectModelsError(f"{where}: missing {', '.join(missing)}")
    for key in REQUIRED[:-1]:
        if not isinstance(data[key], str) or not data[key].strip():
            raise SubjectModelsError(f"{where}: {key} must be a non-empty string")
    if data["provider"] not in registry.api_names():     # the provider table's API rows, read when checked
        raise SubjectModelsError(f"{where}: provider must be {either(registry.api_names())}, "
                                 f"got {data['provider']!r}")
    declaration = data["successor_declaration"]
    if not isinstance(declaration, dict):
        raise SubjectModelsError(f"{where}: successor_declaration must be a mapping")
    unknown = sorted(set(declaration) - {"models_endpoint_field", "deprecation_snapshots"})
    if unknown:
        raise SubjectModelsError(f"{where}: successor_declaration has unknown source(s) {', '.join(unknown)}; "
                                 "only models_endpoint_field and deprecation_snapshots can declare a successor")
    snapshot_dir = declaration.get("deprecation_snapshots")
    if snapshot_dir is not None and (Path(str(snapshot_dir)).is_absolute() or ".." in Path(str(snapshot_dir)).parts):
        raise SubjectModelsError(f"{where}: deprecation_snapshots must be a folder inside private/, "
                                 f"got {snapshot_dir!r}")
    if not fnmatch.fnmatchcase(data["active_model"], data["pattern"]):
        raise SubjectModelsError(f"{where}: active_model {data['active_model']!r} does not match the family's "
                                 f"pattern {data['pattern']!r}")
    return SubjectModels(data["model_family"], data["provider"], data["pattern"], data["active_model"],
                         data["tier"], data["effort"], data["auto_bridge"], data["protocol_series"],
                         declaration.get("models_endpoint_field"), snapshot_dir)


SUBJECT_MODELS_ENV = "LLMARCHIVE_SUBJECT_MODELS"
"""A ``subject_models.yaml`` other than the repository's, for both doors (the CLI and the Dagster definitions)."""
SUBJECT_BASE_URL_ENV = "LLMARCHIVE_SUBJECT_BASE_URL"
"""Another endpoint for the tracked model's provider (a dry run's fake provider), for both doors."""


def subject_models_file(environ: Optional[Mapping[str, str]] = None) -> Path:
    """The subject models file both doors read: ``$LLMARCHIVE_SUBJECT_MODELS``, else the repository's."""
    named = (os.environ if environ is None else environ).get(SUBJECT_MODELS_ENV)
    return Path(named) if named else SUBJECT_MODELS_FILE


def subject_base_url(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The tracked provider's endpoint both doors use: ``$LLMARCHIVE_SUBJECT_BASE_URL``, else its public API."""
    return (os.environ if environ is None else environ).get(SUBJECT_BASE_URL_ENV) or None


def load_subject_models(path: Optional[Union[str, Path]] = None) -> SubjectModels:
    """Read and check ``subject_models.yaml`` (``path``, else :func:`subject_models_file`)."""
    file = Path(path) if path else subject_models_file()
    data = read_yaml(file, SubjectModelsError)
    config = parse_subject_models(data, str(file))
    return SubjectModels(**{**config.__dict__, "source": file})


def active_model(paths: ArchivePaths, config: SubjectModels) -> str:
    """The family's active model: the latest ``subject_model`` record, else the file's."""
    latest = latest_subject_model(paths, config.model_family)
    return config.active_model if latest is None else latest["model_id"]


@dataclass(frozen=True)
class Snapshot:
    file: Path
    captured_on: str
    archive_url: str
    page_sha256: str
    model_id: str
    successor_model_id: str
    quote: str

    def declared_by(self) -> str:
        return (f"archived deprecation page {self.archive_url} (captured {self.captured_on}, "
                f"sha256 {self.page_sha256[:12]}…; {self.file.name})")


def _check_snapshot(data: Any, file: Path) -> Snapshot:
    where = str(file)
    if not isinstance(data, dict):
        raise SubjectModelsError(f"{where}: a snapshot must be a JSON object")
    missing = [k for k in SNAPSHOT_FIELDS if not isinstance(data.get(k), str) or not data[k].strip()]
    if missing:
        raise SubjectModelsError(f"{where}: missing or empty {', '.join(missing)}")
    try:
        Date.fromisoformat(data["captured_on"])
    except ValueError:
        raise SubjectModelsError(f"{where}: captured_on must be YYYY-MM-DD, got {data['captured_on']!r}") from None
    if not data["archive_url"].startswith("https://"):
        raise SubjectModelsError(f"{where}: archive_url must be an https URL of the archived page")
    if not _HEX64.match(data["page_sha256"]):
        raise SubjectModelsError(f"{where}: page_sha256 must be 64 lowercase hexadecimal characters")
    for key in ("model_id", "successor_model_id"):
        if data[key] not in data["quote"]:
            raise SubjectModelsError(f"{where}: the quote does not name {key} {data[key]!r}; a snapshot declares "
                                     "a successor only in the page's own words")
    return Snapshot(file, data["captured_on"], data["archive_url"], data["page_sha256"], data["model_id"],
                    data["successor_model_id"], data["quote"])


def snapshots(paths: ArchivePaths, config: SubjectModels) -> tuple[list[Snapshot], list[str]]:
    """Valid snapshot files, and a problem message for each file that is not one."""
    if not config.snapshot_dir:
        return [], []
    folder = paths.private / config.snapshot_dir
    if not folder.is_dir():
        return [], []
    found, problems = [], []
    for file in sorted(folder.glob("*.json")):
        try:
            found.append(_check_snapshot(read_json(file), file))
        except (RecordFileError, SubjectModelsError) as exc:
            problems.append(str(exc))
    return found, problems


def declared_successor(entries: dict[str, dict], active: str, config: SubjectModels, found: list[Snapshot],
                       day: str) -> Optional[tuple[str, str]]:
    """``(successor_id, declared_by)`` when the provider declared one for ``active``, else None."""
    field = config.successor_field
    entry = entries.get(active)
    if field and entry is not None:
        value = entry.get(field)
        if isinstance(value, str) and value.strip() and value != active:
            return value, f"models endpoint field {field!r} on {active}"
    for snap in found:
        if snap.model_id == active and snap.captured_on <= day and snap.successor_model_id != active:
            return snap.successor_model_id, snap.declared_by()
    return None
