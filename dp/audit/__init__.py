"""The empirical DP auditor and its cases; every case drives the shipped release code.

- :mod:`dp.audit.engine`        Clopper-Pearson hockey-stick lower bound; exact epsilon of honest noise.
- :mod:`dp.audit.central_cases` cases of every central and distributed mechanism, and negative controls.
- :mod:`dp.audit.complete_cases` cases of the complete U-statistics (all tuples; :mod:`dp.umpc.complete`).
- :mod:`dp.audit.local_cases`   cases of every local / label-DP randomizer, and negative controls.
- :mod:`dp.audit.planning`      sample-size planning of the local cases (power argument)."""
