"""What the scenarios share (private to :mod:`scenarios`): the command-line kit (:mod:`scenarios.kit.cli`),
the experiment harness (:mod:`scenarios.kit.experiments`), the embedded datasets (:mod:`scenarios.kit.datasets`),
missing-value options and output-path checks."""
