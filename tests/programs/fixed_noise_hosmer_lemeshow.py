"""Run the secure private Hosmer-Lemeshow statistic on MPyC with fixed, known noise draws; party 0 prints JSON.

Used by tests/test_hosmer_lemeshow_job.py (the test hook of dp.ecdf.hosmer_lemeshow).  Run:
    python tests/programs/fixed_noise_hosmer_lemeshow.py -M3 --no-log CSV SCORE LABEL EPSILON GROUPS POINTS ACCOUNTING SMOOTHED
Party i's draws (known to the test, not random): node position p: (p % 7) - 3 + i; expected-count
statistic k (row-major over the (2, Q) array): ((k % 5) - 2 + i) * 700 (fixed-point units); observed
count k: (k % 3) - 1 + i.
"""
import json
import sys

import numpy as np
from mpyc.runtime import mpc

from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery
from dp.ecdf.hosmer_lemeshow import run_secure_hosmer_lemeshow
from secure.intake import party_rows


def node_draws(plan):
    return (np.arange(plan.node_count) % 7) - 3 + mpc.pid


def statistic_draws(query, parties, threshold):
    k = np.arange(2 * query.groups)
    expected = ((k % 5) - 2 + mpc.pid) * 700
    observed = (k % 3) - 1 + mpc.pid
    return expected.reshape(2, query.groups), observed.reshape(2, query.groups)


async def main(csv, score, label, epsilon, groups, points, accounting, smoothed):
    await mpc.start()
    query = HosmerLemeshowQuery(epsilon=epsilon, groups=groups, grid_points=points, accounting=accounting, smoothed=smoothed)
    rows = party_rows(csv, [score, label], party=mpc.pid, parties=len(mpc.parties)).values
    result = await run_secure_hosmer_lemeshow(rows[:, 0], rows[:, 1].astype(np.int64), query,
                                              node_noise_source=node_draws, statistic_noise_source=statistic_draws)
    if mpc.pid == 0:
        release = result
        print(json.dumps({"statistic": release.statistic, "p_value": release.p_value,
                          "boundaries": release.boundaries.tolist(), "expected": release.expected.tolist(),
                          "observed": release.observed.tolist(), "floored": release.floored, "n": release.n,
                          "ecdf": release.ecdf.tolist()}))
    await mpc.shutdown()


if __name__ == "__main__":
    csv, score, label, epsilon, groups, points, accounting, smoothed = sys.argv[1:9]
    mpc.run(main(csv, score, label, float(epsilon), int(groups), int(points), accounting, smoothed == "1"))
