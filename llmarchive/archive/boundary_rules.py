"""What may never cross the public boundary, recognised by its shape: credentials, this machine's paths, money.

One set of rules with two callers: publication, which refuses a build that
carries any of it (:mod:`publish.boundary.values`), and the comparison intake, which
refuses an outsider's text that publication would refuse
(:mod:`llmarchive.comparison.check`) — otherwise an accepted submission
could block every later publication.  Both must judge the same text the
same way, so the rules live here, below both.

* **A credential** is known by its shape, not only by the value this
  machine's environment happens to hold (the machine that publishes need
  not hold the key): the providers' documented key prefixes
  (:data:`PROVIDER_KEYS`), and, for keys of any other kind, a generic rule
  — a run of at least :data:`GENERIC_MIN` characters of the base64
  alphabet, mixing capitals, small letters and digits, whose characters
  carry at least :data:`GENERIC_BITS` bits each.  Our own published values
  never meet it: digests are lower-case hex (no capital), ids and model ids
  are split by ``-``, ``_`` and ``.``, which the generic run does not cross.
* **A path of this machine** is found after the text is brought to one
  spelling (:func:`normalised_paths`): percent-escapes decoded, backslashes
  turned to slashes, repeated slashes and ``/./`` collapsed — so
  ``%2Froot%2Fevals``, ``/root//evals``, ``/root/./evals`` and
  ``\\root\\evals`` are all ``/root/evals``.
* **Money** is read after the characters that show as nothing are removed
  and the no-break spaces made spaces (:func:`visible`), so a zero-width
  space cannot split ``€`` from its figure; an amount may be written
  ``€0.16``, ``0,16 €``, ``0,16€``, ``1.12EUR`` or with the sign as its
  decimal mark (``12€50``).

Pure standard library.  (The maintained scanner ``detect-secrets`` was
weighed: its last release knows none of the Anthropic, Hugging Face, Google
or fine-grained GitHub prefixes, and its entropy rules flag every hex
digest, which this archive publishes everywhere; see method §10.6.)
"""
import math
import os
import re
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Iterable, Optional

from llmarchive.archive.paths import REPO_ROOT


