"""Subsampled pairs: a private degree-2 U-statistic from ``P`` public permutations of the rows.

Bell et al., §5 ("Generic Protocols from 2PC"), Theorem 5 and App. C.1, on MPyC.
Threat model: passive adversary with ``t < m/2`` parties; the aggregator (party 0) sees epsilon-DP per-pair
values; the ``m - t`` honest Pólya shares alone make ``DLap(alpha)``; noise from the OS, party-drawn only.
Protocol steps and measured costs: docs/ldp.md."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dp.sampling import max_degree
from dp.noise_plans import NoisePlan, plan_party_laplace, polya_tail_bound
from dp.report_text import run_costs
from dp.umpc.protocol import KernelColumns, UStatQuery, prepare_kernel_rows, secure_integer_type
from dp.umpc.sampler_variance import design_factor
from dp.validation import check_epsilon, check_parties, check_positive_int
from secure.intake import ColumnSpec, FixedPointRows
from secure.kernels import Kernel
from secure.noise.party import polya_difference

__all__ = ["SubsampledPairsQuery", "check_pair_rows", "stack_party_rows", "permutation_pairs", "pairs_for",
           "plans_for_pairs", "pair_slack", "party_pair_draws", "SubsampledRelease", "pair_sampling_error_bound",
           "SubsampledSimulation", "simulate_subsampled", "run_secure_subsampled"]

_TAIL_BITS = 41  # an opened value leaves its range with probability < 2**-40 (union over pairs)
_PAIRS_PER_BATCH = 1 << 16  # pairs per secure kernel call, as dp.umpc.protocol.TUPLES_PER_BATCH
_ENTRIES_PER_CHUNK = 1 << 21  # simulated noise entries held at once


@dataclass(frozen=True)
class SubsampledPairsQuery(KernelColumns):
    """What the parties agree to compute and release with the subsampled-pairs protocol: a degree-2 kernel (one
    output or a ratio of two), its columns' specs, the pure-DP ``epsilon`` of the whole release (split evenly over
    the outputs, then ``epsilon_out / P`` per pair) and ``P = permutations`` public permutations of the rows."""

    kernel: Kernel
    specs: tuple[ColumnSpec, ...]
    epsilon: float
    permutations: int = 1

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_positive_int(self.permutations, "number of permutations P")
        if self.kernel.degree != 2:
            raise ValueError(f"subsampled pairs need a degree-2 kernel; '{self.kernel.name}' has degree "
                             f"{self.kernel.degree}")
        # the same kernel and columns as a dp.umpc.protocol.UStatQuery: checks the columns as the main job does
        UStatQuery(kernel=self.kernel, specs=tuple(self.specs), epsilon=self.epsilon)

    @property
    def output_epsilon(self) -> float:
        return self.epsilon / len(self.outputs)

    def prepare(self, values: np.ndarray) -> FixedPointRows:
        """A party's rows validated, clipped to their domains, in fixed point (:func:`dp.umpc.protocol.prepare_kernel_rows`)."""
        return prepare_kernel_rows(self, values, clip=True)


def check_pair_rows(rows: int) -> int:
    """``rows`` if a degree-2 kernel has a pair among them (``rows >= 2``), else ValueError."""
    if rows < 2:
        raise ValueError(f"need at least 2 rows over all parties for a degree-2 kernel, got {rows}")
    return rows


def permutation_pairs(rows: int, permutations: int, generator: np.random.Generator) -> np.ndarray:
    """The pairs ``(2i, 2i+1)`` of ``P`` independent uniform permutations of ``n >= 2`` rows from the public
    ``generator``: an int64 ``(P * floor(n/2), 2)`` array, pairs ascending, permutation by permutation."""
    check_positive_int(permutations, "number of permutations P")
    check_pair_rows(int(rows))
    half = rows // 2
    blocks = [generator.permutation(rows)[:2 * half].reshape(half, 2) for _ in range(permutations)]
    return np.sort(np.concatenate(blocks), axis=1).astype(np.int64)


def pairs_for(query: SubsampledPairsQuery, rows: int, seed: int) -> np.ndarray:
    """The public pairs for ``rows`` rows from the public ``seed`` (the same at every party)."""
    from secure.public_randomness import public_generator

    return permutation_pairs(rows, query.permutations, public_generator(seed))


def plans_for_pairs(query: SubsampledPairsQuery, parties: int, threshold: int) -> list[NoisePlan]:
    """Per output, the noise plan of **each pair**: sensitivity ``P * Delta_f``, budget ``epsilon_out`` (docs/ldp.md)."""
    return [plan_party_laplace(output, max_degree=query.permutations, epsilon=query.output_epsilon,
                               parties=parties, threshold=threshold) for output in query.outputs]


