"""Noise draws of the MPyC layer: :mod:`secure.noise.party`, each party's own from OS randomness (Polya, binomial);
:mod:`secure.noise.mpc`, inside MPC from joint secret random bits (no party knows any of it).  Details: docs/noise.md."""
