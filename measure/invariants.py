"""Gate 1 — structural invariants of a protocol's panel (method §3).

B is an equivalent rewording of A only if it poses the same decision
problem.  This gate checks that mechanically, per item, in two directions:

* **the structure against itself** — the declared lotteries are the ones
  the family's formulas give for the declared numbers; both options of A,
  A′ and B have exactly equal expected value (so no option is normatively
  correct there, in any of the three); C changes exactly one number and then
  has exactly one strictly dominant option, the one the family names as the
  choice a reader of A would *not* make by default;
* **the texts against the structure** — every version has one line per
  option; each option line quotes, *in order*, exactly the numbers that
  option offers in that version's frame (:func:`version_frame`: gain or loss
  description, percentages or natural frequencies, the sunk amount named or
  not — only the ``wording`` type's B is transformed), under the version's
  numbers (A, A′ and B use ``values``, C uses ``c_values``); the rest of the
  text quotes, in order and nothing else, what the family states there (the
  amount at stake; the money already spent; the rates: base rate, hit rate,
  false-alarm rate as percentages, or population, true cases, flagged true
  cases, true cases, flagged others, others as natural frequencies), plus in
  an ``anchoring`` protocol exactly one lone anchor number.  Order matters
  because it carries the meaning: a B that swaps a gamble's two chances, or
  the two flagged counts, quotes the right *set* of numbers and still poses
  another problem.  A B that quietly changed a payoff or a probability
  therefore fails here even when its structure block is untouched.

Pure standard library, like the rest of :mod:`measure`: the family
formulas below deliberately repeat the panel builder's
(``panels/scenario.py``) rather than import them, so the gate does not trust
the code it checks; a test asserts the two agree.

Messages name the protocol, the item, the rule and the quantity by its key;
they never quote scenario text, so the gate can run where text is sealed.
"""
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping, Optional, Sequence

VERSIONS = ("A", "A_prime", "B", "C")
OPTION_PREFIX = "Option {letter}: "
OPTION_LINE = re.compile(r"^Option ([A-Z]): ")
NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
_NO_COMMA = str.maketrans("", "", ",")

FAMILY_KEYS = {
    "risky_choice_framing": ("total", "sure", "p_pct"),
    "sunk_cost_fallacy": ("spent", "stop_value", "win", "p_pct"),
    "base_rate_neglect": ("population", "base_pct", "sens_pct", "fpr_pct", "pay_case", "pay_clear"),
}
FAMILY_ROLES = {
    "risky_choice_framing": ("sure", "gamble"),
    "sunk_cost_fallacy": ("stop", "finish"),
    "base_rate_neglect": ("case", "clear"),
}
# The option C must make dominant: the one a reader of A would not pick by default.
C_DOMINANT_ROLE = {
    "risky_choice_framing": "gamble",
    "sunk_cost_fallacy": "stop",
    "base_rate_neglect": "clear",
}
PCT_KEYS = ("p_pct", "base_pct", "sens_pct", "fpr_pct")
STRUCTURE_FIELDS = ("family", "roles", "values", "c_values", "changed_key", "lotteries", "c_lotteries",
                    "expected_value", "c_expected_value", "correct", "c_correct")


@dataclass(frozen=True)
class Failure:
    """One failed check: where (protocol, item), which rule, and why in words."""

    protocol_id: str
    item_id: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.protocol_id} {self.item_id} [{self.rule}] {self.detail}"


class _Fail(Exception):
    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule
        self.detail = detail


def _whole(numerator: int, denominator: int, what: str) -> int:
    if numerator % denominator:
        raise _Fail("derived_whole", f"{what} is not a whole number")
    return numerator // denominator


def derived(family: str, values: Mapping[str, int]) -> dict[str, int]:
    """The quantities a text may quote besides the values themselves."""
    if family == "risky_choice_framing":
        return {"q_pct": 100 - values["p_pct"], "sure_lost": values["total"] - values["sure"]}
    if family == "sunk_cost_fallacy":
        return {"q_pct": 100 - values["p_pct"]}
    if family == "base_rate_neglect":
        population = values["population"]
        true_n = _whole(population * values["base_pct"], 100, "true_n")
        flagged_true = _whole(true_n * values["sens_pct"], 100, "flagged_true")
        others = population - true_n
        flagged_false = _whole(others * values["fpr_pct"], 100, "flagged_false")
        return {"true_n": true_n, "flagged_true": flagged_true, "others": others,
                "flagged_false": flagged_false, "flagged_n": flagged_true + flagged_false}
    raise _Fail("family", f"unknown family {family!r}")


