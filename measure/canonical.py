"""Canonical JSON and the hashes taken over it.

Every hash the archive publishes is a SHA-256 over *canonical JSON*: UTF-8,
keys sorted at every depth, the separators ``,`` and ``:`` with no spaces,
no trailing newline, and no NaN or infinity (a hash over a value that JSON
cannot carry portably would not be re-computable elsewhere).  Non-ASCII
characters are written as themselves, not as ``\\u`` escapes, so the bytes
are the UTF-8 encoding of the text a reader sees.
"""
import hashlib
import json
from typing import Any


# One encoder for every call: ``json.dumps`` with these arguments builds a new one each time, which cost
# more than encoding a trial record; the bytes are the same.
_ENCODER = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
)


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of ``value``."""
    return _ENCODER.encode(value)


def canonical_bytes(value: Any) -> bytes:
    """Return the UTF-8 bytes of :func:`canonical_json`."""
    return canonical_json(value).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """SHA-256 of raw bytes, lowercase hex."""
    return hashlib.sha256(data).hexdigest()


def canonical_sha256(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``value``."""
    return sha256_hex(canonical_bytes(value))
