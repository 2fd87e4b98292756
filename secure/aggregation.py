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

from secure.runtime import ProtocolFailure, mark_stopping

__all__ = ["secure_sum", "add_party_noise", "SumRange", "guarded_reveal"]


def secure_sum(values: Any) -> Any:
    """Sum of a secure array (``mpc.np_sum``): a secure integer, no communication."""
    from mpyc.runtime import mpc

    return mpc.np_sum(values)


def add_party_noise(total: Any, own_draw: int) -> Any:
    """Add every party's secret-shared noise draw to the secure ``total``.

    :param total: secure integer (the kernel sum).
    :param own_draw: this party's integer noise draw (from :mod:`secure.noise`, OS randomness).
    :return: ``total + sum of all parties' draws``, still secret.
    """
    from mpyc.runtime import mpc

    sectype = type(total)
    draws = mpc.input(sectype(int(own_draw)))  # one secure integer per party, each its sender's
    return total + mpc.sum(draws)


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
        bit_length = type(secure).bit_length
        half = 1 << (bit_length - 1)
        inside_type = -half <= value < half
        inside_range = bounds.low - bounds.slack <= value <= bounds.high + bounds.slack
        if not (inside_type and inside_range):
            needed = max(bounds.bits_needed, bit_length + 1)
            mark_stopping()  # every receiver sees the same value and stops the same way
            raise ProtocolFailure(
                f"the opened noisy sum {value} lies outside "
                f"{'its possible range' if not inside_range else 'the range of the secure integers'} "
                f"[{bounds.low - bounds.slack}, {bounds.high + bounds.slack}] with -L {bit_length}: "
                f"the secure integers are too short and wrapped around, so nothing is released; "
                f"rerun with -L {needed} or more")
    return values
