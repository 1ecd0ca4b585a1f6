"""The small template language scenario wording is written in.

Why a template language at all: a ``guard`` protocol's wording must never
become public, yet the builder code is public.  So every scenario is
written once as a template with many interchangeable phrasings, and the
words a model actually reads are chosen from it by a seed.  The ``open``
panels use a public seed; ``guard`` panels use a secret seed kept outside the
repository (``var/private/`` or the environment), so the repository alone
cannot regenerate a guard panel's wording.

Syntax
------
``{first|second|third}``
    A choice group: exactly one alternative is kept.  Groups nest:
    ``{a {small|little} town|a village}``.  ``{only}`` keeps ``only``.
``${name}``
    A value: a number from the scenario's structure (written with a thin
    ``,`` thousands separator: ``12,500``), a derived number, or a generated
    fictional name.  Unknown names are an error naming the template.
``[[MARK]]``
    A marker the family builder replaces before rendering (for example the
    point where the ``sunk_cost_fallacy`` wording phrase is inserted).  A
    marker left unreplaced is an error.

Choices are drawn from :class:`measure.rng.Stream` seeded per protocol and
per item, so rendering is deterministic for a given seed.  Runs of spaces
are collapsed and the result is stripped, so alternatives may be empty.
"""
import functools
import re
from typing import Mapping, Optional, Union

from measure.rng import Stream, seed_from_text
from measure.errors import ArchiveError

Value = Union[int, str]

_WORD = re.compile(r"[^\W_]+(?:[’'\-.,][^\W_]+)*", re.UNICODE)
_SPACES = re.compile(r"[ \t]+")
_SPACE_BEFORE_PUNCT = re.compile(r" +([,.;:!?])")


class TemplateError(ArchiveError, ValueError):
    """A template that cannot be parsed or rendered; the message names it."""


def format_value(value: Value) -> str:
    """Numbers get ``,`` thousands separators; strings pass through."""
    if isinstance(value, bool):
        raise TemplateError(f"boolean value {value!r} cannot be written into wording")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, str):
        return value
    raise TemplateError(f"value {value!r} must be an int or a string")


def _parse(text: str, pos: int, depth: int, where: str) -> tuple[list, int]:
    """Parse until an unmatched ``|`` or ``}`` at this depth.

    Returns a node list: strings, ("var", name), ("mark", name) and
    ("choice", [alternative node lists]).
    """
    nodes: list = []
    buf: list[str] = []
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch == "$" and text.startswith("${", pos):
            end = text.find("}", pos + 2)
            if end < 0:
                raise TemplateError(f"{where}: unterminated ${{…}} at offset {pos}")
            name = text[pos + 2:end]
            if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
                raise TemplateError(f"{where}: bad value name {name!r} at offset {pos}")
            if buf:
                nodes.append("".join(buf))
                buf = []
            nodes.append(("var", name))
            pos = end + 1
        elif ch == "[" and text.startswith("[[", pos):
            end = text.find("]]", pos + 2)
            if end < 0:
                raise TemplateError(f"{where}: unterminated [[…]] at offset {pos}")
            if buf:
                nodes.append("".join(buf))
                buf = []
            nodes.append(("mark", text[pos + 2:end]))
            pos = end + 2
        elif ch == "{":
            if buf:
                nodes.append("".join(buf))
                buf = []
            alternatives = []
            pos += 1
            while True:
                alt, pos = _parse(text, pos, depth + 1, where)
                alternatives.append(alt)
                if pos >= n:
                    raise TemplateError(f"{where}: unterminated choice group")
                if text[pos] == "|":
                    pos += 1
                    continue
                pos += 1  # the closing brace
                break
            nodes.append(("choice", alternatives))
        elif ch in "|}":
            if depth == 0:
                raise TemplateError(f"{where}: stray {ch!r} at offset {pos}")
            break
        else:
            buf.append(ch)
            pos += 1
    if buf:
        nodes.append("".join(buf))
    return nodes, pos


def _parse_checked(template: str, where: str) -> list:
    nodes, pos = _parse(template, 0, 0, where)
    if pos != len(template):
        raise TemplateError(f"{where}: unexpected {template[pos]!r} at offset {pos}")
    return nodes


@functools.lru_cache(maxsize=8192)
def _parse_cached(template: str) -> list:
    return _parse_checked(template, "template")


def parse(template: str, where: str = "template") -> list:
    """Parse a template into nodes, raising :class:`TemplateError` on bad syntax.

    Parsed templates are cached (a panel build renders each one many
    times); the node lists are shared, so callers must not modify them.
    """
    if not isinstance(template, str):
        raise TemplateError(f"{where}: template must be a string")
    try:
        return _parse_cached(template)
    except TemplateError:
        return _parse_checked(template, where)  # raises again, naming ``where``


