"""Gate 1b — transformation conformance (method §3), and its self-test.

For every item, B must be A plus exactly the one transformation its
rewording type names, and nothing else.  The catalogue is closed:

``order``
    only the option lines are reordered; every other line is identical.
``default``
    exactly one line differs, and only by the option letter it names
    (A ↔ B); C keeps A's default, and A's default is not the option C makes
    dominant.
``anchoring``
    exactly one token differs, a number on both sides; neither number
    appears anywhere else in the item (A, B or C), and the anchor's line
    carries no other number; C keeps A's anchor line.
``wording``
    ``risky_choice_framing``: only the option lines differ, each keeping its
    label, and every non-number token of both option lines is the item's
    template of the version's frame: A's line a rendering of the option's
    gain template, B's exactly its loss template with the choices read off
    A (the two are parallel, :func:`panels.families.risky_choice_framing.check_frames`)
    — a stray, missing or exchanged word fails, naming the version, the
    option and that one word (the risky ``wording`` protocol is ``open`` by
    the lane rule, so one word of it is no secret).  ``sunk_cost_fallacy``: B is A with the fixed phrase
    ``, giving up the €S already spent,`` inserted once, S being an amount A
    itself states as ``€S`` elsewhere.  ``base_rate_neglect``: only the rates
    paragraph differs; A's gives three percentages, B's gives whole-number
    frequencies that equal them exactly, and, token for token with the
    numbers set aside, A's paragraph is the item's fixed catalogue percentage
    template and B's its natural-frequency template
    (:func:`panels.render.catalogue_rates`) — a stray word fails by name;
    and, place by place as the templates name them, each of B's counts is
    the one A's percentages give of B's population, so no needed count can
    go missing behind a set that still fits.

Two rules beside the catalogue guard the controls: A′ must equal A once
whitespace and punctuation are removed (and must differ from A), and C may
differ from A only in number tokens, each of them a number C's structure
changes (its one changed value, or a number derived from it) — a second
changed number fails here, not only in gate 1.

The gate reads no English: it compares lines and tokens (words, numbers,
single punctuation marks) with one another and with the items' templates,
recognises option lines by their ``Option X:`` label, and uses only numbers
from the structure block or the versions themselves.  It calls no model
and its messages name protocol, item and rule — never scenario text — so it
can run where the text is sealed (the one exception, a single word of the
open risky ``wording`` protocol, is stated above).  Its reading of lines as
tokens and templates is :mod:`panels.conformance_tokens`.

:func:`self_test` (:mod:`panels.conformance_selftest`) breaks B for every
rule (for risky ``wording`` also the option lines' own words), A′ and C (a
second changed number; a changed word) on real items and proves each is
rejected by the rule that owns it; it also swaps two numbers of a B line to
prove gate 1's order-aware rules reject that.

``llmarchive panels check`` runs the self-test and the gate (with the
other checks of :mod:`panels.checks`) over the built protocols of an
archive home.
"""
import itertools
import sys
import unicodedata
from fractions import Fraction
from typing import Callable, Iterable, Mapping, Sequence

from measure.invariants import Failure
from panels import conformance_selftest, families
from panels.conformance_selftest import CATALOGUE, GATE_1_RULES
from panels.conformance_tokens import (MAX_READINGS, NUMBER_TOKEN, TOKEN, Filled, RuleFailure, differing,
                                       first_difference, is_number, number_value, one_token_change, option_letter,
                                       placeholders, template_readings, tokens, words_only)
from panels.families.risky_choice_framing import option_frames
from panels.render import SUNK_PHRASE, catalogue_rates
from panels.scenario import ScenarioError, derived
from panels.template import TemplateError, first_value_names, render_choices

__all__ = [  # the gate, and the names callers reach through panels.conformance wherever they are defined
    "check_item", "check_protocol", "check_all", "b_rule", "strip_surface", "frequencies_match",
    "self_test", "self_test_failures", "CATALOGUE", "GATE_1_RULES",
    "MAX_READINGS", "NUMBER_TOKEN", "TOKEN", "Filled", "RuleFailure", "differing", "first_difference", "is_number",
    "number_value", "one_token_change", "option_letter", "placeholders", "template_readings", "tokens", "words_only",
]

