"""Baselines the papers compare against.

- :mod:`dp.baselines.ghazi` Ghazi et al.: factorized kernel matrix, Laplace reports (simulated).
"""
