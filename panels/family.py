"""What one scenario family is, as one frozen row: the family table's shape.

A family module (``panels/families/<family>.py``) declares its fifteen
:class:`Scenario` values and, beside them, one :class:`Family` row holding
every fact the rest of :mod:`panels` needs about the family: its roles, its
number keys, which option C makes dominant and by changing which number, the
rules that turn numbers into derived quantities and lotteries, its lane and
its biased reader's citation.  :mod:`panels.families` collects the rows in
their fixed order; everything that used to keep a dict keyed by family name
reads the row instead, so a new family is one new module plus one line in
that registry.

:class:`Scenario` and :class:`ScenarioError` live here rather than in
:mod:`panels.scenario` because the family modules need them and
:mod:`panels.scenario` reads the registry: keeping them here means the
family modules never import a module that imports them back (the
``no-cycles`` import contract).
"""
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from measure.errors import ArchiveError

# One option's outcomes as ``[numerator, denominator, payoff]`` rows, per role.
Lotteries = dict[str, list[list[int]]]


class ScenarioError(ArchiveError, ValueError):
    """A scenario whose numbers or wording break its family's rules."""


@dataclass(frozen=True)
class Scenario:
    """One decision problem of one family, as its author wrote it."""

    item_id: str
    title: str
    values: Mapping[str, int]
    c_values: Mapping[str, int]
    letters: Mapping[str, str]
    context: tuple[str, ...]
    question: str
    options: Mapping[str, object]
    names: Mapping[str, str] = field(default_factory=dict)
    rates_pct: str = ""
    rates_freq: str = ""
    rates_at: int = 0


def whole(numerator: int, denominator: int, what: str, item: str) -> int:
    """``numerator / denominator`` if it is a whole number; a family rule may require that of a count."""
    if (numerator % denominator) != 0:
        raise ScenarioError(f"{item}: {what} = {numerator}/{denominator} is not a whole number")
    return numerator // denominator


@dataclass(frozen=True)
class Family:
    """Every per-family fact, declared once beside the family's scenarios.

    * ``roles`` — the two options' roles, in the family's fixed order;
    * ``value_keys`` — the numbers every scenario's ``values`` and ``c_values`` hold;
    * ``c_dominant_role`` — the option a reader of A would not pick by
      default, which C makes dominate; ``c_changed_key`` — the one number C changes;
    * ``derive(values, item)`` — the quantities the wording may quote
      (raises :class:`ScenarioError` when a rule such as "a whole number" fails);
    * ``lotteries(values, derived)`` — per role, the outcome rows gate 1 checks;
      equal expected value in A, ``c_dominant_role`` ahead in C;
    * ``open_lane`` — whether the family's ``wording`` protocol is open (its
      ``anchoring`` protocol then is the guard twin, SPEC's lane rule);
    * ``rates_paragraph`` — whether scenarios carry the ``rates_pct`` /
      ``rates_freq`` paragraph the ``wording`` type's B switches between;
    * ``required_numbers`` — per option variant (or rates style), the
      numbers every rendering of A must quote (the author's check);
    * ``biased_reader_model`` — the one line naming the family's classic
      biased reader in every protocol header (:mod:`panels.readers`);
    * ``biased_reader(role, numbers, shown)`` — that reader's valuation of one
      option under the version's numbers and frame (``shown``: what the
      version presents, :func:`measure.invariants.version_frame`); the
      reader takes the option it values highest;
    * ``frames`` — when the ``wording`` type's B re-describes both options,
      the option templates' frame names, A's first (risky choice: gain, loss);
    * ``sunk_role`` — when B adds a phrase to one option instead, that
      option's role: its template holds the ``[[SUNK]]`` marker B fills;
    * ``check_frames`` — an extra wording rule the builder runs per scenario, if any;
    * ``wording_rule`` — the name of gate 1b's catalogue rule
      (:mod:`panels.conformance`) that checks the ``wording`` type's B; the
      rules themselves stay in the closed catalogue, a family only picks one.

    A family with neither ``frames`` nor ``sunk_role`` nor a rates paragraph
    prints one plain text per option in every version.
    """

    name: str
    roles: tuple[str, str]
    value_keys: tuple[str, ...]
    c_dominant_role: str
    c_changed_key: str
    derive: Callable[[Mapping[str, int], str], dict[str, int]]
    lotteries: Callable[[Mapping[str, int], Mapping[str, int]], Lotteries]
    scenarios: tuple[Scenario, ...]
    open_lane: bool
    rates_paragraph: bool
    required_numbers: Mapping[str, tuple[str, ...]]
    biased_reader_model: str
    biased_reader: Callable[[str, Mapping[str, int], str], float]
    frames: tuple[str, ...] = ()
    sunk_role: Optional[str] = None
    check_frames: Optional[Callable[[Scenario], None]] = None
    wording_rule: Optional[str] = None
