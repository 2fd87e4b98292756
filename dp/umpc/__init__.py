"""Sinh & Ramon, *Accurate, private, secure, federated U-statistics with higher degree*: Pi_U-MPC (Protocol 3.1).

Modules: ``protocol`` (Protocol 3.1), ``delegation`` (threat model M_HF, §4), ``sampler_variance`` (App. D.1.2),
``costs`` (Table 1, App. D.2), ``scripting`` (this face); docs/umpc_analysis.md.  Public API, loaded on first use
(no ``mpyc.runtime`` until a release runs): :class:`Query`, :func:`release` (inside :func:`secure.run`; ``rows``
may be the campaign's :class:`Owners`, docs/owners.md), :func:`simulate`, :func:`exact`; the lower level
:class:`UStatQuery`, :func:`prepare_rows`, :func:`run_secure`; docs/design.md ("Scripting")."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dp.umpc.protocol import Simulation, UStatQuery, UStatRelease, prepare_rows, run_secure
    from dp.umpc.owners import Owners
    from dp.umpc.scripting import Query, exact, release, simulate

__all__ = ["Query", "release", "simulate", "exact", "UStatQuery", "UStatRelease", "Simulation", "prepare_rows",
           "run_secure", "Owners"]

_LAZY = {"Query": "dp.umpc.scripting", "release": "dp.umpc.scripting", "simulate": "dp.umpc.scripting",
         "exact": "dp.umpc.scripting", "UStatQuery": "dp.umpc.protocol", "UStatRelease": "dp.umpc.protocol",
         "Simulation": "dp.umpc.protocol", "prepare_rows": "dp.umpc.protocol", "run_secure": "dp.umpc.protocol",
         "Owners": "dp.umpc.owners"}


if not TYPE_CHECKING:  # the type checker sees only the names imported above, so a typo (dp.umpc.Qurey) fails it

    def __getattr__(name: str) -> Any:
        if name in _LAZY:
            return getattr(importlib.import_module(_LAZY[name]), name)
        raise AttributeError(f"module 'dp.umpc' has no attribute {name!r}")
