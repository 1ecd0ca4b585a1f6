"""What a run is made of, before any call: the protocol's checks, its schedule, the settings, the errors.

:mod:`llmarchive.run.runner` runs a protocol; this module holds what the runner and
its callers share without running anything — :func:`validate_protocol`,
:func:`protocol_header`, the deterministic :func:`schedule` (see the
runner's docstring, "Order"), :class:`RunSettings`, :class:`RunResult` and the
ways a run stops (:class:`RunError`, :class:`RunHalted`,
:class:`RunInterrupted`).
"""
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union

from measure.errors import ArchiveError
from measure.measurement import option_roles
from measure.schema import PROTOCOL_HEADER_FIELDS, VERSIONS


class RunError(ArchiveError, ValueError):
    """A protocol or run folder the runner cannot use; the message says which and why."""


class RunHalted(ArchiveError, RuntimeError):
    """The subject failed in a way no retry fixes; the trials recorded so far are kept."""


class RunInterrupted(RunHalted):
    """The run stopped with slots open for a passing reason (no answer, the pool's cap, a failed write).

    ``interruption`` is what ``run.json`` records: ``cause`` (``provider_outage``,
    ``budget_halted`` or ``write_failed``), ``condition`` (the coverage condition
    it maps from, or None), ``at``, ``detail`` and ``slot``.  Running the same
    run again resumes it.
    """

    def __init__(self, message: str, interruption: dict) -> None:
        super().__init__(message)
        self.interruption = interruption


# cause → the coverage condition that names it (llmarchive.schedule.coverage.CONDITIONS)
INTERRUPTION_CONDITIONS = {"provider_outage": "provider_unreachable", "budget_halted": "budget_refused",
                           "write_failed": "storage_write_failed"}


# --------------------------------------------------------------------------
# the protocol and the schedule
# --------------------------------------------------------------------------

def validate_protocol(protocol: Mapping) -> None:
    """Refuse a protocol the runner cannot run, naming the field."""
    pid = protocol.get("protocol_id", "<no protocol_id>")
    where = f"protocol {pid}"

    def need(cond: bool, message: str) -> None:
        if not cond:
            raise RunError(f"{where}: {message}")

    need(isinstance(protocol.get("protocol_id"), str), "'protocol_id' must be a string")
    for key in ("n", "n_per_scenario", "n_items", "grammar_version"):
        value = protocol.get(key)
        need(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
             f"'{key}' must be a positive integer")
    options = protocol.get("options")
    need(isinstance(options, list) and len(options) >= 2 and all(isinstance(o, str) for o in options),
         "'options' must be a list of at least two strings")
    generation = protocol.get("generation")
    need(isinstance(generation, dict), "'generation' must be an object")
    max_tokens = generation.get("max_tokens")
    need(isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens >= 1,
         "'generation.max_tokens' must be a positive integer")
    panel = protocol.get("panel")
    need(isinstance(panel, list) and panel, "'panel' must be a non-empty list (a text-free header cannot be run)")
    need(len(panel) == protocol["n_items"], f"'panel' has {len(panel)} items but 'n_items' is {protocol['n_items']}")
    need(protocol["n"] == protocol["n_items"] * protocol["n_per_scenario"],
         f"'n' ({protocol['n']}) must equal n_items × n_per_scenario")
    seen = set()
    for index, item in enumerate(panel):
        at = f"panel[{index}]"
        need(isinstance(item, dict) and isinstance(item.get("item_id"), str), f"{at} needs an 'item_id' string")
        need(item["item_id"] not in seen, f"{at}: item_id {item['item_id']!r} appears twice")
        seen.add(item["item_id"])
        versions = item.get("versions")
        need(isinstance(versions, dict), f"{at} ({item['item_id']}) needs a 'versions' object")
        for version in VERSIONS:
            text = versions.get(version)
            need(isinstance(text, str) and text.strip() != "",
                 f"{at} ({item['item_id']}): version {version} must be a non-empty prompt")


def protocol_header(protocol: Mapping) -> dict:
    """The text-free header (``measure.schema.PROTOCOL_HEADER_FIELDS``)."""
    header = {k: protocol.get(k) for k in PROTOCOL_HEADER_FIELDS}
    if header.get("item_ids") is None and isinstance(protocol.get("panel"), list):
        header["item_ids"] = [item.get("item_id") for item in protocol["panel"]]
    # Which role each option letter plays per scenario (text-free; gap_role_ab_pct reads it).
    header["option_roles"] = option_roles(protocol)
    return header


@dataclass(frozen=True)
class PlannedTrial:
    """One slot of the schedule."""

    trial_index: int
    item_id: str
    version: str
    replicate_index: int

    @property
    def identity(self) -> tuple[str, str, int]:
        return (self.item_id, self.version, self.replicate_index)

    @property
    def key(self) -> str:
        return f"{self.item_id}/{self.version}/{self.replicate_index}"


def schedule(protocol: Mapping) -> list[PlannedTrial]:
    """Every trial of a run, in the order they are sent.

    Blocks of four calls, one block per (replicate, item) — replicate by
    replicate, items in panel order.  Block ``b`` sends the item's versions
    in the order ``VERSIONS[(b + j) mod 4]`` for ``j = 0..3``: every version
    takes every position as often as the others (±1), each version is
    spread over the whole run, and no two consecutive calls share a version.
    """
    items = [item["item_id"] for item in protocol["panel"]]
    out: list[PlannedTrial] = []
    block = 0
    for r in range(protocol["n_per_scenario"]):
        for item in items:
            for j in range(len(VERSIONS)):
                out.append(PlannedTrial(len(out), item, VERSIONS[(block + j) % len(VERSIONS)], r))
            block += 1
    return out


def trial_key(trial: Mapping) -> str:
    """The ledger/call key of a recorded trial (``item/version/replicate``)."""
    return f"{trial.get('item_id')}/{trial.get('version')}/{trial.get('replicate_index')}"


def default_model_family(model_id: str) -> str:
    """A family name from a model id: version numbers and date stamps removed.

    ``claude-sonnet-5-5-20270101`` → ``claude-sonnet``.  A curve never crosses
    families (method §4.1); pass ``model_family`` explicitly when this guess
    is not the family you track.
    """
    parts = [p for p in re.split(r"[-_]", model_id.lower()) if p]
    kept = [p for p in parts if not re.fullmatch(r"v?\d+(\.\d+)*|\d{8}|latest", p)]
    return "-".join(kept) or model_id


# --------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------

@dataclass
class RunSettings:
    """What a caller decides about a run (everything else comes from protocol and subject)."""

    run_id: str
    run_date: Optional[str] = None          # YYYY-MM-DD; default: stored on resume, else today (UTC)
    series: Optional[str] = None            # commercial | open_weights; default: the subject's
    model_family: Optional[str] = None
    concurrency: int = 1
    replicate_index: int = 0
    exploratory: Union[bool, str] = False
    instrument_suspect: Union[bool, str] = False
    allow_generation_override: bool = False  # subject's max_tokens may differ from the protocol's (→ exploratory)
    extra: Mapping[str, Any] = field(default_factory=dict)   # more fields for run.json (e.g. preregistration)


@dataclass
class RunResult:
    run_dir: Path
    run: dict
    trials: list[dict]
    measurement: Optional[dict]
    called: int
    already_recorded: int

    @property
    def complete(self) -> bool:
        return self.measurement is not None


Progress = Callable[[int, int, dict], None]
