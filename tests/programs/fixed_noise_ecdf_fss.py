"""Run the FSS ECDF upload and one query round with fixed, known node draws; party 0 prints the counts as JSON.

Used by tests/test_ecdf_fss.py (the FSS path equals tests/programs/fixed_noise_ecdf.py's §4.1 path for the
same draws).  Run:
    python tests/programs/fixed_noise_ecdf_fss.py -M3 --no-log CSV COLUMN LOW HIGH POINTS RELEASE
Party i's draw for node position p is (p % 7) - 3 + i (the node-noise test hook of dp.ecdf.fss_release.upload).
"""
import json
import sys

import numpy as np
from mpyc.runtime import mpc

from dp.ecdf import fss_release as fss
from dp.ecdf.grid import uniform_grid
from secure.intake import party_rows


def fixed_draws(plan):
    return (np.arange(plan.node_count) % 7) - 3 + mpc.pid


async def main(csv, column, low, high, points, release):
    await mpc.start()
    grid = uniform_grid(low, high, (high - low) / (points - 1))
    plan = fss.fss_noise_plan(epsilon=1.0, points=len(grid), owners=len(mpc.parties), threshold=int(mpc.threshold))
    values = party_rows(csv, [column], party=mpc.pid, parties=len(mpc.parties)).values[:, 0]
    states, _ = await fss.upload(values, grid, plan, bits=fss.check_bits(len(grid)), noise_source=fixed_draws)
    subset = np.arange(len(grid)) if release == 0 else np.unique(np.linspace(0, len(grid) - 1, release).round())
    result = await fss.answer(states, subset.astype(np.int64), receivers=[0, 1])
    if mpc.pid == 0:
        print(json.dumps({"counts": result.counts.tolist(), "subset": result.subset.tolist(), "n": result.n}))
    await mpc.shutdown()


if __name__ == "__main__":
    csv, column, low, high, points, release = sys.argv[1:7]
    mpc.run(main(csv, column, float(low), float(high), int(points), int(release)))
