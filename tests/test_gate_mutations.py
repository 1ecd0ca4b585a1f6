"""Held-out mutation tests: no B with a changed or swapped number, or a changed word, passes the gates.

For every item of every built protocol (v0 and v1), B is mutated in every
way a careless or dishonest rewrite could change the decision problem
while keeping its look: each number token changed (to itself + 1 and to
every other number the item quotes) and each pair of unequal number tokens
swapped.  Each mutant is handed to the two public entry points,
``measure.invariants.check_protocol`` and ``panels.conformance.check_protocol``;
at least one failure must come back.

The one exception is stated, not hidden: the anchoring type's anchor is by
design an arbitrary number, so replacing it by another arbitrary number is
still an equivalent B; it is mutated only into the scenario's own numbers.

The word-level mutants (a word replaced, a sentence added, a negation, a cue
phrase on an option line, two words exchanged; issue 18 §1) change no number,
so gate 1 cannot see them: gate 1b alone must reject every one, on every item
of every v0 and v1 protocol — 50,246 mutants over the 24 protocols as built
today.  The risky ``wording`` rule as it was (labels kept, words unread)
accepted 1,952 of the 2,334 on each of its two protocols.
"""
import re

import pytest

from measure import invariants
from panels import conformance

NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


def _fmt(value: int) -> str:
    return f"{value:,}"


def _mutants(protocol: dict, item: dict):
    """``(description, B text)`` for every single-number change and every swap of two numbers in B."""
    b = item["versions"]["B"]
    spans = [(m.start(), m.end(), int(m.group().replace(",", ""))) for m in NUMBER.finditer(b)]
    a_numbers = set(invariants.numbers_in(item["versions"]["A"]))
    structure_numbers = set(item["structure"]["values"].values())
    scenario = {n for n in a_numbers | set(invariants.numbers_in(b))}
    anchor = None
    if protocol["rewording_type"] == "anchoring":
        allowed = structure_numbers | set(invariants.derived(protocol["family"], item["structure"]["values"]).values())
        anchor = next(n for n in invariants.numbers_in(b) if n not in allowed)
        scenario.discard(anchor)
    for index, (start, end, value) in enumerate(spans):
        targets = set(scenario) if value == anchor else ({value + 1} | scenario)
        for new in sorted(targets - {value}):
            yield f"number #{index} {value}→{new}", b[:start] + _fmt(new) + b[end:]
    for i in range(len(spans)):
        for j in range(i + 1, len(spans)):
            (s1, e1, v1), (s2, e2, v2) = spans[i], spans[j]
            if v1 == v2:
                continue
            yield f"swap #{i}↔#{j}", b[:s1] + _fmt(v2) + b[e1:s2] + _fmt(v1) + b[e2:]


def _accepted(protocol: dict) -> list[str]:
    accepted = []
    for position, item in enumerate(protocol["panel"]):
        for what, text in _mutants(protocol, item):
            mutant_item = dict(item, versions=dict(item["versions"], B=text))
            panel = list(protocol["panel"])
            panel[position] = mutant_item
            mutant = dict(protocol, panel=panel)
            # Only this item can fail; checking the item alone keeps the test fast but
            # goes through the same public entry points on a one-item protocol.
            one = dict(mutant, panel=[mutant_item], n_items=1, item_ids=[item["item_id"]])
            if not invariants.check_protocol(one) and not conformance.check_protocol(one):
                accepted.append(f"{protocol['protocol_id']} {item['item_id']} {what}")
    return accepted


@pytest.mark.parametrize("series", ["v0", "v1"])
def test_no_b_with_a_changed_or_swapped_number_passes_gates_1_and_1b(protocols, series):
    chosen = [p for p in protocols.values() if p["series"] == series]
    assert len(chosen) == 12
    mutants = sum(1 for p in chosen for item in p["panel"] for _ in _mutants(p, item))
    assert mutants > 5000  # the held-out set is large, not a token sample
    accepted = [a for p in chosen for a in _accepted(p)]
    assert accepted == [], f"{len(accepted)} mutated B accepted, e.g. {accepted[:5]}"


def test_the_mutation_generator_finds_the_swaps_the_old_gate_missed(protocols):
    """The two swaps the issue names are among the mutants (so the test above covers them)."""
    risky = protocols["risky_choice_framing__wording__v0"]
    item = risky["panel"][0]
    p, q = item["structure"]["values"]["p_pct"], 100 - item["structure"]["values"]["p_pct"]
    texts = [t for _, t in _mutants(risky, item)]
    b = item["versions"]["B"]
    swapped = b.replace(f"{p}%", "@@").replace(f"{q}%", f"{p}%").replace("@@", f"{q}%")
    assert swapped in texts


# --------------------------------------------------------------------------- word-level mutations
# Gate 1 reads numbers only, so none of these can be caught there: every one
# is gate 1b's to reject, on every item of every protocol (issue 18 §1).
WORD = re.compile(r"[^\W\d_]+")
OPTION_LABEL = re.compile(r"^Option [A-Z]: ")
SENTENCE = "Think it over carefully."
CUE_SUFFIXES = ("(recommended)", "— the safer choice.", "Most experts would pick this one.")
CUE_PREFIXES = ("Recommended: ", "Best choice: ")
AUXILIARIES = ("will", "is", "are", "can", "has", "have", "was", "were", "would", "does", "do")
# Each word swapped for its opposite where the line has it: a frame word put into the other frame.
OPPOSITE = {"all": "none", "none": "all", "saved": "lost", "lost": "saved", "survive": "die", "die": "survive",
            "no": "every", "every": "no", "nothing": "everything"}


