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
    label.  ``sunk_cost_fallacy``: B is A with the fixed phrase
    ``, giving up the €S already spent,`` inserted once, S being an amount A
    itself states as ``€S`` elsewhere.  ``base_rate_neglect``: only the rates
    paragraph differs; A's gives three percentages, B's gives whole-number
    frequencies that equal them exactly, and, token for token with the
    numbers set aside, A's paragraph is the item's fixed catalogue percentage
    template and B's its natural-frequency template
    (:func:`panels.render.catalogue_rates`) — a stray word fails by name.

Two rules beside the catalogue guard the controls: A′ must equal A once
whitespace and punctuation are removed (and must differ from A), and C may
differ from A only in number tokens.

The gate reads no English: it compares lines and tokens (words, numbers,
single punctuation marks), recognises option lines by their ``Option X:``
label, and uses only numbers from the structure block.  It calls no model
and its messages name protocol, item and rule — never scenario text — so it
can run where the text is sealed.  :func:`self_test` breaks one B per rule
(and one A′) on real items and proves each is rejected; it also swaps two
numbers of a B line to prove gate 1's order-aware rules reject that.

``llmarchive panels check`` runs the self-test and the gate (with the
other checks of :mod:`panels.checks`) over the built protocols of an
archive home.
"""
import itertools
import re
import unicodedata
from fractions import Fraction
from typing import Callable, Iterable, Mapping, Optional, Sequence

from measure import invariants
from measure.invariants import Failure
from panels.render import SUNK_PHRASE, catalogue_rates

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


def _words_only(line: str) -> list[str]:
    """The line's tokens with every number replaced by one placeholder: what must match a template."""
    return ["#" if is_number(t) else t for t in tokens(line)]


def _rule_a_prime(item: Mapping) -> None:
    a, a_prime = item["versions"]["A"], item["versions"]["A_prime"]
    if a == a_prime:
        raise _Fail("a_prime", "A′ is identical to A")
    if strip_surface(a) != strip_surface(a_prime):
        raise _Fail("a_prime", "A′ differs from A in more than whitespace and punctuation")


def _rule_c(item: Mapping) -> None:
    a, c = item["versions"]["A"].split("\n"), item["versions"]["C"].split("\n")
    if len(a) != len(c):
        raise _Fail("c_numbers_only", "C has a different number of lines than A")
    changed = 0
    for la, lc in zip(a, c):
        ta, tc = tokens(la), tokens(lc)
        if len(ta) != len(tc):
            raise _Fail("c_numbers_only", "a line of C gains or loses tokens")
        for x, y in zip(ta, tc):
            if x != y:
                if not (is_number(x) and is_number(y)):
                    raise _Fail("c_numbers_only", "C differs from A in a token that is not a number")
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
    # A′ that changes a letter, not only whitespace or punctuation.
    line = v["A_prime"].split("\n")[first_context]
    word = next(x for x in tokens(line) if x.isalpha() and len(x) > 3)
    out.append(("a_prime", "A′ changes a word", dict(v, A_prime=_replace_line(v["A_prime"], first_context,
                                                                               line.replace(word, word[:-1], 1)))))
    # Gate 1's order-aware rules: two different numbers of one B line swapped in place.
    for rule_name, want in (("gate1:option_numbers", lambda line: option_letter(line, protocol["options"])),
                            ("gate1:context_numbers", lambda line: not option_letter(line, protocol["options"]))):
        swapped = _swap_two_numbers(b, want)
        if swapped is not None:
            out.append((rule_name, "two numbers of one line swapped", dict(v, B=swapped)))
    return [(r, what, dict(item, versions=versions)) for r, what, versions in out]


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
    """Break one B per catalogue rule (and one A′) on real items; report each verdict.

    Gate 1's order-aware rules are tested the same way (rows
    ``gate1:option_numbers`` and ``gate1:context_numbers``: two different
    numbers of one B line swapped in place), since a swap keeps every number
    of the scenario and only order can catch it.

    Each row: ``rule``, ``protocol_id``, ``breakage`` (what was broken, in
    words of this module, not of the scenario), ``accepted_original``
    (the unbroken item passes) and ``rejected`` (the broken one fails with
    that rule).  Every rule in the catalogue must appear once.
    """
    rows, seen = [], set()
    for protocol in protocols:
        if not protocol.get("panel"):
            continue
        rule, _ = b_rule(protocol["family"], protocol["rewording_type"])
        wanted = [r for r in (rule, "a_prime") + GATE_1_RULES if r not in seen]
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
CATALOGUE = ("order", "default", "anchoring", "wording_risky", "wording_sunk", "wording_base_rate", "a_prime") \
    + GATE_1_RULES


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
