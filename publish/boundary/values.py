"""The value check: no money of the owner's, no path of this machine, no credential in any published byte.

The sealed-text check (:mod:`publish.boundary.sealed`) keeps guard and sealed
wording out of ``public/``; this check keeps out what belongs to the owner
and the machine.  It runs beside it, on the staged build before the swap
(the same reading of every file: JSON and JSONL by their strings, CSV by
row, HTML as written and with its markup removed, the SQLite database by
every text cell and its schema — see :func:`publish.boundary.texts.file_texts`), and
refuses the first of these it meets, in one line naming the file and the
match:

* **a euro amount with cents** (``€0.16``, ``1,12 EUR``) — no published
  text of ours states one; only the open panels' own scenarios do, and the
  models' answers to them in the open lane;
* **a figure of the budget in a money context** — every figure read at
  publish time from ``budget.json`` (ceiling, reserves, the general pool,
  rates, prices) and the spend ledger (each month's charged, worst-case and
  spent totals per pool and what each pool has left), next to ``€``,
  ``EUR`` or ``euro``, to the precision it is written with (``€25``,
  ``€0.0094``);
* **a money field**: a key or column named ``…_eur`` (``cost_eur``) — the
  archive publishes none, so one that appears was copied from a private
  record;
* **a path of this machine**: the archive home's absolute path, the user's
  home directory and the code's own folder;
* **a credential**: the value of any environment variable whose name says
  it is a key, token, secret, password or seed (at least
  :data:`MIN_SECRET_LENGTH` characters), the secret guard seed, and any
  text shaped like a key whatever the environment holds (a provider's
  documented prefix, or a long random token:
  :func:`llmarchive.archive.boundary_rules.credential_in`).  The message
  names the variable or the kind of key, never the value.

Paths are searched as written and after :func:`~llmarchive.archive.boundary_rules.normalised_paths`
(``%2F``, ``//``, ``/./``, backslashes), amounts after the invisible
characters are removed (:func:`~llmarchive.archive.boundary_rules.visible`),
by the rules the comparison intake applies to an outsider's text, so
nothing the intake accepts can block a publication.

What is exempt, and only that: the money rules do not apply to an amount
whose surrounding words are those of an open panel's own wording (its
published ``panels/<protocol_id>.json`` strings and the decision
instruction), of a model's answer published in the open lane, or of what an
outsider wrote on a comparison point (data, not ours) — compared
as the :data:`CONTEXT` normalised words on each side of the amount, so the
same amount in other words (``€1.20 left in the general pool``) is not.
The path and credential rules have no exemption.

The database is also searched as raw bytes for paths and credentials, so a
value left in a free page (never shown by a query) is found too.
"""
import json
import math
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from llmarchive.archive import (MONEY_FIELD, amounts, credential_in, machine_paths, may_hide_path, normalised_paths,
                                path_in, path_pattern, visible)
from measure import jsonl
from publish.boundary import texts
from publish.errors import PublishError

CONTEXT = 4                # words compared on each side of an amount for the exemption
MIN_SECRET_LENGTH = 8      # shorter environment values ("1", "true") are not credentials
MAX_DECIMALS = 6
RAW_KEY_OVERLAP = 256      # bytes each block of a raw search keeps of the one before: a key cut by a block's end
SECRET_NAME_PARTS = frozenset({"KEY", "APIKEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD",
                               "PASSWD", "PASS", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "SEED"})

_TOKEN = re.compile(r"€|\d+(?:[.,]\d+)*|\w+")
_JSON_ESCAPE = re.compile(r'\\u20ac|\\[nrtbf"\\/]')
_TAG = re.compile(r"<[^<>]*>")
_PATH_CHAR = re.compile(rb"[\w.-]")


class BoundaryError(PublishError):
    """A file to be published carries the owner's money, a path of this machine or a credential."""


def _value(number: str) -> tuple[Optional[Decimal], int]:
    """A written amount as (value, decimals): the last ``.``/``,`` is decimal unless three digits follow it;
    a ``€`` inside the number (``12€50``) is its decimal mark."""
    digits = re.sub(r"[ \u00a0\u202f]", "", number).replace("€", ".")
    last = max(digits.rfind("."), digits.rfind(","))
    decimals = 0
    if last >= 0 and (len(digits) - last - 1 != 3 or not digits[:last].strip("0")):
        decimals = len(digits) - last - 1
        digits = digits[:last].replace(",", "").replace(".", "") + "." + digits[last + 1:]
    else:
        digits = digits.replace(",", "").replace(".", "")
    try:
        return Decimal(digits), decimals
    except InvalidOperation:
        return None, 0


def _json_unescaped(text: str) -> str:
    return _JSON_ESCAPE.sub(lambda m: "€" if m.group(0) == "\\u20ac" else " ", text) if "\\" in text else text


