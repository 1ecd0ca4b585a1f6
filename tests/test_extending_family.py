"""A fourth scenario family is one row of the family table, and everything derived sees it.

The fixture registers a toy family — one :class:`panels.family.Family` row
with fifteen plain scenarios, built here in the test — and removes it
afterwards.  The tests then ask every list and lookup that used to be a
hand-written dict keyed by family name (the family names, their roles, the open
lanes, the reader citations, the author's required numbers, the protocol
ids, the builder's option variants, gate 1b's rule lookup) and check that
the toy family is there.  If any of them is written out by hand again, the
toy family is missing from it and the test fails.

For the real archive the same row is a new ``panels/families/<name>.py``
module plus one entry in ``panels/families/__init__.py``: two files.  With
that row alone the builder builds and assembles the toy's ``order``,
``default`` and ``anchoring`` protocols, and gate 1b and the simulated
readers' design rules pass them.  What it cannot do without more files —
gate 1 (``measure/invariants.py``, the independent checker, which never
imports ``panels``) and a new *kind* of ``wording`` transformation
(``panels/conformance.py``'s closed catalogue) — the last test states.
"""
from typing import Iterator, Mapping

import pytest

from panels import authoring, build, checks, conformance, families, lanes, readers
from panels.family import Family, Lotteries, Scenario
from panels.instruction import OPTIONS, instruction
from panels.scenario import check_numbers, derived, family_row, lotteries
from panels.seeds import development_seed, public_seed
from measure import invariants

TOY = "coin_toss_toy"
REAL = ("risky_choice_framing", "sunk_cost_fallacy", "base_rate_neglect")


def _derive(values: Mapping[str, int], item: str = "?") -> dict[str, int]:
    return {"q_pct": 100 - values["p_pct"]}


def _lotteries(values: Mapping[str, int], derived_values: Mapping[str, int]) -> Lotteries:
    return {"keep": [[1, 1, values["sure"]]],
            "toss": [[values["p_pct"], 100, values["win"]], [derived_values["q_pct"], 100, 0]]}


def _biased_reader(role: str, values: Mapping[str, int], shown: str) -> float:
    # A certainty effect: the sure amount counts a tenth more than it is worth.
    return values["sure"] * 1.1 if role == "keep" else values["p_pct"] / 100 * values["win"]


