"""Every party gives an option no script takes, so every party stops on the same agreed usage verdict; party 0's
frames to party 1 travel DELAY seconds late, so party 2 holds every verdict long before party 1 does.

Used by tests/test_faults.py.  Run one process per party:
    python tests/programs/slow_verdict.py DELAY --not-an-option -M3 -I i -B PORT --no-log
"""
import asyncio
import sys

from mpyc.runtime import mpc

import secure
from secure import session

DELAY = float(sys.argv.pop(1))
_send = session._ORIGINAL["send"]


def _late(self, pc, payload):  # type: ignore[no-untyped-def]
    """Party 0's frames to party 1 sent DELAY seconds late (the verdict among them)."""
    if mpc.pid == 0 and self.peer_pid == 1:
        asyncio.get_running_loop().call_later(DELAY, _send, self, pc, payload)
    else:
        _send(self, pc, payload)


session._ORIGINAL["send"] = _late


async def _job(party: secure.Party) -> None:
    return None


sys.exit(secure.run(_job))
