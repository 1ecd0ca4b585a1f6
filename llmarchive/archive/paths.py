"""Where an archive keeps its state: everything lives under one home.

The home is ``$LLMARCHIVE_HOME`` when set, else ``var/`` in the current
directory, so two archives (a test's, a developer's, production's) never
mix.  Inside it, ``private/`` holds what is never published (trials of every
lane, guard wording, manifests, budget and spend) and ``public/`` holds only
what ``llmarchive publish`` generates.

Layout (every path below is relative to the home)::

    private/protocols/<protocol_id>.json       built protocol files, text included
    private/protocols/admissions.jsonl         promotions: who, when, lane, twin
    private/protocols/sealed/<protocol_id>.json  hash-only records of sealed protocols
    private/panel_seed                         the secret guard seed (or $LLMARCHIVE_PANEL_SEED)
    private/experiments/<run_id>/run.json      the experiment_run record
    private/experiments/<run_id>/trials.jsonl  hash-chained trial log
    private/experiments/<run_id>/measurement.json
    private/timestamps/preregistration_<date>.json (+ .ots)
    private/budget.json, private/spend.jsonl   budget settings and spend ledger
    private/records/<kind>.jsonl               instrument, coverage, succession and
                                               other bookkeeping records, one log per kind
    private/comparison_points/<id>.json        accepted third-party runs
    public/                                    generated publication only
"""
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from measure.errors import ArchiveError

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The source tree this code runs from (a checkout, or the one an editable install points at).

Why one definition: ``cadence.yaml``, ``subject_models.yaml`` and the
release's files are read from it, the pre-registration records its commit,
and the value check counts a path inside it as a path of this
machine; each of them imports this name rather than counting ``parents``
from its own file.
"""

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class UnsafeId(ArchiveError, ValueError):
    """An identifier that could name a file outside its folder."""


def check_id(value: str, what: str = "identifier") -> str:
    """Refuse identifiers that could escape their folder (``..``, ``/``), or longer than 200 characters."""
    if isinstance(value, str) and len(value) > 200:
        raise UnsafeId(f"{what} {value[:40]!r}… is {len(value)} characters long; at most 200 are accepted")
    if not isinstance(value, str) or not _SAFE_ID.match(value) or ".." in value:
        raise UnsafeId(f"{what} {value!r} may use only letters, digits, '.', '_' and '-'")
    return value


@dataclass(frozen=True)
class ArchivePaths:
    """The folders and files of one archive home."""

    home: Path

    @classmethod
    def from_env(cls, home: Optional[Union[str, Path]] = None) -> "ArchivePaths":
        """The archive at ``home``, else ``$LLMARCHIVE_HOME``, else ``./var``."""
        chosen = home or os.environ.get("LLMARCHIVE_HOME") or "var"
        return cls(Path(chosen).expanduser().resolve())

    @property
    def private(self) -> Path:
        return self.home / "private"

    @property
    def public(self) -> Path:
        return self.home / "public"

    @property
    def protocols(self) -> Path:
        return self.private / "protocols"

    def protocol_file(self, protocol_id: str) -> Path:
        return self.protocols / f"{check_id(protocol_id, 'protocol_id')}.json"

    @property
    def admissions(self) -> Path:
        return self.protocols / "admissions.jsonl"

    @property
    def sealed(self) -> Path:
        return self.protocols / "sealed"

    @property
    def panel_seed_file(self) -> Path:
        return self.private / "panel_seed"

    @property
    def experiments(self) -> Path:
        return self.private / "experiments"

    def run_dir(self, run_id: str) -> Path:
        return self.experiments / check_id(run_id, "run_id")

    @property
    def timestamps(self) -> Path:
        return self.private / "timestamps"

    @property
    def budget_file(self) -> Path:
        return self.private / "budget.json"

    @property
    def spend_ledger(self) -> Path:
        return self.private / "spend.jsonl"

    @property
    def records(self) -> Path:
        return self.private / "records"

    def record_log(self, kind: str) -> Path:
        return self.records / f"{check_id(kind, 'record kind')}.jsonl"

    @property
    def comparison_points(self) -> Path:
        return self.private / "comparison_points"

    def ensure(self) -> "ArchivePaths":
        """Create the private and public folders (idempotent)."""
        for folder in (self.protocols, self.experiments, self.timestamps, self.records, self.public):
            folder.mkdir(parents=True, exist_ok=True)
        return self
