"""Function secret sharing (FSS) for two non-colluding servers.

- :mod:`secure.fss.dcf`  distributed comparison functions ``f_alpha(x) = beta [x < alpha]`` (Boyle, Gilboa &
  Ishai, EUROCRYPT 2015; the keys of Boyle, Chandran, Gilboa, Gupta, Ishai, Kumar & Rathee, EUROCRYPT 2021),
  with batched key generation, pointwise evaluation and full-domain evaluation over all keys of a server.

Threat model: two servers that do not collude; each holds one key of every pair.  One key alone is
pseudorandom (it reveals nothing about ``alpha`` or ``beta`` to a computationally bounded server, security
parameter lambda = 128); the two servers' outputs add up modulo ``2^64`` to the function's value.  Nothing
here protects integrity: a malicious server can shift its outputs (corrupt results) but learns nothing more
from its keys.  This package is plain NumPy + AES (``cryptography``); it does not import MPyC.
"""
from __future__ import annotations