def lotteries(family: str, values: Mapping[str, int]) -> dict[str, list[list[int]]]:
    """Per role, the outcomes as ``[numerator, denominator, payoff]`` rows."""
    d = derived(family, values)
    if family == "risky_choice_framing":
        return {"sure": [[1, 1, values["sure"]]],
                "gamble": [[values["p_pct"], 100, values["total"]], [d["q_pct"], 100, 0]]}
    if family == "sunk_cost_fallacy":
        return {"stop": [[1, 1, values["stop_value"]]],
                "finish": [[values["p_pct"], 100, values["win"]], [d["q_pct"], 100, 0]]}
    flagged = d["flagged_n"]
    return {"case": [[d["flagged_true"], flagged, values["pay_case"]], [d["flagged_false"], flagged, 0]],
            "clear": [[d["flagged_false"], flagged, values["pay_clear"]], [d["flagged_true"], flagged, 0]]}


def expected_value(rows: Sequence[Sequence[int]]) -> Fraction:
    """Exact expected value of one lottery; its probabilities must sum to one."""
    total = sum((Fraction(num, den) for num, den, _ in rows), Fraction(0))
    if total != 1:
        raise _Fail("probabilities", "a lottery's probabilities do not sum to one")
    return sum((Fraction(num, den) * payoff for num, den, payoff in rows), Fraction(0))


