"""Exact integer samplers for party noise: Pólya (negative binomial) shares and centred binomials.
Every draw is a function of uniformly random bits only, compared against rigorous integer bounds: no
floating-point number is computed (Mironov 2012; Canonne, Kamath & Steinke 2020).  Randomness: a
:class:`BitSource` (:class:`OSBits` in production, :class:`GeneratorBits` in tests).  Threat model: passive
parties; a party's draws never leave it except summed into a secret-shared total.
Constructions and exactness: docs/noise.md."""
from __future__ import annotations

import decimal
import itertools
import secrets
from math import isqrt, prod
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Iterator, Protocol

import numpy as np

__all__ = ["BitSource", "OSBits", "GeneratorBits", "exp_neg_bounds", "negative_binomial", "binomial_half",
           "uniform_prefix_less"]

_WORD = 64
_TOP = 1 << _WORD
_MAX_BAND = 62  # locations below 2^63 are handled vectorized in int64; beyond, exactly in Python integers


class BitSource(Protocol):
    """Uniform random bits: ``words(n)`` gives ``n`` uniform 64-bit words, ``bits(k)`` a uniform ``k``-bit integer."""

    def words(self, count: int) -> np.ndarray: ...

    def bits(self, count: int) -> int: ...


class OSBits:
    """The operating system's CSPRNG (``os.urandom`` through :mod:`secrets`): production noise."""

    def words(self, count: int) -> np.ndarray:
        return np.frombuffer(secrets.token_bytes(8 * count), dtype="<u8").astype(np.uint64)

    def bits(self, count: int) -> int:
        return secrets.randbits(count) if count > 0 else 0


