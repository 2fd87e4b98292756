"""Post-processing of released ECDFs (Barczewski, Mawass & Ramon): monotone smoothing (eq. 3), inverse ECDF
(Algorithm 1), ROC and AUC (Sec. 5.1): :mod:`smoothing.monotone`, :mod:`smoothing.inverse`, :mod:`smoothing.roc`.

Pure numpy/scipy/cvxpy; never imports :mod:`secure`, :mod:`dp` or MPyC.  Post-processing of public values:
no privacy cost, no threat model of its own.  Details and timings (Sec. 6.7, Fig. 7): docs/smoothing.md."""
from __future__ import annotations

from smoothing.inverse import Curve, evaluate_step, inverse_ecdf, quantiles
from smoothing.monotone import DEFAULT_SOLVERS, SmoothingError, SmoothingResult, default_solvers, smooth_ecdf, smooth_many
from smoothing.roc import RocCurve, batch_auc, roc_from_ecdfs, trapezoid_auc

__all__ = ["Curve", "DEFAULT_SOLVERS", "RocCurve", "batch_auc", "SmoothingError", "SmoothingResult", "default_solvers",
           "evaluate_step", "inverse_ecdf", "quantiles", "roc_from_ecdfs", "smooth_ecdf", "smooth_many",
           "trapezoid_auc"]
