"""The protocol builder: 3 families × 4 rewording types × 2 series = 24 files.

Every item's four versions are composed from the rendered parts of one
scenario (:func:`panels.render.render_parts`), always in this order, one
block per paragraph::

    context paragraphs (the base-rate paragraph among them)
    anchor or default line      (only the types that need one)
    the question
    Option A: …                 (option lines, one per letter)
    Option B: …
    the decision instruction    (panels.instruction, identical everywhere)

* **A** — the base wording (gain frame, no sunk phrase, rates as
  percentages; the anchor's low number; the default naming the option C
  will *not* favour).
* **A′** — A with whitespace and punctuation changed only: the context
  paragraphs lose their blank lines, sentences inside them get two spaces,
  and each option's first colon becomes a dash.
* **B** — A plus exactly the type's transformation (method §3's closed
  catalogue, checked by :mod:`panels.conformance`): ``wording`` per family
  (loss frame / the sunk phrase / natural frequencies), ``anchoring`` (the
  anchor line's number goes from low to high), ``order`` (option lines
  reversed), ``default`` (the default names the other option).
* **C** — A rendered with ``c_values``: one number changed so that the
  option a reader of A would not pick strictly dominates.  A ``default``
  protocol's C keeps A's default.

Seeds.  Open protocols (SPEC's lane rule, :mod:`panels.lanes`) use the
public seed; every other protocol uses the guard seed and, item by item and
part by part, avoids the phrasing its family's open protocol took; it is
then re-drawn with a salted seed until none of its 12-word runs (outside
the instruction) occurs in any open item.  The wording seed key is
``{family}__{type}``, never the series, so a ``v1`` panel is byte-identical
to its ``v0`` counterpart and only ``protocol_sha256`` differs.

Design figures.  Each protocol carries ``design_readers``: for the simulated
readers of :mod:`panels.readers` (normative; the family's classic biased
reader), the ``gap_ab_pct``, ``gap_aa_prime_pct``, ``gap_ac_pct`` and
``stability_pct`` the real estimator gives their trials — what the panel can
see, published beside the human effect sizes — and ``reader_models``, one
line per reader naming its model.  Both derive from the panel and are kept
outside ``protocol_sha256`` (:data:`UNHASHED_KEYS`).
"""
import copy
import re
from typing import Mapping, Optional

from measure.canonical import canonical_sha256
from measure.invariants import OPTION_PREFIX, expected_value, fraction_text, numbers_in
from measure.schema import SCHEMA_VERSION
from panels import families, lanes, readers
from panels.instruction import OPTIONS, instruction
from panels.leak import LEAK_WORDS, grams, strip_instruction
from panels.render import Parts, render_parts
from panels.scenario import Scenario, check_numbers, derived, lotteries
from panels.seeds import WordingSeed
from panels.template import render, stream_for
from measure.errors import ArchiveError

TYPES = ("wording", "anchoring", "order", "default")
SERIES = {
    "v0": {"n": 30, "n_per_scenario": 2, "grammar_version": 1},
    "v1": {"n": 120, "n_per_scenario": 8, "grammar_version": 2},
}
N_ITEMS = 15
THETA_POSITIVE_PCT = 15
SCENARIO_DOMINATED_SHARE_PCT = 40
# Enough for a capable model's two sentences and the decision line, with
# room to spare; every token is paid for in CPU time on the reference run.
GENERATION = {"max_tokens": 256}
MAX_REDRAWS = 64
# The anchor is a filing number from an unrelated domain: low in A, high in B.
ANCHOR_LOW = (11, 99)
ANCHOR_HIGH = (1100, 9899)

# The extra lines of the anchoring and default types.  They are templates
# too, so a guard panel's wording of them is secret like the rest.
ANCHOR_TEMPLATE = (
    "{For the record|For filing purposes|As a clerical note}, {this question|this case|the problem above} "
    "{is catalogued|is filed|was logged} under the {arbitrary|randomly assigned|meaningless} "
    "{reference|catalogue|archive} number ${anchor}, {which|a label that} {has nothing to do with|says "
    "nothing about|carries no information on} the {decision|choice|situation}."
)
DEFAULT_TEMPLATE = (
    "{If no decision is recorded|If nobody makes a choice|Should no choice be made} {in time|by the "
    "deadline|before the cut-off}, Option ${default_option} {is carried out|goes ahead|will be put into "
    "effect} {automatically|by default|as the default}."
)

