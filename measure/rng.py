"""The archive's only source of random numbers: SHA-256 in counter mode.

Every published number that involves chance (bootstrap intervals, Monte
Carlo noise floors, panel wording choices) draws from this generator with a
seed that is recorded next to the result.  Python's ``random`` module is
never used: its algorithm is an implementation detail of one language, and
a reader re-checking a figure in another language must be able to produce
the same stream from this docstring alone.

The algorithm
-------------
* The seed is an unsigned 64-bit integer ``s``.
* Block ``i`` (``i = 0, 1, 2, …``) is ``SHA-256(be64(s) ‖ be64(i))``, where
  ``be64`` is the 8-byte big-endian encoding.  That is 16 bytes of input and
  32 bytes of output.
* Each block is cut into four 8-byte words, read big-endian, in order.  The
  stream of 64-bit outputs is block 0's four words, then block 1's, and so on.
* ``uniform()`` is ``(x >> 11) · 2⁻⁵³`` for the next output ``x``: a float in
  [0, 1) with 53 random bits, exactly representable as an IEEE double.
* ``below(m)`` returns an integer uniform on ``[0, m)`` without modulo bias:
  with ``limit = 2⁶⁴ − (2⁶⁴ mod m)``, take outputs until one is ``< limit``
  and return it ``mod m``.

Seeds that are strings are turned into integers by :func:`seed_from_text`:
the first 8 bytes, big-endian, of ``SHA-256(UTF-8(text))`` — the same rule
method §6 uses for the bootstrap seed.

The test vectors in ``measure/vectors/rng.json`` pin the first outputs for
several seeds; any re-implementation should reproduce them bit for bit.
"""
import hashlib
import struct
from typing import Iterator, Sequence, TypeVar

_MASK64 = (1 << 64) - 1
_FOUR_WORDS = struct.Struct(">4Q")
_TWO_POW_53 = 2.0 ** -53
T = TypeVar("T")


def seed_from_text(text: str) -> int:
    """First 8 bytes, big-endian, of SHA-256 of the UTF-8 text."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


class Stream:
    """A deterministic stream of 64-bit words for one recorded seed."""

    __slots__ = ("seed", "_prefix", "_block", "_buffer")

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        if not 0 <= seed <= _MASK64:
            raise ValueError(f"seed must be an unsigned 64-bit integer, got {seed}")
        self.seed = seed
        self._prefix = seed.to_bytes(8, "big")
        self._block = 0
        self._buffer: list[int] = []

    def _refill(self) -> None:
        digest = hashlib.sha256(self._prefix + self._block.to_bytes(8, "big")).digest()
        self._block += 1
        # Reversed so that pop() hands the words out in stream order.
        self._buffer = list(reversed(_FOUR_WORDS.unpack(digest)))

    def next_u64(self) -> int:
        """The next 64-bit output."""
        if not self._buffer:
            self._refill()
        return self._buffer.pop()

    def u64s(self, count: int) -> list[int]:
        """The next ``count`` outputs, in order (a fast path for bulk draws)."""
        out: list[int] = []
        while self._buffer and len(out) < count:
            out.append(self._buffer.pop())
        missing = count - len(out)
        if missing > 0:
            prefix, block, unpack, sha = self._prefix, self._block, _FOUR_WORDS.unpack, hashlib.sha256
            blocks = (missing + 3) // 4
            for i in range(block, block + blocks):
                out.extend(unpack(sha(prefix + i.to_bytes(8, "big")).digest()))
            self._block = block + blocks
            surplus = len(out) - count
            if surplus:
                self._buffer = list(reversed(out[count:]))
                del out[count:]
        return out

    def uniform(self) -> float:
        """A float in [0, 1) carrying the top 53 bits of the next output."""
        return (self.next_u64() >> 11) * _TWO_POW_53

    def below(self, m: int) -> int:
        """An integer uniform on [0, m), by rejection (no modulo bias)."""
        if m <= 0:
            raise ValueError(f"below() needs a positive bound, got {m}")
        limit = (1 << 64) - ((1 << 64) % m)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % m

    def choice(self, items: Sequence[T]) -> T:
        """One element of a non-empty sequence, uniformly."""
        if not items:
            raise ValueError("choice() from an empty sequence")
        return items[self.below(len(items))]

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A new list with the items in Fisher–Yates order (from the end)."""
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out


def iter_u64(seed: int) -> Iterator[int]:
    """Endless iterator over the stream for ``seed`` (for tests and ports)."""
    stream = Stream(seed)
    while True:
        yield stream.next_u64()
