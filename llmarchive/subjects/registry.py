"""The provider table's machinery: what one provider row holds, and the table every other place reads.

A *provider* is one way of reaching a model: the Anthropic Messages API, an
OpenAI-compatible server, the embedded reference model.  Each is one
:class:`Provider` row, declared once in :mod:`llmarchive.subjects.providers`
(the rows) and read from here by everything that used to spell the list out:
the ``--subject`` and ``--api`` choices and their help, the key variable a
Dagster resource checks, the stop reasons :func:`llmarchive.subjects.base.classify`
maps, the providers ``subject_models.yaml`` may name, the modules a command
needs installed.  Adding a provider is one subject module plus one row (the
anchor: Inspect AI's ``@modelapi`` registry).

Why the machinery is a module of its own: :mod:`~llmarchive.subjects.base`
reads the stop reasons from the table, every subject module imports ``base``,
and the rows' factories import the subject modules — so the table's
machinery imports nothing of this package, and the rows sit one module up;
no import runs in a circle.

The table is a registry, not a constant: :func:`register` adds a row and
returns the function that takes it out again, so a test can add a toy
provider for itself alone (``tests/test_extending_provider.py``).  Every
reader asks the table when it runs (never a copy taken at import), so a
registered row reaches every place at once.
"""
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional

from measure.errors import ArchiveError

# The outcomes a stop reason may force (llmarchive.subjects.base's table); None: a normal end, read the text.
STOP_OUTCOMES = ("blocked_upstream", "refused", "off_format", "truncated")
SERIES = ("commercial", "open_weights")
# A name is a word of a comparison run id (comparison_<protocol>_<name>_<model>), which is split on "_".
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9.-]*")


class ProviderTableError(ArchiveError, ValueError):
    """A row that cannot join the table (a malformed field, a name or record name already taken)."""


@dataclass(frozen=True)
class SubjectOptions:
    """Everything :func:`llmarchive.subjects.make_subject` was given, handed whole to a row's factory.

    One value rather than a dozen keywords so a new provider's factory has
    one signature to meet; each factory refuses the options that do not
    apply to it, in the words a person who typed them understands.
    """

    max_tokens: int
    model: Optional[str] = None
    base_url: Optional[str] = None
    model_path: Optional[str] = None
    model_sha256: Optional[str] = None
    max_attempts: int = 6
    timeout_s: float = 120.0
    n_threads: int = 1
    n_batch: int = 512
    retry_seed: int = 0
    workers: int = 1
    sleep: Optional[Any] = None
    pin_source: Optional[str] = None


@dataclass(frozen=True)
class Provider:
    """One provider: every fact about it the rest of the archive needs, in one place.

    ``name`` is what a person types and what records keep: the ``--subject``
    and ``--api`` choice, ``subject_models.yaml``'s ``provider``, the word in
    a comparison run id, a run's ``subject.kind``.  ``records_as`` is the
    ``provider`` a :class:`~llmarchive.subjects.base.CallResult` carries
    (the name unless the subject says otherwise: the reference model's calls
    are llama.cpp's), and ``stop_reasons`` maps that provider's own stop
    reasons to the outcome they force.  ``make`` builds the subject from a
    :class:`SubjectOptions`; it imports the subject module when called, so
    reading the table costs no ``httpx`` or ``llama_cpp`` import.

    ``api``: reached over HTTP (``--base-url``, a models list, a key): the
    kinds the model watch, the sweep and ``subject_models.yaml`` accept.
    ``comparison``: offered by ``comparison run --api``
    (``comparison_default`` the one it picks when none is given).
    ``series``: the series a run of it joins unless told otherwise.
    ``needs``: the modules a command running it must find installed.
    ``says``: the rest of the ``llmarchive run`` help sentence after the
    name (``{key_env}`` is filled in).  ``title`` names it in a sentence.
    """

    name: str
    title: str
    make: Callable[[SubjectOptions], Any]
    stop_reasons: Mapping[str, Optional[str]]
    records_as: str = ""
    key_env: Optional[str] = None
    key_required: bool = False
    api: bool = True
    comparison: bool = False
    comparison_default: bool = False
    series: str = "open_weights"
    needs: tuple[str, ...] = ()
    says: str = ""

    def __post_init__(self) -> None:
        if not NAME_PATTERN.fullmatch(self.name):
            raise ProviderTableError(f"provider name {self.name!r} must be lower-case letters, digits, '.' or '-' "
                                     "(no '_': a comparison run id is split on it)")
        if not self.records_as:
            object.__setattr__(self, "records_as", self.name)
        bad = sorted(str(v) for v in self.stop_reasons.values() if v is not None and v not in STOP_OUTCOMES)
        if bad:
            raise ProviderTableError(f"provider {self.name!r}: stop reasons map to unknown outcome(s) {bad}")
        if self.series not in SERIES:
            raise ProviderTableError(f"provider {self.name!r}: series must be one of {SERIES}, got {self.series!r}")
        if self.comparison_default and not self.comparison:
            raise ProviderTableError(f"provider {self.name!r}: the comparison default must be offered to comparison")
        if self.key_required and not self.key_env:
            raise ProviderTableError(f"provider {self.name!r}: a required key needs its variable (key_env)")

    def help_phrase(self) -> str:
        """``<name> <says>``: this provider's part of ``llmarchive run``'s description."""
        return f"{self.name} {self.says.format(key_env=self.key_env)}".strip()


