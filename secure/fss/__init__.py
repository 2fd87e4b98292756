"""Function secret sharing (FSS) for two non-colluding servers: :mod:`secure.fss.dcf`, distributed comparison
functions ``beta [x < alpha]`` (Boyle, Gilboa & Ishai 2015; Boyle et al. 2021).  Plain NumPy + AES, no MPyC.

Threat model: two servers that do not collude; one key alone is pseudorandom (lambda = 128); no integrity.
Details: docs/fss.md.
"""
from __future__ import annotations
