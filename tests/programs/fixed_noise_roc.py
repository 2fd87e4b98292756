"""Run the secure private-label ROC on MPyC with fixed, known node draws; party 0 prints the counts as JSON.

Used by tests/test_roc_private.py.  Run:
    python tests/programs/fixed_noise_roc.py -M3 -B PORT --no-log CSV POINTS EPSILON SPLIT
Party i's draw for class c at node position p is (p % 5) - 2 + i - c (known to the test, not random).
The CSV has columns score, label; parties keep rows i, i+m, ...
"""
import json
import sys

import numpy as np
from mpyc.runtime import mpc

from dp.ecdf.roc import run_secure_roc
from dp.ecdf.grid import uniform_grid
from secure.intake import party_rows


def fixed_draws(plan, label):
    return (np.arange(plan.node_count) % 5) - 2 + mpc.pid - label


async def main(path, points, epsilon, split):
    await mpc.start()
    grid = uniform_grid(0.0, 1.0, 1.0 / (points - 1))
    rows = party_rows(path, ["score", "label"], party=mpc.pid, parties=len(mpc.parties)).values
    release = await run_secure_roc(rows[:, 0], rows[:, 1], grid, epsilon=epsilon, split=split,
                                   noise_source=fixed_draws)
    if mpc.pid == 0:
        print(json.dumps({"positive": release.positive_counts.tolist(), "negative": release.negative_counts.tolist(),
                          "n": release.n, "class_epsilon": release.class_epsilon}))
    await mpc.shutdown()


if __name__ == "__main__":
    path, points, epsilon, split = sys.argv[1:5]
    mpc.run(main(path, int(points), float(epsilon), split))