def _context(text: str, start: int, end: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    before = _TOKEN.findall(text[max(0, start - 120):start].casefold())[-CONTEXT:]
    after = _TOKEN.findall(text[end:end + 120].casefold())[:CONTEXT]
    return tuple(before), tuple(after)


@dataclass
class ValueCheck:
    """What publication must never carry, gathered at publish time (:func:`build`), and the search for it."""

    figures: dict[int, set[Decimal]] = field(default_factory=dict)    # decimals -> budget figures at that precision
    paths: list[tuple[str, str]] = field(default_factory=list)        # (what, absolute path)
    secrets: list[tuple[str, str]] = field(default_factory=list)      # (what, value)
    exempt: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = field(default_factory=dict)
    error = BoundaryError

    def __post_init__(self) -> None:
        self._paths = [(what, path_pattern(p)) for what, p in self.paths]
        self._path_values = tuple(p for _, p in self.paths)
        self._secret_values = tuple(v for _, v in self.secrets)

    def may_refuse(self, text: str) -> bool:
        """Whether ``text`` holds anything worth a closer look (:meth:`scan_text` refuses nothing else).

        Substring tests, which run at C speed (a regular expression of the
        same alternatives is ten times slower over a ten-year archive); a text
        for which this is False has no part for which it is True, so the
        sealed-text check's batches ask it of many texts at once.
        """
        if "€" in text or "EUR" in text or "uro" in text or "_eur" in text or "\\u20ac" in text:
            return True
        if "/" in text and any(p in text for p in self._path_values):
            return True
        if may_hide_path(text) and self._path_values:
            spelled = normalised_paths(text)
            if any(p in spelled for p in self._path_values):
                return True
        return any(v in text for v in self._secret_values) or credential_in(text) is not None

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    # -- building ------------------------------------------------------------------
    def add_figure(self, value: object) -> None:
        """A budget figure: matched at every precision it could be written with (an integer only as itself)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value == 0:
            return
        exact = Decimal(repr(float(value)))
        for decimals in range(MAX_DECIMALS + 1):
            rounded = round(abs(exact), decimals)
            if decimals == 0 and rounded != abs(exact):
                continue   # €25 is the figure 25, never 25.4
            if rounded:
                self.figures.setdefault(decimals, set()).add(rounded)

    def allow(self, text: str) -> None:
        """Exempt the amounts of ``text`` (an open panel's wording, a model's answer) in these words only."""
        text = visible(_json_unescaped(text))
        text = _TAG.sub(" ", text) if "<" in text else text
        for match in amounts(text):
            number = match.group("a")
            self.exempt.setdefault(number, []).append(_context(text, match.start(), match.end()))

    # -- searching -------------------------------------------------------------------
    def _exempt(self, number: str, text: str, start: int, end: int) -> bool:
        known = self.exempt.get(number)
        if not known:
            return False
        before, after = _context(text, start, end)
        for b, a in known:
            nb, na = min(len(before), len(b)), min(len(after), len(a))
            # The words both texts have on each side must agree, and there must be enough of them: at least
            # CONTEXT in all, or every word the panel's own text has around the amount when it has fewer.
            agree = (not nb or before[-nb:] == b[-nb:]) and after[:na] == a[:na]
            if agree and nb + na >= min(CONTEXT, len(b) + len(a)):
                return True
        return False

    def _money(self, text: str) -> Optional[str]:
        if "<" in text:
            text = _TAG.sub(" ", text)     # HTML as written: the words around an amount, not its markup
        for match in amounts(text):
            number = match.group("a")
            value, decimals = _value(number)
            if value is None:
                continue
            cents = decimals == 2
            figure = value != 0 and value in self.figures.get(min(decimals, MAX_DECIMALS), ())
            if (cents or figure) and not self._exempt(number, text, match.start(), match.end()):
                what = "a euro amount with cents" if cents else "a figure of the budget in a money context"
                return f"{what} ({match.group(0).strip()!r})"
        found = MONEY_FIELD.search(text)
        if found:
            return f"a money field ({found.group(0)!r})"
        return None

    def scan_text(self, text: str, where: str) -> Optional[str]:
        """The refusal for the first forbidden thing in ``text``, or None."""
        if not text or not self.may_refuse(text):
            return None
        for what, value in self.secrets:
            if value in text:
                return f"{where}: contains {what}; refusing to publish"
        kind = credential_in(text)
        if kind:
            return f"{where}: contains {kind} (a credential, recognised by its shape); refusing to publish"
        found = path_in(text, self._paths)
        if found:
            return f"{where}: contains {found}; refusing to publish"
        problem = self._money(visible(_json_unescaped(text)))
        return f"{where}: contains {problem}; refusing to publish" if problem else None

    def scan_file_bytes(self, path: Path, where: str) -> Optional[str]:
        """Paths and credentials in a file's raw bytes (a database's free pages included)."""
        needles = [(what, value.encode("utf-8"), False) for what, value in self.secrets]
        needles += [(f"{what} ({value})", value.encode("utf-8"), True) for what, value in self.paths]
        longest = max([len(n) for _, n, _ in needles] + [RAW_KEY_OVERLAP]) + 1
        with open(path, "rb") as fh:
            tail = b""
            while True:
                block = fh.read(1 << 22)
                window = tail + block
                for what, needle, bounded in needles:
                    if _found(window, needle, bounded, last=not block):
                        return f"{where} (raw bytes): contains {what}; refusing to publish"
                kind = credential_in(window.decode("latin-1"), generic=False)
                if kind:
                    return f"{where} (raw bytes): contains {kind} (a credential, recognised by its shape); " \
                           "refusing to publish"
                if not block:
                    return None
                tail = window[-longest:]


def _found(window: bytes, needle: bytes, bounded: bool, last: bool) -> bool:
    """Whether ``needle`` is in ``window`` — for a path, as a whole path (``/root`` is not in ``/rooted``);
    a match that ends the window is judged with the next block, unless this is the last one."""
    start = window.find(needle)
    while start >= 0:
        end = start + len(needle)
        if not bounded:
            return True
        before_ok = start == 0 or not _PATH_CHAR.fullmatch(window[start - 1:start])
        if before_ok and end == len(window) and not last:
            return False         # cut at the block's end: the next window, which keeps this tail, decides
        after = window[end:end + 1]
        if before_ok and after == b"." and end + 1 == len(window) and not last:
            return False         # a '.' that ends the window: the next window decides
        if before_ok and (end == len(window) or not _PATH_CHAR.fullmatch(after)
                          or (after == b"." and not _PATH_CHAR.fullmatch(window[end + 1:end + 2]))):
            return True
        start = window.find(needle, start + 1)
    return False


# --------------------------------------------------------------------------
# what is forbidden, read at publish time
# --------------------------------------------------------------------------

def secret_names(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(what, value)`` for every environment variable named like a credential, long enough to be one."""
    out = []
    for name, value in sorted(environ.items()):
        parts = set(re.split(r"[^A-Z0-9]+", name.upper()))
        if parts & SECRET_NAME_PARTS and len(value.strip()) >= MIN_SECRET_LENGTH:
            out.append((f"the value of the environment variable {name} (a credential)", value.strip()))
    return out


