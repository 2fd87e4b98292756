"""A user's script with options of its own, run by tests/test_api.py and tests/test_ecdf_release.py.

    python tests/programs/script_checks.py --case CASE --eps EPS [MPyC options: -M3 ...]

The script parses ``--case`` and ``--eps`` itself and hands the words back to :func:`secure.run`
(``script_args``), so the parties launched by party 0 parse the same words.  Cases:

- ``echo``: party 0 prints ``eps EPS agreed by m parties`` (``eps`` is a public parameter).
- ``release``: an AUC released from array rows; party 0 prints the release's budget line, then the AUC.
- ``release-nan``: an AUC released from array rows; party 1's rows hold a NaN score.
- ``release-shape``: the same, party 1's rows have three columns.
- ``ecdf-nan``: :func:`dp.ecdf.secure_release.run_secure_ecdf`, party 1's values hold a NaN.
- ``ecdf-plan``: the same with a plan for ``m = 1, t = 0`` whatever the run's ``m`` and ``t``.
"""
import sys

import numpy as np

import dp
import secure

CASES = ("echo", "release", "release-nan", "release-shape", "ecdf-nan", "ecdf-plan")


def split_words(words: list[str]) -> tuple[list[str], list[str]]:
    """The script's own words (``--case X``, ``--eps X``) and the rest (MPyC's)."""
    own, rest = [], []
    position = 0
    while position < len(words):
        if words[position] in ("--case", "--eps") and position + 1 < len(words):
            own += words[position:position + 2]
            position += 2
        else:
            rest.append(words[position])
            position += 1
    return own, rest


OWN, REST = split_words(sys.argv[1:])
OPTIONS = dict(zip(OWN[::2], OWN[1::2]))
CASE = OPTIONS.get("--case", "echo")
EPS = float(OPTIONS.get("--eps", "1.0"))
QUERY = dp.umpc.Query(statistic="auc", epsilon=EPS, tuples="all", path="tuples",
                      columns=[dp.numeric("score", lower=0, upper=1, bits=4), dp.label("y")])


async def job(party: secure.Party) -> secure.launcher.Deliver:
    generator = np.random.default_rng(party.index)
    if CASE == "echo":
        return lambda: print(f"eps {EPS} agreed by {party.count} parties") if party.index == 0 else None
    if CASE.startswith("release"):
        rows = np.column_stack([generator.random(12), np.arange(12) % 2])
        if party.index == 1 and CASE == "release-nan":
            rows[4, 0] = np.nan
        if party.index == 1 and CASE == "release-shape":
            rows = np.column_stack([rows, rows[:, 0]])
        release = await dp.umpc.release(QUERY, rows, ledger="off")
        return lambda: print(f"{release.budget}\nAUC {release.estimate:.3f}") if party.index == 0 else None
    from dp.ecdf.secure_release import run_secure_ecdf
    from dp.ecdf.grid import uniform_grid
    from dp.ecdf.tree import plan_tree_noise

    grid = uniform_grid(0.0, 1.0, 1 / 7)
    if CASE == "ecdf-plan":
        plan = plan_tree_noise(epsilon=EPS, points=len(grid), parties=1, threshold=0)
    else:
        plan = plan_tree_noise(epsilon=EPS, points=len(grid), parties=party.count, threshold=party.threshold)
    values = generator.random(10)
    if party.index == 1 and CASE == "ecdf-nan":
        values[2] = np.nan
    ecdf = await run_secure_ecdf(values, grid, plan)
    return lambda: print(f"ECDF {ecdf.values.round(2).tolist()}") if ecdf is not None else None


if __name__ == "__main__":
    if CASE not in CASES:
        print(f"error: party 0: --case must be one of {', '.join(CASES)}", file=sys.stderr)
        sys.exit(2)
    sys.exit(secure.run(job, argv=REST, script_args=OWN, public={"case": CASE, "eps": EPS}))
