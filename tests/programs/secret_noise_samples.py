"""Sample discrete Laplace noise inside MPC and print party 0's opened samples as JSON.

Used by tests/test_secret_noise.py to check the in-MPC sampler's distribution with real parties.
Run:
    python tests/programs/secret_noise_samples.py -M3 --no-log EPSILON SENSITIVITY DIGITS BITS COUNT
The plan is dp.secret_noise.secret_laplace_plan(epsilon, sensitivity, digits, bits); COUNT noise
values are sampled in one batch (secure.noise.mpc.secret_discrete_laplace) and opened to all.
Party 0 prints {"samples": [...], "bytes": ...}.
"""
import json
import sys

from mpyc.runtime import mpc

from dp.secret_noise import secret_laplace_plan
from secure.meter import bytes_sent
from secure.noise.mpc import secret_discrete_laplace


async def main(epsilon: float, sensitivity: int, digits: int, bits: int, count: int) -> None:
    await mpc.start()
    plan = secret_laplace_plan(epsilon=epsilon, sensitivity=sensitivity, digits=digits, bits=bits)
    noise = secret_discrete_laplace(mpc.SecInt(32), [plan.thresholds] * count, plan.bits)
    samples = [int(v) for v in await mpc.output(noise)]
    sent = bytes_sent()
    if mpc.pid == 0:
        print(json.dumps({"samples": samples, "bytes": sent}))
    await mpc.shutdown()


if __name__ == "__main__":
    epsilon, sensitivity, digits, bits, count = sys.argv[1:6]
    mpc.run(main(float(epsilon), int(sensitivity), int(digits), int(bits), int(count)))