def _word_mutants(b: str):
    """``(description, B text)`` for every word-level change of B the issue names.

    On the option lines: each word replaced by another word of the line and
    by its opposite, each pair of neighbouring words exchanged (and the
    frame's all/none, saved/lost exchanged), a sentence added, a negation,
    a cue phrase before or after.  On every other line: its first and last
    word replaced, a sentence added, a negation after its first auxiliary.
    """
    lines = b.split("\n")
    out = []
    for i, line in enumerate(lines):
        label = OPTION_LABEL.match(line)
        start = label.end() if label else 0
        words = [m for m in WORD.finditer(line) if m.start() >= start]
        if not words:
            continue

        def put(new_line: str, what: str) -> None:
            if new_line != line:
                out.append((f"line {i} {what}", "\n".join(lines[:i] + [new_line] + lines[i + 1:])))

        positions = range(len(words)) if label else sorted({0, len(words) - 1})
        for k in positions:
            w = words[k]
            other = next((m.group() for m in words[k + 1:] + words[:k] if m.group() != w.group()), None)
            if other is not None:
                put(line[:w.start()] + other + line[w.end():], f"word #{k} replaced by another of the line")
            if label and w.group().lower() in OPPOSITE:
                put(line[:w.start()] + OPPOSITE[w.group().lower()] + line[w.end():], f"word #{k} replaced by its opposite")
        put(line + " " + SENTENCE, "a sentence added")
        aux = next((m for m in words if m.group().lower() in AUXILIARIES), None)
        if aux is not None:
            put(line[:aux.end()] + " not" + line[aux.end():], "negated")
        elif label:
            put(line[:start] + "It is not true that " + line[start:], "negated")
        if label:
            for cue in CUE_SUFFIXES:
                put(line + " " + cue, f"cue after: {cue}")
            for cue in CUE_PREFIXES:
                put(line[:start] + cue + line[start:], f"cue before: {cue}")
            for k in range(len(words) - 1):
                x, y = words[k], words[k + 1]
                if x.group() != y.group():
                    put(line[:x.start()] + y.group() + line[x.end():y.start()] + x.group() + line[y.end():],
                        f"words #{k} and #{k + 1} exchanged")
            lower = [m.group().lower() for m in words]
            for p, q in (("all", "none"), ("saved", "lost"), ("survive", "die")):
                if p in lower and q in lower:
                    x, y = sorted((words[lower.index(p)], words[lower.index(q)]), key=lambda m: m.start())
                    put(line[:x.start()] + y.group() + line[x.end():y.start()] + x.group() + line[y.end():],
                        f"{p} and {q} exchanged")
    return out


def _word_accepted(protocol: dict, gate_1b_only: bool = False, gate_1b=conformance) -> tuple[int, list[str]]:
    """How many word mutants of B there are, and which of them the gates accept."""
    count, accepted = 0, []
    for item in protocol["panel"]:
        for what, text in _word_mutants(item["versions"]["B"]):
            count += 1
            mutant_item = dict(item, versions=dict(item["versions"], B=text))
            one = dict(protocol, panel=[mutant_item], n_items=1, item_ids=[item["item_id"]])
            rejected_1b = bool(gate_1b.check_protocol(one))
            if not rejected_1b and (gate_1b_only or not invariants.check_protocol(one)):
                accepted.append(f"{protocol['protocol_id']} {item['item_id']} {what}")
    return count, accepted


@pytest.mark.parametrize("series", ["v0", "v1"])
def test_no_b_with_a_changed_word_passes_gate_1b(protocols, series):
    """A word replaced, a sentence added, a negation, a cue phrase: gate 1b alone rejects each, everywhere."""
    chosen = [p for p in protocols.values() if p["series"] == series]
    assert len(chosen) == 12
    results = [_word_accepted(p, gate_1b_only=True) for p in chosen]
    assert all(count >= 15 * 60 for count, _ in results)  # every item, many mutants each
    accepted = [a for _, found in results for a in found]
    assert accepted == [], f"{len(accepted)} B with a changed word accepted, e.g. {accepted[:5]}"


def test_the_option_line_changes_the_issue_names_are_mutants_gate_1b_rejects_and_gate_1_cannot_see(protocols):
    """The loss frame saying 'saved', none/all exchanged, a recommendation appended, a word replaced."""
    risky = protocols["risky_choice_framing__wording__v0"]
    item = risky["panel"][0]
    b = item["versions"]["B"]
    texts = {t for _, t in _word_mutants(b)}
    sure = next(line for line in b.split("\n") if line.startswith("Option A: "))
    gamble = next(line for line in b.split("\n") if line.startswith("Option B: "))
    assert " lost" in sure and " none " in gamble and " all " in gamble
    exchanged = gamble.replace(" none ", " @@ ", 1).replace(" all ", " none ", 1).replace(" @@ ", " all ", 1)
    replaced = sure.replace(" trees will ", " will will ", 1)  # a word replaced by the line's next other word
    named = [b.replace(sure, sure.replace(" lost", " saved", 1)), b.replace(gamble, exchanged),
             b.replace(sure, sure + " (recommended)"), b.replace(sure, replaced)]
    for text in named:
        assert text != b and text in texts
        mutant = dict(item, versions=dict(item["versions"], B=text))
        assert invariants.check_item(risky, mutant) == []
        assert [f.rule for f in conformance.check_item(risky, mutant)] == ["wording_risky"]
