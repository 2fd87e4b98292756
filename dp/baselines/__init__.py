"""Baselines the papers compare against: Ghazi et al. (:mod:`dp.baselines.ghazi`) and GhaziSM in the shuffled model
(:mod:`dp.baselines.ghazi_shuffled`), both simulated; docs/ldp.md."""
