"""Text from outside, shown and named safely: escaped on a terminal, refused in ids.

Outsiders' text reaches this machine through comparison submissions (a
``submitted_by``, a ``note``, model and run ids, file names) and through
providers' model lists.  It is data, never instructions to the terminal it
is printed on: an ANSI escape in a name could clear the screen and print a
fake verdict, a bidi override could show ``gpt-5`` for what is stored as
something else.  Two tools, one rule each:

* :func:`terminal` — the text as it may be printed: every character a
  terminal would act on or hide (controls, format characters such as bidi
  overrides and zero-width marks, line and paragraph separators, surrogates,
  unassigned code points) written as a visible escape (``\\x1b``,
  ``\\u202e``); everything else, accented letters and scripts included, as it is.
* :func:`id_problems` — why a string cannot be an id: not a string, blank,
  longer than its cap (the message says it is the length), a control
  character anywhere, and for a model id any invisible format character or
  separator, since two ids that print alike must not be two models.

Pure standard library, no archive state, so every command and renderer can
use it.
"""
import unicodedata
from typing import Optional

# Unicode categories a terminal acts on or shows as nothing: controls, format characters (bidi overrides
# U+202A–U+202E and isolates U+2066–U+2069, zero-width spaces and joiners, the BOM), line and paragraph
# separators, surrogates, private use and unassigned code points.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
MODEL_ID_MAX = 200
"""The longest model id accepted (characters): real ids are a few dozen; a path-safe run id allows 200."""


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def is_hidden(ch: str) -> bool:
    """Whether ``ch`` is a character a terminal acts on or does not show (see :data:`HIDDEN_CATEGORIES`)."""
    return unicodedata.category(ch) in HIDDEN_CATEGORIES


def terminal(value: object, keep_newlines: bool = False) -> str:
    """``value`` as text that is safe to print: every hidden or control character escaped, visibly.

    With ``keep_newlines``, ``\\n`` stays a line break (a message of several
    lines this program composed); every other control, ``\\r`` and tab
    included, is escaped, so nothing can overwrite what was printed before.
    A backslash is left as it is: the escapes are for reading, not for
    decoding back.
    """
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text          # the common case: nothing to escape (isprintable is False for every hidden kind)
    return "".join(ch if (ch == "\n" and keep_newlines) or not is_hidden(ch) else _escape(ch) for ch in text)


def json_safe(document: str) -> str:
    """JSON text with every hidden character written as a JSON ``\\uXXXX`` escape: the same value, safe to print.

    ``json.dumps(..., ensure_ascii=False)`` escapes the ASCII controls but
    writes C1 controls, bidi overrides and zero-width marks as they are; a
    hidden character can only stand inside a string there, where its escape
    means the same character, so the document still parses to the same value.
    """
    if document.isprintable():
        return document
    out = []
    for ch in document:
        if ch in "\n\t" or not is_hidden(ch):
            out.append(ch)
        elif ord(ch) > 0xFFFF:
            code = ord(ch) - 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)


def id_problems(value: object, what: str, max_length: int, model: bool = False) -> list[str]:
    """Every reason ``value`` cannot be the id ``what`` (empty when it can); each message names the id safely.

    ``model`` adds the model-id rule: no invisible format character or
    separator of any kind (bidi overrides and isolates, zero-width marks),
    which a control-character check alone would let through.
    """
    if not isinstance(value, str):
        return [f"{what} must be a string"]
    problems: list[str] = []
    shown = terminal(value[:60]) + ("…" if len(value) > 60 else "")
    if not value.strip():
        problems.append(f"{what} is blank")
    if len(value) > max_length:
        problems.append(f"{what} is {len(value)} characters long; at most {max_length} are accepted")
    controls = sorted({_escape(ch) for ch in value if unicodedata.category(ch) == "Cc"})
    if controls:
        problems.append(f"{what} '{shown}' holds control character(s) {', '.join(controls)}")
    if model:
        hidden = sorted({_escape(ch) for ch in value if is_hidden(ch) and unicodedata.category(ch) != "Cc"})
        if hidden:
            problems.append(f"{what} '{shown}' holds invisible format character(s) {', '.join(hidden)} "
                            "(bidi overrides, zero-width marks, separators): an id must print as it is")
    return problems


def first_problem(value: object, what: str, max_length: int, model: bool = False) -> Optional[str]:
    """The first of :func:`id_problems`, or None."""
    found = id_problems(value, what, max_length, model)
    return found[0] if found else None
