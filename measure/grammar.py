"""Decision grammar, version 1: the deterministic extraction of one decision.

A response counts only through its *decision lines*.  Nothing else in the
text is read, so an option named in the middle of the reasoning never
counts, and no judge (human or model) ever scores a response.

Normalisation, applied to every line and to every option, in this order:

1. Unicode NFC.
2. ``str.casefold()``.
3. Markdown emphasis removed: every ``*`` and every ``_`` is deleted
   (this covers ``*x*``, ``**x**``, ``_x_`` and ``__x__``).
4. Whitespace collapsed: every run of Unicode whitespace becomes one space,
   and leading and trailing whitespace is removed.
5. Trailing punctuation removed: while the line ends with a character of a
   Unicode punctuation category (``P*``) or with whitespace, that character
   is removed.  ``B.``, ``B!``, ``B).`` all become ``b``.

There is no look-alike folding: Greek ``Β`` (U+0392) casefolds to ``β`` and
stays a different token from Latin ``B``.

Lines are split with ``str.splitlines()``, so ``\\n``, ``\\r\\n``, ``\\r`` and the
other Unicode line boundaries all end a line.

A *decision line* is a line whose normalised form starts with ``decision:``.
Its token is what follows that prefix, with surrounding spaces removed.

Outcome (version 1):

* no decision line → ``unparseable`` (reason ``no_decision_line``);
* any decision line whose token is not an option → ``unparseable``
  (reason ``not_an_option``);
* decision lines naming different options → ``unparseable``
  (reason ``conflicting_decisions``);
* otherwise (one or more decision lines, all naming the same option) →
  ``valid``, and the token is the option exactly as the protocol spells it.

Rules this module had to decide, each pinned by a golden vector:

* **Headings, list markers and quotes are not removed.**  ``# DECISION: B``,
  ``- DECISION: B``, ``1. DECISION: B`` and ``> DECISION: B`` are not decision
  lines, because SPEC's normalisation list is closed and none of its steps
  removes them.  ``* DECISION: B`` *is* a decision line, as a consequence of
  step 3 (every ``*`` is emphasis), not of a list rule.
* **Backticks are kept.**  ```DECISION: B``` starts with a backtick, which is
  a symbol (``Sk``), not punctuation or emphasis, so it is not a decision line.
* **The colon is part of the keyword.**  ``DECISION : B`` and ``DECISION B``
  are not decision lines; ``DECISION:B`` is.
* **Only trailing punctuation goes.**  ``DECISION: (B)`` keeps its opening
  parenthesis, so its token is ``(b`` and it is not an option.  A line with
  nothing after the colon (``DECISION:``) loses the colon itself to step 5
  and so is not a decision line at all.
* **Options are normalised with the same steps**, and two options that
  normalise to the same string make the option list invalid (``ValueError``).

This file is frozen: protocols with ``grammar_version: 1`` depend on its
exact behaviour, so a change in behaviour is a new grammar version in a new
module, never an edit here.
"""
import re
import unicodedata
from dataclasses import dataclass
from typing import Optional, Sequence

GRAMMAR_VERSION = 1
KEYWORD = "decision:"

_EMPHASIS = str.maketrans("", "", "*_")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Extraction:
    """What the grammar found in one response.

    ``outcome`` is ``"valid"`` or ``"unparseable"``; ``token`` is the option as
    spelled in the protocol's ``options`` when valid, else ``None``.
    ``reason`` names why a response is unparseable (``None`` when valid) and
    ``decision_lines`` counts the decision lines the grammar saw.
    """

    outcome: str
    token: Optional[str]
    reason: Optional[str]
    decision_lines: int


def _strip_trailing(text: str) -> str:
    end = len(text)
    while end > 0:
        ch = text[end - 1]
        if ch.isspace() or unicodedata.category(ch).startswith("P"):
            end -= 1
        else:
            break
    return text[:end]


def normalize_line(line: str) -> str:
    """Apply the five normalisation steps to one line."""
    text = unicodedata.normalize("NFC", line)
    text = text.casefold()
    text = text.translate(_EMPHASIS)
    text = _WHITESPACE.sub(" ", text).strip()
    return _strip_trailing(text)


def option_index(options: Sequence[str]) -> dict[str, str]:
    """Map each option's normalised form to the option as spelled."""
    if isinstance(options, str) or not options:
        raise ValueError("options must be a non-empty sequence of strings")
    index: dict[str, str] = {}
    for option in options:
        if not isinstance(option, str):
            raise ValueError(f"option {option!r} is not a string")
        key = normalize_line(option)
        if not key:
            raise ValueError(f"option {option!r} is empty after normalisation")
        if key in index:
            raise ValueError(
                f"options {index[key]!r} and {option!r} normalise to the same token {key!r}"
            )
        index[key] = option
    return index


def decision_tokens(text: str) -> list[str]:
    """The normalised token of every decision line, in order."""
    if not isinstance(text, str):
        raise TypeError(f"response text must be a string, got {type(text).__name__}")
    tokens = []
    for line in text.splitlines():
        norm = normalize_line(line)
        if norm.startswith(KEYWORD):
            tokens.append(norm[len(KEYWORD):].strip())
    return tokens


def extract(text: str, options: Sequence[str]) -> Extraction:
    """Extract the decision of one response under grammar version 1."""
    index = option_index(options)
    tokens = decision_tokens(text)
    if not tokens:
        return Extraction("unparseable", None, "no_decision_line", 0)
    if any(token not in index for token in tokens):
        return Extraction("unparseable", None, "not_an_option", len(tokens))
    if len(set(tokens)) > 1:
        return Extraction("unparseable", None, "conflicting_decisions", len(tokens))
    return Extraction("valid", index[tokens[0]], None, len(tokens))
