"""One party of a secure job that deviates on purpose in what it inputs, for the malicious-input drill.

It runs a job (``--scenario``: ``ustat``, ``ecdf``, ``ecdf_fss``, ``rank_auc``, ``hosmer_lemeshow``,
``roc_private``) as one MPyC party after wrapping, *in this process only*, the functions that share its count
vector or noise; the other parties run the job unchanged, each with its own ``-I``::

    python -m scenarios.drills.deviating_party --inflate-counts 250 --scenario ecdf --data 'p{pid}.csv' \\
        --columns sysBP --domain sysBP=80:300 --epsilon 1e9 -M3 -I 1 -B 40000 --no-log

Give exactly one of ``--inflate-counts K``, ``--shift-counts``, ``--negative-counts K``, ``--bias-noise B``
(what each does and what the suite must do about it: docs/drills.md).

Threat model drilled: deviating inputs are an active attack outside the passive model; the claim under test is
the input check of issue 21 (one secure zero test per party and count vector)."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from scenarios.drills.party import run_wrapped
from scenarios.kit.cli import ScenarioParser, UsageError

__all__ = ["main", "Deviation", "split_deviation", "install_deviation", "SCENARIOS", "deviate"]

#: the jobs with a count input that this party can run
SCENARIOS: tuple[str, ...] = ("ustat", "ecdf", "ecdf_fss", "rank_auc", "hosmer_lemeshow", "roc_private")


@dataclass(frozen=True)
class Deviation:
    """What this party does: ``kind`` ``inflate``, ``shift``, ``negative`` (the count vector) or ``bias`` (the noise
    share) by ``amount`` (``K`` or ``B``; 0 for ``shift``); ``error``: a usage error, shared as a verdict."""

    kind: str = "inflate"
    amount: int = 0
    scenario: str = "ustat"
    error: str | None = None


def split_deviation(argv: Sequence[str]) -> tuple[Deviation, list[str]]:
    """Separate this drill's options from the job's; a bad option is returned as ``error``."""
    parser = ScenarioParser(prog="python -m scenarios.drills.deviating_party", description=__doc__, add_help=False)
    parser.add_argument("--inflate-counts", type=int, default=None, metavar="K")
    parser.add_argument("--shift-counts", action="store_true")
    parser.add_argument("--negative-counts", type=int, default=None, metavar="K")
    parser.add_argument("--bias-noise", type=int, default=None, metavar="B")
    parser.add_argument("--scenario", default="ustat", metavar="NAME")
    try:
        known, rest = parser.parse_known_args(list(argv))
    except UsageError as exc:
        return Deviation(error=str(exc)), [a for a in argv if not a.startswith("--")]
    scenario = known.scenario if known.scenario in SCENARIOS else "ustat"
    given = {"inflate": known.inflate_counts, "shift": 0 if known.shift_counts else None,
             "negative": known.negative_counts, "bias": known.bias_noise}
    chosen = [kind for kind, amount in given.items() if amount is not None]
    kind, amount = (chosen[0], int(given[chosen[0]] or 0)) if len(chosen) == 1 else ("inflate", 0)
    error = None
    if known.scenario not in SCENARIOS:
        error = f"--scenario expects one of: {', '.join(SCENARIOS)}; got '{known.scenario}'"
    elif len(chosen) != 1:
        error = "give exactly one of --inflate-counts K, --shift-counts, --negative-counts K, --bias-noise B"
    elif kind != "shift" and amount < 1:
        error = f"K must be a positive number of rows, got {amount}"
    return Deviation(kind, amount, scenario, error), rest


def deviate(vector: Any, deviation: Deviation, cells: int | None = None) -> Any:
    """The count vector this party inputs instead of its own; ``cells``: the leading grid cells (default all)."""
    own = np.asarray(vector, dtype=np.int64).reshape(-1).copy()
    grid = own.shape[0] if cells is None else cells
    if deviation.kind == "inflate":
        own[0] += deviation.amount
    elif deviation.kind == "shift":
        total = int(own[:grid].sum())
        own[:grid] = 0
        own[0] = total
    else:
        own[0] += deviation.amount
        own[grid - 1] -= deviation.amount
    return own


def install_deviation(deviation: Deviation) -> None:
    """Wrap the functions that share this party's count vector (after MPyC has been imported)."""
    import dp.ecdf.hosmer_lemeshow
    import secure.aggregation
    import secure.fss.dcf

    if deviation.kind == "bias":
        original_noise: Callable[..., Any] = secure.aggregation.add_party_noise
        original_vectors: Callable[..., Any] = secure.aggregation.sum_party_vectors

        def biased_noise(total: Any, own_draw: int) -> Any:
            return original_noise(total, int(own_draw) + deviation.amount)

        def biased_vectors(sectype: Any, own: Any) -> Any:
            return original_vectors(sectype, np.asarray(own, dtype=np.int64) + deviation.amount)

        secure.aggregation.add_party_noise = biased_noise  # type: ignore[assignment]
        secure.aggregation.sum_party_vectors = biased_vectors  # type: ignore[assignment]
        return

    original_blocks: Callable[..., Any] = secure.aggregation.counted_blocks

    def deviating_blocks(sectype: Any, own: Any, totals: Sequence[int], *, what: str = "count vector",
                         **options: Any) -> Any:
        # the ECDF jobs' vectors end in two cells beyond the grid (above it, outside the subset)
        cells = None if what == "histogram" else max(1, np.size(own) - 2)
        changed = deviate(own, deviation, cells).reshape(np.shape(own))
        return original_blocks(sectype, changed, totals, what=what, **options)

    secure.aggregation.counted_blocks = deviating_blocks  # type: ignore[assignment]

    original_bits: Callable[..., Any] = secure.aggregation.count_bits

    def deviating_bits(counts: Any, width: int) -> Any:
        # a cell that is no count of width bits goes into bit 0 whole (the "bit" is then not 0 or 1), so the
        # vector rebuilt from the bits is exactly the deviating one: what a party that ignores the format inputs
        values = np.asarray(counts, dtype=np.int64).reshape(-1)
        wrong = (values < 0) | (values >= 1 << width)
        bits = original_bits(np.where(wrong, 0, values), width)
        bits[wrong, 0] = values[wrong]
        return bits

    secure.aggregation.count_bits = deviating_bits  # type: ignore[assignment]

    original_statistics: Callable[..., Any] = dp.ecdf.hosmer_lemeshow._checked_statistics

    async def deviating_statistics(sectype: Any, own: Any, groups: int, scale: int, own_rows: int) -> Any:
        # E1, E0, O1, O0: the same deviation on the counts O1 (and E to match, as a careful party would)
        vector = np.asarray(own, dtype=np.int64).copy()
        observed = deviate(vector[2 * groups:3 * groups], deviation)
        vector[:groups] += (observed - vector[2 * groups:3 * groups]) * scale
        vector[2 * groups:3 * groups] = observed
        return await original_statistics(sectype, vector, groups, scale, own_rows)

    dp.ecdf.hosmer_lemeshow._checked_statistics = deviating_statistics  # type: ignore[assignment]

    original_gen: Callable[..., Any] = secure.fss.dcf.gen

    def deviating_gen(alphas: Any, bits: int, **options: Any) -> Any:
        values = np.asarray(alphas, dtype=np.int64).reshape(-1)
        if deviation.kind == "inflate":
            values = np.concatenate([values, np.full(deviation.amount, int(values.max()), dtype=np.int64)])
        elif deviation.kind == "shift":
            values = np.zeros_like(values)
        return original_gen(values, bits, **options)

    secure.fss.dcf.gen = deviating_gen  # type: ignore[assignment]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the job with the deviation installed; returns its exit code."""
    deviation, rest = split_deviation(sys.argv[1:] if argv is None else argv)
    return run_wrapped(deviation.scenario, os.path.abspath(__file__), rest, lambda: install_deviation(deviation),
                       deviation.error)


if __name__ == "__main__":
    sys.exit(main())
