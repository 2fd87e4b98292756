"""Run Pi_U-MPC on MPyC with fixed, known per-party noise draws and print party 0's record as JSON.

Used by tests/test_protocol.py to hold the secure path equal to the simulated one.  Run:
    python tests/programs/fixed_noise_release.py -M3 --no-log STAT CSV SEED COLUMNS DOMAINS
Party i's draw for released sum j is 3 * (i + 1) - 5 + 7 * j (known to the test, not random).
"""
import json
import sys

from mpyc.runtime import mpc

from dp.umpc.protocol import UStatQuery, prepare_rows, run_secure
from secure.intake import ColumnSpec, party_rows
from secure.kernels import get_kernel


def fixed_draw(plan, index):
    return 3 * (mpc.pid + 1) - 5 + 7 * index


async def main(stat: str, csv: str, seed: int, columns: list[str], domains: list[str]) -> None:
    await mpc.start()
    specs = []
    for name, domain in zip(columns, domains):
        low, high, bits = (float(x) for x in domain.split(":"))
        specs.append(ColumnSpec(name, low, high, int(bits)))
    kernel = get_kernel(stat, precision=specs[0].precision)
    query = UStatQuery(kernel=kernel, specs=tuple(specs), epsilon=1.0, tuples=60, sampling="balanced")
    rows = party_rows(csv, columns, party=mpc.pid, parties=len(mpc.parties))
    release = await run_secure(query, prepare_rows(query, rows.values), seed=seed, noise_source=fixed_draw)
    if mpc.pid == 0:
        print(json.dumps(release.record()))
    await mpc.shutdown()


if __name__ == "__main__":
    stat, csv, seed, columns, domains = sys.argv[1:6]
    mpc.run(main(stat, csv, int(seed), columns.split(","), domains.split(",")))