_SENTENCE_GAP = re.compile(r"([.!?]) (?=\S)")


class BuildError(ArchiveError, ValueError):
    """A protocol that cannot be built; the message names protocol and item."""


def protocol_id(family: str, rewording_type: str, series: str) -> str:
    return f"{family}__{rewording_type}__{series}"


def parse_protocol_id(pid: str) -> tuple[str, str, str]:
    """``(family, type, series)`` of a built protocol id, or ValueError."""
    parts = pid.split("__")
    if len(parts) != 3 or parts[0] not in families.names() or parts[1] not in TYPES or parts[2] not in SERIES:
        raise BuildError(f"{pid!r} is not a protocol id of the form family__type__series")
    return parts[0], parts[1], parts[2]


def all_protocol_ids() -> list[str]:
    return [protocol_id(f, t, s) for s in SERIES for f in families.names() for t in TYPES]


def load_scenarios(family: str) -> tuple[Scenario, ...]:
    """The family's fifteen scenarios, checked against the family's number rules."""
    row = families.find(family)
    if row is None:
        raise BuildError(f"family {family}: no row in the family table (panels/families/__init__.py)")
    scenarios = row.scenarios
    ids = [s.item_id for s in scenarios]
    if ids != [f"s{i:02d}" for i in range(1, N_ITEMS + 1)]:
        raise BuildError(f"family {family}: item ids must be s01…s{N_ITEMS:02d} in order")
    # A family whose B re-describes the options (risky choice: gain and loss)
    # states how its frame templates must correspond; gate 1b relies on it.
    check_frames = row.check_frames
    for scenario in scenarios:
        check_numbers(family, scenario)
        if check_frames is not None:
            check_frames(scenario)
    return scenarios


def structure(family: str, scenario: Scenario) -> dict:
    """The item's structure block, shared by all four types of its family."""
    def by_letter(numbers: Mapping[str, int]) -> dict[str, list[list[int]]]:
        rows = lotteries(family, numbers, scenario.item_id)
        return {letter: rows[role] for letter, role in scenario.letters.items()}

    base, c = by_letter(scenario.values), by_letter(scenario.c_values)
    row = families.get(family)
    dominant_letter = next(l for l, r in scenario.letters.items() if r == row.c_dominant_role)
    return {
        "family": family,
        "roles": dict(scenario.letters),
        "values": dict(scenario.values),
        "c_values": dict(scenario.c_values),
        "changed_key": row.c_changed_key,
        "lotteries": base,
        "c_lotteries": c,
        "expected_value": {l: fraction_text(expected_value(rows)) for l, rows in base.items()},
        "c_expected_value": {l: fraction_text(expected_value(rows)) for l, rows in c.items()},
        "correct": None,
        "c_correct": dominant_letter,
    }


def compose(parts: Parts, variant: Mapping[str, str], order: tuple[str, ...], extra: Optional[str],
            instruction_text: str) -> str:
    """One version's full prompt text from rendered parts."""
    blocks = list(parts.context)
    if extra:
        blocks.append(extra)
    blocks.append(parts.question)
    blocks.append("\n".join(OPTION_PREFIX.format(letter=l) + parts.options[l][variant[l]] for l in order))
    blocks.append(instruction_text)
    return "\n\n".join(blocks)


def null_change(text: str, instruction_text: str) -> str:
    """A′: the same words and digits, other whitespace and punctuation.

    Paragraph breaks before the question become single line breaks,
    sentences get two spaces, and in each option line the first colon after
    the label becomes a dash.  The instruction is left alone.
    """
    body = text[: len(text) - len(instruction_text)].rstrip("\n")
    blocks = body.split("\n\n")
    context, question, option_block = blocks[:-2], blocks[-2], blocks[-1]
    context = [_SENTENCE_GAP.sub(r"\1  ", block) for block in context]
    option_lines = []
    for line in option_block.split("\n"):
        label, rest = line[:len(OPTION_PREFIX.format(letter="A"))], line[len(OPTION_PREFIX.format(letter="A")):]
        option_lines.append(label + rest.replace(": ", " — ", 1))
    return "\n".join(context) + "\n\n" + question + "\n\n" + "\n".join(option_lines) + "\n\n" + instruction_text


