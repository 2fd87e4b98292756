"""Barczewski, Mawass & Ramon, *Differentially private empirical cumulative distribution functions*: the private ECDF
(§3-4), the ROC curve (§5.1) and the Hosmer-Lemeshow test (§5.2) on one face; the modules: docs/ecdf.md."""
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
