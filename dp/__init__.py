"""Differential privacy on top of :mod:`secure`: validation, calibration, tuple sampling, protocols.

- :mod:`dp.validation`   parameter checks with plain messages (``epsilon must be positive, got 0``).
- :mod:`dp.calibration`  noise calibration: discrete Laplace from Polya shares, binomial (eps, delta).
- :mod:`dp.sampling`     tuple samplers: BalancedSamp (Sinh & Ramon, Alg. 1), uniform, Bernoulli.
- :mod:`dp.ustat`        protocol Pi_U-MPC (Sinh & Ramon, Protocol 3.1): secure and simulated paths.
"""