def _variants(family: str, rewording_type: str, letters: Mapping[str, str]) -> tuple[dict, dict]:
    """Option variants by letter for A and for B."""
    row = families.get(family)
    if row.frames:
        a = {l: row.frames[0] for l in letters}
        b = {l: row.frames[1] for l in letters} if rewording_type == "wording" else dict(a)
    elif row.sunk_role is not None:
        a = {l: "plain" for l in letters}
        b = {l: ("sunk" if r == row.sunk_role and rewording_type == "wording" else "plain")
             for l, r in letters.items()}
    else:
        a = {l: "plain" for l in letters}
        b = dict(a)
    return a, b


def _anchor_numbers(seed_text: str, key: str, item_id: str, taken: set[int]) -> tuple[int, int]:
    stream = stream_for(seed_text, key, item_id, "anchor-numbers")
    def draw(low: int, high: int) -> int:
        for _ in range(1000):
            value = low + stream.below(high - low + 1)
            if value not in taken and value % 10:
                return value
        raise BuildError(f"{key} {item_id}: no anchor number free of the item's own numbers")
    return draw(*ANCHOR_LOW), draw(*ANCHOR_HIGH)


def render_item(family: str, rewording_type: str, scenario: Scenario, seed_text: str, key: str,
                instruction_text: str, avoid: Optional[Mapping] = None,
                record: Optional[dict] = None) -> dict[str, str]:
    """The four version texts of one item under one seed."""
    letters = scenario.letters
    # The base-rate wording type prints its rates paragraph in the fixed catalogue
    # form in A, C (percentages) and B (natural frequencies): nothing but the format changes.
    catalogue = families.get(family).rates_paragraph and rewording_type == "wording"
    parts_a = render_parts(family, scenario, seed_text, key, scenario.values, "pct", avoid=avoid, record=record,
                           catalogue_rates=catalogue)
    parts_c = render_parts(family, scenario, seed_text, key, scenario.c_values, "pct", avoid=avoid,
                           catalogue_rates=catalogue)
    parts_b = parts_a
    if catalogue:
        parts_b = render_parts(family, scenario, seed_text, key, scenario.values, "freq", avoid=avoid,
                               record=record, catalogue_rates=True)
    var_a, var_b = _variants(family, rewording_type, letters)
    order_a = tuple(OPTIONS)
    order_b = tuple(reversed(OPTIONS)) if rewording_type == "order" else order_a
    extra_a = extra_b = None
    if rewording_type == "default":
        default_a = next(l for l, r in letters.items() if r != families.get(family).c_dominant_role)
        default_b = next(l for l in OPTIONS if l != default_a)
        line = lambda letter: render(DEFAULT_TEMPLATE, stream_for(seed_text, key, scenario.item_id, "default"),
                                     {"default_option": letter}, f"{key}/{scenario.item_id}:default")
        extra_a, extra_b = line(default_a), line(default_b)
    elif rewording_type == "anchoring":
        plain = [compose(p, var_a, order_a, None, "") for p in (parts_a, parts_c)]
        taken = {n for text in plain for n in numbers_in(text)}
        # Gate 1 counts every structure number as the scenario's, quoted or not
        # (an unquoted flagged_n is still the scenario's), so none may anchor.
        for numbers in (scenario.values, scenario.c_values):
            taken |= set(numbers.values()) | set(derived(family, numbers, scenario.item_id).values())
        low, high = _anchor_numbers(seed_text, key, scenario.item_id, taken)
        line = lambda number: render(ANCHOR_TEMPLATE, stream_for(seed_text, key, scenario.item_id, "anchor"),
                                     {"anchor": str(number)}, f"{key}/{scenario.item_id}:anchor")
        extra_a, extra_b = line(low), line(high)
    a = compose(parts_a, var_a, order_a, extra_a, instruction_text)
    return {
        "A": a,
        "A_prime": null_change(a, instruction_text),
        "B": compose(parts_b, var_b, order_b, extra_b, instruction_text),
        "C": compose(parts_c, var_a, order_a, extra_a, instruction_text),
    }


