"""One party of ``scenarios.ustat`` whose contribution to every joint draw is the fixed CONTRIBUTION.

Used by tests/test_delegation_fresh.py to make the draw of the noise delegates ``Z`` deterministic
without touching ``--seed``: :func:`secure.public_randomness.own_contribution` (this party's uniform field
element from the OS) is replaced by CONTRIBUTION; everything else is the shipped job.  Run:
    python tests/programs/delegates_fixed_contribution.py CONTRIBUTION USTAT_ARGS... -M3 -I i -B PORT
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's packages, not an installed copy

import secure.public_randomness  # noqa: E402


def main() -> int:
    contribution = int(sys.argv[1])
    secure.public_randomness.own_contribution = lambda: contribution  # the test knows every party's value
    from scenarios.ustat import main as ustat

    argv = sys.argv[2:]
    sys.argv = [sys.argv[0], *argv]
    return ustat(argv)


if __name__ == "__main__":
    sys.exit(main())
