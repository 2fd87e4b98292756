"""Bell, Bellet, Gascon & Kulkarni, *Private protocols for U-statistics in the local model and beyond*: the generic
local protocol, the Hadamard-response AUC and the subsampled pairs; the modules: docs/ldp.md."""
from dp.bell.face import BellRelease, Query, exact, release, simulate

__all__ = ["BellRelease", "Query", "exact", "release", "simulate"]
