"""Bell, Bellet, Gascon & Kulkarni, *Private protocols for U-statistics in the local model and beyond*: the generic
local protocol, the Hadamard-response AUC and the subsampled pairs; the modules: docs/ldp.md."""
from dp.bell.face import BellRelease as BellRelease
from dp.bell.face import Query as Query
from dp.bell.face import exact as exact
from dp.bell.face import release as release
from dp.bell.face import simulate as simulate