def _render_nodes(
    nodes: list,
    stream: Stream,
    values: Mapping[str, Value],
    where: str,
    out: list,
    path: tuple,
    avoid: Optional[Mapping[tuple, int]],
    record: Optional[dict],
    chosen: Optional[Mapping[tuple, int]] = None,
) -> None:
    for position, node in enumerate(nodes):
        if isinstance(node, str):
            out.append(node)
        elif node[0] == "var":
            if node[1] not in values:
                raise TemplateError(f"{where}: no value named {node[1]!r}")
            out.append(format_value(values[node[1]]))
        elif node[0] == "mark":
            raise TemplateError(f"{where}: marker [[{node[1]}]] was not replaced")
        else:
            alternatives = node[1]
            key = path + (position,)
            count = len(alternatives)
            if count == 1:
                index = 0
            elif chosen is not None:
                picked = chosen.get(key)
                if picked is None or not 0 <= picked < count:
                    raise TemplateError(f"{where}: no recorded choice for the group at {key}")
                index = picked
            elif avoid is not None and key in avoid:
                # Draw among the alternatives the reference rendering did not take.
                index = stream.below(count - 1)
                if index >= avoid[key]:
                    index += 1
            else:
                index = stream.below(count)
            if record is not None:
                record[key] = index
            _render_nodes(alternatives[index], stream, values, where, out, key + (index,), avoid, record, chosen)


def tidy(text: str) -> str:
    """Collapse runs of spaces, drop spaces before punctuation, strip."""
    text = _SPACES.sub(" ", text)
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    return text.strip()


def render(
    template: str,
    stream: Stream,
    values: Mapping[str, Value],
    where: str = "template",
    avoid: Optional[Mapping[tuple, int]] = None,
    record: Optional[dict] = None,
) -> str:
    """Render one template with choices drawn from ``stream``.

    ``record``, when given, receives the index chosen in every choice group
    (keyed by the group's position in the template).  ``avoid`` is such a
    record from another rendering: every group it covers then takes one of
    the *other* alternatives, which is how a guard panel is kept from
    repeating its public twin's phrasing.
    """
    out: list[str] = []
    _render_nodes(parse(template, where), stream, values, where, out, (), avoid, record)
    return tidy("".join(out))


class _FirstChoice:
    """A stand-in stream that always takes the first alternative (the catalogue form)."""

    def below(self, n: int) -> int:
        return 0


def render_first(template: str, values: Mapping[str, Value], where: str = "template",
                 record: Optional[dict] = None) -> str:
    """Render with the *first* alternative of every choice group: one fixed, seed-free text.

    This is how a catalogue template is written down: the same words for
    every seed, so a gate can compare a version's tokens with it.
    """
    out: list[str] = []
    _render_nodes(parse(template, where), _FirstChoice(), values, where, out, (), None, record)  # type: ignore[arg-type]
    return tidy("".join(out))


def render_choices(template: str, values: Mapping[str, Value], choices: Mapping[tuple, int],
                   where: str = "template") -> str:
    """Render with the alternative ``choices`` names for every choice group (a ``record`` of :func:`render`).

    How one rendering is *replayed* in a parallel template: the
    ``risky_choice_framing`` gain and loss templates of an option have the
    same choice groups (:func:`choice_shape`), so the choices read off a gain
    line give the one loss line that says the same thing as a loss.  A group
    the record does not cover is an error naming the template.
    """
    out: list[str] = []
    _render_nodes(parse(template, where), _FirstChoice(), values, where, out, (), None, None,  # type: ignore[arg-type]
                  chosen=choices)
    return tidy("".join(out))


def choice_shape(template: str) -> tuple:
    """The template's choice groups: each group's position and its alternatives' own shapes.

    Two templates with the same shape make the same choices from the same
    stream, and their records have the same keys, so each can replay the
    other's record (:func:`render_choices`).  Words and values are left out.
    """
    def shape(nodes: list) -> tuple:
        return tuple((position, tuple(shape(alt) for alt in node[1])) for position, node in enumerate(nodes)
                     if isinstance(node, tuple) and node[0] == "choice")
    return shape(parse(template))


def first_value_names(template: str) -> list[str]:
    """The ``${name}`` values in the order :func:`render_first` writes them (first alternative everywhere)."""
    names: list[str] = []

    def walk(nodes: list) -> None:
        for node in nodes:
            if isinstance(node, tuple) and node[0] == "var":
                names.append(node[1])
            elif isinstance(node, tuple) and node[0] == "choice":
                walk(node[1][0])

    walk(parse(template))
    return names


