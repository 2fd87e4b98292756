"""Sinh & Ramon, *Accurate, private, secure, federated U-statistics with higher degree*: Pi_U-MPC.

- :mod:`dp.umpc.protocol`         the protocol (Protocol 3.1): query, noise plans, secure and simulated paths.
- :mod:`dp.umpc.delegation`       threat model M_HF (§4): only a seed-chosen subgroup Z draws the noise.
- :mod:`dp.umpc.sampler_variance` exact E_inc + E_DP of the tuple samplers (App. D.1.2).
- :mod:`dp.umpc.costs`            communication and computation models (Table 1, App. D.2).
"""
