"""Differential privacy on top of :mod:`secure`: validation, calibration, tuple sampling, protocols.

The subpackages by paper and role (``umpc`` Sinh & Ramon, ``bell``, ``ecdf`` Barczewski et al., ``fedauc`` Sun et
al., ``rank_auc``, ``baselines``, ``audit``, ``budget``) and the shared modules: docs/design.md ("Layers").
``import dp`` never imports ``mpyc.runtime`` (subpackages load on first use, PEP 562); the public API a script
imports: docs/design.md ("Scripting")."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from secure.columns import categorical, classes, label, numeric
from secure.intake import ColumnSpec

if TYPE_CHECKING:
    from dp import audit, baselines, bell, budget, calibration, ecdf, fedauc, rank_auc, sampling, umpc, validation

__all__ = ["numeric", "label", "classes", "categorical", "ColumnSpec", "umpc", "ecdf", "rank_auc", "bell", "fedauc",
           "baselines", "audit", "budget", "calibration", "sampling", "validation"]

#: subpackages and modules loaded on first attribute access (``dp.umpc.Query``)
_SUBMODULES = frozenset({"umpc", "ecdf", "rank_auc", "bell", "fedauc", "baselines", "audit", "budget", "calibration",
                         "sampling", "validation"})

if not TYPE_CHECKING:  # the type checker sees only the names imported above, so a typo (dp.umpcc) fails it

    def __getattr__(name: str) -> Any:
        if name in _SUBMODULES:
            return importlib.import_module(f"dp.{name}")
        raise AttributeError(f"module 'dp' has no attribute {name!r}")
