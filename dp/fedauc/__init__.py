"""Sun et al., *Differentially private AUC computation in vertical federated learning* (FedAUC).

- :mod:`dp.fedauc.ranks`        ranks, the rank-sum AUC (eq. 1), client layouts, local statistics.
- :mod:`dp.fedauc.mechanisms`   label-DP mechanisms: randomized response, Laplace / Gaussian, adaptive.
- :mod:`dp.fedauc.closed_forms` the paper's variances (eq. 7-9) and our first-order ones.
- :mod:`dp.fedauc.montecarlo`   one setting's experiment: closed-form prediction and Monte Carlo runs.
- :mod:`dp.fedauc.face`         the face: :class:`Query`, :func:`release`, :func:`simulate`, :func:`exact`."""
from dp.fedauc.face import FedAucRelease, Query, exact, release, simulate

__all__ = ["FedAucRelease", "Query", "exact", "release", "simulate"]