def pair_slack(plan: NoisePlan, pairs: int) -> int:
    """Bound on ``|total noise|`` of every one of ``pairs`` opened values, failing w.p. < ``2**-40`` (docs/ldp.md)."""
    bits = _TAIL_BITS + max(0, math.ceil(math.log2(max(pairs, 1))))
    return polya_tail_bound(plan.alpha, plan.parties / (plan.parties - plan.threshold), bits)


def party_pair_draws(plan: NoisePlan, size: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """One party's per-pair noise: ``size`` differences of ``Polya(1/(m-t), alpha)`` (OS randomness; docs/ldp.md)."""
    draws = polya_difference(plan.shape, size=size, rng=rng, log_alpha=-plan.epsilon / plan.sensitivity)
    return np.asarray(draws, dtype=np.int64)


def _estimate_std(query: SubsampledPairsQuery, count: int, plans: Sequence[NoisePlan], sums: Sequence[float]) -> float:
    """Standard deviation of the estimate due to the noise, given the pairs (docs/ldp.md)."""
    outputs = query.outputs
    if len(outputs) == 1:
        return math.sqrt(plans[0].variance / count) / outputs[0].scale
    numerator, denominator = sums[0] / outputs[0].scale, sums[1] / outputs[1].scale
    if denominator <= 0:
        return float("nan")
    var_numerator = count * plans[0].variance / outputs[0].scale ** 2
    var_denominator = count * plans[1].variance / outputs[1].scale ** 2
    return math.sqrt(var_numerator / denominator ** 2 + numerator ** 2 * var_denominator / denominator ** 4)


def _plaintext_values(kernel: Kernel, fixed: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Kernel outputs of every pair, int64 ``(outputs, pairs)``."""
    columns = []
    for start in range(0, len(pairs), _PAIRS_PER_BATCH * 16):
        batch = pairs[start:start + _PAIRS_PER_BATCH * 16]
        outs = kernel.plaintext([fixed[batch[:, 0]], fixed[batch[:, 1]]])
        columns.append(np.stack([np.asarray(o, dtype=np.int64) for o in outs]))
    return np.concatenate(columns, axis=1)


def stack_party_rows(query: SubsampledPairsQuery, rows_by_party: Sequence[np.ndarray]) -> np.ndarray:
    """Every party's rows prepared (:meth:`SubsampledPairsQuery.prepare`) and stacked party by party; ValueError
    (:func:`check_pair_rows`) if they hold no pair."""
    width = len(query.specs)
    fixed = np.vstack([query.prepare(np.asarray(rows, dtype=float).reshape(-1, width)).integers
                       for rows in rows_by_party])
    check_pair_rows(fixed.shape[0])
    return fixed


@dataclass
class SubsampledRelease:
    """What the aggregator (party 0) obtains from :func:`run_secure_subsampled` (docs/ldp.md)."""

    statistic: str
    estimate: float
    epsilon: float
    n: int
    pairs: int
    permutations: int
    parties: int
    threshold: int
    max_degree: int
    pair_epsilon: float
    mechanism: str
    noise_std: list[float]
    estimate_std: float
    noisy_sums: list[int]
    noisy_values: list[np.ndarray]
    seconds: float = 0.0
    bytes_sent: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: str = "refuse"
    seed: int | None = None
    sampling_error_bound: float = 0.0
    #: which errors ``noise_std``, ``sampling_error_bound`` and ``error_bound`` cover (the record's words)
    uncertainty_covers: ClassVar[str] = (
        "DP noise (noise_std) and the sampling of the pairs, P random permutations of disjoint pairs "
        "(sampling_error_bound, 1 sd: dp.umpc.sampler_variance.design_factor of the drawn pairs times "
        "range^2/4, data-independent, exact for this exchangeable design; for a ratio kernel a "
        "first-order bound with the released comparable share plugged in, post-processing); "
        "error_bound = sqrt of the sum of squares; not the sampling of the rows from a population")

    @property
    def error_bound(self) -> float:
        """``sqrt(estimate_std^2 + sampling_error_bound^2)``: one sd of the noise and of the pair sampling."""
        return math.sqrt(self.estimate_std ** 2 + self.sampling_error_bound ** 2)

    @property
    def guarantee(self) -> str:
        """Which noise ran and what it guarantees, in one line (party-drawn: :mod:`dp.noise_defaults`)."""
        from dp.noise_defaults import party_guarantee

        return party_guarantee(self.epsilon, 0.0, self.parties, self.threshold, self.mechanism) + \
            f" (one DLap per pair, {self.permutations} pair(s) per row)"

    def record(self) -> dict[str, Any]:
        """The JSON result record (the record keys of docs/design.md first); per-pair values are left out (see ``noisy_values``)."""
        return {"statistic": self.statistic, "estimate": self.estimate, "epsilon": self.epsilon, "delta": 0.0,
                "n": self.n, "pairs": self.pairs, "parties": self.parties, "seconds": self.seconds,
                "bytes_sent": self.bytes_sent, "protocol": "subsampled pairs", "permutations": self.permutations,
                "threshold": self.threshold, "max_degree": self.max_degree, "pair_epsilon": self.pair_epsilon,
                "mechanism": self.mechanism, "noise_std": self.estimate_std, "noise_std_per_sum": self.noise_std,
                "sampling_error_bound": self.sampling_error_bound, "error_bound": self.error_bound, "seed": self.seed,
                "uncertainty_covers": self.uncertainty_covers, "estimate_std": self.estimate_std,
                "noisy_sums": self.noisy_sums, "phases": self.phases, "missing": self.missing,
                "clipping": "local", "noise_source": "parties", "guarantee": self.guarantee}


def pair_sampling_error_bound(query: SubsampledPairsQuery, rows: int, pairs: np.ndarray,
                              sums: Sequence[float]) -> float:
    """One sd of the pair-sampling error ``U_pairs - U`` (all-pairs U), bounded from public values only (docs/ldp.md)."""
    first = query.outputs[0]
    spread = ((first.high - first.low) / first.scale) ** 2 / 4.0
    variance = design_factor(np.asarray(pairs, dtype=np.int64), rows) * spread
    if len(query.outputs) == 1:
        return math.sqrt(variance)
    share = float(sums[1]) / (query.outputs[1].scale * len(pairs))
    if share <= 0:
        return float("nan")
    return math.sqrt(variance / min(1.0, share))


@dataclass
class SubsampledSimulation:
    """Result of :func:`simulate_subsampled`: per run the estimate and the noiseless one on its pairs; run 0's pairs
    (the secure path's with the same seed), their clean and noisy ``(outputs, pairs)`` values; the per-pair plans."""

    estimates: np.ndarray
    exact_on_pairs: np.ndarray
    pairs: np.ndarray
    pair_values: np.ndarray
    noisy_values: np.ndarray
    plans: list[NoisePlan]


def simulate_subsampled(query: SubsampledPairsQuery, rows_by_party: Sequence[np.ndarray], *, threshold: int,
                        seed: int, runs: int = 1, resample_pairs: bool = False, noise: np.ndarray | None = None,
                        noise_rng: np.random.Generator | None = None) -> SubsampledSimulation:
    """Run the subsampled-pairs protocol in one process (NumPy), ``runs`` times, vectorized, on each party's rows
    (stacked as :func:`secure.intake.share_rows` does); parameters: docs/ldp.md."""
    check_positive_int(runs, "runs")
    parties = len(rows_by_party)
    check_parties(parties, threshold)
    fixed = stack_party_rows(query, rows_by_party)
    rows = fixed.shape[0]
    outputs = query.outputs
    first = pairs_for(query, rows, seed)
    count = len(first)
    plans = plans_for_pairs(query, parties, threshold)
    if noise is not None:
        noise = np.asarray(noise, dtype=np.int64)
        if noise.shape != (runs, len(outputs), parties, count):
            raise ValueError(f"noise must have shape (runs, outputs, parties, pairs) = "
                             f"{(runs, len(outputs), parties, count)}, got {noise.shape}")
    fixed_values = None if resample_pairs else _plaintext_values(query.kernel, fixed, first)
    chunk = max(1, _ENTRIES_PER_CHUNK // (count * len(outputs)))
    estimates = np.empty(runs)
    exact = np.empty(runs)
    first_values = first_noisy = np.empty((0, 0), dtype=np.int64)
    for start in range(0, runs, chunk):
        stop = min(runs, start + chunk)
        if fixed_values is None:
            chosen = np.concatenate([first if r == 0 else pairs_for(query, rows, seed + r) for r in range(start, stop)])
            values = _plaintext_values(query.kernel, fixed, chosen).reshape(len(outputs), stop - start, count)
            values = values.transpose(1, 0, 2)
        else:
            values = np.broadcast_to(fixed_values, (stop - start, len(outputs), count))
        if noise is not None:
            total = noise[start:stop].sum(axis=2)
        else:
            total = np.zeros((stop - start, len(outputs), count), dtype=np.int64)
            for j, plan in enumerate(plans):
                for _ in range(parties):
                    total[:, j, :] += party_pair_draws(plan, (stop - start) * count, noise_rng).reshape(stop - start, count)
        noisy = values + total
        clean_sums = values.sum(axis=2)
        noisy_sums = noisy.sum(axis=2)
        for offset in range(stop - start):
            estimates[start + offset] = query.kernel.estimate([int(s) for s in noisy_sums[offset]], count,
                                                              query.widths)
            exact[start + offset] = query.kernel.estimate([int(s) for s in clean_sums[offset]], count, query.widths)
        if start == 0:
            first_values, first_noisy = np.array(values[0]), np.array(noisy[0])
    return SubsampledSimulation(estimates, exact, first, first_values, first_noisy, plans)


PairNoiseSource = Callable[[NoisePlan, int, int], np.ndarray]


async def run_secure_subsampled(query: SubsampledPairsQuery, fixed: FixedPointRows, *, seed: int | None = None,
                                missing: str = "refuse", noise_source: PairNoiseSource | None = None,
                                receivers: Sequence[int] = (0,)) -> SubsampledRelease | None:
    """Run the subsampled-pairs protocol on the MPyC runtime; every party calls this with its own prepared rows: the
    release at ``receivers``, ``None`` elsewhere.  Parameters and errors (InputError, ProtocolFailure): docs/ldp.md."""
    from mpyc.runtime import mpc

    from secure.aggregation import SumRange, guarded_reveal_array, sum_party_vectors
    from secure.intake import exchange_counts, share_rows
    from secure.meter import CostMeter
    from secure.public_randomness import joint_seed
    from secure.session import InputError

    parties, threshold = len(mpc.parties), int(mpc.threshold)
    receivers = list(receivers)
    meter = CostMeter()
    sectype, bits = secure_integer_type(query)

    with meter.phase("intake"):
        counts = await exchange_counts(fixed.integers.shape[0])
        rows = sum(counts)
        try:
            check_pair_rows(rows)
        except ValueError as exc:
            raise InputError(f"all parties: {exc}") from None
        shared = share_rows(sectype, fixed.integers, counts)
        await meter.settle(shared)

    with meter.phase("seed"):
        public_seed = seed if seed is not None else await joint_seed()
        pairs = pairs_for(query, rows, public_seed)
        count = len(pairs)
        plans = plans_for_pairs(query, parties, threshold)

    with meter.phase("kernel"):
        batches: list[tuple[Any, ...]] = []
        for start in range(0, count, _PAIRS_PER_BATCH):
            batch = pairs[start:start + _PAIRS_PER_BATCH]
            batches.append(tuple(query.kernel.secure([shared[batch[:, 0]], shared[batch[:, 1]]], bits)))
        values = [parts[0] if len(parts) == 1 else mpc.np_concatenate(parts) for parts in zip(*batches)]
        await meter.settle(*values)

    with meter.phase("noise"):
        draw = noise_source or (lambda plan, index, size: party_pair_draws(plan, size))
        noisy = []
        for index, (value, plan) in enumerate(zip(values, plans)):
            own = np.asarray(draw(plan, index, count), dtype=np.int64).reshape(count)
            noisy.append(value + sum_party_vectors(sectype, own))
        await meter.settle(*noisy)

    with meter.phase("reveal"):
        opened = [await guarded_reveal_array(value, SumRange(out.low, out.high, pair_slack(plan, count)), receivers)
                  for value, out, plan in zip(noisy, query.outputs, plans)]

    phases = await meter.totals_over_parties()
    if mpc.pid not in receivers:
        return None
    noisy_values = [np.asarray(v, dtype=np.int64) for v in opened if v is not None]
    sums = [int(v.sum()) for v in noisy_values]
    return SubsampledRelease(
        statistic=query.kernel.name, estimate=query.kernel.estimate(sums, count, query.widths),
        epsilon=query.epsilon, n=rows, pairs=count, permutations=query.permutations, parties=parties,
        threshold=threshold, max_degree=max_degree(pairs, rows),
        pair_epsilon=query.output_epsilon / query.permutations,
        mechanism=plans[0].mechanism,
        noise_std=[math.sqrt(plan.variance / count) / out.scale for out, plan in zip(query.outputs, plans)],
        estimate_std=_estimate_std(query, count, plans, sums), noisy_sums=sums, noisy_values=noisy_values,
        **run_costs(phases), missing=missing, seed=public_seed, sampling_error_bound=pair_sampling_error_bound(query, rows, pairs, sums))
