"""Servers releasing the ECDF family from owners' uploads through dp.ecdf.release, run by tests/test_owner_ecdf.py.

    python tests/programs/owner_ecdf.py --dir DIR [MPyC options: -M3 ...]

DIR holds ``keys/serverI.key`` and the campaigns ``xy`` (x, y) and ``scored`` (score, label), each ``NAME.json`` with
its ``NAME/serverI/`` inbox; the rank AUC runs on the sort path of ``scored``.  Party 0 prints one JSON line: statistic -> the release's record."""
import json
import sys

import dp.ecdf
import dp.rank_auc
import secure
from dp.ecdf import EcdfQuery, HosmerLemeshowQuery, RocQuery
from dp.ecdf.owners import Owners

DIRECTORY = sys.argv[sys.argv.index("--dir") + 1]
REST = [word for word in sys.argv[1:] if word not in ("--dir", DIRECTORY)]
QUERIES = (("ecdf", "xy", EcdfQuery(column="x", lower=0.0, upper=15.0, points=16, epsilon=1e9)),
           ("roc", "scored", RocQuery(epsilon=1e9, points=1025, smooth=None)),
           ("hosmer_lemeshow", "scored", HosmerLemeshowQuery(epsilon=1e9, precision=10)))


async def job(party: secure.Party) -> secure.launcher.Deliver:
    records = {}
    for statistic, name, query in QUERIES:
        owners = Owners(campaign=f"{DIRECTORY}/{name}.json", inbox=f"{DIRECTORY}/{name}/server{{pid}}",
                        key=f"{DIRECTORY}/keys/server{{pid}}.key")
        release = await dp.ecdf.release(query, owners, ledger=f"{DIRECTORY}/ledger", budget="1e12:1e-3")
        records[statistic] = None if release is None else release.record()
    owners = Owners(campaign=f"{DIRECTORY}/scored.json", inbox=f"{DIRECTORY}/scored/server{{pid}}",
                    key=f"{DIRECTORY}/keys/server{{pid}}.key")  # the sort path from the owners' value shares
    query = dp.rank_auc.Query(score=owners.plan.columns[0], epsilon=1e9, path="sort", noise="parties")
    release = await dp.rank_auc.release(query, owners, ledger=f"{DIRECTORY}/ledger", budget="1e12:1e-3")
    records["rank_auc"] = None if release is None else release.record()
    return None if party.index else lambda: print(json.dumps(records))


if __name__ == "__main__":
    sys.exit(secure.run(job, argv=REST, script_args=["--dir", DIRECTORY]))
