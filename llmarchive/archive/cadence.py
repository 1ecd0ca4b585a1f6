"""``cadence.yaml``: what is due how often (method §8).

The file holds two kinds of value and this module keeps them apart:

* **schedules** — ``<n>d`` or ``<n>h`` with ``n ≥ 1``.  :func:`parse_cadence`
  turns one into a :class:`~datetime.timedelta` and accepts nothing else
  (no weeks, no spaces, no bare numbers), because a schedule that parses
  loosely is a schedule nobody can check;
* **policy constants** — every other value (``on_new_generation``,
  ``4``, ``any_new_model_id_in_family`` …).  They are published and dated,
  but nothing counts down to them: acting on them is a human step, or a
  fixed number a command reads (``revalidation_daily``,
  ``generation_bridge_protocols``).

method §8 names every key; :data:`SCHEDULE_KEYS` and :data:`POLICY_KEYS` list
them by kind, and :func:`load_cadence` refuses a file that lacks one, adds
one, or writes a schedule in any other shape — naming the key.
"""
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from llmarchive.archive import jobs as job_table
from llmarchive.archive.paths import REPO_ROOT
from llmarchive.archive.yamlfile import read_yaml
from measure.errors import ArchiveError

CADENCE_FILE = REPO_ROOT / "cadence.yaml"

SCHEDULE_KEYS = (
    "subject_fingerprint", "full_sweep", "runtime_fingerprint", "guard_margin_rotation",
    "human_review", "checkpoint_sign", "coverage_publish", "release_publish", "strategy_review",
    "self_revision", "integrity_declaration",
    "source_degraded_after", "deadman_alert", "vacation_after", "dormant_after", "succession_offer",
    "concluded_after",
)
POLICY_KEYS = (
    "open_weights_series", "sealed_scan", "revalidation_daily", "generation_bridge_protocols",
    "bridge_trigger", "active_switch", "bridge_reserve_monthly", "retirement_threshold", "declassify_after",
)



def schedule_keys() -> tuple[str, ...]:
    """:data:`SCHEDULE_KEYS`, and the key of any scheduled job of the job table that method §8 does not list yet.

    A job is named by its cadence key (:mod:`llmarchive.archive.jobs`); a new
    daily check's row names a key the file must then hold as a schedule, so
    the row and the file line are all a new check takes here.
    """
    listed = SCHEDULE_KEYS + POLICY_KEYS
    return SCHEDULE_KEYS + tuple(name for name in job_table.SCHEDULED if name not in listed)


_SHAPE = re.compile(r"^([1-9][0-9]*)([dh])$")


class CadenceError(ArchiveError, ValueError):
    """A cadence value or file that cannot be used; the message names the key or file."""


def parse_cadence(value: Any, key: str = "value") -> timedelta:
    """``"<n>d"`` → n days, ``"<n>h"`` → n hours; anything else is refused."""
    if not isinstance(value, str) or not _SHAPE.match(value):
        raise CadenceError(f"{key}: {value!r} is not a schedule; a schedule is written <n>d or <n>h "
                           f"with a whole n of at least 1 (e.g. 1d, 36h)")
    number, unit = _SHAPE.match(value).groups()
    return timedelta(days=int(number)) if unit == "d" else timedelta(hours=int(number))


def is_schedule(value: Any) -> bool:
    """Is ``value`` shaped like a schedule (``<n>d`` / ``<n>h``)?"""
    return isinstance(value, str) and bool(_SHAPE.match(value))


@dataclass(frozen=True)
class Cadence:
    """The parsed file: schedules as timedeltas, policy constants as written."""

    schedules: Mapping[str, timedelta]
    policy: Mapping[str, Any]
    raw: Mapping[str, Any] = field(default_factory=dict)
    source: Optional[Path] = None

    def every(self, key: str) -> timedelta:
        """The period of a schedule key (a policy key is refused: nothing counts down to it)."""
        if key in self.schedules:
            return self.schedules[key]
        if key in self.policy:
            raise CadenceError(f"{key} is a policy constant ({self.policy[key]!r}), not a schedule")
        raise CadenceError(f"cadence has no key {key!r}")

    def constant(self, key: str) -> Any:
        """A policy constant, as written."""
        if key not in self.policy:
            raise CadenceError(f"{key!r} is not a policy constant of the cadence")
        return self.policy[key]

    def count(self, key: str) -> int:
        """A policy constant that must be a positive whole number (e.g. ``revalidation_daily``)."""
        value = self.constant(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CadenceError(f"{key} must be a positive whole number, got {value!r}")
        return value


def parse_document(data: Any, where: str = "cadence.yaml") -> Cadence:
    """Validate a loaded cadence document (every SPEC key, nothing else, schedules well-shaped)."""
    if not isinstance(data, dict):
        raise CadenceError(f"{where}: must be a mapping of keys to values")
    schedule = schedule_keys()
    known = set(schedule) | set(POLICY_KEYS)
    missing = [k for k in schedule + POLICY_KEYS if k not in data]
    unknown = sorted(str(k) for k in data if k not in known)
    problems = []
    if missing:
        problems.append(f"missing key(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}")
    schedules = {}
    for key in schedule:
        if key in data:
            try:
                schedules[key] = parse_cadence(data[key], key)
            except CadenceError as exc:
                problems.append(str(exc))
    for key in POLICY_KEYS:
        if key in data and is_schedule(data[key]):
            problems.append(f"{key}: is a policy constant in method §8, but {data[key]!r} is written as a schedule")
    if problems:
        raise CadenceError(f"{where}: " + "; ".join(problems))
    policy = {key: data[key] for key in POLICY_KEYS}
    return Cadence(schedules, policy, dict(data))


def load_cadence(path: Optional[Union[str, Path]] = None) -> Cadence:
    """Read and validate ``cadence.yaml`` (the repository's, unless ``path`` is given)."""
    file = Path(path) if path else CADENCE_FILE
    data = read_yaml(file, CadenceError)
    cadence = parse_document(data, str(file))
    return Cadence(cadence.schedules, cadence.policy, cadence.raw, file)
