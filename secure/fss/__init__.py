"""Function secret sharing (FSS) for two non-colluding servers: :mod:`secure.fss.dcf` (``beta [x < alpha]``;
Boyle, Gilboa & Ishai 2015; Boyle et al. 2021), :mod:`secure.fss.dpf` (``beta [x == alpha]`` over ``Z_(2^61 - 1)``,
with the one-hot check; Boyle, Gilboa & Ishai, CCS 2016), :mod:`secure.fss.prg` (their AES PRGs).  Threat model: two
servers that do not collude; one key alone is pseudorandom (lambda = 128); no integrity.  Details: docs/fss.md."""
from __future__ import annotations
