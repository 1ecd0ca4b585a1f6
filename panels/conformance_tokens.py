"""Gate 1b's reading of a line: tokens, option labels, and which renderings of a template a line is.

The gate reads no English (:mod:`panels.conformance`): it compares lines as
sequences of tokens — words, numbers (``1,200`` is one token) and single
punctuation marks — with one another and with the items' templates.  This
module is that reading, shared by the gate's rules and by its self-test
(:mod:`panels.conformance_selftest`): splitting a line, recognising an
``Option X:`` line, replaying a template against a line
(:func:`template_readings`), and naming the first word where a line leaves
a template.  A rule that fails raises :class:`RuleFailure` with the rule's
name; :func:`panels.conformance.check_item` turns it into a failure record.
"""
import difflib
import re
from typing import Iterator, Mapping, Optional, Sequence

from panels.template import parse
from measure.errors import ArchiveError

TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+|\d+|[^\W\d_]+|\S")
NUMBER_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


class RuleFailure(ArchiveError, ValueError):
    """A rule of gate 1b refused a version: ``rule`` names it, ``detail`` says why (never scenario text).

    Raised and caught inside the gate, which turns it into a named failure
    row; an ``ArchiveError`` like every error class of the project.
    """

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


def differing(a: list[str], b: list[str]) -> list[int]:
    if len(a) != len(b):
        raise RuleFailure("line_count", "A and B have different numbers of lines")
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


def one_token_change(line_a: str, line_b: str, rule: str) -> tuple[int, str, str]:
    ta, tb = tokens(line_a), tokens(line_b)
    if len(ta) != len(tb):
        raise RuleFailure(rule, "the differing line gains or loses tokens")
    diff = [i for i, (x, y) in enumerate(zip(ta, tb)) if x != y]
    if len(diff) != 1:
        raise RuleFailure(rule, f"the differing line differs in {len(diff)} tokens, not exactly one")
    return diff[0], ta[diff[0]], tb[diff[0]]


class Filled(Mapping):
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


def first_difference(got: Sequence[str], want: Sequence[str]) -> str:
    """The first word where ``got`` leaves ``want``: stray, missing or exchanged (one word, quoted)."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, list(got), list(want), autojunk=False).get_opcodes():
        if tag == "replace":
            return f"'{got[i1]}' where the template has '{want[j1]}'"
        if tag == "delete":
            return f"a stray '{got[i1]}'"
        if tag == "insert":
            return f"a missing '{want[j1]}'"
    return "no difference"


def words_only(line: str) -> list[str]:
    """The line's tokens with every number replaced by one placeholder: what must match a template."""
    return placeholders(tokens(line))


def placeholders(line: Sequence[str]) -> list[str]:
    return ["#" if is_number(t) else t for t in line]
