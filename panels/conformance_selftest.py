"""Gate 1b's self-test: break real items the way each rule forbids and prove the rule rejects them.

:func:`self_test` breaks B for every catalogue rule (for risky ``wording``
also the option lines' own words), A′ and C (a second changed number; a
changed word) on real items and checks that the gate rejects each breakage
by the rule that owns it, while the unbroken item passes; it also swaps two
numbers of a B line to prove gate 1's order-aware rules reject that.

The gate under test is passed in (``gate``: :mod:`panels.conformance`, whose
``self_test`` and ``self_test_failures`` call these with themselves) and its
functions are looked up on it at call time, so a gate whose rule was
weakened — a test replaces it — is the one the self-test runs, and reports.
"""
from types import ModuleType
from typing import Callable, Iterable, Mapping, Optional

from measure import invariants
from measure.invariants import Failure
from panels.conformance_tokens import NUMBER_TOKEN, TOKEN, is_number, number_value, option_letter, tokens
from panels.template import first_value_names


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


def _breakages(gate: ModuleType, protocol: Mapping, item: Mapping) -> list[tuple[str, str, dict]]:
    """Deliberately broken versions of one real item, each with the rule that must catch it."""
    family, rewording_type = protocol["family"], protocol["rewording_type"]
    v = dict(item["versions"])
    a, b = v["A"], v["B"]
    a_lines, b_lines = a.split("\n"), b.split("\n")
    first_context = _first_line_index(a, lambda line: bool(line.strip()))
    out = []
    rule, _ = gate.b_rule(family, rewording_type)
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
        dropped = _others_as_population(gate, str(item["item_id"]), line)
        if dropped is not None:
            out.append((rule, "a needed count written as another", dict(v, B=_replace_line(b, diff[0], dropped))))
    # A′ that changes a letter, not only whitespace or punctuation.
    line = v["A_prime"].split("\n")[first_context]
    word = next(x for x in tokens(line) if x.isalpha() and len(x) > 3)
    out.append(("a_prime", "A′ changes a word", dict(v, A_prime=_replace_line(v["A_prime"], first_context,
                                                                               line.replace(word, word[:-1], 1)))))
    # C: a second number changed (one C's structure does not change), and a word changed.
    c = v["C"]
    second = _change_other_number(c, gate._c_changes(item))
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


def _others_as_population(gate: ModuleType, item_id: str, line: str) -> Optional[str]:
    """B's rates paragraph with the number in the place of ``others`` replaced by the population's, else None."""
    scenario = gate._scenarios("base_rate_neglect").get(item_id)
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


def self_test(protocols: Iterable[Mapping], gate: ModuleType) -> list[dict]:
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
        rule, _ = gate.b_rule(protocol["family"], protocol["rewording_type"])
        wanted = [r for r in (rule, "a_prime", "c_numbers_only") + GATE_1_RULES if r not in seen]
        if not wanted:
            continue
        item = protocol["panel"][0]
        original_ok = not gate.check_item(protocol, item) and not invariants.check_item(protocol, item)
        for r, what, broken in _breakages(gate, protocol, item):
            if r not in wanted:
                continue
            seen.add(r)
            if r.startswith("gate1:"):
                failures = invariants.check_item(protocol, broken)
                rejected = any(f.rule == r.split(":", 1)[1] for f in failures)
            else:
                rejected = any(f.rule == r for f in gate.check_item(protocol, broken))
            rows.append({"rule": r, "protocol_id": protocol["protocol_id"], "breakage": what,
                         "accepted_original": original_ok, "rejected": rejected})
    return rows


GATE_1_RULES = ("gate1:option_numbers", "gate1:context_numbers")
CATALOGUE = ("order", "default", "anchoring", "wording_risky", "wording_sunk", "wording_base_rate", "a_prime",
             "c_numbers_only") + GATE_1_RULES


def self_test_failures(protocols: Iterable[Mapping], gate: ModuleType) -> list[Failure]:
    """The self-test as failures: a broken version accepted, a rule untested, or a real item rejected."""
    rows = self_test(protocols, gate)
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
