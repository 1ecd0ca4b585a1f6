"""An author's check for one family's scenarios: ``python -m panels.authoring FAMILY``.

It loads ``panels/families/<FAMILY>.py``, checks every scenario's numbers
against the family rules, renders each scenario under many seeds and
reports, per scenario:

* the word count of a rendered prompt body (context, question and option
  texts; the shared decision instruction adds about 30 words) — the body
  must stay within :data:`BODY_WORDS`;
* how often a "guard" rendering (another seed, told to avoid the first
  rendering's choices, as the builder does) still shares a run of 12
  consecutive words with the "open" rendering it avoided; the builder
  re-draws a guard item until it shares none, so a scenario that often
  collides has too little variety or too many single-alternative groups;
* whether the ``gain``/``loss`` (or ``plain``/``sunk``) variants of an option
  make the same choices — they must have the same choice-group structure so
  that B differs from A only by the family's transformation;
* the longest run of words outside any choice group;
* whether any two *different* scenarios share a 12-word run (fifteen
  genuinely different problems, not one text with the nouns swapped).

Exit status is non-zero when a hard rule fails.
"""
import sys
from itertools import combinations

import re

from panels.render import render_parts, scenario_values
from panels import families
from panels.scenario import SUNK_MARK, ScenarioError, check_numbers
from panels.template import TemplateError, format_value, longest_fixed_run, shared_run, words

BODY_WORDS = (130, 360)
SEEDS = 24
MAX_COLLISION_SHARE = 0.25
MAX_FIXED_RUN = 8
NUMBER = re.compile(r"\d[\d,]*\d|\d")


def required(family: str, variant: str) -> tuple[str, ...]:
    """Numbers every rendering of version A must quote, for one option variant (or rates style).

    Each family declares them in its row (``required_numbers``); a family
    that declares none for a variant requires none.
    """
    return tuple(families.get(family).required_numbers.get(variant, ()))


def load(family: str):
    if family not in families.names():
        raise SystemExit(f"unknown family {family!r}; families: {', '.join(families.names())}")
    return families.get(family).scenarios


def body_text(family: str, parts, variant_pick: int = 0) -> str:
    texts = list(parts.context) + [parts.question]
    for letter in sorted(parts.options):
        variants = parts.options[letter]
        texts.append(variants[sorted(variants)[variant_pick % len(variants)]])
    return "\n".join(texts)


def templates_of(scenario) -> list[tuple[str, str]]:
    out = [(f"context{i}", t) for i, t in enumerate(scenario.context)] + [("question", scenario.question)]
    for role, spec in scenario.options.items():
        if isinstance(spec, dict):
            out += [(f"option_{role}_{k}", v) for k, v in spec.items()]
        else:
            out.append((f"option_{role}", spec))
    if scenario.rates_pct:
        out += [("rates_pct", scenario.rates_pct), ("rates_freq", scenario.rates_freq)]
    return out


def number_problems(family: str, scenario, parts, variant_pick: int, style: str) -> list[str]:
    """Quoted numbers: the required ones present, no stray digits."""
    body = body_text(family, parts, variant_pick)
    if families.get(family).rates_paragraph:
        key = (family, style)
    else:
        multi = [sorted(v) for v in parts.options.values() if len(v) > 1]
        key = (family, multi[0][variant_pick % 2] if multi else "plain")
    values = scenario_values(family, scenario, scenario.values, {})
    allowed = {format_value(v) for v in values.values() if isinstance(v, int)}
    problems = [f"{key[1]} wording never quotes ${{{name}}}" for name in required(*key)
                if format_value(values[name]) not in NUMBER.findall(body)]
    stray = sorted(set(NUMBER.findall(body)) - allowed)
    if stray:
        problems.append(f"digits {stray} are not structure numbers: write other quantities in words")
    return problems