# (what, pattern): each provider's documented prefix and the least a real key of it carries after the prefix.
PROVIDER_KEYS: tuple[tuple[str, str], ...] = (
    ("an Anthropic API key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("an OpenAI API key", r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    ("a Hugging Face token", r"hf_[A-Za-z0-9]{30,}"),
    ("a GitHub token", r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("an AWS access key id", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
    ("a Google API key", r"AIza[0-9A-Za-z_-]{35}"),
    ("a Stripe secret key", r"(?:sk|rk)_live_[A-Za-z0-9]{20,}"),
    ("a Slack token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("a private key", r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
)
_KEY_CHAR = re.compile(r"[A-Za-z0-9_-]")
# Where a key may start: literal prefixes, looked for with ``str.find`` (a regular expression of the same
# alternatives is several times slower over a ten-year archive's published texts); each hit is matched whole.
_PREFIXES = ("sk-", "sk_live_", "rk_live_", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
             "AKIA", "ASIA", "ABIA", "ACCA", "AIza", "xox", "-----BEGIN")
_PROVIDER = re.compile("|".join(f"(?P<p{i}>{pattern})" for i, (_, pattern) in enumerate(PROVIDER_KEYS)))

GENERIC_MIN = 32
GENERIC_BITS = 4.2
"""Shannon bits per character at or above which a mixed run is taken for a key: 32 random base64 characters
carry about 4.6, a hex digest at most 4.0, an English run far less."""
_RUN = re.compile(r"[A-Za-z0-9+/=]{%d,}" % GENERIC_MIN)
_HEX_DIGEST = re.compile(r"[0-9a-fA-F]{32,128}")
_PATHLIKE_SEGMENT = re.compile(r"[A-Za-z0-9]{1,24}")
_DATA_URI = re.compile(r";base64,$")


def _bits(text: str) -> float:
    """Shannon entropy of the characters of ``text``, in bits per character."""
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def _generic_key(run: str) -> bool:
    """Whether a base64 run is a key: capitals, small letters and digits mixed, not a hex digest, not a path
    of short words, and random enough."""
    core = run.strip("=")
    if len(core) < GENERIC_MIN or core.islower() or core.isupper() or core.isalpha() or _HEX_DIGEST.fullmatch(core):
        return False
    if not any(c.isdigit() for c in core):
        return False
    if "/" in core and all(_PATHLIKE_SEGMENT.fullmatch(s) for s in core.strip("/").split("/")):
        return False     # a path or URL of words (a/b/C1/d…), not one token
    return _bits(core) >= GENERIC_BITS


def credential_in(text: str, generic: bool = True) -> Optional[str]:
    """What kind of credential ``text`` holds (``"an Anthropic API key"``), or None; never the value itself.

    A key is whole: a provider's prefix not glued to a word before it
    (``risk-`` holds ``sk-`` and is no key) and the key's characters to its
    end.  Fast enough to ask of a whole batch of texts joined by spaces.
    Without ``generic``, the providers' prefixes only (raw bytes of a file,
    where a long random run may be anything).
    """
    for prefix in _PREFIXES:
        at = text.find(prefix)
        while at >= 0:
            found = None if at and _KEY_CHAR.match(text, at - 1) and prefix[0] != "-" else _PROVIDER.match(text, at)
            if found and (found.group(0).endswith("-----") or not _KEY_CHAR.match(text, found.end())):
                return PROVIDER_KEYS[int(found.lastgroup[1:])][0]
            at = text.find(prefix, at + 1)
    if not generic:
        return None
    for run in _RUN.finditer(text):
        if _generic_key(run.group(0)) and not _DATA_URI.search(text, max(0, run.start() - 8), run.start()):
            return f"a credential-shaped token ({len(run.group(0))} random characters)"
    return None


# --------------------------------------------------------------------------
# paths
# --------------------------------------------------------------------------

_SLASHES = re.compile(r"/{2,}")
_DOT_SEGMENT = re.compile(r"/\.(?=/|$)")


def normalised_paths(text: str) -> str:
    """``text`` with every path in one spelling: percent-escapes decoded, ``\\`` as ``/``, ``//`` and ``/./`` as ``/``."""
    if "%" in text:
        for _ in range(3):      # %252F is %2F once decoded: decode until nothing changes, a few times at most
            decoded = urllib.parse.unquote(text)
            if decoded == text:
                break
            text = decoded
    text = text.replace("\\", "/")
    if "/." in text:
        text = _DOT_SEGMENT.sub("", text)
    return _SLASHES.sub("/", text) if "//" in text else text


def may_hide_path(text: str) -> bool:
    """Whether ``text`` may spell a path another way than plainly (so :func:`normalised_paths` is worth a call)."""
    return "%" in text or "\\" in text or "//" in text or "/./" in text


def path_pattern(path: str) -> "re.Pattern[str]":
    """A whole path ``path`` in a text: ``/root`` is not in ``/rooted`` nor in ``/root.d``, it is in ``/root/x``."""
    return re.compile(rf"(?<![\w.-]){re.escape(path)}(?![\w-]|\.[\w.-])")


def machine_paths(home: Path, code_root: Path = REPO_ROOT) -> list[tuple[str, str]]:
    """``(what, path)``: the archive home (as given and resolved), the user's home directory, the code's folder."""
    found: list[tuple[str, str]] = []
    candidates = [("the archive home's absolute path", str(Path(home).absolute())),
                  ("the archive home's absolute path", str(Path(home).resolve())),
                  ("the user's home directory", str(Path.home())),
                  ("the user's home directory", os.environ.get("HOME", "")),
                  ("the code's folder on this machine", str(code_root.resolve()))]
    for what, value in candidates:
        value = value.rstrip("/")
        if len(value) >= 2 and value.startswith("/") and value not in (p for _, p in found):
            found.append((what, value))
    return found


def path_in(text: str, patterns: Iterable[tuple[str, "re.Pattern[str]"]]) -> Optional[str]:
    """``"what (path)"`` for the first machine path in ``text`` as written or normalised, else None."""
    spellings = [text, normalised_paths(text)] if may_hide_path(text) else [text]
    for spelling in spellings:
        for what, pattern in patterns:
            found = pattern.search(spelling)
            if found:
                return f"{what} ({found.group(0)})"
    return None


# --------------------------------------------------------------------------
# money
# --------------------------------------------------------------------------

# Characters that show as nothing and would split an amount from its sign: zero-width space, non-joiner and
# joiner, word joiner, the byte-order mark, the soft hyphen, invisible operators; and the no-break spaces.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u2061\u2062\u2063\u2064\u180e"))
_SPACES = dict.fromkeys(map(ord, "\u00a0\u202f\u2007\u2009\u200a\u3000"), " ")
_VISIBLE = {**_INVISIBLE, **_SPACES}
_HIDDEN_OR_NBSP = re.compile("[" + "".join(map(chr, _VISIBLE)) + "]")

NUMBER = r"\d+(?:[ .,]\d{3}(?!\d))*(?:[.,]\d+)?"
CURRENCY = r"(?:€|(?<![A-Za-z])EUR(?![A-Za-z])|(?<![A-Za-z])[Ee]uros?(?![A-Za-z]))"
# Three patterns, searched apart: one currency sign may follow a number and lead the next amount ("2026-11 €0.16").
MONEY_BEFORE = re.compile(rf"{CURRENCY}\s?(?P<a>{NUMBER})")
MONEY_AFTER = re.compile(rf"(?P<a>{NUMBER})\s?{CURRENCY}")
MONEY_SIGN_AS_MARK = re.compile(r"(?<![\d.,])(?P<a>\d+€\d{2})(?!\d)")   # 12€50: the sign is the decimal mark
MONEY_FIELD = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*_eur(?:_[A-Za-z0-9]+)*\b")


def visible(text: str) -> str:
    """``text`` without the characters that show as nothing, its no-break and thin spaces made plain spaces."""
    return text.translate(_VISIBLE) if _HIDDEN_OR_NBSP.search(text) else text


def amounts(text: str) -> list["re.Match[str]"]:
    """Every amount of ``text`` (already :func:`visible`) in any form, in the order they start."""
    found = [*MONEY_BEFORE.finditer(text), *MONEY_AFTER.finditer(text), *MONEY_SIGN_AS_MARK.finditer(text)]
    return sorted(found, key=lambda m: (m.start(), m.end()))


# --------------------------------------------------------------------------
# an outsider's text, judged before it is accepted
# --------------------------------------------------------------------------

def public_text_problem(text: str, paths: Iterable[tuple[str, "re.Pattern[str]"]]) -> Optional[str]:
    """What in ``text`` publication would refuse whatever its context, or None: a credential (named by its
    kind, never shown), a path of this machine (``paths``, from :func:`machine_paths` through
    :func:`path_pattern`), or a money field.  Amounts are not judged here: an amount in an outsider's
    words is published as the outsider wrote it (the value check exempts those words)."""
    kind = credential_in(text)
    if kind:
        return f"{kind} (a credential, recognised by its shape)"
    found = path_in(text, paths)
    if found:
        return found
    field = MONEY_FIELD.search(visible(text))
    return f"a money field ({field.group(0)!r})" if field else None