def replace_marks(template: str, replacements: Mapping[str, str]) -> str:
    """Replace ``[[MARK]]`` markers by literal text before rendering."""
    def sub(match: re.Match) -> str:
        name = match.group(1)
        if name not in replacements:
            raise TemplateError(f"marker [[{name}]] has no replacement")
        return replacements[name]
    return re.sub(r"\[\[([A-Z_]+)\]\]", sub, template)


def stream_for(seed_text: str, *parts: str) -> Stream:
    """A stream keyed by a seed and a path (protocol key, item id, purpose)."""
    return Stream(seed_from_text("|".join((seed_text,) + parts)))


def longest_fixed_run(template: str) -> int:
    """The longest run of words outside every choice group.

    A long fixed run is wording that every seed reproduces, so a guard
    panel would share it with its public twin; authors keep it short.
    """
    longest = 0
    for node in parse(template):
        if isinstance(node, str):
            longest = max(longest, len(_WORD.findall(node)))
    return longest


# Fictional names are built from syllables so that no real place, company or
# person is named and the name itself varies with the seed.
_ONSETS = ("B", "C", "D", "F", "G", "H", "K", "L", "M", "N", "P", "R", "S", "T", "V", "W",
           "Br", "Cr", "Dr", "Gl", "Gr", "Kl", "Pr", "St", "Tr", "Th", "Sh", "Qu")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "ie", "y")
_CODAS = ("", "n", "r", "l", "s", "th", "nd", "rk", "m", "x", "lt", "st")
_PLACE_ENDINGS = ("ford", "wick", "mere", "holt", "by", "stead", "mouth", "dale", "ton", "brook", "haven", "gate")
_MIDDLE_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z")
_MIDDLE_VOWELS = ("a", "e", "i", "o", "u")
_ORG_CODAS = ("n", "r", "l", "s", "m", "x", "v")
_ORG_ENDINGS = ("ex", "ora", "ium", "is", "a", "on", "ell", "ix", "ara", "enne")
NAME_KINDS = ("place", "org")
# Real names the generator could still spell; a generated name equal to one
# of these (case-insensitive) is drawn again.
REAL_NAMES = frozenset(name.casefold() for name in (
    "Dyson", "Lexus", "Nokia", "Sony", "Rolex", "Kodak", "Tesla", "Nikon", "Xerox", "Intel", "Oracle",
    "Canon", "Bosch", "Toyota", "Mazda", "Honda", "Fanta", "Lego", "Zara", "Prada", "Gucci", "Nivea",
    "Milford", "Bradford", "Stratford", "Salford", "Watford", "Oxford", "Hereford", "Guildford",
    "Warwick", "Norwick", "Berwick", "Keswick", "Windermere", "Whitby", "Selby", "Derby", "Grimsby",
    "Plymouth", "Dartmouth", "Portsmouth", "Bournemouth", "Falmouth", "Exmouth", "Weymouth",
    "Kendal", "Ashton", "Boston", "Preston", "Kingston", "Brighton", "Taunton", "Paignton",
))


def make_name(stream: Stream, kind: str) -> str:
    """A pronounceable fictional name of the given kind (``place`` or ``org``).

    Three parts (a syllable, a linking syllable, an ending) rather than two:
    two-part names too often spell a real brand or town (an early build
    produced "Dyson"), and the scenarios must name no real organisation or
    place.  Names in :data:`REAL_NAMES` are refused by the caller.
    """
    core = (stream.choice(_ONSETS) + stream.choice(_VOWELS)
            + stream.choice(_MIDDLE_ONSETS) + stream.choice(_MIDDLE_VOWELS))
    if kind == "place":
        return core + stream.choice(_PLACE_ENDINGS)
    if kind == "org":
        return core + stream.choice(_ORG_CODAS) + stream.choice(_ORG_ENDINGS)
    raise TemplateError(f"unknown name kind {kind!r}; known kinds: {NAME_KINDS}")


def words(text: str) -> list[str]:
    """Lower-cased words of a text, the unit of the 12-word overlap rule."""
    return [w.casefold() for w in _WORD.findall(text)]


def shared_run(text_a: str, text_b: str, length: int = 12) -> Union[tuple[str, ...], None]:
    """A run of ``length`` consecutive words present in both texts, or None."""
    wa, wb = words(text_a), words(text_b)
    grams = {tuple(wa[i:i + length]) for i in range(len(wa) - length + 1)}
    for i in range(len(wb) - length + 1):
        gram = tuple(wb[i:i + length])
        if gram in grams:
            return gram
    return None

