"""The MPyC layer: secure computation of kernel sums across parties, one topic per module (as in MPyC).
Threat model: passive, static adversary corrupting at most ``t < m/2`` of the ``m`` parties (Shamir).
``import secure`` never imports ``mpyc.runtime`` (the *lazy* names load it on first use).  Modules and
public API: docs/secure_layer.md."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from secure.columns import categorical, classes, label, numeric
from secure.errors import InputError, ProtocolFailure
from secure.intake import ColumnSpec, MissingMode, MissingPolicy, Party, PartyRows, read_rows
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

if not TYPE_CHECKING:  # the type checker sees only the names imported above, so a typo (secure.rnu) fails it

    def __getattr__(name: str) -> Any:
        if name in _LAZY:
            return getattr(importlib.import_module(_LAZY[name]), name)
        raise AttributeError(f"module 'secure' has no attribute {name!r}")
