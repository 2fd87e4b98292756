"""Secure sums, each party's noise share, and the guarded reveal.

Protocol steps 3-4 of Pi_U-MPC (Sinh & Ramon, Protocol 3.1; App. B.1 for the distributed noise):

- :func:`secure_sum` adds up kernel values inside MPC (local work on Shamir shares, no messages);
- :func:`add_party_noise` lets every party secret-share its *own* integer noise draw through
  ``mpc.input`` and adds all of them to the sum, so no party knows the total noise: with the
  coalition calibration of :mod:`dp.calibration` the ``m - t`` honest draws alone make the release
  differentially private against any ``t`` colluding parties (who know their own draws);
- :func:`guarded_reveal` opens the noisy sum to the receivers and checks that it lies in its
  possible range *and* in the range of the secure integer type, so an overflow shows up as an
  error naming the remedy (a larger ``-L``) instead of a silently wrapped-around number.

Threat model: passive, static, at most ``t < m/2`` corrupted parties.  Only the noisy sum is opened.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from secure.session import ProtocolFailure, mark_stopping

__all__ = ["secure_sum", "add_party_noise", "sum_party_vectors", "SumRange", "guarded_reveal",
           "guarded_reveal_array"]


def secure_sum(values: Any) -> Any:
    """Sum of a secure array (``mpc.np_sum``): a secure integer, no communication."""
    from mpyc.runtime import mpc

    return mpc.np_sum(values)


def add_party_noise(total: Any, own_draw: int) -> Any:
    """Add every party's secret-shared noise draw to the secure ``total``.

    :param total: secure integer (the kernel sum).
    :param own_draw: this party's integer noise draw (from :mod:`secure.noise.party`, OS randomness).
    :return: ``total + sum of all parties' draws``, still secret.
    """
    from mpyc.runtime import mpc

    sectype = type(total)
    draws = mpc.input(sectype(int(own_draw)))  # one secure integer per party, each its sender's
    return total + mpc.sum(draws)


def sum_party_vectors(sectype: Any, own: np.ndarray) -> Any:
    """Every party secret-shares its own integer vector (same length everywhere); return the sum.

    Used for per-party counts (each party counts its own rows in the clear) and for per-party noise
    vectors: no party learns another's vector, only shares of the total.

    :param sectype: MPyC secure integer type.
    :param own: this party's int vector.
    :return: secure array, the elementwise sum over all parties.
    """
    from mpyc.runtime import mpc

    vectors = mpc.input(sectype.array(np.asarray(own, dtype=np.int64)))  # one secure array per sender
    total = vectors[0]
    for vector in vectors[1:]:
        total = total + vector
    return total


@dataclass(frozen=True)
class SumRange:
    """Where an opened noisy sum may lie: ``[low - slack, high + slack]``.

    :param low: smallest possible value of the sum without noise.
    :param high: largest possible value of the sum without noise.
    :param slack: bound on the noise magnitude (exceeded with negligible probability).
    """

    low: int
    high: int
    slack: int

    @property
    def bits_needed(self) -> int:
        """Signed bit length that holds every value of the range."""
        return max(abs(self.low - self.slack), abs(self.high + self.slack)).bit_length() + 1


async def guarded_reveal(noisy_sums: Sequence[Any], ranges: Sequence[SumRange],
                         receivers: Sequence[int] | None = None) -> list[int]:
    """Open the noisy sums and check each lies in its possible range and in the secure type's range.

    :param noisy_sums: secure integers to open.
    :param ranges: their possible ranges.
    :param receivers: parties that learn the values (default: all).
    :return: the opened integers (at non-receivers: an empty list).
    :raise ProtocolFailure: if a value is out of range (wrap-around or overflow); names the ``-L``
        that would hold the range.
    """
    from mpyc.runtime import mpc

    receivers = list(range(len(mpc.parties))) if receivers is None else list(receivers)
    opened = await mpc.output(list(noisy_sums), receivers=receivers)
    if mpc.pid not in receivers:
        return []
    values = [int(v) for v in opened]
    for value, bounds, secure in zip(values, ranges, noisy_sums):
        _check_opened(np.array([value], dtype=object), bounds, type(secure).bit_length)
    return values


def _check_opened(values: np.ndarray, bounds: SumRange, bit_length: int) -> None:
    """Raise :class:`ProtocolFailure` if any opened value leaves its range or the secure type's."""
    half = 1 << (bit_length - 1)
    low, high = bounds.low - bounds.slack, bounds.high + bounds.slack
    outside_type = [int(v) for v in values if not -half <= int(v) < half]
    outside_range = [int(v) for v in values if not low <= int(v) <= high]
    if not (outside_type or outside_range):
        return
    value = (outside_range or outside_type)[0]
    mark_stopping()  # every receiver sees the same values and stops the same way
    if bounds.bits_needed <= bit_length and outside_range:
        # -L holds every sum the declared domains allow: the inputs themselves left their domains.
        raise ProtocolFailure(
            f"the opened noisy sum {value} lies outside its possible range [{low}, {high}], although "
            f"-L {bit_length} holds that range: some party shared values outside the declared domains "
            f"(it skipped its clipping; --clip secure clips inside MPC), so nothing is released")
    needed = max(bounds.bits_needed, bit_length + 1)
    raise ProtocolFailure(
        f"the opened noisy sum {value} lies outside "
        f"{'its possible range' if outside_range else 'the range of the secure integers'} "
        f"[{low}, {high}] with -L {bit_length}: the secure integers are too short and wrapped around, "
        f"so nothing is released; rerun with -L {needed} or more")


async def guarded_reveal_array(noisy: Any, bounds: SumRange, receivers: Sequence[int] | None = None) -> np.ndarray | None:
    """Open a secure array of noisy sums that share one possible range; check every entry.

    :return: the opened int64 array at receivers, ``None`` elsewhere.
    :raise ProtocolFailure: if an entry is out of range (see :func:`guarded_reveal`).
    """
    from mpyc.runtime import mpc

    receivers = list(range(len(mpc.parties))) if receivers is None else list(receivers)
    opened = await mpc.output(noisy, receivers=receivers)
    if mpc.pid not in receivers:
        return None
    values = np.array([int(v) for v in np.asarray(opened).ravel()], dtype=object)
    _check_opened(values, bounds, type(noisy).sectype.bit_length)
    return values.astype(np.int64)
