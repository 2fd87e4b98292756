"""Servers closing an owners' campaign, run by tests/test_owners.py.

    python tests/programs/owners_close.py --dir DIR [MPyC options: -M3 ...]

DIR holds ``campaign.json``, ``keys/serverI.key`` and ``inbox/serverI/``.  Each server opens its inbox, agrees
on the owners present everywhere, loads its shares as a secure array and opens it; party 0 prints its refusal
lines, then one JSON line: the agreed tokens and the opened values."""
import json
import sys

import secure
from secure.owners import Campaign, close, load_private_key, load_shares, open_inbox

DIRECTORY = sys.argv[sys.argv.index("--dir") + 1]
REST = [word for word in sys.argv[1:] if word not in ("--dir", DIRECTORY)]


async def job(party: secure.Party) -> secure.launcher.Deliver:
    from mpyc.runtime import mpc

    campaign = Campaign.load(f"{DIRECTORY}/campaign.json")
    key = load_private_key(f"{DIRECTORY}/keys/server{party.index}.key")
    intake = await close(open_inbox(campaign, party.index, key, f"{DIRECTORY}/inbox/server{{pid}}"))
    values = await mpc.output(load_shares(intake, mpc.SecInt(campaign.bits)))
    if party.index:
        return None
    return lambda: print("\n".join([*intake.rejected, json.dumps({"tokens": intake.tokens,
                                                                   "values": values.tolist()})]))


if __name__ == "__main__":
    sys.exit(secure.run(job, argv=REST, script_args=["--dir", DIRECTORY]))