def budget_figures(check: ValueCheck, budget, months: Mapping[str, Mapping[str, Sequence[float]]]) -> None:
    """Every figure of ``budget.json`` and of the ledger's monthly totals, added to ``check``.

    ``months`` is month -> pool -> (charged, open worst case), as the spend
    ledger's tally folds them (:meth:`llmarchive.budget.LedgerTally.pool_totals`):
    the sums the ladder and ``budget show`` print, each of them, each pool's
    remainder under its cap, and the month's total.
    """
    if budget is not None:
        for value in (budget.monthly_ceiling_eur, budget.bridge_reserve_eur, budget.heartbeat_reserve_eur,
                      budget.general_pool_eur, *budget.rates_eur_per_call.values(),
                      *(budget.prices_eur_per_mtok or {}).values()):
            check.add_figure(value)
    caps = {} if budget is None else {"general": budget.general_pool_eur, "bridge": budget.bridge_reserve_eur,
                                      "heartbeat": budget.heartbeat_reserve_eur}
    for pools in months.values():
        for pool, (charged, worst) in pools.items():
            for value in (charged, worst, charged + worst):
                check.add_figure(value)
            if pool in caps:
                check.add_figure(caps[pool] - charged - worst)
        check.add_figure(sum(c + w for c, w in pools.values()))


def answers_with_amounts(lines: Iterable[bytes]) -> Iterable[str]:
    """The ``response_text`` of every open-lane trial line that may hold an amount (the others are skipped)."""
    for line in lines:
        if b"\xe2\x82\xac" in line or b"EUR" in line or b"uro" in line or b"\\u20ac" in line:
            record = jsonl.record_of(line)
            text = None if record is None else record.get("response_text")
            if isinstance(text, str):
                yield text


def document_strings(data: bytes) -> list[str]:
    """Every string (keys and values) of a JSON document, for the exemption of an open panel's own words.

    The walk is :func:`publish.boundary.texts.json_strings`, the one both checks read published JSON with.
    """
    try:
        value = json.loads(data)         # one JSON document: an open panel's file
    except ValueError:
        return []
    return [text for _, text in texts.json_strings(value, "")]


def build(home: Path, code_root: Path, budget, months: Mapping[str, Mapping[str, Sequence[float]]], exempt_texts: Iterable[str],
          environ: Optional[Mapping[str, str]] = None, seeds: Iterable[str] = ()) -> ValueCheck:
    """The check for one build: the paths, credentials and budget figures as they are now, and the exemptions."""
    environ = os.environ if environ is None else environ
    secrets = secret_names(environ)
    secrets += [("the secret guard seed", s.strip()) for s in seeds
                if len(s.strip()) >= MIN_SECRET_LENGTH and s.strip() not in (v for _, v in secrets)]
    check = ValueCheck(paths=machine_paths(home, code_root), secrets=secrets)
    budget_figures(check, budget, months)
    for text in exempt_texts:
        check.allow(text)
    return check
