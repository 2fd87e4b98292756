"""Barczewski, Mawass & Ramon, *Differentially private empirical cumulative distribution functions*.

- :mod:`dp.ecdf.tree`            the tree mechanism (eq. 2, Thm 1, 3): node noise, noisy prefix counts.
- :mod:`dp.ecdf.secure_release`  the private ECDF across parties (§4.1): per-party counts, distributed tree noise.
- :mod:`dp.ecdf.hosmer_lemeshow` the private Hosmer-Lemeshow statistic (§5.2, Algorithm 2, Theorem 2): the query;
  ``hosmer_lemeshow_statistic`` (eq. 5 exactly, Fig. 6 metric), ``hosmer_lemeshow_release``, ``hosmer_lemeshow_secure``.
- :mod:`dp.ecdf.roc`             the ROC curve with private labels (§5.1): class ECDFs over their own noisy totals.
- :mod:`dp.ecdf.face`            the family's face: the queries and release, simulate, exact."""
from dp.ecdf.face import EcdfQuery as EcdfQuery
from dp.ecdf.face import exact as exact
from dp.ecdf.face import release as release
from dp.ecdf.face import simulate as simulate
from dp.ecdf.fss_release import FssEcdfRelease as FssEcdfRelease
from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery as HosmerLemeshowQuery
from dp.ecdf.hosmer_lemeshow_release import HosmerLemeshowRelease as HosmerLemeshowRelease
from dp.ecdf.roc import RocQuery as RocQuery
from dp.ecdf.roc import RocRelease as RocRelease
from dp.ecdf.secure_release import EcdfRelease as EcdfRelease
