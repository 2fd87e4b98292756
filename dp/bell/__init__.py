"""Bell, Bellet, Gascon & Kulkarni, *Private protocols for U-statistics in the local model and beyond*.

- :mod:`dp.bell.generic`          generic local-DP protocol for degree-2 U-statistics (k-RR, debiasing, variances).
- :mod:`dp.bell.quantize`         quantization and quantized kernel matrices (A^Mid eq. 14, A^Avg eq. 15).
- :mod:`dp.bell.hadamard`         Hadamard response: local randomizer (Alg. 2) and frequency oracle (Alg. 3).
- :mod:`dp.bell.hierarchical`     hierarchical histograms per class, budget split across levels (App. B.2).
- :mod:`dp.bell.auc`              local-DP AUC: pruned traversal of the hierarchies (eq. 10), error bounds.
- :mod:`dp.bell.subsampled_pairs` the subsampled-pairs protocol on MPyC (P permutations, per-pair noise).
- :mod:`dp.bell.subsampled_analysis` its error (Theorem 5: zetas, MSE) and the all-pairs baseline (§6).
- :mod:`dp.bell.face`             the local model's face: :class:`Query`, :func:`release`, :func:`simulate`, :func:`exact`."""
from dp.bell.face import BellRelease as BellRelease
from dp.bell.face import Query as Query
from dp.bell.face import exact as exact
from dp.bell.face import release as release
from dp.bell.face import simulate as simulate