def fraction_text(value: Fraction) -> str:
    """An exact expected value as text: ``240`` or ``1200/7``."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def dominant(evs: Mapping[str, Fraction]) -> Optional[str]:
    """The one option whose expected value strictly beats every other, else None."""
    best = max(evs.values())
    top = [key for key, ev in evs.items() if ev == best]
    return top[0] if len(top) == 1 else None


def version_frame(family: str, rewording_type: Optional[str], version: str) -> str:
    """What a version presents, from its type alone: the one place the text may be transformed.

    ``gain``/``loss`` (risky choice), ``pct``/``freq`` (base rate: percentages
    or natural frequencies), ``plain``/``sunk`` (sunk cost: the stop option
    names the money already spent).  Only the ``wording`` type's B is
    transformed; A, A′, C and every other type's B show the base frame.
    """
    transformed = version == "B" and rewording_type == "wording"
    if family == "risky_choice_framing":
        return "loss" if transformed else "gain"
    if family == "base_rate_neglect":
        return "freq" if transformed else "pct"
    return "sunk" if transformed else "plain"


def option_numbers(family: str, role: str, shown: str, values: Mapping[str, int]) -> list[list[int]]:
    """The acceptable *ordered* number sequences one option line may quote.

    Order carries meaning (which percentage is the chance of saving all, which
    count is saved), so a line quoting the right numbers in the wrong places
    fails.  Each list is one acceptable sequence.
    """
    v = dict(values, **derived(family, values))
    if family == "risky_choice_framing":
        if role == "sure":
            return [[v["sure"] if shown == "gain" else v["sure_lost"], v["total"]]]
        return [[v["p_pct"], v["total"], v["q_pct"]]]
    if family == "sunk_cost_fallacy":
        if role == "stop":
            # The wording type's B names the money already spent inside this option.
            return [[v["spent"], v["stop_value"]]] if shown == "sunk" else [[v["stop_value"]]]
        return [[v["p_pct"], v["win"], v["q_pct"]]]
    return [[v["pay_case" if role == "case" else "pay_clear"]]]


def context_numbers(family: str, shown: str, values: Mapping[str, int]) -> tuple[str, list[int], bool]:
    """What the non-option text must quote, in order: ``(what, sequence, may_repeat)``.

    ``may_repeat``: the sequence is one number the text may state once or
    more (the amount at stake, the money already spent); otherwise the text's
    numbers must be exactly the sequence (the rates paragraph).
    """
    v = dict(values, **derived(family, values))
    if family == "risky_choice_framing":
        return "amount at stake", [v["total"]], True
    if family == "sunk_cost_fallacy":
        return "money already spent", [v["spent"]], True
    if shown == "freq":
        return ("rates as natural frequencies (population, true cases, flagged true cases, true cases, "
                "flagged others, others)",
                [v["population"], v["true_n"], v["flagged_true"], v["true_n"], v["flagged_false"], v["others"]],
                False)
    return "rates as percentages (base rate, hit rate, false-alarm rate)", \
        [v["base_pct"], v["sens_pct"], v["fpr_pct"]], False


def numbers_in(text: str) -> list[int]:
    """Every number written in digits (``12,500`` is one number)."""
    return [int(match.translate(_NO_COMMA)) for match in NUMBER.findall(text)]


def _check_structure(family: str, options: Sequence[str], structure: Mapping) -> None:
    missing = [name for name in STRUCTURE_FIELDS if name not in structure]
    if missing:
        raise _Fail("structure_fields", f"structure lacks {', '.join(missing)}")
    if structure["family"] != family:
        raise _Fail("structure_fields", "structure names another family than the protocol")
    roles = structure["roles"]
    if sorted(roles) != sorted(options) or len(options) != len(FAMILY_ROLES[family]):
        raise _Fail("option_count", f"structure has {len(roles)} options, the protocol lists {len(options)}")
    if sorted(roles.values()) != sorted(FAMILY_ROLES[family]):
        raise _Fail("option_count", "the options are not the family's roles, one each")
    keys = FAMILY_KEYS[family]
    for label in ("values", "c_values"):
        numbers = structure[label]
        if sorted(numbers) != sorted(keys):
            raise _Fail("value_keys", f"{label} must have exactly the keys {', '.join(keys)}")
        for key, value in numbers.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise _Fail("value_keys", f"{label}.{key} must be a positive whole number")
            if key in PCT_KEYS and not 0 < value < 100:
                raise _Fail("value_keys", f"{label}.{key} must lie strictly between 0 and 100")
    changed = [key for key in keys if structure["values"][key] != structure["c_values"][key]]
    if len(changed) != 1 or changed[0] != structure["changed_key"]:
        raise _Fail("one_number_changed", f"C must change exactly one number (the declared "
                                          f"{structure['changed_key']!r}); it changes {len(changed)}")
    for label, numbers, ev_label in (("lotteries", structure["values"], "expected_value"),
                                     ("c_lotteries", structure["c_values"], "c_expected_value")):
        want = lotteries(family, numbers)
        declared = structure[label]
        for letter, role in roles.items():
            if declared.get(letter) != want[role]:
                raise _Fail("lotteries_match", f"{label}.{letter} is not the {role} lottery the numbers give")
            if structure[ev_label].get(letter) != fraction_text(expected_value(want[role])):
                raise _Fail("lotteries_match", f"{ev_label}.{letter} is not that lottery's expected value")
    evs = {letter: expected_value(rows) for letter, rows in structure["lotteries"].items()}
    if len(set(evs.values())) != 1:
        raise _Fail("equal_ev", "the options of A, A′ and B do not have equal expected value")
    if structure["correct"] is not None or dominant(evs) is not None:
        raise _Fail("correct_answer", "A, A′ and B must share the same answer: no option is normatively correct")
    c_evs = {letter: expected_value(rows) for letter, rows in structure["c_lotteries"].items()}
    winner = dominant(c_evs)
    if winner is None:
        raise _Fail("c_dominance", "C has no strictly dominant option")
    if structure["c_correct"] != winner:
        raise _Fail("c_dominance", "the declared c_correct is not C's dominant option")
    if roles[winner] != C_DOMINANT_ROLE[family]:
        raise _Fail("c_dominance", f"C's dominant option must be the {C_DOMINANT_ROLE[family]!r} option, "
                                   f"the one a reader of A would not pick by default")


def _split(text: str, instruction: str, options: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Option lines by letter, and the other (context) lines, instruction removed."""
    if not text.endswith(instruction):
        raise _Fail("instruction", "the version does not end with the protocol's decision instruction")
    body = text[: len(text) - len(instruction)]
    option_lines: dict[str, str] = {}
    context: list[str] = []
    for line in body.split("\n"):
        match = OPTION_LINE.match(line)
        if match:
            letter = match.group(1)
            if letter not in options:
                raise _Fail("option_count", f"a line offers option {letter!r}, which the protocol does not list")
            if letter in option_lines:
                raise _Fail("option_count", f"option {letter} is offered on two lines")
            option_lines[letter] = line[match.end():]
        else:
            context.append(line)
    missing = [letter for letter in options if letter not in option_lines]
    if missing:
        raise _Fail("option_count", f"no line offers option {', '.join(missing)}")
    return option_lines, context


