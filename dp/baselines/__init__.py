"""Baselines the papers compare against.

- :mod:`dp.baselines.ghazi` Ghazi et al.: factorized kernel matrix, Laplace reports (simulated).
- :mod:`dp.baselines.ghazi_shuffled` GhaziSM: the same in the shuffled model, distributed discrete Laplace
  noise on the two sums (simulated; exact mean and variance)."""