def check_family(family: str, out=sys.stdout) -> bool:
    scenarios = load(family)
    ok = True
    ids = [s.item_id for s in scenarios]
    expected = [f"s{i:02d}" for i in range(1, 16)]
    if ids != expected:
        print(f"FAIL item ids must be {expected[0]}…{expected[-1]} in order, got {ids}", file=out)
        ok = False
    renders: dict[str, list[str]] = {}
    for scenario in scenarios:
        problems = []
        try:
            check_numbers(family, scenario)
        except ScenarioError as exc:
            problems.append(str(exc))
        counts, bodies, collisions = [], [], 0
        sunk_role = families.get(family).sunk_role
        if sunk_role is not None:
            stop = scenario.options.get(sunk_role, "")
            if not isinstance(stop, str) or stop.count(f"[[{SUNK_MARK}]]") != 1:
                problems.append("the stop option must contain [[SUNK]] exactly once")
            if not any("${spent}" in t for t in scenario.context):
                problems.append("the context must quote ${spent} (stated in every version)")
        try:
            for style in ("pct", "freq") if families.get(family).rates_paragraph else ("pct",):
                parts = render_parts(family, scenario, "author-0", "check", scenario.values, style)
                for pick in (0, 1):
                    problems += number_problems(family, scenario, parts, pick, style)
            for seed in range(SEEDS):
                for numbers in (scenario.values, scenario.c_values):
                    for style in ("pct", "freq"):
                        parts = render_parts(family, scenario, f"author-{seed}", "check", numbers, style)
                        for pick in (0, 1):
                            counts.append(len(words(body_text(family, parts, pick))))
                record: dict = {}
                open_parts = render_parts(family, scenario, f"author-{seed}", "check", scenario.values, "pct", record=record)
                guard_parts = render_parts(family, scenario, f"guard-{seed}", "check", scenario.values, "pct", avoid=record)
                bodies.append(body_text(family, open_parts))
                if shared_run(body_text(family, open_parts), body_text(family, guard_parts)):
                    collisions += 1
                for label, choices in record.items():
                    base, _, variant = label.partition(":")
                    siblings = {k: v for k, v in record.items() if k.partition(":")[0] == base}
                    if variant and len({tuple(sorted(v.items())) for v in siblings.values()}) > 1:
                        problems.append(f"variants of {base} make different choices: give them the same choice groups")
                        break
        except (TemplateError, KeyError) as exc:
            problems.append(f"render: {exc}")
        if counts and not (BODY_WORDS[0] <= min(counts) and max(counts) <= BODY_WORDS[1]):
            problems.append(f"body words {min(counts)}–{max(counts)} outside {BODY_WORDS}")
        pairs = SEEDS
        if collisions / pairs > MAX_COLLISION_SHARE:
            problems.append(f"{collisions}/{pairs} guard renderings share a 12-word run with the open one they avoided")
        problems = list(dict.fromkeys(problems))
        fixed = max((longest_fixed_run(t), name) for name, t in templates_of(scenario))
        if fixed[0] > MAX_FIXED_RUN:
            problems.append(f"template {fixed[1]} has a fixed run of {fixed[0]} words (max {MAX_FIXED_RUN})")
        renders[scenario.item_id] = bodies
        status = "ok  " if not problems else "FAIL"
        ok = ok and not problems
        word_range = f"{min(counts)}–{max(counts)}" if counts else "?"
        print(f"{status} {scenario.item_id} {scenario.title!r}: words {word_range}, "
              f"guard collisions {collisions}/{pairs}, longest fixed run {fixed[0]} ({fixed[1]})", file=out)
        for problem in problems:
            print(f"       - {problem}", file=out)
    for (ia, ba), (ib, bb) in combinations(renders.items(), 2):
        for a in ba[:4]:
            run = next((r for b in bb[:4] if (r := shared_run(a, b))), None)
            if run:
                print(f"FAIL {ia} and {ib} share the run {' '.join(run)!r}", file=out)
                ok = False
                break
    print("family OK" if ok else "family has problems", file=out)
    return ok


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m panels.authoring FAMILY", file=sys.stderr)
        return 2
    return 0 if check_family(argv[0]) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
