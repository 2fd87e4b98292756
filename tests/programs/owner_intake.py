"""Servers taking in owners' uploads (secure.owners.intake), run by tests/test_owner_intake.py.

    python tests/programs/owner_intake.py --dir DIR [MPyC options: -M3 ...]

DIR holds ``campaign.json``, ``keys/serverI.key`` and ``inbox/serverI/``.  Each server opens its inbox and closes;
then the histogram from the DPF keys and the value columns of the owners it accepted, both opened; party 0 prints
one JSON line: the rejected counts (also every server's), the accepted tokens of each path, the histogram and the columns."""
import json
import sys

import secure
from secure.owners import Campaign, close, load_private_key, open_inbox
from secure.owners.intake import owner_columns, owner_histogram

DIRECTORY = sys.argv[sys.argv.index("--dir") + 1]
REST = [word for word in sys.argv[1:] if word not in ("--dir", DIRECTORY)]


async def job(party: secure.Party) -> secure.launcher.Deliver:
    from mpyc.runtime import mpc

    campaign = Campaign.load(f"{DIRECTORY}/campaign.json")
    key = load_private_key(f"{DIRECTORY}/keys/server{party.index}.key")
    intake = await close(open_inbox(campaign, party.index, key, f"{DIRECTORY}/inbox/server{{pid}}"))
    sectype = mpc.SecInt(campaign.bits)
    shape = [spec.grid_size for spec in campaign.columns]
    joint, refused, kept = await owner_histogram(intake, campaign, sectype, shape)
    columns, dropped = await owner_columns(kept, campaign, sectype)
    result = {"histogram": (await mpc.output(joint)).tolist(), "histogram_rejected": refused,
              "histogram_tokens": kept.tokens, "columns_rejected": dropped, "closed": intake.tokens,
              "columns": {name: (await mpc.output(column)).tolist() for name, column in columns.items()},
              "every_server_rejected": await mpc.transfer([refused, dropped])}
    return None if party.index else lambda: print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(secure.run(job, argv=REST, script_args=["--dir", DIRECTORY]))
