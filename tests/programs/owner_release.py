"""Servers releasing U-statistics from owners' uploads through dp.umpc.release, run by tests/test_owner_release.py.

    python tests/programs/owner_release.py --dir DIR [MPyC options: -M3 ...]

DIR holds ``keys/serverI.key`` and, per campaign ``xy`` (x, y with DPF keys) and ``auc`` (score, label), its
``NAME.json`` and ``NAME/serverI/`` inbox.  Party 0 prints one JSON line: statistic -> the release's record."""
import json
import sys

import dp.umpc
from dp.umpc.scripting import Statistic
import secure
from dp.umpc import Owners

DIRECTORY = sys.argv[sys.argv.index("--dir") + 1]
REST = [word for word in sys.argv[1:] if word not in ("--dir", DIRECTORY)]
RELEASES: tuple[tuple[Statistic, str, tuple[str, ...]], ...] = (
    ("kendall", "xy", ("x", "y")), ("duplicate", "xy", ("x",)), ("auc", "auc", ("score", "label")))


async def job(party: secure.Party) -> secure.launcher.Deliver:
    records = {}
    for statistic, name, columns in RELEASES:
        owners = Owners(campaign=f"{DIRECTORY}/{name}.json", inbox=f"{DIRECTORY}/{name}/server{{pid}}",
                        key=f"{DIRECTORY}/keys/server{{pid}}.key")
        specs = {spec.name: spec for spec in owners.plan.columns}
        query = dp.umpc.Query(statistic=statistic, columns=[specs[c] for c in columns], epsilon=1e9, tuples="all")
        release = await dp.umpc.release(query, owners, ledger=f"{DIRECTORY}/ledger", budget="1e12:1e-3")
        records[statistic] = release.record()
    return None if party.index else lambda: print(json.dumps(records))


if __name__ == "__main__":
    sys.exit(secure.run(job, argv=REST, script_args=["--dir", DIRECTORY]))
