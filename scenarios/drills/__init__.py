"""Threat-model drills: run them with ``python -m scenarios.drills.<name>`` (``make drills`` runs all).

- :mod:`scenarios.drills.audit`           the empirical DP audit of every mechanism.
- :mod:`scenarios.drills.coalition`       a coalition of t parties pools its shares (``-M3``, ``-M5 -T2``).
- :mod:`scenarios.drills.faults`          a party crashes or freezes in each phase, bad files, disagreeing parameters.
- :mod:`scenarios.drills.freeze`          the freeze cases of ``faults`` (a party stops answering in a phase).
- :mod:`scenarios.drills.harness`         shared by the orchestrators: run three parties, results, tables.
- :mod:`scenarios.drills.malicious_input` out-of-domain rows with and without clipping.
- :mod:`scenarios.drills.owners`          malicious owners' uploads rejected; a server frozen or killed.
- :mod:`scenarios.drills.party`           one misbehaving party (used by the orchestrators)."""
