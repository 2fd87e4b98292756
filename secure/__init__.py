"""The MPyC layer: secure computation of kernel sums across parties, one topic per module (as in MPyC).
Threat model: passive, static adversary corrupting at most ``t < m/2`` of the ``m`` parties (Shamir).
``import secure`` never imports ``mpyc.runtime`` (the *lazy* names load it on first use).  Modules and
public API: docs/secure_layer.md."""
from __future__ import annotations

import importlib
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from secure.columns import categorical, classes, label, numeric
from secure.errors import InputError, ProtocolFailure
from secure.intake import ColumnSpec, MissingPolicy, Party, PartyRows, party_rows
from secure.launcher import run, run_parties

if TYPE_CHECKING:
    from secure.public_randomness import joint_seed
    from secure.session import agree_parameters, agree_verdict, party_count, party_id, threshold

__all__ = ["run", "run_parties", "Party", "numeric", "label", "classes", "categorical", "ColumnSpec", "MissingPolicy",
           "PartyRows", "read_rows", "InputError", "ProtocolFailure", "party_id", "party_count", "threshold",
           "agree_parameters", "agree_verdict", "joint_seed", "MissingMode"]

#: names loaded on first use, because their modules import ``mpyc.runtime`` (PEP 562)
_LAZY = {"party_id": "secure.session", "party_count": "secure.session", "threshold": "secure.session",
         "agree_parameters": "secure.session", "agree_verdict": "secure.session",
         "joint_seed": "secure.public_randomness"}


#: the missing-value policies by name (:class:`MissingPolicy`); a typo fails the type checker too
MissingMode = Literal["refuse", "fill"]


def read_rows(path: str, columns: Sequence[ColumnSpec | str], *, party: int = 0, parties: int = 1,
              missing: MissingPolicy | MissingMode = "refuse") -> PartyRows:
    """Party ``party``'s rows of ``columns`` from ``path``, outside a run (e.g. to simulate parties).
    ``{pid}`` in ``path``: party ``party``'s own file; otherwise rows ``party, party + parties, ...``.
    :raise InputError: a missing or bad file, an unknown column, a missing value refused.
    :raise ValueError: ``parties`` not a positive integer, ``party`` outside ``[0, parties - 1]``."""
    if isinstance(parties, bool) or not isinstance(parties, numbers.Integral) or parties < 1:
        raise ValueError(f"parties must be a positive integer, got {parties!r}")
    if isinstance(party, bool) or not isinstance(party, numbers.Integral) or not 0 <= party < parties:
        raise ValueError(f"party must be an integer in [0, {parties - 1}] (parties are numbered from 0), got {party!r}")
    names = [column if isinstance(column, str) else column.name for column in columns]
    policy = missing if isinstance(missing, MissingPolicy) else MissingPolicy(missing)
    specs = [column for column in columns if isinstance(column, ColumnSpec)]
    return party_rows(path, names, party=party, parties=parties, missing=policy,
                      specs=specs if len(specs) == len(names) else None)


if not TYPE_CHECKING:  # the type checker sees only the names imported above, so a typo (secure.rnu) fails it

    def __getattr__(name: str) -> Any:
        if name in _LAZY:
            return getattr(importlib.import_module(_LAZY[name]), name)
        raise AttributeError(f"module 'secure' has no attribute {name!r}")
