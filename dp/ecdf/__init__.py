"""Barczewski, Mawass & Ramon, *Differentially private empirical cumulative distribution functions*.

- :mod:`dp.ecdf.tree`            the tree mechanism (eq. 2, Thm 1, 3): node noise, noisy prefix counts.
- :mod:`dp.ecdf.secure_release`  the private ECDF across parties (§4.1): per-party counts, distributed tree noise.
- :mod:`dp.ecdf.hosmer_lemeshow` the private Hosmer-Lemeshow statistic (§5, Algorithm 2, Theorem 2).
- :mod:`dp.ecdf.roc`             the ROC curve with private labels (§5.1): class ECDFs over their own noisy totals.
"""
