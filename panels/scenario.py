"""Scenario data: what an author writes for one decision problem.

A family module (``panels/families/<family>.py``) defines ``SCENARIOS``, a
tuple of fifteen :class:`Scenario` values, and its ``FAMILY`` row.  Each
scenario carries

* its **numbers** (``values``) — the one structure shared by all four
  rewording types of the family: options, probabilities and payoffs, set so
  the two options have exactly equal expected value;
* its **positive-control numbers** (``c_values``) — the same keys with
  exactly one value changed so that the option a reader of A would *not*
  pick by default strictly dominates (higher expected value by at least
  :data:`MIN_C_ADVANTAGE`);
* its **wording**, as templates in the :mod:`panels.template` language, with
  enough interchangeable phrasings that two seeds rarely share a phrase.

Each family's rules turn numbers into the derived quantities the wording
may quote and into *lotteries* (per role, a list of ``(numerator,
denominator, payoff)``), which gate 1 (:mod:`measure.invariants`) checks.
The rules and every other per-family fact are declared once, in the family
module's ``FAMILY`` row (:class:`panels.family.Family`), and collected in
order by :mod:`panels.families`: the family names are ``families.names()``
and a family's facts are its row, ``families.get(name)`` (``.roles``,
``.value_keys``, ``.c_dominant_role``, ``.c_changed_key``), read from the
table at each call so a family registered later shows at once;
:func:`derived`, :func:`lotteries` and :func:`check_numbers` look the family
up there too.  Gate 1 keeps its own copy of the three families' rules in
:mod:`measure.invariants` on purpose: ``measure`` is the independent checker
and never imports ``panels``.

Families and their roles
------------------------
``risky_choice_framing`` — roles ``sure`` and ``gamble``.
    values ``total`` (how many are at stake), ``sure`` (saved for certain),
    ``p_pct`` (chance that all ``total`` are saved; otherwise none).
    Equal EV: ``sure · 100 = total · p_pct``.  Derived: ``q_pct = 100 − p_pct``,
    ``sure_lost = total − sure``.  Option templates per role and frame:
    ``options = {"sure": {"gain": …, "loss": …}, "gamble": {"gain": …, "loss": …}}``;
    the loss frame describes the same outcomes as losses (``sure_lost`` of
    ``total`` lost; ``p_pct`` % chance none lost, ``q_pct`` % chance all lost).
    C lowers ``sure``: the gamble dominates (a gain-frame reader's default is
    the sure option).
``sunk_cost_fallacy`` — roles ``stop`` and ``finish``.
    values ``spent`` (money already spent, quoted in the context of every
    version), ``stop_value`` (recovered for certain by stopping), ``win`` and
    ``p_pct`` (finishing pays ``win`` with chance ``p_pct`` %, else nothing).
    Equal EV: ``stop_value · 100 = win · p_pct``.  Derived: ``q_pct``.
    ``options = {"stop": …, "finish": …}``; the ``stop`` template contains the
    marker ``[[SUNK]]`` exactly once, where the ``wording`` type's B inserts
    ``, giving up the €S already spent,`` (S = ``spent``); A renders it empty.
    C raises ``stop_value``: stopping dominates (the sunk-cost default is to
    finish).
``base_rate_neglect`` — roles ``case`` and ``clear``.
    values ``population``, ``base_pct`` (true cases), ``sens_pct`` (share of
    true cases the check flags), ``fpr_pct`` (share of the others it flags),
    ``pay_case`` (won by betting "true case" if it is one), ``pay_clear``
    (won by betting "not a true case" if it is not).  Derived, each required
    to be a whole number: ``true_n``, ``flagged_true``, ``others``,
    ``flagged_false``, ``flagged_n``.  Equal EV:
    ``flagged_true · pay_case = flagged_false · pay_clear``.
    ``options = {"case": …, "clear": …}`` plus two rate paragraphs,
    ``rates_pct`` (quotes ``base_pct``, ``sens_pct``, ``fpr_pct``) and
    ``rates_freq`` (quotes ``population``, ``true_n``, ``flagged_true``,
    ``others``, ``flagged_false`` as natural frequencies), inserted into the
    context at index ``rates_at``.  C raises ``pay_clear``: betting "not a
    true case" dominates (neglecting the base rate favours "true case").

Which role is printed as option ``A`` is set per scenario by ``letters``.
The estimator compares *pooled* answer distributions (method §6), so a panel
whose letters alternated evenly would hide a reversal that happens on every
item; the option C makes dominant is therefore printed as ``B`` on thirteen
items and as ``A`` on two (s04, s11), which keeps a little counterbalancing
while letting the normative and the classic biased readers of
:mod:`panels.readers` show a positive control well above
``theta_positive_pct`` (checked by ``llmarchive panels check``).

C is built for those readers, not only for expected value: on every item
it reverses the family's classic biased reader's choice on A (prospect
theory for risky choice, the hit rate for the posterior in base rate, the
sunk amount as a prior loss in sunk cost) and the normative reader strictly
prefers its dominant option; :data:`MIN_C_ADVANTAGE` is only the floor.
"""
from fractions import Fraction
from typing import Mapping

