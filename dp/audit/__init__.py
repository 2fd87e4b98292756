"""The empirical DP auditor (:mod:`dp.audit.engine`: Clopper-Pearson hockey-stick lower bound) and its cases, one
module per family; every case drives the shipped release code.  The modules, one section each: docs/audit.md."""
