"""Post-processing of released ECDFs: monotone smoothing, inverse ECDF, ROC build.

Implements the post-processing half of Barczewski, Mawass & Ramon, *Differentially Private
Empirical Cumulative Distribution Functions*:

- :mod:`smoothing.monotone`  eq. (3): least-``p``-norm node corrections (``p`` = 1 LP, 2 QP, sparse
  CVXPY problem, explicit solver preference with fallback) making a tree-mechanism ECDF
  non-decreasing and inside [0, 1]; timings of Sec. 6.7 / Fig. 7 measured here in its docstring.
- :mod:`smoothing.inverse`   step-ECDF evaluation on a grid and Algorithm 1 (inverse ECDF by binary
  search on ``[lower, upper]``), quantiles.
- :mod:`smoothing.roc`       Sec. 5.1: ROC polyline and trapezoid AUC from the ECDFs of positive and
  negative scores.

Layering: pure numpy/scipy/cvxpy.  This package never imports :mod:`secure`, :mod:`dp`,
:mod:`scenarios` or MPyC; the grid-point-to-tree-node incidence matrix is built by the caller
(the tree mechanism in ``dp/``).  Everything here is post-processing of public released values, so
it costs no privacy budget and needs no threat model of its own.
"""
from __future__ import annotations

from smoothing.inverse import Curve, ecdf_on_grid, evaluate_step, inverse_ecdf, quantiles
from smoothing.monotone import (
    DEFAULT_SOLVERS,
    SmoothingError,
    SmoothingResult,
    default_solvers,
    smooth_ecdf,
    smooth_many,
)
from smoothing.roc import RocCurve, batch_auc, roc_from_ecdfs, trapezoid_auc

__all__ = [
    "Curve",
    "DEFAULT_SOLVERS",
    "RocCurve",
    "batch_auc",
    "SmoothingError",
    "SmoothingResult",
    "default_solvers",
    "ecdf_on_grid",
    "evaluate_step",
    "inverse_ecdf",
    "quantiles",
    "roc_from_ecdfs",
    "smooth_ecdf",
    "smooth_many",
    "trapezoid_auc",
]