_TABLE: dict[str, Provider] = {}


def register(provider: Provider) -> Callable[[], None]:
    """Add ``provider`` to the table (after the rows already there); returns the function that removes it.

    Refused: a name or a record name already taken (two rows would answer
    for one provider), a second comparison default.
    """
    if provider.name in _TABLE:
        raise ProviderTableError(f"provider {provider.name!r} is already in the table")
    if any(p.records_as == provider.records_as for p in _TABLE.values()):
        raise ProviderTableError(f"calls recorded as {provider.records_as!r} already belong to another provider")
    if provider.comparison_default and any(p.comparison_default for p in _TABLE.values()):
        raise ProviderTableError("the table already has a comparison default")
    _TABLE[provider.name] = provider

    def unregister() -> None:
        if _TABLE.get(provider.name) is provider:
            del _TABLE[provider.name]
    return unregister


def providers() -> tuple[Provider, ...]:
    """Every row, in the order they were registered (the order choices and messages list them)."""
    return tuple(_TABLE.values())


def find(name: str) -> Optional[Provider]:
    """The row named ``name``, or None."""
    return _TABLE.get(name)


def by_record(records_as: Optional[str]) -> Optional[Provider]:
    """The row whose calls are recorded as ``records_as`` (a CallResult's ``provider``), or None."""
    return next((p for p in _TABLE.values() if p.records_as == records_as), None)


def names() -> tuple[str, ...]:
    """Every provider name: ``llmarchive run --subject``'s choices."""
    return tuple(_TABLE)


def api_names() -> tuple[str, ...]:
    """The providers reached over HTTP: ``--subject`` of the sweep, bridge and watch; ``subject_models.yaml``."""
    return tuple(p.name for p in _TABLE.values() if p.api)


def comparison_names() -> tuple[str, ...]:
    """What ``comparison run --api`` offers, its default first."""
    offered = [p for p in _TABLE.values() if p.comparison]
    return tuple(p.name for p in sorted(offered, key=lambda p: not p.comparison_default))


def comparison_default() -> Optional[str]:
    """The API ``comparison run`` uses when none is given."""
    return next((p.name for p in _TABLE.values() if p.comparison_default), None)


def commercial_keys() -> tuple[str, ...]:
    """The key variables of the commercial series' providers: what paid work needs where it runs."""
    return tuple(p.key_env for p in _TABLE.values() if p.series == "commercial" and p.key_env)


class StopReasons(Mapping[str, Mapping[str, Optional[str]]]):
    """The table's stop reasons by record name, read live (``base.STOP_REASONS``): a row added later is seen."""

    def __getitem__(self, records_as: str) -> Mapping[str, Optional[str]]:
        found = by_record(records_as)
        if found is None:
            raise KeyError(records_as)
        return found.stop_reasons

    def __iter__(self) -> Iterator[str]:
        return iter([p.records_as for p in _TABLE.values()])

    def __len__(self) -> int:
        return len(_TABLE)
