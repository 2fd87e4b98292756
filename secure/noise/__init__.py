"""Noise draws of the MPyC layer.
- :mod:`secure.noise.party` local integer noise each party draws from OS randomness (Polya, binomial).
- :mod:`secure.noise.mpc`   noise sampled inside MPC from joint secret random bits (biased coins, digits):
  no party knows any of it."""
