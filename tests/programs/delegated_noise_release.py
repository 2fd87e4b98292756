"""Pi_U-MPC (Kendall's tau) on MPyC with noise drawn only by a random subgroup Z; meter both noise phases.

Used by tests/test_noise_delegation.py.  Run:
    python tests/programs/delegated_noise_release.py -M5 --no-log CSV SEED EPS_FAIL HONEST_FRACTION LENGTH

1. The kernel sum of Kendall's tau (sysBP, diaBP; 60 balanced tuples from the public SEED) is
   computed on secret shares as in :func:`dp.umpc.protocol.run_secure`.
2. Z = draw_delegates(m, delegate_size(EPS_FAIL, HONEST_FRACTION, parties=m)) (fresh joint randomness,
   not SEED; the record names Z); delegate i
   adds the fixed, known draw ``10 * (i + 1) + 1`` (the test repeats it in the simulated path);
   the noisy sum is opened with the guarded reveal.
3. Cost of the noise phase alone, for a scalar and for a vector of LENGTH noise values: every party
   inputs its draw (``add_party_noise`` / ``sum_party_vectors``) versus only Z
   (``add_delegated_noise``); bytes sent by all parties together (``CostMeter``).
Party 0 prints one JSON record.
"""
import json
import sys

import numpy as np
from mpyc.runtime import mpc

from dp.umpc.delegation import add_delegated_noise, delegate_plan, delegate_size, draw_delegates
from dp.umpc.protocol import UStatQuery, plans_for, prepare_rows, sample_for
from secure.aggregation import SumRange, add_party_noise, guarded_reveal, secure_sum, sum_party_vectors
from secure.intake import ColumnSpec, exchange_counts, party_rows, share_rows
from secure.kernels import get_kernel
from secure.meter import CostMeter


def fixed_delegate_draw(plan):
    return 10 * (mpc.pid + 1) + 1


async def main(csv: str, seed: int, epsilon_fail: float, honest_fraction: float, length: int) -> None:
    await mpc.start()
    parties, threshold = len(mpc.parties), int(mpc.threshold)
    specs = (ColumnSpec("sysBP", 80, 300, 8), ColumnSpec("diaBP", 40, 160, 8))
    query = UStatQuery(kernel=get_kernel("kendall", precision=8), specs=specs, epsilon=1.0, tuples=60)
    rows = party_rows(csv, ["sysBP", "diaBP"], party=mpc.pid, parties=parties)
    fixed = prepare_rows(query, rows.values)
    sectype = mpc.SecInt()
    bits = query.kernel.comparison_bits(query.widths)
    counts = await exchange_counts(fixed.integers.shape[0])
    shared = share_rows(sectype, fixed.integers, counts)
    tuples = sample_for(query, sum(counts), seed)
    plan = plans_for(query, tuples, sum(counts), parties, threshold)[0]
    parts = [shared[tuples[:, j]] for j in range(tuples.shape[1])]
    total = secure_sum(query.kernel.secure(parts, bits)[0])
    await mpc.gather(total)

    size = delegate_size(epsilon_fail, honest_fraction, parties=parties)
    delegates = await draw_delegates(parties, size)
    delegated = delegate_plan(plan, delegates, epsilon_fail=epsilon_fail)
    noisy = add_delegated_noise(total, delegated, delegates, noise_source=fixed_delegate_draw)
    output = query.outputs[0]
    bounds = SumRange(len(tuples) * output.low, len(tuples) * output.high, delegated.slack)
    opened = await guarded_reveal([noisy], [bounds])

    meter = CostMeter()
    with meter.phase("scalar, all parties"):
        await meter.settle(add_party_noise(total, plan.draw()))
    with meter.phase("scalar, delegates"):
        await meter.settle(add_delegated_noise(total, delegated, delegates))
    zeros = sectype.array(np.zeros(length, dtype=np.int64))
    with meter.phase("vector, all parties"):
        own = np.array([plan.draw() for _ in range(length)], dtype=np.int64)
        await meter.settle(zeros + sum_party_vectors(sectype, own))
    with meter.phase("vector, delegates"):
        await meter.settle(add_delegated_noise(zeros, delegated, delegates))
    phases = await meter.totals_over_parties()
    if mpc.pid == 0:
        print(json.dumps({"noisy_sums": opened, "delegates": list(delegates), "parties": parties,
                          "threshold": threshold, "pairs": len(tuples), "variance": delegated.variance,
                          "variance_all": plan.variance, "length": length,
                          "bytes": {name: cost.bytes_sent for name, cost in phases.items()}}))
    await mpc.shutdown()


if __name__ == "__main__":
    csv, seed, epsilon_fail, honest_fraction, length = sys.argv[1:6]
    mpc.run(main(csv, int(seed), float(epsilon_fail), float(honest_fraction), int(length)))
