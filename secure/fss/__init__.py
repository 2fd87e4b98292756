"""Function secret sharing (FSS) for two non-colluding servers: :mod:`secure.fss.dcf`, distributed comparison
functions ``beta [x < alpha]`` (Boyle, Gilboa & Ishai 2015; Boyle et al. 2021); :mod:`secure.fss.dpf`, distributed
point functions ``beta [x == alpha]`` over ``Z_(2^61 - 1)`` with the servers' one-hot check (Boyle, Gilboa &
Ishai, CCS 2016); :mod:`secure.fss.prg`, their AES PRGs.  Plain NumPy + AES; only ``dpf.check_one_hot`` and
``dpf.joint_seed`` talk between MPyC parties (``mpc.transfer``).

Threat model: two servers that do not collude; one key alone is pseudorandom (lambda = 128); no integrity
(the DPF's one-hot check guards against malicious key makers, not servers).  Details: docs/fss.md.
"""
from __future__ import annotations