def _check_text(family: str, rewording_type: str, options: Sequence[str], instruction: str,
                structure: Mapping, version: str, text: str) -> None:
    numbers = structure["c_values"] if version == "C" else structure["values"]
    shown = version_frame(family, rewording_type, version)
    option_lines, context = _split(text, instruction, options)
    for letter, line in option_lines.items():
        role = structure["roles"][letter]
        if numbers_in(line) not in option_numbers(family, role, shown, numbers):
            raise _Fail("option_numbers", f"{version}: option {letter} does not quote, in order, the numbers "
                                          f"its {role} option offers ({shown} frame)")
    allowed = set(numbers.values()) | set(derived(family, numbers).values())
    if rewording_type == "anchoring":
        extra = [n for line in context for n in numbers_in(line) if n not in allowed]
        if len(extra) != 1:
            raise _Fail("text_numbers", f"{version}: an anchoring version quotes exactly one number that is "
                                        f"not the scenario's; found {len(extra)}")
        anchor_lines = [i for i, line in enumerate(context) if extra[0] in numbers_in(line)]
        if len(anchor_lines) != 1 or len(numbers_in(context[anchor_lines[0]])) != 1:
            raise _Fail("text_numbers", f"{version}: the anchor number must stand alone on its line")
        context = [line for i, line in enumerate(context) if i != anchor_lines[0]]
    quoted = [n for line in context for n in numbers_in(line)]
    if any(n not in allowed for n in quoted):
        raise _Fail("text_numbers", f"{version}: the text quotes "
                                    f"{sum(n not in allowed for n in quoted)} number(s) that are not the scenario's")
    what, want, may_repeat = context_numbers(family, shown, numbers)
    if may_repeat:
        ok = bool(quoted) and all(n == want[0] for n in quoted)
    else:
        ok = quoted == want
    if not ok:
        raise _Fail("context_numbers", f"{version}: the text outside the options does not state, in order and "
                                       f"nothing else, the {what}")


def check_item(protocol: Mapping, item: Mapping) -> list[Failure]:
    """Gate 1 for one item; an empty list means it passes."""
    pid = str(protocol.get("protocol_id"))
    item_id = str(item.get("item_id"))
    family = protocol.get("family")
    failures: list[Failure] = []
    if family not in FAMILY_KEYS:
        return [Failure(pid, item_id, "family", f"unknown family {family!r}")]
    options = list(protocol.get("options") or [])
    structure = item.get("structure") or {}
    try:
        _check_structure(family, options, structure)
    except _Fail as exc:
        return [Failure(pid, item_id, exc.rule, exc.detail)]
    versions = item.get("versions") or {}
    if sorted(versions) != sorted(VERSIONS):
        return [Failure(pid, item_id, "versions", f"an item needs exactly the versions {', '.join(VERSIONS)}")]
    for version in VERSIONS:
        try:
            _check_text(family, protocol.get("rewording_type"), options, protocol.get("instruction") or "",
                        structure, version, versions[version])
        except _Fail as exc:
            failures.append(Failure(pid, item_id, exc.rule, exc.detail))
    return failures


def check_protocol(protocol: Mapping) -> list[Failure]:
    """Gate 1 over a whole protocol: every item, plus the panel's own shape."""
    pid = str(protocol.get("protocol_id"))
    panel = protocol.get("panel")
    if not isinstance(panel, list) or not panel:
        return [Failure(pid, "-", "panel", "the protocol has no panel")]
    failures: list[Failure] = []
    ids = [item.get("item_id") for item in panel]
    if len(panel) != protocol.get("n_items") or len(set(ids)) != len(ids) or ids != protocol.get("item_ids"):
        failures.append(Failure(pid, "-", "panel", "item ids must be unique and match item_ids and n_items"))
    for item in panel:
        failures.extend(check_item(protocol, item))
    return failures


def check_all(protocols: Iterable[Mapping]) -> list[Failure]:
    """Gate 1 over many protocols."""
    out: list[Failure] = []
    for protocol in protocols:
        out.extend(check_protocol(protocol))
    return out