from panels import families
from panels.family import Family, Scenario, ScenarioError

__all__ = ["MIN_C_ADVANTAGE", "SUNK_MARK", "Scenario", "ScenarioError", "check_numbers", "derived", "expected_value",
           "family_row", "lotteries"]

MIN_C_ADVANTAGE = Fraction(6, 5)  # dominant EV ≥ 1.2 × the other option's EV
SUNK_MARK = "SUNK"


def family_row(name: str) -> Family:
    """The family's row of the table; :class:`ScenarioError` for a name it does not hold."""
    row = families.find(name)
    if row is None:
        raise ScenarioError(f"unknown family {name!r}")
    return row


def derived(family_name: str, values: Mapping[str, int], item: str = "?") -> dict[str, int]:
    """Quantities the wording may quote, computed from the numbers."""
    return family_row(family_name).derive(values, item)


def lotteries(family_name: str, values: Mapping[str, int], item: str = "?") -> dict[str, list[list[int]]]:
    """Per role, the outcomes as ``[numerator, denominator, payoff]`` rows."""
    row = family_row(family_name)
    return row.lotteries(values, row.derive(values, item))


def expected_value(rows: list[list[int]]) -> Fraction:
    """Exact expected value of one lottery."""
    return sum((Fraction(num, den) * payoff for num, den, payoff in rows), Fraction(0))


def check_numbers(family_name: str, scenario: Scenario) -> None:
    """Raise :class:`ScenarioError` unless the numbers follow the family's rules."""
    item = f"{family_name}/{scenario.item_id}"
    row = family_row(family_name)
    keys = row.value_keys
    for label, values in (("values", scenario.values), ("c_values", scenario.c_values)):
        if tuple(sorted(values)) != tuple(sorted(keys)):
            raise ScenarioError(f"{item}: {label} must have exactly the keys {keys}, got {sorted(values)}")
        for key, value in values.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ScenarioError(f"{item}: {label}[{key!r}] must be a positive int, got {value!r}")
        for key in ("p_pct", "base_pct", "sens_pct", "fpr_pct"):
            if key in values and not 0 < values[key] < 100:
                raise ScenarioError(f"{item}: {label}[{key!r}] must be strictly between 0 and 100")
    changed = [k for k in keys if scenario.values[k] != scenario.c_values[k]]
    if changed != [row.c_changed_key]:
        raise ScenarioError(
            f"{item}: C must change exactly {row.c_changed_key!r}; changed keys: {changed}"
        )
    base = lotteries(family_name, scenario.values, item)
    evs = {role: expected_value(rows) for role, rows in base.items()}
    if len(set(evs.values())) != 1:
        raise ScenarioError(f"{item}: options must have equal expected value, got {evs}")
    c = lotteries(family_name, scenario.c_values, item)
    c_evs = {role: expected_value(rows) for role, rows in c.items()}
    dominant = row.c_dominant_role
    other = [r for r in row.roles if r != dominant][0]
    if c_evs[dominant] < MIN_C_ADVANTAGE * c_evs[other]:
        raise ScenarioError(
            f"{item}: in C, {dominant!r} must beat {other!r} by at least "
            f"{MIN_C_ADVANTAGE} × in expected value, got {c_evs}"
        )
    if sorted(scenario.letters) != ["A", "B"] or sorted(scenario.letters.values()) != sorted(row.roles):
        raise ScenarioError(f"{item}: letters must map A and B onto the roles {row.roles}")
    if row.rates_paragraph:
        derived(family_name, scenario.c_values, item)
        if not 0 <= scenario.rates_at <= len(scenario.context):
            raise ScenarioError(f"{item}: rates_at must index into the context paragraphs")
