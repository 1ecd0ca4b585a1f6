"""Append-only hash chain for JSONL logs.

Each record carries ``prev_sha256`` (the previous record's ``record_sha256``;
:data:`GENESIS` for the first) and ``record_sha256``, the SHA-256 of the
canonical JSON of the record *without* its own ``record_sha256`` field (and
with ``prev_sha256``).  Editing, deleting, inserting or reordering any line
breaks the chain at that line, and :func:`verify` names the first break.
The lines themselves are read by :mod:`measure.jsonl` (its ``STRICT``
policy: the first line that cannot be read stops the reading).
"""
from typing import Iterable, Mapping, Optional

from measure.canonical import canonical_json, canonical_sha256, sha256_hex
from measure.errors import ArchiveError

GENESIS = "0" * 64


class ChainError(ArchiveError, ValueError):
    """A chain that does not verify; ``index`` is the first broken record."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(f"record #{index}: {message}")
        self.index = index


def record_hash(record: Mapping) -> str:
    """The ``record_sha256`` a record must carry."""
    body = dict(record)
    body.pop("record_sha256", None)
    return canonical_sha256(body)


def link(record: Mapping, prev_sha256: str) -> dict:
    """Return a copy of ``record`` chained after ``prev_sha256``."""
    if "record_sha256" in record or "prev_sha256" in record:
        raise ValueError("a record to be chained must not carry prev_sha256 or record_sha256 yet")
    out = dict(record)
    out["prev_sha256"] = prev_sha256
    out["record_sha256"] = record_hash(out)
    return out


def to_line(record: Mapping) -> str:
    """One JSONL line (canonical JSON plus a newline)."""
    return canonical_json(record) + "\n"


def linked_line(record: Mapping, prev_sha256: str) -> tuple[dict, str]:
    """``link(record, prev_sha256)`` and its :func:`to_line`, with the record serialised once, not twice.

    Canonical JSON of an object is its members in key order, so the line is
    the hashed body with the ``record_sha256`` member put in its place: the
    body is written as the members whose keys sort before that key and those
    after it.  Every writer of a chained log appends through this (the
    runner's trials, the spend ledger's entries).
    """
    if "record_sha256" in record or "prev_sha256" in record:
        raise ValueError("a record to be chained must not carry prev_sha256 or record_sha256 yet")
    out = dict(record)
    out["prev_sha256"] = prev_sha256
    if not all(isinstance(key, str) for key in out):     # keys JSON converts: sorted after conversion
        out["record_sha256"] = record_hash(out)
        return out, to_line(out)
    before = canonical_json({k: v for k, v in out.items() if k < "record_sha256"})[1:-1]
    after = canonical_json({k: v for k, v in out.items() if k > "record_sha256"})[1:-1]
    digest = sha256_hex(("{" + ",".join(p for p in (before, after) if p) + "}").encode("utf-8"))
    out["record_sha256"] = digest
    member = f'"record_sha256":"{digest}"'
    return out, "{" + ",".join(p for p in (before, member, after) if p) + "}\n"


def verify(records: Iterable[Mapping]) -> int:
    """Check a sequence of chained records; return how many there were.

    Raises :class:`ChainError` naming the first record whose link or hash
    does not hold.
    """
    prev = GENESIS
    count = 0
    for index, record in enumerate(records):
        if record.get("prev_sha256") != prev:
            raise ChainError(index, f"prev_sha256 {record.get('prev_sha256')!r} does not match "
                                    f"the previous record's hash {prev!r}")
        expected = record_hash(record)
        if record.get("record_sha256") != expected:
            raise ChainError(index, f"record_sha256 {record.get('record_sha256')!r} does not match "
                                    f"its content ({expected})")
        prev = expected
        count += 1
    return count


def last_hash(records: list[Mapping]) -> str:
    """The hash the next record must chain to."""
    return records[-1]["record_sha256"] if records else GENESIS


def first_break(records: Iterable[Mapping]) -> Optional[int]:
    """Index of the first broken record, or ``None`` when the chain holds."""
    try:
        verify(records)
    except ChainError as exc:
        return exc.index
    return None
