"""Sinh & Ramon, *Accurate, private, secure, federated U-statistics with higher degree*: Pi_U-MPC.

- :mod:`dp.umpc.protocol`         the protocol (Protocol 3.1): query, noise plans, secure and simulated paths.
- :mod:`dp.umpc.delegation`       threat model M_HF (§4): only a subgroup Z drawn from fresh joint randomness draws the noise.
- :mod:`dp.umpc.sampler_variance` exact E_inc + E_DP of the tuple samplers (App. D.1.2).
- :mod:`dp.umpc.costs`            communication and computation models (Table 1, App. D.2).
- :mod:`dp.umpc.scripting`        the public vocabulary below.

Public API (loaded on first use; none of it imports ``mpyc.runtime`` until a release runs):

- :class:`Query` -- ``Query(statistic="auc", columns=[numeric(...), label(...)], epsilon=1.0,
  tuples="2n")``: the statistic by name, precision from the column declarations, checked on entry;
- :func:`release` -- ``await release(query, rows)`` inside a job run by :func:`secure.run`: every
  party's verdict shared, tuples from the public n, Pi_U-MPC on MPyC; a :class:`UStatRelease`; ``rows`` an
  :class:`Owners`: the parties are a campaign's servers computing from owners' uploads (docs/owners.md);
- :func:`simulate` -- the same query in one process for Monte Carlo (a :class:`Simulation`);
- :func:`exact` -- the non-private value over all tuples;
- the lower level: :class:`UStatQuery`, :func:`prepare_rows`, :func:`run_secure`."""
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