def _rule_order(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = differing(a, b)
    if not diff:
        raise RuleFailure("order", "B is identical to A")
    slots = [i for i, line in enumerate(a) if option_letter(line, options)]
    if any(i not in slots for i in diff):
        raise RuleFailure("order", "a line other than an option line differs")
    if sorted(a[i] for i in slots) != sorted(b[i] for i in slots):
        raise RuleFailure("order", "the option lines of B are not A's option lines reordered")


def _rule_default(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> int:
    diff = differing(a, b)
    if len(diff) != 1:
        raise RuleFailure("default", f"{len(diff)} lines differ, not exactly one")
    index = diff[0]
    if option_letter(a[index], options) or option_letter(b[index], options):
        raise RuleFailure("default", "the differing line is an option line, not the default sentence")
    _, ta, tb = one_token_change(a[index], b[index], "default")
    if ta not in options or tb not in options:
        raise RuleFailure("default", "the differing token is not an option letter on both sides")
    c = item["versions"]["C"].split("\n")
    if len(c) != len(a) or c[index] != a[index]:
        raise RuleFailure("default", "C does not keep A's default sentence")
    if ta == item.get("structure", {}).get("c_correct"):
        raise RuleFailure("default", "A's default names the option C makes dominant; it must name the other one")
    return index


def _rule_anchoring(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = differing(a, b)
    if len(diff) != 1:
        raise RuleFailure("anchoring", f"{len(diff)} lines differ, not exactly one")
    index = diff[0]
    if option_letter(a[index], options):
        raise RuleFailure("anchoring", "the differing line is an option line")
    position, ta, tb = one_token_change(a[index], b[index], "anchoring")
    if not (is_number(ta) and is_number(tb)):
        raise RuleFailure("anchoring", "the differing token is not a number on both sides")
    for side, line in (("A", a[index]), ("B", b[index])):
        if sum(is_number(t) for t in tokens(line)) != 1:
            raise RuleFailure("anchoring", f"the anchor line of {side} carries another number beside the anchor")
    c = item["versions"]["C"].split("\n")
    if len(c) != len(a) or c[index] != a[index]:
        raise RuleFailure("anchoring", "C does not keep A's anchor line")
    anchors = {number_value(ta), number_value(tb)}
    for version in ("A", "B", "C"):
        lines = item["versions"][version].split("\n")
        elsewhere = [number_value(t) for i, line in enumerate(lines) if i != index
                     for t in tokens(line) if is_number(t)]
        if anchors & set(elsewhere):
            raise RuleFailure("anchoring", f"the anchor number also appears elsewhere in {version}")


def _rule_wording_risky(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = differing(a, b)
    if not diff:
        raise RuleFailure("wording_risky", "B is identical to A")
    for i in diff:
        la, lb = option_letter(a[i], options), option_letter(b[i], options)
        if la is None or lb is None:
            raise RuleFailure("wording_risky", "a line other than an option line differs")
        if la != lb:
            raise RuleFailure("wording_risky", "an option line changes its label")
    roles = (item.get("structure") or {}).get("roles") or {}
    for letter in options:
        lines = {version: next((line for line in text if option_letter(line, options) == letter), None)
                 for version, text in (("A", a), ("B", b))}
        if lines["A"] is None or lines["B"] is None:
            raise RuleFailure("wording_risky", f"option {letter} has no line in {'A' if lines['A'] is None else 'B'}")
        found = option_frames(str(item.get("item_id")), str(roles.get(letter)))
        if found is None:
            raise RuleFailure("wording_risky", f"no catalogue gain and loss templates for option {letter} of this item")
        frames, names = found
        _check_option_frames(letter, tokens(lines["A"])[3:], tokens(lines["B"])[3:], frames, names)


def _check_option_frames(letter: str, line_a: list[str], line_b: list[str], frames: Mapping[str, str],
                         names: Sequence[str]) -> None:
    """A's option line must be a rendering of the gain template; B's exactly the loss template with A's choices.

    Every non-number token counts: the gain and loss templates of an option
    are parallel (:func:`panels.families.risky_choice_framing.check_frames`),
    so the choices read off A determine B's one correct loss line, word for
    word.  The message names the version, the option and the one word.
    """
    readings, furthest = template_readings(frames["gain"], line_a, names)
    if not readings:
        where = (f"the word '{line_a[furthest]}'" if furthest < len(line_a)
                 else "its end (a word of the template is missing)")
        raise RuleFailure("wording_risky", f"A's option {letter} line is not its gain template word for word: it "
                                     f"departs from it at {where} (token {furthest + 1} after the label)")
    got = placeholders(line_b)
    first_want = None
    for choices, captured in readings:
        try:
            want = words_only(render_choices(frames["loss"], Filled(captured), choices, "loss template"))
        except TemplateError:
            continue
        if got == want:
            return
        first_want = first_want or want
    if first_want is None:
        raise RuleFailure("wording_risky", f"the loss template of option {letter} cannot replay A's choices")
    raise RuleFailure("wording_risky", f"B's option {letter} line is not its loss template with A's choices, word for "
                                 f"word: {first_difference(got, first_want)}")


def _sunk_phrase(amount: str) -> list[str]:
    return tokens(SUNK_PHRASE.format(spent=amount))


def _rule_wording_sunk(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = differing(a, b)
    if len(diff) != 1:
        raise RuleFailure("wording_sunk", f"{len(diff)} lines differ, not exactly one")
    index = diff[0]
    if option_letter(a[index], options) is None or option_letter(a[index], options) != option_letter(b[index], options):
        raise RuleFailure("wording_sunk", "the differing line is not the same option line in A and B")
    ta, tb = tokens(a[index]), tokens(b[index])
    extra = len(tb) - len(ta)
    template = _sunk_phrase("0")
    if extra != len(template):
        raise RuleFailure("wording_sunk", "B's option line is not A's plus exactly the fixed phrase")
    # Amounts A itself states as "€S", outside the option line being changed.
    stated = set()
    for i, line in enumerate(a):
        t = tokens(line)
        if i != index:
            stated |= {t[j + 1] for j in range(len(t) - 1) if t[j] == "€" and is_number(t[j + 1])}
    for start in range(len(ta) + 1):
        if tb[:start] == ta[:start] and tb[start + extra:] == ta[start:]:
            inserted = tb[start:start + extra]
            amount = inserted[template.index("0")]
            if not is_number(amount) or inserted != _sunk_phrase(amount):
                continue
            if amount not in stated:
                raise RuleFailure("wording_sunk", "the phrase names an amount A does not state")
            return
    raise RuleFailure("wording_sunk", "B's option line is not A's plus exactly the fixed phrase")


def _percentages(line: str) -> list[int]:
    t = tokens(line)
    return [number_value(t[i]) for i in range(len(t) - 1) if is_number(t[i]) and t[i + 1] == "%"]


def frequencies_match(pcts: Sequence[int], freqs: Sequence[int]) -> bool:
    """Do these whole-number frequencies state these three percentages exactly?

    Looks for a population N, true cases T, flagged true cases F and flagged
    others G among ``freqs`` with T = N·base, F = T·sens, G = (N−T)·fpr for
    some assignment of the three percentages to base, sensitivity and false
    positive rate; every frequency must be one of N, T, F, G or N−T.
    """
    values = set(freqs)
    for base, sens, fpr in itertools.permutations(pcts, 3):
        for population in values:
            true_n = Fraction(population * base, 100)
            others = population - true_n
            flagged_true = true_n * Fraction(sens, 100)
            flagged_false = others * Fraction(fpr, 100)
            need = {population, true_n, flagged_true, flagged_false}
            also = {others, flagged_true + flagged_false}
            if all(Fraction(x).denominator == 1 for x in need | also) and need <= values \
                    and values <= need | also:
                return True
    return False


def _rule_wording_base(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = differing(a, b)
    if len(diff) != 1:
        raise RuleFailure("wording_base_rate", f"{len(diff)} lines differ, not exactly one (the rates paragraph)")
    index = diff[0]
    if option_letter(a[index], options) or option_letter(b[index], options):
        raise RuleFailure("wording_base_rate", "the differing line is an option line, not the rates paragraph")
    pcts = _percentages(a[index])
    numbers_a = [t for t in tokens(a[index]) if is_number(t)]
    if len(pcts) != 3 or len(numbers_a) != 3:
        raise RuleFailure("wording_base_rate", "A's rates paragraph must give exactly three percentages and no other number")
    tb = tokens(b[index])
    if "%" in tb:
        raise RuleFailure("wording_base_rate", "B's rates paragraph still gives a percentage")
    numbers = (item.get("structure") or {}).get("values") or {}
    for version, line, style in (("A", a[index], "pct"), ("B", b[index], "freq")):
        try:
            template = catalogue_rates("base_rate_neglect", str(item.get("item_id")), style, numbers)
        except (KeyError, ValueError):
            template = None
        if template is None:
            raise RuleFailure("wording_base_rate", f"no catalogue rates paragraph ({style}) for this item and numbers")
        if words_only(line) != words_only(template):
            raise RuleFailure("wording_base_rate", f"{version}'s rates paragraph is not the item's catalogue "
                                             f"{'percentage' if style == 'pct' else 'natural-frequency'} "
                                             f"template word for word")
    freqs = [number_value(t) for t in tb if is_number(t)]
    if not frequencies_match(pcts, freqs):
        raise RuleFailure("wording_base_rate", "B's natural frequencies do not equal A's percentages exactly")
    _check_frequency_places(str(item.get("item_id")), a[index], b[index])


def _scenarios(family: str) -> dict:
    row = families.find(family)
    return {} if row is None else {scenario.item_id: scenario for scenario in row.scenarios}


def _check_frequency_places(item_id: str, line_a: str, line_b: str) -> None:
    """Each number of B's rates paragraph must be, in its own place, the count A's percentages give.

    :func:`frequencies_match` asks whether B's numbers *as a set* state A's
    percentages; this asks it place by place, the places named by the
    item's catalogue templates (``${base_pct}`` ... in A's, ``${population}``,
    ``${true_n}``, ``${others}`` ... in B's).  So a B that drops a count the
    paragraph needs (the others written as the population, say) fails here,
    in gate 1b, and not only in gate 1.  Only A's and B's own numbers are
    read: the counts follow from A's three percentages and B's population.
    """
    scenario = _scenarios("base_rate_neglect").get(item_id)
    if scenario is None:
        raise RuleFailure("wording_base_rate", "no catalogue rates templates for this item")
    pct_places, freq_places = first_value_names(scenario.rates_pct), first_value_names(scenario.rates_freq)
    stated = {}
    for places, line, version in ((pct_places, line_a, "A"), (freq_places, line_b, "B")):
        numbers = [number_value(t) for t in tokens(line) if is_number(t)]
        if len(numbers) != len(places):
            raise RuleFailure("wording_base_rate", f"{version}'s rates paragraph does not give one number per place "
                                             f"of its template")
        for place, number in zip(places, numbers):
            if stated.setdefault((version, place), number) != number:
                raise RuleFailure("wording_base_rate", f"{version}'s rates paragraph gives two different numbers "
                                                 f"for {place}")
    pct = {place: n for (version, place), n in stated.items() if version == "A"}
    population = stated.get(("B", "population"))
    if sorted(pct) != ["base_pct", "fpr_pct", "sens_pct"] or population is None:
        raise RuleFailure("wording_base_rate", "the catalogue templates do not name the three rates and the population")
    try:
        counts = dict(derived("base_rate_neglect", dict(pct, population=population), item_id),
                      population=population)
    except ScenarioError:
        raise RuleFailure("wording_base_rate", "A's percentages of B's population are not whole numbers") from None
    for place, number in zip(freq_places, [number_value(t) for t in tokens(line_b) if is_number(t)]):
        if counts.get(place) != number:
            raise RuleFailure("wording_base_rate", f"B's natural frequency in the place of {place} is not the count "
                                             f"A's percentages give")


def _rule_a_prime(item: Mapping) -> None:
    a, a_prime = item["versions"]["A"], item["versions"]["A_prime"]
    if a == a_prime:
        raise RuleFailure("a_prime", "A′ is identical to A")
    if strip_surface(a) != strip_surface(a_prime):
        raise RuleFailure("a_prime", "A′ differs from A in more than whitespace and punctuation")


def _c_changes(item: Mapping) -> set[tuple[int, int]]:
    """The (A's number, C's number) pairs C's structure changes: its one changed value and what follows from it."""
    structure = item.get("structure") or {}
    try:
        family, values, c_values = structure["family"], dict(structure["values"]), dict(structure["c_values"])
        both = [dict(numbers, **derived(family, numbers, str(item.get("item_id")))) for numbers in (values, c_values)]
    except (KeyError, TypeError, ValueError, ScenarioError):
        raise RuleFailure("c_numbers_only", "the structure does not say which number C changes") from None
    return {(both[0][key], both[1][key]) for key in both[0] if both[0][key] != both[1].get(key)}


def _rule_c(item: Mapping) -> None:
    a, c = item["versions"]["A"].split("\n"), item["versions"]["C"].split("\n")
    if len(a) != len(c):
        raise RuleFailure("c_numbers_only", "C has a different number of lines than A")
    allowed = _c_changes(item)
    changed = 0
    for la, lc in zip(a, c):
        ta, tc = tokens(la), tokens(lc)
        if len(ta) != len(tc):
            raise RuleFailure("c_numbers_only", "a line of C gains or loses tokens")
        for x, y in zip(ta, tc):
            if x != y:
                if not (is_number(x) and is_number(y)):
                    raise RuleFailure("c_numbers_only", "C differs from A in a token that is not a number")
                if (number_value(x), number_value(y)) not in allowed:
                    raise RuleFailure("c_numbers_only", "C changes a number its structure does not change "
                                                  "(only the changed value may differ from A)")
                changed += 1
    if not changed:
        raise RuleFailure("c_numbers_only", "C is identical to A")


def strip_surface(text: str) -> str:
    """The text without whitespace or Unicode punctuation (category P*)."""
    return "".join(ch for ch in text if not ch.isspace() and not unicodedata.category(ch).startswith("P"))


def b_rule(family: str, rewording_type: str) -> tuple[str, Callable]:
    """The catalogue entry for a family and type: ``(rule name, check)``."""
    if rewording_type == "order":
        return "order", _rule_order
    if rewording_type == "default":
        return "default", _rule_default
    if rewording_type == "anchoring":
        return "anchoring", _rule_anchoring
    if rewording_type == "wording":
        # Each family names its rule in its row; the rules are the closed catalogue's, kept here.
        by_name = {"wording_risky": _rule_wording_risky, "wording_sunk": _rule_wording_sunk,
                   "wording_base_rate": _rule_wording_base}
        row = families.find(family)
        if row is not None and row.wording_rule in by_name:
            return row.wording_rule, by_name[row.wording_rule]
    raise ValueError(f"no transformation in the catalogue for family {family!r}, type {rewording_type!r}")


def check_item(protocol: Mapping, item: Mapping) -> list[Failure]:
    """Gate 1b for one item: the B rule, A′ and C; an empty list means it passes."""
    pid, item_id = str(protocol.get("protocol_id")), str(item.get("item_id"))
    options = list(protocol.get("options") or [])
    versions = item.get("versions") or {}
    if sorted(versions) != ["A", "A_prime", "B", "C"]:
        return [Failure(pid, item_id, "versions", "an item needs exactly the versions A, A_prime, B, C")]
    try:
        rule, check = b_rule(protocol.get("family"), protocol.get("rewording_type"))
    except ValueError as exc:
        return [Failure(pid, item_id, "catalogue", str(exc))]
    failures = []
    for name, run in ((rule, lambda: check(versions["A"].split("\n"), versions["B"].split("\n"), item, options)),
                      ("a_prime", lambda: _rule_a_prime(item)),
                      ("c_numbers_only", lambda: _rule_c(item))):
        try:
            run()
        except RuleFailure as exc:
            failures.append(Failure(pid, item_id, exc.rule if exc.rule != "line_count" else name, exc.detail))
    return failures


def check_protocol(protocol: Mapping) -> list[Failure]:
    """Gate 1b over every item of a protocol (hash-only records have none)."""
    return [f for item in protocol.get("panel") or [] for f in check_item(protocol, item)]


def check_all(protocols: Iterable[Mapping]) -> list[Failure]:
    return [f for p in protocols for f in check_protocol(p)]


# --------------------------------------------------------------------------- self-test
def self_test(protocols: Iterable[Mapping]) -> list[dict]:
    """Break every rule on real items and report each verdict (:func:`panels.conformance_selftest.self_test`)."""
    return conformance_selftest.self_test(protocols, sys.modules[__name__])


def self_test_failures(protocols: Iterable[Mapping]) -> list[Failure]:
    """The self-test of this gate as failures (:func:`panels.conformance_selftest.self_test_failures`)."""
    return conformance_selftest.self_test_failures(protocols, sys.modules[__name__])
