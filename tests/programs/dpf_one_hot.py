"""All parties of an MPyC run check DPF keys for one-hotness with secure.fss.dpf.check_one_hot.

Used by tests/test_dpf.py.  Run: python tests/programs/dpf_one_hot.py -M3 -B PORT --no-log DIR COUNT PAIRS
Parties 0 and 1 read their keys from DIR/server{0,1}.bin and evaluate them with a joint seed; the last
2 * PAIRS keys are joined in pairs (k, k + 1) by adding their sketches (a two-hot key each).  Party 0 prints
every party's verdicts as JSON.
"""
import json
import sys
from pathlib import Path

import numpy as np
from mpyc.runtime import mpc

from secure.fss.dpf import MODULUS, DpfKeys, Sketch, check_one_hot, evaluate, joint_seed


async def main(folder: Path, count: int, pairs: int) -> None:
    await mpc.start()
    seed = await joint_seed()
    sketch = None
    if mpc.pid < 2:
        assert seed is not None
        keys = DpfKeys.from_bytes((folder / f"server{mpc.pid}.bin").read_bytes())
        _, full = evaluate(keys, seed=seed)
        single = len(keys) - 2 * pairs
        sketch = Sketch(*(np.concatenate([v[:single], (v[single::2] + v[single + 1::2]) % np.uint64(MODULUS)])
                          for v in (full.sigma, full.z, full.w)))
    verdict = await check_one_hot(sketch, count=count)
    every = await mpc.transfer([bool(v) for v in verdict], receivers=[0])
    if mpc.pid == 0:
        print(json.dumps(every))
    await mpc.shutdown()


if __name__ == "__main__":
    mpc.run(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
