"""Server 1 of ``scenarios.ecdf_fss --answer`` that freezes (SIGSTOP) on entering the answer phase.

Used by tests/test_ecdf_fss.py: the other server must stop within its --silence-limit, with one line,
releasing nothing.  Only this process is changed (the cost meter's phase hook is wrapped here).
Run: python tests/programs/frozen_fss_server.py <scenarios.ecdf_fss options> -M2 -I 1 -B PORT
"""
import os
import signal
import sys

import secure.meter
from scenarios.ecdf_fss import main

_set_phase = secure.meter.set_phase


def _freezing_set_phase(name: str) -> None:
    _set_phase(name)
    if name == "answer":
        os.kill(os.getpid(), signal.SIGSTOP)


secure.meter.set_phase = _freezing_set_phase

if __name__ == "__main__":
    sys.exit(main())
