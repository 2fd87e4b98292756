"""MPyC's security parameter ``K`` (``-K``): raised for one run, and secure integers whose field holds its masks.
Threat model: passive, static coalition of ``t < m/2`` parties.  Every party sets the same ``K``.  Why the field size matters:
docs/comparison_leakage.md."""
from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["field_bits", "secure_integers", "set_security_parameter", "restores_security_parameter"]


def field_bits(bit_length: int, sec_param: int) -> int:
    """Bit length of MPyC's prime field for ``bit_length``-bit secure integers at ``-K sec_param``:
    ``L + K + 2`` (``mpyc.sectypes._pfield``)."""
    return bit_length + sec_param + 2


def secure_integers(bit_length: int) -> Any:
    """``mpc.SecInt(bit_length)``, with a prime field of at least ``L + K + 2`` bits for the *current* ``K``.
    Details: docs/comparison_leakage.md."""
    from mpyc import finfields
    from mpyc.runtime import mpc

    bits = field_bits(bit_length, int(mpc.options.sec_param))
    plain = mpc.SecInt(bit_length)
    if plain.field.order.bit_length() >= bits:
        return plain
    return mpc.SecInt(bit_length, p=finfields.find_prime_root(bits, n=2)[0])


def set_security_parameter(sec_param: int) -> None:
    """Set MPyC's ``sec_param`` (never lowered here); call it before the run's secure types are made
    (:func:`secure_integers`) and before any comparison.  Every party must call it with the same value:
    callers derive it from agreed public parameters and the launch ``-K`` (compared across parties)."""
    from mpyc.runtime import mpc

    if sec_param < int(mpc.options.sec_param):
        raise ValueError(f"the security parameter may only be raised, from {mpc.options.sec_param}, got {sec_param}")
    mpc.options.sec_param = int(sec_param)


P = ParamSpec("P")
R = TypeVar("R")


def restores_security_parameter(function: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorate a coroutine function that may raise ``K`` (:func:`set_security_parameter`): the launch value is
    restored when it returns or raises (every comparison it started has been awaited by then), so a later
    run in the same process starts from ``-K`` again."""

    @functools.wraps(function)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from mpyc.runtime import mpc

        launch = mpc.options.sec_param
        try:
            return await function(*args, **kwargs)
        finally:
            mpc.options.sec_param = launch

    return wrapper
