"""Run the secure private ECDF on MPyC with fixed, known node draws; party 0 prints the counts as JSON.

Used by tests/test_ecdf_release.py.  Run:
    python tests/programs/fixed_noise_ecdf.py -M3 --no-log CSV COLUMN LOW HIGH POINTS RELEASE
Party i's draw for node position p is (p % 7) - 3 + i (known to the test, not random).
"""
import json
import sys

import numpy as np
from mpyc.runtime import mpc

from dp.ecdf.grid import uniform_grid
from dp.ecdf.tree import plan_tree_noise
from dp.ecdf.secure_release import run_secure_ecdf
from secure.intake import party_rows


def fixed_draws(plan):
    return (np.arange(plan.node_count) % 7) - 3 + mpc.pid


async def main(csv, column, low, high, points, release):
    await mpc.start()
    grid = uniform_grid(low, high, (high - low) / (points - 1))
    plan = plan_tree_noise(epsilon=1.0, points=len(grid), parties=len(mpc.parties), threshold=int(mpc.threshold))
    values = party_rows(csv, [column], party=mpc.pid, parties=len(mpc.parties)).values[:, 0]
    subset = None if release == 0 else np.linspace(0, len(grid) - 1, release).round().astype(np.int64)
    result = await run_secure_ecdf(values, grid, plan, subset=subset, noise_source=fixed_draws)
    if mpc.pid == 0:
        print(json.dumps({"counts": result.counts.tolist(), "subset": result.subset.tolist(), "n": result.n}))
    await mpc.shutdown()


if __name__ == "__main__":
    csv, column, low, high, points, release = sys.argv[1:7]
    mpc.run(main(csv, column, float(low), float(high), int(points), int(release)))