def _scenario(i: int) -> Scenario:
    # Equal expected value: sure · 100 = win · p_pct; C lowers ``sure`` by a fifth.
    p_pct = (20, 25, 40, 50, 80)[i % 5]
    win = 100 * (i + 2)
    sure = win * p_pct // 100
    return Scenario(
        item_id=f"s{i:02d}",
        title=f"toy ticket {i}",
        values={"sure": sure, "win": win, "p_pct": p_pct},
        c_values={"sure": sure * 4 // 5, "win": win, "p_pct": p_pct},
        letters={"A": "keep", "B": "toss"} if i % 7 else {"A": "toss", "B": "keep"},
        context=("A {stall|booth} at the {fair|market} offers you a {ticket|token} and a choice.",),
        question="Which {do you take|would you choose}?",
        options={"keep": "Keep the ticket and receive €${sure} for certain.",
                 "toss": "Toss a coin {machine|wheel}: a ${p_pct}% chance of €${win} and a ${q_pct}% chance "
                         "of nothing."},
    )


def toy_row() -> Family:
    """Everything the archive knows about the toy family, in one row."""
    return Family(
        name=TOY,
        roles=("keep", "toss"),
        value_keys=("sure", "win", "p_pct"),
        c_dominant_role="toss",
        c_changed_key="sure",
        derive=_derive,
        lotteries=_lotteries,
        scenarios=tuple(_scenario(i) for i in range(1, 16)),
        open_lane=True,
        rates_paragraph=False,
        required_numbers={"plain": ("sure", "win", "p_pct", "q_pct")},
        biased_reader_model="a toy certainty effect: the sure amount counts a tenth more",
        biased_reader=_biased_reader,
    )


@pytest.fixture
def toy() -> Iterator[Family]:
    row = toy_row()
    families.register(row)
    try:
        yield row
    finally:
        families.unregister(TOY)
    assert TOY not in families.names() and families.find(TOY) is None


def test_the_table_keeps_the_three_families_in_their_fixed_order():
    # Protocol ids, the builder's loop and every listing run in this order.
    assert families.names() == REAL == tuple(row.name for row in families.TABLE)
    assert TOY not in families.names()


def test_the_family_lists_see_the_new_row(toy):
    assert families.names() == REAL + (TOY,)
    assert families.get(TOY) is toy and family_row(TOY) is toy
    row = families.get(TOY)
    assert row.roles == ("keep", "toss") and row.value_keys == ("sure", "win", "p_pct")
    assert row.c_dominant_role == "toss" and row.c_changed_key == "sure"
    assert build.parse_protocol_id(f"{TOY}__order__v0") == (TOY, "order", "v0")


def test_the_number_rules_are_the_rows(toy):
    for scenario in toy.scenarios:
        check_numbers(TOY, scenario)
    first = toy.scenarios[0]
    assert derived(TOY, first.values) == {"q_pct": 100 - first.values["p_pct"]}
    assert set(lotteries(TOY, first.values)) == {"keep", "toss"}


def test_protocol_ids_lanes_readers_and_the_authors_check_see_the_new_row(toy):
    ids = build.all_protocol_ids()
    assert [pid for pid in ids if pid.startswith(f"{TOY}__")] == \
        [build.protocol_id(TOY, t, s) for s in build.SERIES for t in build.TYPES]
    assert lanes.open_families()[-1] == TOY
    assert lanes.planned_lane(f"{TOY}__wording__v0") == ("open", f"{TOY}__anchoring__v0")
    assert lanes.planned_lane(f"{TOY}__anchoring__v1") == ("guard", f"{TOY}__wording__v1")
    assert lanes.planned_lane(f"{TOY}__order__v0") == ("guard", None)
    assert readers.reader_models(TOY)["biased"] == toy.biased_reader_model
    assert authoring.required(TOY, "plain") == ("sure", "win", "p_pct", "q_pct")
    assert authoring.load(TOY) == toy.scenarios
    assert build.load_scenarios(TOY) == toy.scenarios


@pytest.mark.parametrize("rewording_type", ["order", "default", "anchoring"])
def test_the_builder_builds_the_new_familys_protocol_and_gate_1b_and_the_readers_pass_it(toy, rewording_type):
    text = instruction(OPTIONS)
    seed = development_seed()
    panel, _ = build.build_panel(TOY, rewording_type, seed, text)
    assert [item["item_id"] for item in panel] == [s.item_id for s in toy.scenarios]
    for item in panel:
        structure = item["structure"]
        assert structure["family"] == TOY and structure["changed_key"] == "sure"
        assert structure["roles"][structure["c_correct"]] == "toss"
        assert sorted(item["versions"]) == ["A", "A_prime", "B", "C"]
    protocol = build.assemble(TOY, rewording_type, "v0", panel, seed.label, text)
    assert protocol["protocol_id"] == f"{TOY}__{rewording_type}__v0"
    assert protocol["reader_models"]["biased"] == toy.biased_reader_model
    # Gate 1b (the closed catalogue of B rules, A′ and C) is family-independent for these types,
    # and the simulated readers' design rules hold: C moves both readers, the normative one sees no A↔B gap.
    assert conformance.check_protocol(protocol) == []
    assert checks.design_failures([protocol]) == []
    assert protocol["design_readers"]["normative"]["gap_ab_pct"] == 0


def test_what_a_new_family_still_needs_outside_its_row(toy):
    """Where the toy row stops.  Each line names a file a real new family still touches.

    When one of these moves into the row, this test fails on purpose: update
    it (and the count of files a new family needs) rather than deleting it.
    """
    text = instruction(OPTIONS)
    panel, _ = build.build_panel(TOY, "wording", public_seed(), text)
    protocol = {"protocol_id": build.protocol_id(TOY, "wording", "v0"), "family": TOY, "rewording_type": "wording",
                "options": list(OPTIONS), "panel": panel, "instruction": text}
    # panels/conformance.py: a new *kind* of wording transformation is a new catalogue rule, on purpose
    # (method §3's catalogue is closed); a row only picks an existing rule by name.
    assert [f.rule for f in conformance.check_item(protocol, panel[0])] == ["catalogue"]
    # measure/invariants.py: gate 1 keeps its own copy of the family rules; measure never imports panels.
    assert TOY not in invariants.FAMILY_ROLES
    assert invariants.check_item(protocol, panel[0]) != []
