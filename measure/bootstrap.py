"""The bootstrap of the estimator (method §6.7): resampled count vectors and their intervals.

Split out of :mod:`measure.stats`, which re-exports every name here, so
``stats.bootstrap_ci_pct`` and ``from measure.stats import …`` keep working;
the count-map helpers live here too, as the lower of the two modules (stats
imports from this one, never the other way round).

Design notes
------------
* **Bootstrap by inverse CDF on counts.**  method §6.7's bootstrap draws ``n``
  responses with replacement from *all* of a version's responses — invalid
  ones included — and recomputes the gap over the valid responses of each
  draw.  Only the counts of such a draw matter (how many invalid, how many
  of each option), and those counts follow a multinomial distribution.  We draw them directly: a multinomial is a chain
  of conditional binomials (token *j* gets ``Binomial(remaining draws,
  c_j / (c_j + … + c_k))``), and each binomial is drawn by inverting its
  CDF.  The CDF thresholds are computed *exactly* as integers scaled to
  ``2⁶⁴`` (``T_i = ⌊2⁶⁴ · P(X ≤ i)⌋``), and one 64-bit output ``x`` of
  :mod:`measure.rng` selects the count ``i`` with ``T_{i−1} ≤ x < T_i``.  The
  probability of each count therefore equals the true binomial probability
  to within ``2⁻⁶⁴`` — the same distribution as drawing ``n`` individual
  responses, at the cost of one random word per category instead of ``n``.
  ``tests/test_stats.py`` checks the thresholds against the binomial pmf
  exactly and compares draws from both methods.
* **Percentile rule.**  A bootstrap interval's endpoints are the 2.5th and
  97.5th percentiles of the ``B`` replicate values, by linear interpolation
  between order statistics (position ``h = (B − 1)·q`` in the sorted list,
  0-based; the value is ``v[⌊h⌋] + (h − ⌊h⌋)·(v[⌊h⌋+1] − v[⌊h⌋])``).
"""
import bisect
import hashlib
import math
from fractions import Fraction
from math import comb
from typing import Iterable, Mapping, Optional, Sequence

from measure.rng import Stream

Counts = Mapping[str, int]

B_DEFAULT = 10_000
CI_LEVEL_LOW = 0.025
CI_LEVEL_HIGH = 0.975

_TWO64 = 1 << 64


# --------------------------------------------------------------------------
# counts
# --------------------------------------------------------------------------

def _check_counts(counts: Counts, name: str) -> None:
    for token, count in counts.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError(f"{name}[{token!r}] must be a non-negative int, got {count!r}")


def _tokens(*maps: Counts) -> list[str]:
    return sorted(set().union(*[set(m) for m in maps]))


def total(counts: Counts) -> int:
    """Number of responses in a count map."""
    return sum(counts.values())



# --------------------------------------------------------------------------
# the bootstrap
# --------------------------------------------------------------------------

