"""Bell, Bellet, Gascon & Kulkarni, *Private protocols for U-statistics in the local model and beyond*.

- :mod:`dp.bell.generic`          generic local-DP protocol for degree-2 U-statistics (k-RR, A^Mid / A^Avg).
- :mod:`dp.bell.auc`              local-DP AUC by Hadamard response and pruned hierarchical histograms.
- :mod:`dp.bell.subsampled_pairs` the subsampled-pairs protocol on MPyC (P permutations, per-pair noise).
"""
