"""Render one scenario's wording for one seed into its parts.

Each part (a context paragraph, the question, an option text, a rate
paragraph) is drawn from its own stream keyed by ``(seed, protocol key,
item id, part name)``.  Two consequences the builder relies on:

* rendering the same part twice with different *numbers* (A and C) or with
  a marker filled differently (the ``sunk_cost_fallacy`` phrase) makes the
  same word choices, so the versions differ only where they must;
* changing one part's template never changes another part's words.
"""
from dataclasses import dataclass
from typing import Mapping, Optional

from panels import families
from panels.scenario import SUNK_MARK, Scenario, derived, family_row
from panels.template import REAL_NAMES, make_name, render, render_first, replace_marks, stream_for

SUNK_PHRASE = ", giving up the €{spent} already spent,"


@dataclass(frozen=True)
class Parts:
    """Rendered wording of one scenario under one seed and one set of numbers.

    ``context`` holds the paragraphs in order, with the base-rate paragraph
    (if any) already inserted; ``rates_index`` says where it sits (``-1`` when
    the family has none).  ``options`` maps each option *letter* to its text
    without the ``Option X:`` prefix, for each variant the family needs
    (``gain``/``loss`` framing, ``plain``/``sunk`` phrase, or ``plain``).
    """

    context: tuple[str, ...]
    rates_index: int
    question: str
    options: Mapping[str, Mapping[str, str]]


def scenario_values(family: str, scenario: Scenario, numbers: Mapping[str, int], names: Mapping[str, str]) -> dict:
    """Numbers, derived numbers and generated names available to templates."""
    values: dict = dict(numbers)
    values.update(derived(family, numbers, scenario.item_id))
    values.update(names)
    return values


def generated_names(scenario: Scenario, seed_text: str, protocol_key: str) -> dict[str, str]:
    """Fictional names for the scenario's placeholders, stable per seed."""
    stream = stream_for(seed_text, protocol_key, scenario.item_id, "names")
    names: dict[str, str] = {}
    for placeholder in sorted(scenario.names):
        for _ in range(100):
            candidate = make_name(stream, scenario.names[placeholder])
            if candidate not in names.values() and candidate.casefold() not in REAL_NAMES:
                break
        names[placeholder] = candidate
    return names


def render_parts(
    family: str,
    scenario: Scenario,
    seed_text: str,
    protocol_key: str,
    numbers: Mapping[str, int],
    rates_style: str = "pct",
    avoid: Optional[Mapping[str, Mapping[tuple, int]]] = None,
    record: Optional[dict] = None,
    catalogue_rates: bool = False,
) -> Parts:
    """Render every part of ``scenario`` with the given numbers.

    ``rates_style`` (base-rate family only) picks the percentage paragraph
    (``pct``) or the natural-frequency paragraph (``freq``).  ``record`` and
    ``avoid`` work per part as in :func:`panels.template.render`: pass the
    record of the public twin's rendering as ``avoid`` to draw different
    phrasings wherever the templates allow.

    ``catalogue_rates`` (the base-rate ``wording`` type) writes the rates
    paragraph in its fixed catalogue form (:func:`catalogue_rates`) instead
    of drawing its words: B may then differ from A only by the change from
    percentages to natural frequencies, word for word, and gate 1b can check
    that by comparing tokens.
    """
    row = family_row(family)
    names = generated_names(scenario, seed_text, protocol_key)
    values = scenario_values(family, scenario, numbers, names)
    where = f"{family}/{scenario.item_id}"

    def part(name: str, template: str, variant: str = "") -> str:
        # Variants of one part (gain/loss, with/without the sunk phrase)
        # share a stream, so parallel templates make parallel choices.
        label = f"{name}:{variant}" if variant else name
        part_record: Optional[dict] = {} if record is not None else None
        text = render(
            template,
            stream_for(seed_text, protocol_key, scenario.item_id, name),
            values,
            f"{where}:{label}",
            avoid=None if avoid is None else avoid.get(label, {}),
            record=part_record,
        )
        if record is not None:
            record[label] = part_record
        return text

    context = [part(f"context{i}", t) for i, t in enumerate(scenario.context)]
    rates_index = -1
    if row.rates_paragraph:
        # Both styles draw from the same stream name, so switching style is
        # the only thing that changes the paragraph.
        template = scenario.rates_pct if rates_style == "pct" else scenario.rates_freq
        if catalogue_rates:
            part_record: dict = {}
            text = render_first(template, values, f"{where}:rates:{rates_style}", record=part_record)
            if record is not None:
                record[f"rates:{rates_style}"] = part_record
        else:
            text = part("rates", template, rates_style)
        context.insert(scenario.rates_at, text)
        rates_index = scenario.rates_at
    question = part("question", scenario.question)

    options: dict[str, dict[str, str]] = {}
    for letter, role in sorted(scenario.letters.items()):
        spec = scenario.options[role]
        if row.frames:
            options[letter] = {frame: part(f"option_{role}", spec[frame], frame) for frame in row.frames}
        elif role == row.sunk_role:
            sunk = SUNK_PHRASE.format(spent=f"{numbers['spent']:,}")
            options[letter] = {
                "plain": part(f"option_{role}", replace_marks(spec, {SUNK_MARK: ""}), "plain"),
                "sunk": part(f"option_{role}", replace_marks(spec, {SUNK_MARK: sunk}), "sunk"),
            }
        else:
            options[letter] = {"plain": part(f"option_{role}", spec)}
    return Parts(tuple(context), rates_index, question, options)


def _scenarios(family: str) -> dict:
    row = families.find(family)
    return {} if row is None else {scenario.item_id: scenario for scenario in row.scenarios}


def catalogue_rates(family: str, item_id: str, style: str, numbers: Mapping[str, int]) -> Optional[str]:
    """The item's fixed rates paragraph (``pct`` or ``freq``) for these numbers, or None if it has none.

    The catalogue form takes the first alternative of every choice group in
    the scenario's rates template, so it is the same for every seed; the
    base-rate ``wording`` type's A and B print exactly these two texts.
    """
    row = families.find(family)
    if row is None or not row.rates_paragraph:
        return None
    scenario = _scenarios(family).get(item_id)
    if scenario is None:
        return None
    template = scenario.rates_pct if style == "pct" else scenario.rates_freq
    values = scenario_values(family, scenario, numbers, {})
    return render_first(template, values, f"{family}/{item_id}:rates:{style}")