def bootstrap_seed(protocol_id: str, run_date: str, subject_model_id: str) -> int:
    """First 8 bytes, big-endian, of ``sha256(protocol_id ‖ run_date ‖ subject_model_id)``.

    The three strings are joined with nothing between them and encoded as
    UTF-8.  No separator is needed for the join to be unambiguous:
    ``run_date`` always has the fixed width of ``YYYY-MM-DD``.
    """
    text = f"{protocol_id}{run_date}{subject_model_id}"
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def binomial_thresholds(trials: int, successes: int, population: int) -> list[int]:
    """``T_i = ⌊2⁶⁴ · P(X ≤ i)⌋`` for ``X ~ Binomial(trials, successes/population)``.

    Computed with integers only: ``P(X ≤ i) = Σ_{j≤i} C(trials, j) · s^j ·
    (population − s)^(trials − j) / population^trials``.  The last threshold
    is exactly ``2⁶⁴``.
    """
    if not 0 <= successes <= population or population <= 0 or trials < 0:
        raise ValueError("need 0 ≤ successes ≤ population, population > 0, trials ≥ 0")
    s, f = successes, population - successes
    denominator = population ** trials
    thresholds = []
    cumulative = 0
    for j in range(trials + 1):
        cumulative += comb(trials, j) * s ** j * f ** (trials - j)
        thresholds.append((cumulative << 64) // denominator)
    return thresholds


class MultinomialSampler:
    """Draws resampled count vectors of one version by conditional binomials.

    ``counts`` are the observed counts of each category (in a fixed order);
    :meth:`draw` returns the counts of ``n = sum(counts)`` draws with
    replacement.  Every draw consumes exactly one random word per category
    except the last — also when a category's count is certain (zero draws
    left, or a category nobody chose) — so the position of every word in the
    stream depends only on the number of categories, which keeps a port
    simple.  The bootstrap passes the invalid responses as the first
    category, then the options in sorted order (see :func:`version_sampler`).
    """

    def __init__(self, counts: Sequence[int]) -> None:
        self.counts = list(counts)
        self.n = sum(self.counts)
        # remaining[j] = c_j + … + c_k: the population the j-th binomial sees.
        self.remaining = [sum(self.counts[j:]) for j in range(len(self.counts))]
        self._tables: dict[tuple[int, int], list[int]] = {}

    def table(self, j: int, draws: int) -> list[int]:
        key = (j, draws)
        table = self._tables.get(key)
        if table is None:
            table = binomial_thresholds(draws, self.counts[j], self.remaining[j])
            self._tables[key] = table
        return table

    def pick(self, j: int, left: int, word: int) -> int:
        """How many of ``left`` remaining draws fall in category ``j``, for one random word."""
        if left == 0 or self.counts[j] == 0:
            return 0
        if self.counts[j] == self.remaining[j]:
            return left
        return bisect.bisect_right(self.table(j, left), word)

    def draw_with(self, words: Iterable[int]) -> list[int]:
        """One resample, using the given random words in order."""
        out = []
        left = self.n
        it = iter(words)
        for j in range(len(self.counts) - 1):
            x = self.pick(j, left, next(it))
            out.append(x)
            left -= x
        out.append(left)
        return out

    def draw(self, stream: Stream) -> list[int]:
        """One resample, drawing words from ``stream`` as needed."""
        return self.draw_with(iter(stream.next_u64, None))


def version_sampler(counts: Counts, tokens: Sequence[str], n: Optional[int], name: str) -> MultinomialSampler:
    """The sampler of one version's ``n`` responses: invalid ones first, then ``tokens``.

    ``n`` is the number of responses the version was sent (valid or not);
    ``None`` means every response was valid.  The invalid responses form one
    category: which kind of invalid outcome a response was does not change a
    gap.
    """
    valid = [counts.get(t, 0) for t in tokens]
    n_valid = sum(valid)
    if n is None:
        n = n_valid
    if not isinstance(n, int) or isinstance(n, bool) or n < n_valid:
        raise ValueError(f"{name} must be an int of at least the {n_valid} valid responses, got {n!r}")
    if n_valid == 0:
        raise ValueError("the bootstrap is undefined when a version has no valid response")
    return MultinomialSampler([n - n_valid] + valid)


def replicate_gap(x: Sequence[int], y: Sequence[int]) -> tuple[int, int]:
    """One replicate's gap as ``(numerator, denominator)`` from two resampled count vectors.

    ``x[0]`` and ``y[0]`` are the resampled invalid responses; the gap is the
    total variation distance of the valid ones.  A replicate in which a
    version drew no valid response at all has no gap; it counts as ``1``
    (100 points), the largest gap there is — the value that does not favour
    a stable result.  The direction is deliberate and one-sided: raising
    replicate gaps can only lower both percentiles, so each end of the
    stability interval is at or below where any other value for an empty
    draw would put it (a version that often loses every answer reads as
    less stable, never as more).
    """
    mx, my = sum(x) - x[0], sum(y) - y[0]
    if mx == 0 or my == 0:
        return 1, 1
    return sum(abs(a * my - b * mx) for a, b in zip(x[1:], y[1:])), 2 * mx * my


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics, ``h = (len − 1)·q``."""
    if not sorted_values:
        raise ValueError("percentile of an empty list")
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def _bootstrap_ratios(counts_x: Counts, counts_y: Counts, seed: int, B: int,
                      n_x: Optional[int], n_y: Optional[int]) -> list[tuple[int, int]]:
    """Replicate gaps as ``(numerator, denominator)`` pairs, in draw order."""
    _check_counts(counts_x, "counts_x")
    _check_counts(counts_y, "counts_y")
    if not isinstance(B, int) or B < 1:
        raise ValueError(f"B must be a positive int, got {B!r}")
    tokens = _tokens(counts_x, counts_y)
    sx = version_sampler(counts_x, tokens, n_x, "n_x")
    sy = version_sampler(counts_y, tokens, n_y, "n_y")
    stream = Stream(seed)
    if len(tokens) == 2:
        # Fast path, the same words as the general one: per version, word 1
        # draws the invalid count, word 2 the first option's share of the rest.
        words = stream.u64s(4 * B)
        out = []
        append = out.append
        px, py = sx.pick, sy.pick
        nx, ny = sx.n, sy.n
        for i in range(0, 4 * B, 4):
            mx = nx - px(0, nx, words[i])
            a = px(1, mx, words[i + 1])
            my = ny - py(0, ny, words[i + 2])
            b = py(1, my, words[i + 3])
            if mx == 0 or my == 0:
                append((1, 1))
            else:
                # For two options the distance is |a/mx − b/my|.
                append((abs(a * my - b * mx), mx * my))
        return out
    out = []
    for _ in range(B):
        out.append(replicate_gap(sx.draw(stream), sy.draw(stream)))
    return out


def bootstrap_gaps(counts_x: Counts, counts_y: Counts, seed: int, B: int = B_DEFAULT, *,
                   n_x: Optional[int] = None, n_y: Optional[int] = None) -> list[Fraction]:
    """The ``B`` bootstrap replicate gaps as exact fractions, in draw order.

    method §6.7's resampling unit is the response: each replicate draws ``n_x``
    responses with replacement from all of version X's responses — the
    invalid ones included — and ``n_y`` from Y's, then takes the gap over
    the valid responses of each draw (see :func:`replicate_gap` for a draw
    without any).  So a replicate's valid counts vary as the loss of
    answers would vary in a repeat of the run.  ``counts_*`` are the valid
    counts; ``n_*`` the number of responses sent (default: all valid).

    The words come from one stream seeded by ``seed``; each replicate
    resamples X then Y.  Tokens are the sorted union of both maps' keys —
    pass every option, with zero counts, so that the stream's use does not
    depend on which options happened to be chosen.  With ``k`` tokens a
    replicate uses ``k`` words per version (invalid count first).
    """
    return [Fraction(p, q) for p, q in _bootstrap_ratios(counts_x, counts_y, seed, B, n_x, n_y)]


def bootstrap_ci_pct(counts_x: Counts, counts_y: Counts, seed: int, B: int = B_DEFAULT, *,
                     n_x: Optional[int] = None, n_y: Optional[int] = None) -> tuple[float, float]:
    """95 % bootstrap interval of ``stability_pct``: ``(ci_low_pct, ci_high_pct)``.

    The replicates are those of :func:`bootstrap_gaps` (``n`` responses per
    version, invalid ones included).  The low end of the stability interval
    is ``100`` minus the 97.5th percentile of the replicate gaps, the high
    end ``100`` minus the 2.5th.  Each replicate gap in points is the
    correctly rounded float of ``100 · numerator / denominator``.
    """
    gaps = sorted((100 * p) / q for p, q in _bootstrap_ratios(counts_x, counts_y, seed, B, n_x, n_y))
    return 100 - percentile(gaps, CI_LEVEL_HIGH), 100 - percentile(gaps, CI_LEVEL_LOW)



# --------------------------------------------------------------------------
# repeats of one prompt: agreement and the within-panel bootstrap
# --------------------------------------------------------------------------

def replicate_agreement_fraction(cells: Iterable[Sequence]) -> Optional[Fraction]:
    """Share of cells whose repeats all came back the same, ``0 … 1``; ``None`` without repeats.

    A *cell* is one scenario × version; its entries are the repeats' answers
    (for a trial, its ``(outcome, token)``).  A cell agrees when every entry
    equals the first.  When no cell holds more than one answer there is no
    repeat to agree or disagree, and the share is undefined (``None``).
    """
    cells = [list(cell) for cell in cells]
    if not cells or all(len(cell) < 2 for cell in cells):
        return None
    agreeing = sum(1 for cell in cells if all(answer == cell[0] for answer in cell[1:]))
    return Fraction(agreeing, len(cells))


def _check_cells(cells: Sequence[Sequence[int]], width: int, name: str) -> None:
    for index, cell in enumerate(cells):
        if len(cell) != width:
            raise ValueError(f"{name}[{index}] has {len(cell)} categories, expected {width}")
        for count in cell:
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError(f"{name}[{index}] must hold non-negative ints, got {cell!r}")
        if sum(cell) == 0:
            raise ValueError(f"{name}[{index}] is an empty cell")


def _version_codes(cells: Sequence[Sequence[int]], stream: Stream, B: int, base: int) -> list[int]:
    """The ``B`` resampled count vectors of one version, each packed into one integer.

    A count vector ``(x_0, …, x_k)`` is packed as ``Σ x_j · base^j`` so that
    adding packed vectors adds the counts (``base`` exceeds every total).
    Cells are grouped by their count vector: ``g`` cells with the same counts
    ``c`` (``m = Σ c``) resample to a sum of ``g`` independent
    ``Multinomial(m, c/m)`` draws, which is ``Multinomial(g·m, c/m)`` — one
    draw per group instead of one per cell.  A cell whose answers all fall in
    one category draws nothing: it is its own resample, every time.
    """
    weights = [base ** j for j in range(len(cells[0]))] if cells else []
    fixed = 0
    groups: dict[tuple[int, ...], int] = {}
    for cell in cells:
        cell = tuple(cell)
        if sum(1 for c in cell if c) == 1:
            fixed += sum(c * w for c, w in zip(cell, weights))
        else:
            groups[cell] = groups.get(cell, 0) + 1
    codes = [fixed] * B
    for cell in sorted(groups):
        draws = groups[cell] * sum(cell)
        positions = [j for j, c in enumerate(cell) if c]
        sampler = MultinomialSampler([cell[j] for j in positions])
        w = [weights[j] for j in positions]
        # Word block j (B words, replicate order) draws the j-th observed category
        # by inverting its conditional binomial CDF, as MultinomialSampler.pick does.
        first = sampler.table(0, draws)
        x = list(map(bisect.bisect_right, [first] * B, stream.u64s(B)))
        if len(positions) == 2:
            packed = [i * w[0] + (draws - i) * w[1] for i in range(draws + 1)]
            codes = list(map(int.__add__, codes, map(packed.__getitem__, x)))
            continue
        part = list(map(int.__mul__, x, [w[0]] * B))
        left = list(map(int.__sub__, [draws] * B, x))
        for j in range(1, len(positions) - 1):
            # The j-th category's count depends on how many draws are left.
            tables = {l: sampler.table(j, l) for l in set(left)}
            x = list(map(bisect.bisect_right, map(tables.__getitem__, left), stream.u64s(B)))
            part = list(map(int.__add__, part, map(int.__mul__, x, [w[j]] * B)))
            left = list(map(int.__sub__, left, x))
        part = map(int.__add__, part, map(int.__mul__, left, [w[-1]] * B))
        codes = list(map(int.__add__, codes, part))
    return codes


def _stratified_ratios(cells_x: Sequence[Sequence[int]], cells_y: Sequence[Sequence[int]], seed: int,
                       B: int) -> list[tuple[int, int]]:
    """Replicate gaps of the within-panel bootstrap as ``(numerator, denominator)``, in draw order."""
    if not isinstance(B, int) or isinstance(B, bool) or B < 1:
        raise ValueError(f"B must be a positive int, got {B!r}")
    if not cells_x or not cells_y:
        raise ValueError("the within-panel bootstrap needs at least one cell per version")
    width = len(cells_x[0])
    if width < 2:
        raise ValueError("a cell holds the invalid count and at least one option")
    _check_cells(cells_x, width, "cells_x")
    _check_cells(cells_y, width, "cells_y")
    if sum(sum(c[1:]) for c in cells_x) == 0 or sum(sum(c[1:]) for c in cells_y) == 0:
        raise ValueError("the bootstrap is undefined when a version has no valid response")
    nx, ny = sum(map(sum, cells_x)), sum(map(sum, cells_y))
    base = max(nx, ny) + 1
    stream = Stream(seed)
    codes_x = _version_codes(cells_x, stream, B, base)
    codes_y = _version_codes(cells_y, stream, B, base)
    out: list[tuple[int, int]] = []
    append = out.append
    if width == 3:
        # Two options: the distance is |a/mx − b/my| (as in the frozen fast path).
        for cx, cy in zip(codes_x, codes_y):
            ix, ax = cx % base, (cx // base) % base
            iy, ay = cy % base, (cy // base) % base
            mx, my = nx - ix, ny - iy
            if mx == 0 or my == 0:
                append((1, 1))
            else:
                append((abs(ax * my - ay * mx), mx * my))
        return out
    cache: dict[tuple[int, int], tuple[int, int]] = {}
    for cx, cy in zip(codes_x, codes_y):
        key = (cx, cy)
        ratio = cache.get(key)
        if ratio is None:
            x, y = [], []
            for code, vec in ((cx, x), (cy, y)):
                for _ in range(width - 1):
                    code, count = divmod(code, base)
                    vec.append(count)
                vec.append(code)
            ratio = cache[key] = replicate_gap(x, y)
        append(ratio)
    return out


def stratified_bootstrap_gaps(cells_x: Sequence[Sequence[int]], cells_y: Sequence[Sequence[int]], seed: int,
                              B: int = B_DEFAULT) -> list[Fraction]:
    """The ``B`` replicate gaps of the within-panel bootstrap, as exact fractions, in draw order.

    The bootstrap conditional on the panel in the strict sense: each cell
    (one scenario of one version) is resampled on its own — its ``m`` repeats
    drawn with replacement from its own ``m`` answers, invalid ones included —
    and no scenario is ever resampled or mixed with another.  A cell is a
    count vector ``[invalid, option_1, …, option_k]`` (options in sorted
    order, the same order in every cell).  A replicate pools each version's
    resampled cells and takes the gap over the valid answers (a version
    without any counts as gap 1, as in :func:`replicate_gap`).

    The words come from one stream seeded by ``seed`` (the bootstrap seed
    rule), version X's cells first, then Y's.  Within a version, the cells
    that are not all one category are grouped by identical count vector
    ``c`` and the groups taken in ascending order of ``c``; a group of ``g``
    cells is one ``Multinomial(g·m, c/m)`` draw by conditional binomials over
    its non-zero categories (as :class:`MultinomialSampler`), and each of its
    non-zero categories but the last takes a block of ``B`` words, one per
    replicate.  A cell whose repeats all agree consumes no word: when every
    cell of both versions agrees, every replicate is the observed gap and the
    interval has zero width.
    """
    return [Fraction(p, q) for p, q in _stratified_ratios(cells_x, cells_y, seed, B)]


def stratified_bootstrap_ci_pct(cells_x: Sequence[Sequence[int]], cells_y: Sequence[Sequence[int]], seed: int,
                                B: int = B_DEFAULT) -> tuple[float, float]:
    """95 % within-panel interval of ``stability_pct`` (see :func:`stratified_bootstrap_gaps`).

    The percentile rule and the conversion to points are those of
    :func:`bootstrap_ci_pct`.
    """
    gaps = sorted((100 * p) / q for p, q in _stratified_ratios(cells_x, cells_y, seed, B))
    return 100 - percentile(gaps, CI_LEVEL_HIGH), 100 - percentile(gaps, CI_LEVEL_LOW)


__all__ = [
    "B_DEFAULT", "CI_LEVEL_HIGH", "CI_LEVEL_LOW", "Counts", "MultinomialSampler", "binomial_thresholds",
    "bootstrap_ci_pct", "bootstrap_gaps", "bootstrap_seed", "percentile", "replicate_agreement_fraction",
    "replicate_gap", "stratified_bootstrap_ci_pct", "stratified_bootstrap_gaps", "total", "version_sampler",
]