class GeneratorBits:
    """The raw 64-bit outputs (``random_raw``, never a float method) of a NumPy bit generator: seeded in tests."""

    def __init__(self, generator: np.random.Generator) -> None:
        self._bitgen = generator.bit_generator

    def words(self, count: int) -> np.ndarray:
        return np.asarray(self._bitgen.random_raw(count), dtype=np.uint64)

    def bits(self, count: int) -> int:
        """A uniform integer of ``count`` bits (whole words, the excess high bits dropped)."""
        if count <= 0:
            return 0
        words = np.asarray(self._bitgen.random_raw((count + _WORD - 1) // _WORD), dtype=">u8")
        return int.from_bytes(words.tobytes(), "big") >> (-count % _WORD)


@lru_cache(maxsize=4096)  # a few rates and bit widths recur in every draw: computed once each
def exp_neg_bounds(x: Fraction, bits: int) -> tuple[int, int]:
    """Integers ``lo <= 2^bits e^{-x} <= hi`` for rational ``x >= 0``, with ``hi - lo`` a few units. Details: docs/noise.md.
    """
    if x < 0:
        raise ValueError(f"x must be non-negative, got {x}")
    if x == 0:
        return 1 << bits, 1 << bits
    if x > Fraction(7, 10) * (bits + 1):  # e^{-x} < 2^{-bits-1} since 7/10 > ln 2
        return 0, 1
    magnitude = x.numerator // x.denominator
    digits = (bits * 3) // 10 + 2 * len(str(magnitude)) + 12
    num, den = decimal.Decimal(x.numerator), decimal.Decimal(x.denominator)
    x_lo = decimal.Context(prec=digits, rounding=decimal.ROUND_FLOOR).divide(num, den)  # x_lo <= x <= x_hi
    x_hi = decimal.Context(prec=digits, rounding=decimal.ROUND_CEILING).divide(num, den)
    ctx = decimal.Context(prec=digits, rounding=decimal.ROUND_HALF_EVEN, Emin=-10**9, Emax=10**9)
    low = ctx.exp(x_hi.copy_negate())
    high = ctx.exp(x_lo.copy_negate())
    for _ in range(2):
        low = ctx.next_minus(low)
        high = ctx.next_plus(high)
    scale = decimal.Decimal(1 << bits)
    down = decimal.Context(prec=digits + 25, rounding=decimal.ROUND_FLOOR, Emin=-10**9, Emax=10**9)
    up = decimal.Context(prec=digits + 25, rounding=decimal.ROUND_CEILING, Emin=-10**9, Emax=10**9)
    lo = int(down.multiply(low, scale).to_integral_value(rounding=decimal.ROUND_FLOOR))
    hi = int(up.multiply(high, scale).to_integral_value(rounding=decimal.ROUND_CEILING))
    return max(lo, 0), min(hi, 1 << bits)


def uniform_prefix_less(prefix: int, prefix_bits: int, bounds: Callable[[int], tuple[int, int]],
                        source: BitSource) -> bool:
    """Decide ``U < c`` exactly, where ``U``'s first ``prefix_bits`` bits are ``prefix``. Details: docs/noise.md."""
    value, width = prefix, prefix_bits
    while True:
        lo, hi = bounds(width)
        if value + 1 <= lo:
            return True
        if value >= hi:
            return False
        value = (value << width) | source.bits(width)
        width *= 2


def _exp_bounds_fn(x: Fraction, factor: int = 1) -> Callable[[int], tuple[int, int]]:
    """``bits -> bounds of 2^bits * factor * e^{-x}`` (``factor`` a power of two, the product at most 1)."""
    shift = factor.bit_length() - 1

    def bounds(bits: int) -> tuple[int, int]:
        lo, hi = exp_neg_bounds(x, bits + shift)
        return lo, min(hi, 1 << (bits + shift))

    return bounds


def _bernoulli(source: BitSource, count: int, bounds: Callable[[int], tuple[int, int]]) -> np.ndarray:
    """``count`` exact Bernoulli draws of a constant ``c`` (``bounds`` as :func:`uniform_prefix_less`): a vectorized
    first pass on 64-bit prefixes, the undecided ones finished one by one."""
    lo, hi = bounds(_WORD)
    words = source.words(count)
    yes = np.ones(words.shape, dtype=bool) if lo >= _TOP else words < np.uint64(lo)  # words + 1 <= lo
    no = np.zeros(words.shape, dtype=bool) if hi >= _TOP else words >= np.uint64(hi)
    for index in np.flatnonzero(~(yes | no)).tolist():
        yes[index] = uniform_prefix_less(int(words[index]), _WORD, bounds, source)
    return yes


def _poisson_cdf_bounds(mean: Fraction, bits: int) -> Iterator[tuple[int, int]]:
    """Integer bounds of ``2^bits P(Poisson(mean) <= n) = 2^bits e^{-mean} sum_{i <= n} mean^i / i!`` for
    ``n = 0, 1, ...`` (the partial sums carried along), the upper one at most ``2^bits``."""
    shift = (3 * mean.numerator) // (2 * mean.denominator) + 8  # e^{-mean} tight beside sums up to e^{mean}
    lo, hi = exp_neg_bounds(mean, bits + shift)
    partial, term, n = Fraction(0), Fraction(1), 0
    while True:
        if n:
            term = term * mean / n
        partial += term
        yield ((lo * partial.numerator) // (partial.denominator << shift),
               min(-((-hi * partial.numerator) // (partial.denominator << shift)), 1 << bits))
        n += 1


@lru_cache(maxsize=64)
def _poisson_table(mean: Fraction) -> np.ndarray:
    """64-bit bounds ``(lo, hi)`` of the Poisson cdf ``F(0), F(1), ...`` (rows of a uint64 ``(n, 2)`` array) as far
    as the upper bound stays below ``2^64``."""
    bounds = list(itertools.takewhile(lambda pair: pair[1] < _TOP, _poisson_cdf_bounds(mean, _WORD)))
    return np.array(bounds, dtype=np.uint64).reshape(-1, 2)


def _poisson_exact(mean: Fraction, prefix: int, source: BitSource) -> int:
    """Inverse transform of ``Poisson(mean)`` for a uniform with 64-bit prefix ``prefix``, exact."""
    n = 0
    while not uniform_prefix_less(
            prefix, _WORD, lambda bits: next(itertools.islice(_poisson_cdf_bounds(mean, bits), n, None)), source):
        n += 1
    return n


def _poisson(mean: Fraction, count: int, source: BitSource) -> np.ndarray:
    """``count`` exact ``Poisson(mean)`` draws (inverse transform; 64-bit table first, exact fallback)."""
    table = _poisson_table(mean)
    words = source.words(count)
    sure = np.searchsorted(table[:, 1], words, side="right")   # F(n) <= U for sure: hi_n <= prefix
    maybe = np.searchsorted(table[:, 0], words, side="right")  # F(n) <= U possible: lo_n <= prefix
    result = sure.astype(np.int64)
    open_ = (sure != maybe) | (sure == len(table))
    for index in np.flatnonzero(open_).tolist():
        result[index] = _poisson_exact(mean, int(words[index]), source)
    return result


def _uniform_below(bounds: np.ndarray, source: BitSource) -> np.ndarray:
    """Uniform integers in ``[0, bounds)`` for positive int64 ``bounds`` (rejection on 64-bit words)."""
    limit_max = np.uint64(_TOP - 1)
    bnd = bounds.astype(np.uint64)
    limit = (limit_max // bnd) * bnd  # a multiple of the bound, at most 2^64 - 1
    out = np.empty(bounds.shape, dtype=np.int64)
    todo = np.arange(bounds.size)
    while todo.size:
        words = source.words(todo.size)
        ok = words < limit[todo]
        out[todo[ok]] = (words[ok] % bnd[todo[ok]]).astype(np.int64)
        todo = todo[~ok]
    return out


def _keep_exact(location: int, band: int, factor: int, rate: Fraction, source: BitSource) -> bool:
    """Keep a proposal at ``location`` of band ``band`` with probability ``factor (2^band/location) e^{-rate location}``
    (Python integers only: the slow path of the rare proposals beyond ``2^62``)."""
    while (below := source.bits(location.bit_length())) >= location:
        pass  # a uniform integer in [0, location), by rejection
    if below >= 1 << band:
        return False
    return uniform_prefix_less(source.bits(_WORD), _WORD, _exp_bounds_fn(rate * location, factor), source)


def _tail_band(source: BitSource) -> int:
    """``k`` with probability ``2^{-k-1}``: the number of one bits before the first zero bit."""
    k = 0
    while True:
        word = source.bits(_WORD)
        if word != _TOP - 1:
            inverted = (~word) & (_TOP - 1)
            return k + ((inverted & -inverted).bit_length() - 1)
        k += _WORD


_CHUNK = 1 << 15  # draws per vectorized batch (bounds the memory of the proposals)


def negative_binomial(shape: Fraction, rate: Fraction, count: int, source: BitSource) -> np.ndarray:
    """``count`` exact int64 draws of ``NB(r = shape, alpha = e^{-rate})`` (rationals): ``pmf(k) = C(k + r - 1, k)
    (1 - alpha)^r alpha^k``; OverflowError past int64 (probability below ``e^{-rate 2^62}``). Details: docs/noise.md."""
    whole = shape.numerator // shape.denominator
    part = shape - whole
    total = np.zeros(count, dtype=np.int64)
    if whole:
        total = _negative_binomial_whole(whole, rate, count, source)
    if part:
        extra = _negative_binomial_thinning(part, rate, count, source)
        if np.any(total > np.iinfo(np.int64).max - extra):
            raise OverflowError("a negative binomial draw exceeds the int64 range")
        total += extra
    return total


def _negative_binomial_thinning(shape: Fraction, rate: Fraction, count: int, source: BitSource) -> np.ndarray:
    """``count`` exact draws of ``NB(shape, e^{-rate})`` by thinning (docs/noise.md): ``shape (B + 2)`` proposals per draw.

    Python integers only for undecided comparisons and locations beyond ``2^62``."""
    bands = _bands(rate)
    per_draw = shape * (bands + 2) + 1  # expected proposals per draw
    chunk = max(1, min(_CHUNK, int(_CHUNK * 16 // per_draw)))
    if count > chunk:
        return np.concatenate([_negative_binomial_thinning(shape, rate, min(chunk, count - start), source)
                               for start in range(0, count, chunk)])
    total = np.zeros(count, dtype=np.int64)
    if count == 0:
        return total
    # proposals: (draw, band, tail offset k or -1)
    inner = _poisson(shape, count * bands, source).reshape(count, bands) if bands else np.zeros((count, 0), np.int64)
    tail_counts = _poisson(2 * shape, count, source)
    draw_inner = np.repeat(np.repeat(np.arange(count), bands), inner.ravel())
    band_inner = np.repeat(np.tile(np.arange(bands), count), inner.ravel())
    draw_tail = np.repeat(np.arange(count), tail_counts)
    # the tail band: k = trailing one bits of a uniform word (probability 2^{-k-1})
    words = source.words(draw_tail.size)
    inverted = ~words
    all_ones = inverted == 0
    low_bit = inverted & (~inverted + np.uint64(1))
    k_tail = np.bitwise_count(low_bit - np.uint64(1)).astype(np.int64)
    slow = all_ones | (bands + k_tail > _MAX_BAND)
    for index in np.flatnonzero(slow).tolist():
        k = _WORD + _tail_band(source) if all_ones[index] else int(k_tail[index])
        slow_band = bands + k
        slow_location = (1 << slow_band) | source.bits(slow_band)
        if _keep_exact(slow_location, slow_band, 1 << k, rate, source):
            value = int(total[draw_tail[index]]) + slow_location
            if value >= 1 << 63:
                raise OverflowError("a negative binomial draw exceeds the int64 range")
            total[draw_tail[index]] = value
    fast = ~slow
    draws = np.concatenate([draw_inner, draw_tail[fast]])
    band = np.concatenate([band_inner, bands + k_tail[fast]])
    tail_k = np.concatenate([np.full(draw_inner.size, -1, dtype=np.int64), k_tail[fast]])
    if draws.size == 0:
        return total
    # locations J = 2^b + uniform offset below 2^b
    offsets = (source.words(draws.size) & ((np.uint64(1) << band.astype(np.uint64)) - np.uint64(1))).astype(np.int64)
    location = (np.int64(1) << band) + offsets
    # test 1: V uniform below J is below 2^b
    alive = _uniform_below(location, source) < (np.int64(1) << band)
    # test 2: the band's base factor, e^{-gamma 2^b} (inner) or 2^k e^{-gamma 2^{B+k}} (tail)
    for b in np.unique(band).tolist():
        for is_tail in (False, True):
            sel = np.flatnonzero(alive & (band == b) & ((tail_k >= 0) == is_tail))
            if sel.size == 0:
                continue
            factor = _exp_bounds_fn(rate * (1 << b), 1 << (b - bands) if is_tail else 1)
            alive[sel] = _bernoulli(source, sel.size, factor)
    # test 3: e^{-gamma 2^i} for every set bit i of the offset
    top = int(band.max())
    for i in range(top):
        sel = np.flatnonzero(alive & (((offsets >> i) & 1) == 1))
        if sel.size == 0:
            continue
        alive[sel] = _bernoulli(source, sel.size, _exp_bounds_fn(rate * (1 << i)))
    kept = np.flatnonzero(alive)
    if kept.size:
        before = total.copy()
        np.add.at(total, draws[kept], location[kept])
        if np.any(total < before):
            raise OverflowError("a negative binomial draw exceeds the int64 range")
    return total


def _bands(rate: Fraction) -> int:
    """``B``: the least integer with ``rate 2^B >= 1``, i.e. with ``2^B >= ceil(1 / rate)``."""
    return (-(-rate.denominator // rate.numerator) - 1).bit_length()


class _Digits:
    """The leading binary digits of a constant ``q`` in ``(0, 1)``, read off rigorous bounds. Details: docs/noise.md."""

    def __init__(self, bounds: Callable[[int], tuple[int, int]]) -> None:
        self._bounds = bounds
        self._bits = _WORD // 2
        self.digits: list[int] = []

    def extend(self, depth: int) -> None:
        """Know at least ``depth + 1`` digits."""
        while len(self.digits) <= depth:
            self._bits *= 2
            lo, hi = self._bounds(self._bits)
            known = max(0, self._bits - (lo ^ hi).bit_length()) if hi < 1 << self._bits else 0
            self.digits = [(lo >> (self._bits - 1 - j)) & 1 for j in range(known)]


class _DigitTable:
    """Digits of several constants side by side (row ``i``: constant ``i``), for vectorized lookups."""

    def __init__(self, constants: list[_Digits]) -> None:
        self._constants = constants
        self.matrix = np.zeros((len(constants), 0), dtype=np.uint8)

    def column(self, depth: int) -> np.ndarray:
        """Digit ``depth`` (0: the ``1/2`` digit) of every constant, a uint8 array."""
        if depth >= self.matrix.shape[1]:
            for constant in self._constants:
                constant.extend(depth)
            width = min(len(constant.digits) for constant in self._constants)
            self.matrix = np.array([constant.digits[:width] for constant in self._constants], dtype=np.uint8)
        return self.matrix[:, depth]


def _geometric_digit_bounds(x: Fraction) -> Callable[[int], tuple[int, int]]:
    """``bits -> bounds of 2^bits q``, ``q = e^{-x}/(1 + e^{-x})`` (increasing in ``e^{-x}``)."""
    def bounds(bits: int) -> tuple[int, int]:
        extra = bits + 4
        lo, hi = exp_neg_bounds(x, extra)
        return (lo << bits) // ((1 << extra) + lo), -((-(hi << bits)) // ((1 << extra) + hi))

    return bounds


@lru_cache(maxsize=64)
def _level_table(rate: Fraction, levels: int) -> _DigitTable:
    """Digits of ``q_i = 1/(1 + e^{rate 2^i})`` for ``i < levels`` (cached, extended as needed)."""
    return _DigitTable([_Digits(_geometric_digit_bounds(rate * (1 << i))) for i in range(levels)])


@lru_cache(maxsize=64)
def _tail_table(x: Fraction) -> _DigitTable:
    """Digits of ``e^{-x}`` (cached, extended as needed)."""
    return _DigitTable([_Digits(_exp_bounds_fn(x))])


def _half_binomials(trials: np.ndarray, source: BitSource) -> np.ndarray:
    """``Binomial(n, 1/2)`` for every positive ``n`` of ``trials``: the popcount of ``n`` fair bits (vectorized)."""
    if int(trials.max()) <= _WORD:  # one word each (the common case): the same words and masks, no segments
        words = source.words(trials.size)
        rest = trials.astype(np.uint64)
        words &= np.where(rest == _WORD, np.uint64(_TOP - 1), (np.uint64(1) << rest % np.uint64(_WORD)) - np.uint64(1))
        return np.bitwise_count(words).astype(np.int64)
    per = (trials + (_WORD - 1)) // _WORD
    ends = np.cumsum(per)
    words = source.words(int(ends[-1]))
    rest = trials % _WORD
    partial = np.flatnonzero(rest)
    words[ends[partial] - 1] &= (np.uint64(1) << rest[partial].astype(np.uint64)) - np.uint64(1)
    return np.add.reduceat(np.bitwise_count(words), ends - per, dtype=np.int64)  # every segment non-empty


def _binomials(trials: np.ndarray, table: _DigitTable, which: np.ndarray, source: BitSource) -> np.ndarray:
    """``Binomial(n_j, q_{w_j})`` for every ``n_j`` of ``trials``, ``w_j`` of ``which``, exactly. Details: docs/noise.md.
    """
    tied = trials.astype(np.int64)
    below = np.zeros(tied.size, dtype=np.int64)
    active = np.flatnonzero(tied > 0)
    depth = 0
    while active.size:
        zeros = _half_binomials(tied[active], source)
        one = table.column(depth)[which[active]] == 1
        below[active[one]] += zeros[one]
        tied[active] = np.where(one, tied[active] - zeros, zeros)
        active = active[tied[active] > 0]
        depth += 1
    return below


_LEVEL_WORDS = 1 << 21  # fair words per vectorized digit step (bounds the memory of a batch)


def _negative_binomial_whole(whole: int, rate: Fraction, count: int, source: BitSource) -> np.ndarray:
    r"""``count`` exact draws of ``NB(k, e^{-rate})`` for an integer ``k >= 1``. Details: docs/noise.md."""
    bands = _bands(rate)
    per_draw = (bands + 1) * (whole // _WORD + 2)
    chunk = max(1, _LEVEL_WORDS // per_draw)
    if count > chunk:
        return np.concatenate([_negative_binomial_whole(whole, rate, min(chunk, count - start), source)
                               for start in range(0, count, chunk)])
    if whole.bit_length() + bands > 62:  # the int64 sums below need k 2^B <= 2^62 (the mean is above 2^60)
        raise OverflowError("a negative binomial draw may exceed the int64 range: shape * 2^B > 2^62")
    total = np.zeros(count, dtype=np.int64)
    if count == 0:
        return total
    if bands:
        counts = _binomials(np.full(count * bands, whole, dtype=np.int64), _level_table(rate, bands),
                            np.tile(np.arange(bands), count), source).reshape(count, bands)
        total = (counts << np.arange(bands, dtype=np.int64)).sum(axis=1)  # at most k (2^B - 1)
    tail = np.zeros(count, dtype=np.int64)
    table = _tail_table(rate * (1 << bands))
    tied = np.full(count, whole, dtype=np.int64)
    live = np.arange(count)
    while live.size:
        tied = _binomials(tied, table, np.zeros(live.size, dtype=np.int64), source)
        tail[live] += tied
        keep = tied > 0
        live, tied = live[keep], tied[keep]
    limit = ((1 << 63) - 1 - int(total.max())) >> bands
    if int(tail.max()) > limit:
        raise OverflowError("a negative binomial draw exceeds the int64 range")
    return total + (tail << bands)


def _popcount_binomial(trials: int, count: int, source: BitSource) -> np.ndarray:
    """``count`` draws of ``Binomial(trials, 1/2)``: the popcount of ``trials`` fair bits each."""
    full, rest = divmod(trials, _WORD)
    out = np.zeros(count, dtype=np.int64)
    if full:
        step = max(1, (1 << 20) // full)
        for start in range(0, count, step):
            stop = min(count, start + step)
            words = source.words((stop - start) * full).reshape(stop - start, full)
            out[start:stop] = np.bitwise_count(words).sum(axis=1, dtype=np.int64)
    if rest:
        mask = np.uint64((1 << rest) - 1)
        out += np.bitwise_count(source.words(count) & mask).astype(np.int64)
    return out


#: above this many trials, :func:`binomial_half` samples by rejection instead of popcount
POPCOUNT_TRIALS: int = 1 << 12
_STIRLING_FROM = 1000  # Stirling's series is used at arguments of at least this size (smaller ones are shifted)


@lru_cache(maxsize=None)
def _bernoulli_number(index: int) -> Fraction:
    """The Bernoulli number ``B_index`` (``B_1 = -1/2``), exactly (the recurrence ``sum_k C(n+1, k) B_k = 0``)."""
    if index == 0:
        return Fraction(1)
    total = Fraction(0)
    binom = 1
    for k in range(index):
        total += binom * _bernoulli_number(k)
        binom = binom * (index + 1 - k) // (k + 1)
    return -total / (index + 1)


def _log_factorial_core(n: int, ctx: decimal.Context, digits: int) -> tuple[decimal.Decimal, Fraction]:
    """``ln n! - ln(2 pi)/2`` and a bound on the remainder of the Stirling series used. Details: docs/noise.md."""
    big = max(n, _STIRLING_FROM)
    value = ctx.multiply(ctx.add(decimal.Decimal(big), decimal.Decimal("0.5")), ctx.ln(decimal.Decimal(big)))
    value = ctx.subtract(value, decimal.Decimal(big))
    bound = Fraction(1, 10 ** (digits + 5))
    k = 1
    while True:
        coeff = _bernoulli_number(2 * k) / (2 * k * (2 * k - 1) * big ** (2 * k - 1))
        if abs(coeff) < bound:
            remainder = abs(coeff)
            break
        value = ctx.add(value, ctx.divide(decimal.Decimal(coeff.numerator), decimal.Decimal(coeff.denominator)))
        k += 1
    if big > n:
        value = ctx.subtract(value, ctx.ln(decimal.Decimal(prod(range(n + 1, big + 1)))))
    return value, remainder


def binomial_log_ratio_bounds(half: int, offset: int, digits: int) -> tuple[Fraction, Fraction]:
    """Bounds ``lo <= L <= hi`` of ``L = ln(C(2m, m + d) / C(2m, m))`` for ``m = half``, ``d = offset``, ``|d| <= m``.
    Details: docs/noise.md."""
    ctx = decimal.Context(prec=digits + 30, rounding=decimal.ROUND_HALF_EVEN, Emin=-10**9, Emax=10**9)
    d = abs(offset)
    centre, r0 = _log_factorial_core(half, ctx, digits)
    upper, r1 = _log_factorial_core(half + d, ctx, digits)
    lower, r2 = _log_factorial_core(half - d, ctx, digits)
    value = Fraction(ctx.subtract(ctx.subtract(ctx.multiply(decimal.Decimal(2), centre), upper), lower))
    error = Fraction(1, 10 ** digits) + 2 * r0 + r1 + r2
    return value - error, value + error


def _binomial_accept_bounds(half: int, offset: int, scale: int) -> Callable[[int], tuple[int, int]]:
    """``bits -> bounds of 2^bits a(d)``, ``a(d) = exp(L(d) - 1/2 + |d|/S)`` (at most 1, see :func:`binomial_half`)."""
    def bounds(bits: int) -> tuple[int, int]:
        lo_l, hi_l = binomial_log_ratio_bounds(half, offset, (bits * 3) // 10 + 12)
        shift = Fraction(abs(offset), scale) - Fraction(1, 2)  # a(d) = e^{-y}, y = -(L + shift)
        return (exp_neg_bounds(max(-lo_l - shift, Fraction(0)), bits)[0],
                exp_neg_bounds(max(-hi_l - shift, Fraction(0)), bits)[1])

    return bounds


def binomial_half(trials: int, count: int, source: BitSource) -> np.ndarray:
    """``count`` exact draws of ``Binomial(trials, 1/2)``. Details: docs/noise.md."""
    if trials <= POPCOUNT_TRIALS or trials % 2:
        return _popcount_binomial(trials, count, source)
    half = trials // 2
    scale = isqrt(half - 1) + 1  # ceil(sqrt(half))
    out = np.empty(count, dtype=np.int64)
    todo = np.arange(count)
    rate = Fraction(1, scale)
    while todo.size:
        pair = negative_binomial(Fraction(1), rate, 2 * todo.size, source)
        offsets = pair[: todo.size] - pair[todo.size:]
        accepted = np.zeros(todo.size, dtype=bool)
        words = source.words(todo.size).tolist()
        for index, d in enumerate(offsets.tolist()):
            size = abs(d)
            if size > half:
                continue
            # squeeze: -d^2/(m-|d|+1) <= L(d) <= -d^2/(m+|d|) (see above), decided on 64 bits in most cases
            shift = Fraction(2 * size * half - scale * half, 2 * scale * half)  # |d|/S - 1/2
            lo = exp_neg_bounds(max(Fraction(size * size, half - size + 1) - shift, Fraction(0)), _WORD)[0]
            if words[index] + 1 <= lo:
                accepted[index] = True
                continue
            hi = exp_neg_bounds(max(Fraction(size * size, half + size) - shift, Fraction(0)), _WORD)[1]
            if words[index] >= hi:
                continue
            accepted[index] = uniform_prefix_less(words[index], _WORD, _binomial_accept_bounds(half, d, scale),
                                                  source)
        out[todo[accepted]] = half + offsets[accepted]
        todo = todo[~accepted]
    return out