def build_panel(family: str, rewording_type: str, seed: WordingSeed, instruction_text: str,
                avoid_records: Optional[Mapping[str, Mapping]] = None,
                open_grams: Optional[set] = None) -> tuple[list[dict], dict[str, dict]]:
    """Fifteen items for one family and type; also each item's choice record.

    ``avoid_records`` (item id → render record of the family's open
    protocol) and ``open_grams`` (12-word runs of every open item) are given
    for guard panels; an item that still shares a run is re-drawn.
    """
    key = f"{family}__{rewording_type}"
    panel, records = [], {}
    for scenario in load_scenarios(family):
        avoid = (avoid_records or {}).get(scenario.item_id)
        for attempt in range(MAX_REDRAWS):
            seed_text = seed.text if attempt == 0 else f"{seed.text}#redraw-{attempt}"
            record: dict = {}
            versions = render_item(family, rewording_type, scenario, seed_text, key, instruction_text,
                                   avoid=avoid, record=record)
            if not open_grams or not any(grams(strip_instruction(t, instruction_text)) & open_grams
                                         for t in versions.values()):
                break
        else:
            raise BuildError(f"{key} {scenario.item_id}: every one of {MAX_REDRAWS} draws shares a "
                             f"{LEAK_WORDS}-word run with an open item; give the templates more variety")
        records[scenario.item_id] = record
        panel.append({"item_id": scenario.item_id, "structure": structure(family, scenario), "versions": versions})
    return panel, records


# Keys outside ``protocol_sha256``.  ``status``, ``lane`` and ``twin_id`` change on
# admission (method §3).  ``design_readers`` and ``reader_models`` are *derived* from
# the panel by :mod:`panels.readers`: they describe the instrument, they do not
# change what it asks, so correcting a reader model must never change the hash a
# measurement cites; ``llmarchive panels check`` recomputes them and fails on any
# difference instead.
UNHASHED_KEYS = ("status", "lane", "twin_id", "protocol_sha256", "design_readers", "reader_models")


def protocol_hash(protocol: Mapping) -> str:
    """``protocol_sha256``: everything but :data:`UNHASHED_KEYS` (status, lane, twin, the design figures, itself)."""
    return canonical_sha256({k: v for k, v in protocol.items() if k not in UNHASHED_KEYS})


def assemble(family: str, rewording_type: str, series: str, panel: list[dict], seed_label: str,
             instruction_text: str) -> dict:
    """The protocol file's content, born ``candidate`` with no lane or twin."""
    settings = SERIES[series]
    protocol = {
        "record_type": "protocol",
        "schema_version": SCHEMA_VERSION,
        "protocol_id": protocol_id(family, rewording_type, series),
        "series": series,
        "family": family,
        "rewording_type": rewording_type,
        "options": list(OPTIONS),
        "n": settings["n"],
        "n_per_scenario": settings["n_per_scenario"],
        "n_items": len(panel),
        "item_ids": [item["item_id"] for item in panel],
        "grammar_version": settings["grammar_version"],
        "theta_positive_pct": THETA_POSITIVE_PCT,
        "scenario_dominated_share_pct": SCENARIO_DOMINATED_SHARE_PCT,
        "generation": dict(GENERATION),
        "instruction": instruction_text,
        "wording_seed": seed_label,
        "panel": copy.deepcopy(panel),  # v0 and v1 must not share (and co-mutate) one object
        "panel_sha256": canonical_sha256(panel),
    }
    protocol["protocol_sha256"] = protocol_hash(protocol)
    protocol["design_readers"] = readers.design_figures(protocol)
    protocol["reader_models"] = readers.reader_models(family)
    protocol.update({"status": "candidate", "lane": None, "twin_id": None})
    return protocol


def build_protocols(public: WordingSeed, guard: WordingSeed) -> list[dict]:
    """All 24 protocols in memory, open panels first (guard panels avoid them)."""
    instruction_text = instruction(OPTIONS)
    panels: dict[tuple[str, str], tuple[list, str]] = {}
    open_records: dict[str, dict] = {}
    open_grams: set = set()
    planned_open = [(f, t) for f in families.names() for t in TYPES
                    if lanes.planned_lane(protocol_id(f, t, "v0"))[0] == "open"]
    for family, rewording_type in planned_open:
        panel, records = build_panel(family, rewording_type, public, instruction_text)
        panels[(family, rewording_type)] = (panel, public.label)
        open_records[family] = records
        for item in panel:
            for text in item["versions"].values():
                open_grams |= grams(strip_instruction(text, instruction_text))
    for family in families.names():
        for rewording_type in TYPES:
            if (family, rewording_type) in panels:
                continue
            panel, _ = build_panel(family, rewording_type, guard, instruction_text,
                                   avoid_records=open_records.get(family), open_grams=open_grams)
            panels[(family, rewording_type)] = (panel, guard.label)
    out = []
    for series in SERIES:
        for family in families.names():
            for rewording_type in TYPES:
                panel, label = panels[(family, rewording_type)]
                out.append(assemble(family, rewording_type, series, panel, label, instruction_text))
    return out
