"""Sun et al., *Differentially private AUC computation in vertical federated learning* (FedAUC).

- :mod:`dp.fedauc.mechanisms` label-DP mechanisms: randomized response, Laplace / Gaussian, adaptive.
"""
