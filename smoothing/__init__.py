"""Post-processing of released ECDFs: monotone smoothing, inverse ECDF, ROC (Barczewski, Mawass & Ramon).

- :mod:`smoothing.monotone`  eq. (3): least-``p``-norm node corrections making a tree ECDF monotone.
- :mod:`smoothing.inverse`   Algorithm 1: inverse ECDF by binary search, quantiles.
- :mod:`smoothing.roc`       Sec. 5.1: ROC polyline and trapezoid AUC from two ECDFs.

Pure numpy/scipy/cvxpy; never imports :mod:`secure`, :mod:`dp` or MPyC.  Post-processing of public values:
no privacy cost, no threat model of its own.  Details and timings (Sec. 6.7, Fig. 7): docs/smoothing.md."""
from __future__ import annotations

from smoothing.inverse import Curve, ecdf_on_grid, evaluate_step, inverse_ecdf, quantiles
from smoothing.monotone import DEFAULT_SOLVERS, SmoothingError, SmoothingResult, default_solvers, smooth_ecdf, smooth_many
from smoothing.roc import RocCurve, batch_auc, roc_from_ecdfs, trapezoid_auc

__all__ = ["Curve", "DEFAULT_SOLVERS", "RocCurve", "batch_auc", "SmoothingError", "SmoothingResult", "default_solvers",
           "ecdf_on_grid", "evaluate_step", "inverse_ecdf", "quantiles", "roc_from_ecdfs", "smooth_ecdf", "smooth_many",
           "trapezoid_auc"]
