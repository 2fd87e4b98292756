"""Run the secure-sorting AUC on MPyC with fixed, known noise draws; party 0 prints JSON.

Used by tests/test_rank_auc.py.  Run:
    python tests/programs/fixed_noise_rank_auc.py -M3 --no-log CSV [PATH]
PATH is the planner's choice to force (auto, histogram, sort; default auto).  Party i's draw for released value j is 2 * i - 1 + 3 * j (known to the test, not random).
"""
import json
import sys

from mpyc.runtime import mpc

from dp.rank_auc import Query, release
from secure.intake import ColumnSpec, party_rows


async def main(csv, path):
    await mpc.start()
    query = Query(score=ColumnSpec("score", 0, 1, 8), epsilon=1.0, path=path)
    rows = party_rows(csv, ["score", "TenYearCHD"], party=mpc.pid, parties=len(mpc.parties))
    result = await release(query, rows, noise_source=lambda plan, index: 2 * mpc.pid - 1 + 3 * index)
    if mpc.pid == 0:
        print(json.dumps({"estimate": result.estimate, "sums": [result.twice_u, result.positives],
                          "n": result.n, "path": result.path}))
    await mpc.shutdown()


if __name__ == "__main__":
    mpc.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "auto"))
