"""Sun et al., *Differentially private AUC computation in vertical federated learning* (FedAUC): its label-DP
mechanisms, closed forms and Monte Carlo runs behind one face; the modules: docs/fedauc.md."""
from dp.fedauc.face import FedAucRelease, Query, exact, release, simulate

__all__ = ["FedAucRelease", "Query", "exact", "release", "simulate"]
