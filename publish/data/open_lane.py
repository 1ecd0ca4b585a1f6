"""``open-lane/<year>.jsonl``: every trial of an open-lane run, copied through unchanged.

The lines are the bytes of the runs' ``trials.jsonl`` logs (each run's hash
chain stays verifiable on its own, per ``run_id``), grouped by the year of
the run's date and ordered by date and run id.  A trial carries
``prompt_sha256`` and never the prompt, so no scenario wording travels here
(method §10); guard and sealed trials never enter (the selection is made in
:mod:`publish.data.sources` on the protocol's current lane).

:func:`trial_fields` describes the fields for Croissant:
the union of the keys the trials carry, each with a type label read off
the values (the schema's labels, plus ``number`` for a non-integer number
and ``datetime`` for a timestamp field such as ``started_at``).
"""
from dataclasses import dataclass, field
from typing import Iterable

from llmarchive.archive import parse_time
from measure.schema import TRIAL_DESCRIPTIONS

# The fields croissant.json describes one by one, each with the schema's description
# (measure.schema.TRIAL_FIELDS); the call's transport detail is described as one kind.
DESCRIBED_FIELDS = ("record_type", "schema_version", "run_id", "protocol_id", "item_id", "n_items", "version",
                    "replicate_index", "trial_index", "prompt_sha256", "outcome", "token", "response_text",
                    "prev_sha256", "record_sha256")
GENERIC_DESCRIPTION = "Transport detail of the call as the runner logged it."


@dataclass
class OpenRun:
    """An open-lane run: its id, year, the trial lines exactly as logged, and the type labels of their keys.

    Defined here, beside the file it becomes, so :mod:`publish.data.sources` (which reads the runs) depends on
    this module and never the other way round.
    """

    run_id: str
    run_date: str
    lines: list[bytes]
    field_labels: dict = field(default_factory=dict)

    @property
    def year(self) -> str:
        return self.run_date[:4]


def verify_command(run_id: str = "RUN_ID", public_dir: str = "public") -> str:
    """The one command an outsider runs to recompute an open-lane run from a copy of ``public/`` alone.

    The site's Data page shows this exact string; ``llmarchive verify --public`` implements it.
    """
    return f"llmarchive verify --public {public_dir} {run_id}"


def file_name(year: str) -> str:
    """The published path of one year's open-lane trials; :mod:`publish.readback.files` reads it back by this name."""
    return f"open-lane/{year}.jsonl"


def files(open_runs: Iterable[OpenRun]) -> dict[str, bytes]:
    """``{"open-lane/<year>.jsonl": bytes}`` for every year with an open-lane run."""
    out: dict[str, list[bytes]] = {}
    for run in open_runs:
        out.setdefault(file_name(run.year), []).extend(run.lines)
    return {name: b"".join(lines) for name, lines in sorted(out.items())}


def _is_timestamp(value) -> bool:
    return isinstance(value, str) and len(value) >= 10 and parse_time(value) is not None


def _date_named(name: str) -> bool:
    """Names pandas reads as dates by default (``read_json``'s ``keep_default_dates``)."""
    lowered = name.lower()
    return (lowered.endswith(("_at", "_time")) or lowered.startswith("timestamp")
            or lowered in ("modified", "date", "datetime"))


def _label(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    if isinstance(value, (dict, list)):
        return "json"
    return "text"


def label_of(key: str, value) -> str:
    """The type label of one value of trial field ``key``."""
    label = _label(value)
    if label == "text" and _date_named(key) and _is_timestamp(value):
        return "datetime"
    return label


def trial_fields(open_runs: Iterable[OpenRun]) -> list[tuple[str, str]]:
    """``[(name, label)]`` for every key any published trial carries, sorted by name.

    The labels were collected while the trials were read and verified
    (:mod:`publish.data.sources`); a key whose values disagree is ``number``
    when they are all numbers, else ``text``.
    """
    seen: dict[str, set[str]] = {}
    for run in open_runs:
        for key, labels in run.field_labels.items():
            seen.setdefault(key, set()).update(labels)
    out = []
    for key in sorted(seen):
        labels = seen[key]
        if len(labels) == 1:
            label = next(iter(labels))
        elif labels and labels <= {"int", "number"}:
            label = "number"
        else:
            label = "text"
        out.append((key, label))
    return out


def describe(name: str) -> str:
    """Croissant's description of trial field ``name``: the schema's, or the transport's one sentence."""
    return TRIAL_DESCRIPTIONS[name] if name in DESCRIBED_FIELDS else GENERIC_DESCRIPTION
