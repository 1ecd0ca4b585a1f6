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
open risky ``wording`` protocol, is stated above).  :func:`self_test` breaks
B for every rule (for risky ``wording`` also the option lines' own words),
A′ and C (a second changed number; a changed word) on real items and proves
each is rejected by the rule that owns it; it also swaps two numbers of a B
line to prove gate 1's order-aware rules reject that.

``llmarchive panels check`` runs the self-test and the gate (with the
other checks of :mod:`panels.checks`) over the built protocols of an
archive home.
"""
import difflib
import functools
import importlib
import itertools
import re
import unicodedata
from fractions import Fraction
from typing import Callable, Iterable, Iterator, Mapping, Optional, Sequence

from measure import invariants
from measure.invariants import Failure
from panels.families.risky_choice_framing import option_frames
from panels.render import SUNK_PHRASE, catalogue_rates
from panels.scenario import ScenarioError, derived
from panels.template import TemplateError, first_value_names, parse, render_choices

TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+|\d+|[^\W\d_]+|\S")
NUMBER_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


class _Fail(Exception):
    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule
        self.detail = detail


def tokens(line: str) -> list[str]:
    """Words, numbers and single non-space marks, in order."""
    return TOKEN.findall(line)


def is_number(token: str) -> bool:
    return bool(NUMBER_TOKEN.fullmatch(token))


def number_value(token: str) -> int:
    return int(token.replace(",", ""))


def option_letter(line: str, options: Sequence[str]) -> Optional[str]:
    """The letter of an ``Option X:`` line, else None."""
    t = tokens(line)
    if len(t) >= 3 and t[0] == "Option" and t[1] in options and t[2] == ":":
        return t[1]
    return None


def _differing(a: list[str], b: list[str]) -> list[int]:
    if len(a) != len(b):
        raise _Fail("line_count", "A and B have different numbers of lines")
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


def _one_token_change(line_a: str, line_b: str, rule: str) -> tuple[int, str, str]:
    ta, tb = tokens(line_a), tokens(line_b)
    if len(ta) != len(tb):
        raise _Fail(rule, "the differing line gains or loses tokens")
    diff = [i for i, (x, y) in enumerate(zip(ta, tb)) if x != y]
    if len(diff) != 1:
        raise _Fail(rule, f"the differing line differs in {len(diff)} tokens, not exactly one")
    return diff[0], ta[diff[0]], tb[diff[0]]


def _rule_order(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = _differing(a, b)
    if not diff:
        raise _Fail("order", "B is identical to A")
    slots = [i for i, line in enumerate(a) if option_letter(line, options)]
    if any(i not in slots for i in diff):
        raise _Fail("order", "a line other than an option line differs")
    if sorted(a[i] for i in slots) != sorted(b[i] for i in slots):
        raise _Fail("order", "the option lines of B are not A's option lines reordered")


def _rule_default(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> int:
    diff = _differing(a, b)
    if len(diff) != 1:
        raise _Fail("default", f"{len(diff)} lines differ, not exactly one")
    index = diff[0]
    if option_letter(a[index], options) or option_letter(b[index], options):
        raise _Fail("default", "the differing line is an option line, not the default sentence")
    _, ta, tb = _one_token_change(a[index], b[index], "default")
    if ta not in options or tb not in options:
        raise _Fail("default", "the differing token is not an option letter on both sides")
    c = item["versions"]["C"].split("\n")
    if len(c) != len(a) or c[index] != a[index]:
        raise _Fail("default", "C does not keep A's default sentence")
    if ta == item.get("structure", {}).get("c_correct"):
        raise _Fail("default", "A's default names the option C makes dominant; it must name the other one")
    return index


def _rule_anchoring(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = _differing(a, b)
    if len(diff) != 1:
        raise _Fail("anchoring", f"{len(diff)} lines differ, not exactly one")
    index = diff[0]
    if option_letter(a[index], options):
        raise _Fail("anchoring", "the differing line is an option line")
    position, ta, tb = _one_token_change(a[index], b[index], "anchoring")
    if not (is_number(ta) and is_number(tb)):
        raise _Fail("anchoring", "the differing token is not a number on both sides")
    for side, line in (("A", a[index]), ("B", b[index])):
        if sum(is_number(t) for t in tokens(line)) != 1:
            raise _Fail("anchoring", f"the anchor line of {side} carries another number beside the anchor")
    c = item["versions"]["C"].split("\n")
    if len(c) != len(a) or c[index] != a[index]:
        raise _Fail("anchoring", "C does not keep A's anchor line")
    anchors = {number_value(ta), number_value(tb)}
    for version in ("A", "B", "C"):
        lines = item["versions"][version].split("\n")
        elsewhere = [number_value(t) for i, line in enumerate(lines) if i != index
                     for t in tokens(line) if is_number(t)]
        if anchors & set(elsewhere):
            raise _Fail("anchoring", f"the anchor number also appears elsewhere in {version}")


def _rule_wording_risky(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = _differing(a, b)
    if not diff:
        raise _Fail("wording_risky", "B is identical to A")
    for i in diff:
        la, lb = option_letter(a[i], options), option_letter(b[i], options)
        if la is None or lb is None:
            raise _Fail("wording_risky", "a line other than an option line differs")
        if la != lb:
            raise _Fail("wording_risky", "an option line changes its label")
    roles = (item.get("structure") or {}).get("roles") or {}
    for letter in options:
        lines = {version: next((line for line in text if option_letter(line, options) == letter), None)
                 for version, text in (("A", a), ("B", b))}
        if lines["A"] is None or lines["B"] is None:
            raise _Fail("wording_risky", f"option {letter} has no line in {'A' if lines['A'] is None else 'B'}")
        found = option_frames(str(item.get("item_id")), str(roles.get(letter)))
        if found is None:
            raise _Fail("wording_risky", f"no catalogue gain and loss templates for option {letter} of this item")
        frames, names = found
        _check_option_frames(letter, tokens(lines["A"])[3:], tokens(lines["B"])[3:], frames, names)


class _Filled(Mapping):
    """Template values for a replayed line: the names read off A, every other value a placeholder number."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)

    def __getitem__(self, key: str):
        return self.names.get(key, 0)

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


MAX_READINGS = 16


def template_readings(template: str, line: Sequence[str], names: Sequence[str]) -> tuple[list[tuple[dict, dict]], int]:
    """Every way the tokens ``line`` are a rendering of ``template``, and how far the best attempt read.

    A reading is ``(choices, captured)``: the alternative taken in every
    choice group (keyed like :func:`panels.template.render`'s record) and
    the word each name placeholder in ``names`` stands for.  A number value
    reads any one number token (numbers are gate 1's), a name one word.
    At most :data:`MAX_READINGS` readings are returned.
    """
    furthest = 0
    want_names = set(names)

    def read(nodes: list, k: int, pos: int, path: tuple, choices: dict, captured: dict) -> Iterator[tuple]:
        nonlocal furthest
        furthest = max(furthest, pos)
        if k == len(nodes):
            yield pos, choices, captured
            return
        node = nodes[k]
        if isinstance(node, str):
            want = tokens(node)
            got = list(line[pos:pos + len(want)])
            if got == want:
                yield from read(nodes, k + 1, pos + len(want), path, choices, captured)
            else:
                same = next((j for j, (x, y) in enumerate(zip(got, want)) if x != y), len(got))
                furthest = max(furthest, pos + same)
            return
        if node[0] == "var":
            if pos >= len(line):
                return
            token = line[pos]
            if node[1] in want_names:
                if token[:1].isalpha() and captured.get(node[1], token) == token:
                    yield from read(nodes, k + 1, pos + 1, path, choices, {**captured, node[1]: token})
            elif is_number(token):
                yield from read(nodes, k + 1, pos + 1, path, choices, captured)
            return
        if node[0] == "choice":
            key = path + (k,)
            for index, alternative in enumerate(node[1]):
                for end, c, cap in read(alternative, 0, pos, key + (index,), {**choices, key: index}, captured):
                    yield from read(nodes, k + 1, end, path, c, cap)
        # an unreplaced [[MARK]] reads nothing

    readings = []
    for end, choices, captured in read(parse(template), 0, 0, (), {}, {}):
        if end == len(line):
            readings.append((choices, captured))
            if len(readings) >= MAX_READINGS:
                break
    return readings, furthest


def _first_difference(got: Sequence[str], want: Sequence[str]) -> str:
    """The first word where ``got`` leaves ``want``: stray, missing or exchanged (one word, quoted)."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, list(got), list(want), autojunk=False).get_opcodes():
        if tag == "replace":
            return f"'{got[i1]}' where the template has '{want[j1]}'"
        if tag == "delete":
            return f"a stray '{got[i1]}'"
        if tag == "insert":
            return f"a missing '{want[j1]}'"
    return "no difference"


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
        raise _Fail("wording_risky", f"A's option {letter} line is not its gain template word for word: it "
                                     f"departs from it at {where} (token {furthest + 1} after the label)")
    got = _placeholders(line_b)
    first_want = None
    for choices, captured in readings:
        try:
            want = _words_only(render_choices(frames["loss"], _Filled(captured), choices, "loss template"))
        except TemplateError:
            continue
        if got == want:
            return
        first_want = first_want or want
    if first_want is None:
        raise _Fail("wording_risky", f"the loss template of option {letter} cannot replay A's choices")
    raise _Fail("wording_risky", f"B's option {letter} line is not its loss template with A's choices, word for "
                                 f"word: {_first_difference(got, first_want)}")


def _sunk_phrase(amount: str) -> list[str]:
    return tokens(SUNK_PHRASE.format(spent=amount))


def _rule_wording_sunk(a: list[str], b: list[str], item: Mapping, options: Sequence[str]) -> None:
    diff = _differing(a, b)
    if len(diff) != 1:
        raise _Fail("wording_sunk", f"{len(diff)} lines differ, not exactly one")
    index = diff[0]
    if option_letter(a[index], options) is None or option_letter(a[index], options) != option_letter(b[index], options):
        raise _Fail("wording_sunk", "the differing line is not the same option line in A and B")
    ta, tb = tokens(a[index]), tokens(b[index])
    extra = len(tb) - len(ta)
    template = _sunk_phrase("0")
    if extra != len(template):
        raise _Fail("wording_sunk", "B's option line is not A's plus exactly the fixed phrase")
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
                raise _Fail("wording_sunk", "the phrase names an amount A does not state")
            return
    raise _Fail("wording_sunk", "B's option line is not A's plus exactly the fixed phrase")


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
    diff = _differing(a, b)
    if len(diff) != 1:
        raise _Fail("wording_base_rate", f"{len(diff)} lines differ, not exactly one (the rates paragraph)")
    index = diff[0]
    if option_letter(a[index], options) or option_letter(b[index], options):
        raise _Fail("wording_base_rate", "the differing line is an option line, not the rates paragraph")
    pcts = _percentages(a[index])
    numbers_a = [t for t in tokens(a[index]) if is_number(t)]
    if len(pcts) != 3 or len(numbers_a) != 3:
        raise _Fail("wording_base_rate", "A's rates paragraph must give exactly three percentages and no other number")
    tb = tokens(b[index])
    if "%" in tb:
        raise _Fail("wording_base_rate", "B's rates paragraph still gives a percentage")
    numbers = (item.get("structure") or {}).get("values") or {}
    for version, line, style in (("A", a[index], "pct"), ("B", b[index], "freq")):
        try:
            template = catalogue_rates("base_rate_neglect", str(item.get("item_id")), style, numbers)
        except (KeyError, ValueError):
            template = None
        if template is None:
            raise _Fail("wording_base_rate", f"no catalogue rates paragraph ({style}) for this item and numbers")
        if _words_only(line) != _words_only(template):
            raise _Fail("wording_base_rate", f"{version}'s rates paragraph is not the item's catalogue "
                                             f"{'percentage' if style == 'pct' else 'natural-frequency'} "
                                             f"template word for word")
    freqs = [number_value(t) for t in tb if is_number(t)]
    if not frequencies_match(pcts, freqs):
        raise _Fail("wording_base_rate", "B's natural frequencies do not equal A's percentages exactly")
    _check_frequency_places(str(item.get("item_id")), a[index], b[index])


@functools.lru_cache(maxsize=None)
def _scenarios(family: str) -> dict:
    try:
        module = importlib.import_module(f"panels.families.{family}")
    except ModuleNotFoundError:
        return {}
    return {scenario.item_id: scenario for scenario in module.SCENARIOS}


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
        raise _Fail("wording_base_rate", "no catalogue rates templates for this item")
    pct_places, freq_places = first_value_names(scenario.rates_pct), first_value_names(scenario.rates_freq)
    stated = {}
    for places, line, version in ((pct_places, line_a, "A"), (freq_places, line_b, "B")):
        numbers = [number_value(t) for t in tokens(line) if is_number(t)]
        if len(numbers) != len(places):
            raise _Fail("wording_base_rate", f"{version}'s rates paragraph does not give one number per place "
                                             f"of its template")
        for place, number in zip(places, numbers):
            if stated.setdefault((version, place), number) != number:
                raise _Fail("wording_base_rate", f"{version}'s rates paragraph gives two different numbers "
                                                 f"for {place}")
    pct = {place: n for (version, place), n in stated.items() if version == "A"}
    population = stated.get(("B", "population"))
    if sorted(pct) != ["base_pct", "fpr_pct", "sens_pct"] or population is None:
        raise _Fail("wording_base_rate", "the catalogue templates do not name the three rates and the population")
    try:
        counts = dict(derived("base_rate_neglect", dict(pct, population=population), item_id),
                      population=population)
    except ScenarioError:
        raise _Fail("wording_base_rate", "A's percentages of B's population are not whole numbers") from None
    for place, number in zip(freq_places, [number_value(t) for t in tokens(line_b) if is_number(t)]):
        if counts.get(place) != number:
            raise _Fail("wording_base_rate", f"B's natural frequency in the place of {place} is not the count "
                                             f"A's percentages give")


def _words_only(line: str) -> list[str]:
    """The line's tokens with every number replaced by one placeholder: what must match a template."""
    return _placeholders(tokens(line))


def _placeholders(line: Sequence[str]) -> list[str]:
    return ["#" if is_number(t) else t for t in line]


def _rule_a_prime(item: Mapping) -> None:
    a, a_prime = item["versions"]["A"], item["versions"]["A_prime"]
    if a == a_prime:
        raise _Fail("a_prime", "A′ is identical to A")
    if strip_surface(a) != strip_surface(a_prime):
        raise _Fail("a_prime", "A′ differs from A in more than whitespace and punctuation")


def _c_changes(item: Mapping) -> set[tuple[int, int]]:
    """The (A's number, C's number) pairs C's structure changes: its one changed value and what follows from it."""
    structure = item.get("structure") or {}
    try:
        family, values, c_values = structure["family"], dict(structure["values"]), dict(structure["c_values"])
        both = [dict(numbers, **derived(family, numbers, str(item.get("item_id")))) for numbers in (values, c_values)]
    except (KeyError, TypeError, ValueError, ScenarioError):
        raise _Fail("c_numbers_only", "the structure does not say which number C changes") from None
    return {(both[0][key], both[1][key]) for key in both[0] if both[0][key] != both[1].get(key)}


def _rule_c(item: Mapping) -> None:
    a, c = item["versions"]["A"].split("\n"), item["versions"]["C"].split("\n")
    if len(a) != len(c):
        raise _Fail("c_numbers_only", "C has a different number of lines than A")
    allowed = _c_changes(item)
    changed = 0
    for la, lc in zip(a, c):
        ta, tc = tokens(la), tokens(lc)
        if len(ta) != len(tc):
            raise _Fail("c_numbers_only", "a line of C gains or loses tokens")
        for x, y in zip(ta, tc):
            if x != y:
                if not (is_number(x) and is_number(y)):
                    raise _Fail("c_numbers_only", "C differs from A in a token that is not a number")
                if (number_value(x), number_value(y)) not in allowed:
                    raise _Fail("c_numbers_only", "C changes a number its structure does not change "
                                                  "(only the changed value may differ from A)")
                changed += 1
    if not changed:
        raise _Fail("c_numbers_only", "C is identical to A")


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
        by_family = {"risky_choice_framing": ("wording_risky", _rule_wording_risky),
                     "sunk_cost_fallacy": ("wording_sunk", _rule_wording_sunk),
                     "base_rate_neglect": ("wording_base_rate", _rule_wording_base)}
        if family in by_family:
            return by_family[family]
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
        except _Fail as exc:
            failures.append(Failure(pid, item_id, exc.rule if exc.rule != "line_count" else name, exc.detail))
    return failures


def check_protocol(protocol: Mapping) -> list[Failure]:
    """Gate 1b over every item of a protocol (hash-only records have none)."""
    return [f for item in protocol.get("panel") or [] for f in check_item(protocol, item)]


def check_all(protocols: Iterable[Mapping]) -> list[Failure]:
    return [f for p in protocols for f in check_protocol(p)]


# --------------------------------------------------------------------------- self-test
def _replace_line(text: str, index: int, new: str) -> str:
    lines = text.split("\n")
    lines[index] = new
    return "\n".join(lines)


def _first_line_index(text: str, want: Callable[[str], bool]) -> int:
    return next(i for i, line in enumerate(text.split("\n")) if want(line))


def _touch(line: str) -> str:
    """A token-level edit that keeps the line's length in tokens: repeat its first word."""
    t = tokens(line)
    word = next(x for x in t if x.isalpha())
    return line.replace(word, word + " " + word, 1)


def _breakages(protocol: Mapping, item: Mapping) -> list[tuple[str, str, dict]]:
    """Deliberately broken versions of one real item, each with the rule that must catch it."""
    family, rewording_type = protocol["family"], protocol["rewording_type"]
    v = dict(item["versions"])
    a, b = v["A"], v["B"]
    a_lines, b_lines = a.split("\n"), b.split("\n")
    first_context = _first_line_index(a, lambda line: bool(line.strip()))
    out = []
    rule, _ = b_rule(family, rewording_type)
    diff = [i for i, (x, y) in enumerate(zip(a_lines, b_lines)) if x != y]
    if rewording_type == "order":
        # Reordered options plus a stray word in a context line.
        out.append((rule, "a context line also changed", dict(v, B=_replace_line(b, first_context, _touch(b_lines[first_context])))))
    elif rewording_type == "default":
        # The default letter switched and one more word changed in the same line.
        line = b_lines[diff[0]]
        out.append((rule, "the default line also changed a word", dict(v, B=_replace_line(b, diff[0], _touch(line)))))
    elif rewording_type == "anchoring":
        # The anchor replaced by a number the scenario itself uses.
        used = next(t for i, line in enumerate(a_lines) if i != diff[0] for t in tokens(line) if is_number(t))
        anchor = next(t for t in tokens(b_lines[diff[0]]) if is_number(t))
        out.append((rule, "the anchor is a number the scenario uses",
                    dict(v, B=_replace_line(b, diff[0], b_lines[diff[0]].replace(anchor, used, 1)))))
    elif rule == "wording_risky":
        out.append((rule, "a context line also changed", dict(v, B=_replace_line(b, first_context, _touch(b_lines[first_context])))))
        # The option lines' own words: gate 1 reads only their numbers, so these are gate 1b's alone.
        options = protocol["options"]
        option_lines = [i for i, line in enumerate(b_lines) if option_letter(line, options)]
        first = option_lines[0]
        out.append((rule, "a word of an option line replaced by another of its words",
                    dict(v, B=_replace_line(b, first, _replace_word(b_lines[first])))))
        out.append((rule, "a word of an option line repeated", dict(v, B=_replace_line(b, first, _touch(b_lines[first])))))
        same_numbers = [i for i in option_lines if i < len(a_lines)
                        and invariants.numbers_in(a_lines[i]) == invariants.numbers_in(b_lines[i])]
        if same_numbers:
            # The numbers right, the frame wrong: B's line describes the outcome as A's gain line does.
            out.append((rule, "an option line keeps A's gain wording", dict(v, B=_replace_line(b, same_numbers[0],
                                                                                            a_lines[same_numbers[0]]))))
    elif rule == "wording_sunk":
        line = b_lines[diff[0]]
        phrase_amount = next(t for t in tokens(line) if is_number(t) and t not in tokens(a_lines[diff[0]]))
        wrong = f"{number_value(phrase_amount) + 1000:,}"
        out.append((rule, "the phrase names another amount than A states",
                    dict(v, B=_replace_line(b, diff[0], line.replace(phrase_amount, wrong, 1)))))
    elif rule == "wording_base_rate":
        line = b_lines[diff[0]]
        last = [t for t in tokens(line) if is_number(t)][-1]
        cut = line.rfind(last)
        broken = line[:cut] + f"{number_value(last) + 1:,}" + line[cut + len(last):]
        out.append((rule, "one natural frequency is off by one", dict(v, B=_replace_line(b, diff[0], broken))))
        # A stray word in the rates paragraph, the numbers untouched.
        out.append((rule, "a stray word in the rates paragraph", dict(v, B=_replace_line(b, diff[0], _touch(line)))))
        # A needed count gone: the others written as the population (the set of numbers still fits).
        dropped = _others_as_population(str(item["item_id"]), line)
        if dropped is not None:
            out.append((rule, "a needed count written as another", dict(v, B=_replace_line(b, diff[0], dropped))))
    # A′ that changes a letter, not only whitespace or punctuation.
    line = v["A_prime"].split("\n")[first_context]
    word = next(x for x in tokens(line) if x.isalpha() and len(x) > 3)
    out.append(("a_prime", "A′ changes a word", dict(v, A_prime=_replace_line(v["A_prime"], first_context,
                                                                               line.replace(word, word[:-1], 1)))))
    # C: a second number changed (one C's structure does not change), and a word changed.
    c = v["C"]
    second = _change_other_number(c, _c_changes(item))
    if second is not None:
        out.append(("c_numbers_only", "C changes a second number", dict(v, C=second)))
    c_lines = c.split("\n")
    out.append(("c_numbers_only", "C changes a word", dict(v, C=_replace_line(c, first_context,
                                                                             _replace_word(c_lines[first_context])))))
    # Gate 1's order-aware rules: two different numbers of one B line swapped in place.
    for rule_name, want in (("gate1:option_numbers", lambda line: option_letter(line, protocol["options"])),
                            ("gate1:context_numbers", lambda line: not option_letter(line, protocol["options"]))):
        swapped = _swap_two_numbers(b, want)
        if swapped is not None:
            out.append((rule_name, "two numbers of one line swapped", dict(v, B=swapped)))
    return [(r, what, dict(item, versions=versions)) for r, what, versions in out]


def _replace_word(line: str) -> str:
    """The line with its last word replaced by its first other word: same length in tokens, one word changed."""
    found = [m for m in TOKEN.finditer(line) if m.group().isalpha()]
    last = found[-1]
    other = next(m.group() for m in found if m.group() != last.group())
    return line[:last.start()] + other + line[last.end():]


def _others_as_population(item_id: str, line: str) -> Optional[str]:
    """B's rates paragraph with the number in the place of ``others`` replaced by the population's, else None."""
    scenario = _scenarios("base_rate_neglect").get(item_id)
    if scenario is None:
        return None
    places = first_value_names(scenario.rates_freq)
    found = list(NUMBER_TOKEN.finditer(line))
    if len(found) != len(places) or "others" not in places or "population" not in places:
        return None
    others, population = found[places.index("others")], found[places.index("population")]
    return line[:others.start()] + population.group() + line[others.end():]


def _change_other_number(text: str, changes: set[tuple[int, int]]) -> Optional[str]:
    """``text`` with its first number that C's structure does not change raised by one, else None."""
    changed = {new for _, new in changes}
    for m in NUMBER_TOKEN.finditer(text):
        if number_value(m.group()) not in changed:
            return text[:m.start()] + f"{number_value(m.group()) + 1:,}" + text[m.end():]
    return None


def _swap_two_numbers(text: str, want: Callable[[str], object]) -> Optional[str]:
    """``text`` with the first two different numbers of the first wanted line swapped, else None."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not want(line):
            continue
        found = [(m.start(), m.end(), m.group()) for m in NUMBER_TOKEN.finditer(line)]
        for j in range(len(found)):
            for k in range(j + 1, len(found)):
                (s1, e1, x), (s2, e2, y) = found[j], found[k]
                if number_value(x) != number_value(y):
                    lines[i] = line[:s1] + y + line[e1:s2] + x + line[e2:]
                    return "\n".join(lines)
    return None


def self_test(protocols: Iterable[Mapping]) -> list[dict]:
    """Break B for each catalogue rule, and A′ and C, on real items; report each verdict.

    Gate 1's order-aware rules are tested the same way (rows
    ``gate1:option_numbers`` and ``gate1:context_numbers``: two different
    numbers of one B line swapped in place), since a swap keeps every number
    of the scenario and only order can catch it.

    Each row: ``rule``, ``protocol_id``, ``breakage`` (what was broken, in
    words of this module, not of the scenario), ``accepted_original``
    (the unbroken item passes) and ``rejected`` (the broken one fails with
    that rule).  Every rule of :data:`CATALOGUE` must appear (one protocol
    tests it; some rules are broken in several ways there).
    """
    rows, seen = [], set()
    for protocol in protocols:
        if not protocol.get("panel"):
            continue
        rule, _ = b_rule(protocol["family"], protocol["rewording_type"])
        wanted = [r for r in (rule, "a_prime", "c_numbers_only") + GATE_1_RULES if r not in seen]
        if not wanted:
            continue
        item = protocol["panel"][0]
        original_ok = not check_item(protocol, item) and not invariants.check_item(protocol, item)
        for r, what, broken in _breakages(protocol, item):
            if r not in wanted:
                continue
            seen.add(r)
            if r.startswith("gate1:"):
                failures = invariants.check_item(protocol, broken)
                rejected = any(f.rule == r.split(":", 1)[1] for f in failures)
            else:
                rejected = any(f.rule == r for f in check_item(protocol, broken))
            rows.append({"rule": r, "protocol_id": protocol["protocol_id"], "breakage": what,
                         "accepted_original": original_ok, "rejected": rejected})
    return rows


GATE_1_RULES = ("gate1:option_numbers", "gate1:context_numbers")
CATALOGUE = ("order", "default", "anchoring", "wording_risky", "wording_sunk", "wording_base_rate", "a_prime",
             "c_numbers_only") + GATE_1_RULES


def self_test_failures(protocols: Iterable[Mapping]) -> list[Failure]:
    """The self-test as failures: a broken version accepted, a rule untested, or a real item rejected."""
    rows = self_test(protocols)
    failures = []
    for row in rows:
        if not row["rejected"]:
            failures.append(Failure(row["protocol_id"], "s01", f"self_test:{row['rule']}",
                                    f"a deliberately broken version was accepted ({row['breakage']})"))
        if not row["accepted_original"]:
            failures.append(Failure(row["protocol_id"], "s01", f"self_test:{row['rule']}",
                                    "the unbroken item used for the self-test does not pass"))
    missing = [r for r in CATALOGUE if r not in {row["rule"] for row in rows}]
    for rule in missing:
        failures.append(Failure("-", "-", f"self_test:{rule}", "no protocol of this rule was available to test"))
    return failures
