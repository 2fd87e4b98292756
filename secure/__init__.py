"""The MPyC layer: secure computation of kernel sums across parties.

Modules, one topic each (as in MPyC itself):

- :mod:`secure.session`      start/stop of the MPyC runtime, agreement of parties on parameters and
  verdicts, detection of lost parties (nobody hangs).
- :mod:`secure.intake`       a party's own rows: reading, validation, fixed point, ``mpc.input``.
- :mod:`secure.kernels`      kernels as objects: plaintext and vectorized secure functions.
- :mod:`secure.clipping`     clipping to the declared domain, locally or inside MPC.
- :mod:`secure.aggregation`  secure sums, distributed noise shares, guarded reveal.
- :mod:`secure.public_randomness` a joint public seed every party contributes to.
- :mod:`secure.noise.party`        local integer noise draws from OS randomness (Polya, binomial).
- :mod:`secure.noise.mpc`    noise sampled inside MPC from joint secret random bits (biased coins, digits).
- :mod:`secure.ranking`      secure sorting for rank statistics (Mann-Whitney U).
- :mod:`secure.views`        a party's own shares and Lagrange recombination (coalition drills).
- :mod:`secure.meter`        seconds and bytes sent per protocol phase.

Threat model: passive (semi-honest), static adversary corrupting at most ``t < m/2`` of the ``m``
MPyC parties (Shamir secret sharing with threshold ``t``).  This layer knows nothing about DP
accounting; :mod:`dp` calibrates the noise it draws.
"""
