"""Run the subsampled-pairs protocol on MPyC with fixed, known per-party noise; party 0 prints JSON.

Used by tests/test_subsampled_pairs.py to hold the secure path equal to the simulated one.  Run:
    python tests/programs/subsampled_pairs_fixed_noise.py -M3 --no-log STAT CSV SEED COLUMNS DOMAINS P
Party i's draw for pair q of output j is (q % 7) - 3 + i + 2 * j (known to the test, not random).
Only party 0 (the aggregator) receives the per-pair noisy values; the others print nothing.
"""
import json
import sys

import numpy as np
from mpyc.runtime import mpc

from dp.bell.subsampled_pairs import SubsampledPairsQuery, run_secure_subsampled
from secure.intake import ColumnSpec, party_rows
from secure.kernels import get_kernel


def fixed_draws(plan, index, size):
    return (np.arange(size) % 7) - 3 + mpc.pid + 2 * index


async def main(stat, csv, seed, columns, domains, permutations):
    await mpc.start()
    specs = []
    for name, domain in zip(columns, domains):
        low, high, bits = (float(x) for x in domain.split(":"))
        specs.append(ColumnSpec(name, low, high, int(bits)))
    kernel = get_kernel(stat, precision=specs[0].precision)
    query = SubsampledPairsQuery(kernel=kernel, specs=tuple(specs), epsilon=1.0, permutations=permutations)
    rows = party_rows(csv, columns, party=mpc.pid, parties=len(mpc.parties))
    release = await run_secure_subsampled(query, query.prepare(rows.values), seed=seed, noise_source=fixed_draws)
    if mpc.pid == 0:
        record = release.record()
        record["noisy_values"] = [v.tolist() for v in release.noisy_values]
        print(json.dumps(record))
    else:
        assert release is None, "only the aggregator may receive the per-pair values"
    await mpc.shutdown()


if __name__ == "__main__":
    stat, csv, seed, columns, domains, permutations = sys.argv[1:7]
    mpc.run(main(stat, csv, int(seed), columns.split(","), domains.split(","), int(permutations)))
