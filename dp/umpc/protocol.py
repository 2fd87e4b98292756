"""Protocol Pi_U-MPC: a differentially private U-statistic of any degree k >= 2 across parties.

Two ways to run it: :func:`run_secure` on MPyC (rows shared, kernel on shares, per-party or in-MPC
noise, only noisy sums opened) and :func:`simulate` in one process with NumPy (same seed, same draws,
same number).  Threat model: passive, static adversary corrupting at most ``t < m/2`` parties; it learns
only the released sums, DP against it (comparison leakage counted in ``delta``).  Sinh & Ramon,
Protocol 3.1, Algorithm 1, App. B.1, C.2.3, D.1.2; release, noise and variance: docs/umpc_analysis.md."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp.noise_plans import MPC_LAPLACE, NOISE_SOURCES, NoisePlan, plan_noise, polya_tail_bound, samplers
from dp.sampling import SAMPLING_METHODS, max_degree, sample_tuples, tuple_count
from dp.comparison_leakage import ComparisonLeak, leak_of_run, tuples_leak_plan, tuples_path_openings
from dp.noise_defaults import delegated_guarantee, mpc_guarantee, party_guarantee
from dp.report_text import run_costs
from dp.umpc.delegation import (DELEGATES_DRAWN_FROM, add_delegated_noise, delegate_noise_shape, delegate_plan,
                                draw_delegates)
from dp.umpc.owners import Owners
from dp.umpc.planner import PATH_CHOICES, TUPLES_PER_BATCH, batch_size
from dp.umpc.report import UStatRelease
from dp.umpc.sampler_variance import incompleteness_variance_bound
from dp.secret_noise import DEFAULT_SAMPLER_DELTA, plan_secret_laplace, secret_laplace_noise
from dp.validation import check_delta, check_epsilon, check_noise_scale, check_positive_int
from secure.clipping import clip_local, clip_secure_in_steps
from secure.errors import InputError
from secure.intake import ColumnSpec, FixedPointRows, share_rows, to_fixed_point
from secure.kernels import Kernel, KernelOutput
from secure.public_randomness import joint_seed, public_generator
from secure.security_parameter import restores_security_parameter, secure_integers

__all__ = ["KernelColumns", "UStatQuery", "NoisePlan", "plan_noise", "polya_tail_bound", "prepare_rows",
           "prepare_kernel_rows", "kernel_specs", "sample_for", "secure_integer_type", "sampled_bit_length",
           "UStatRelease", "Simulation", "simulate", "run_secure", "CLIPPING_MODES", "NOISE_SOURCES", "MPC_LAPLACE",
           "TUPLES_PER_BATCH", "simulated", "sampler_summary", "sampling_error_bound", "uncertainty_text"]

CLIPPING_MODES = ("local", "secure")


class KernelColumns:
    """What a query over kernel columns derives from its ``kernel`` and column ``specs``."""

    kernel: Kernel
    specs: tuple[ColumnSpec, ...]

    @property
    def widths(self) -> list[int]:
        """Fixed-point width of each column's domain."""
        return [spec.width for spec in self.specs]

    @property
    def outputs(self) -> tuple[KernelOutput, ...]:
        """The kernel's released outputs (one, or numerator and denominator)."""
        return self.kernel.outputs(self.widths)


@dataclass(frozen=True)
class UStatQuery(KernelColumns):
    """What the parties agree to compute and release (``tuples=None``: all ``C(n, k)`` tuples); ValueError on any
    invalid parameter.  Parameters in full: docs/umpc_analysis.md."""

    kernel: Kernel
    specs: tuple[ColumnSpec, ...]
    epsilon: float
    delta: float = 0.0
    tuples: int | None = None
    sampling: str = "balanced"
    clipping: str = "local"
    noise: str = "parties"
    path: str = "auto"
    unit_rows: int = 1

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        if self.path not in PATH_CHOICES:
            raise ValueError(f"unknown path '{self.path}'; choose one of: {', '.join(PATH_CHOICES)}")
        check_delta(self.delta)
        if self.tuples is not None:
            check_positive_int(self.tuples, "number of tuples (--pairs)")
        for what, value, choices in (("sampling", self.sampling, SAMPLING_METHODS),
                                     ("clipping", self.clipping, CLIPPING_MODES), ("noise source", self.noise, NOISE_SOURCES)):
            if value not in choices:
                raise ValueError(f"unknown {what} '{value}'; choose one of: {', '.join(choices)}")
        if len(self.specs) != len(self.kernel.columns):
            raise ValueError(f"statistic '{self.kernel.name}' needs {len(self.kernel.columns)} columns "
                             f"({', '.join(self.kernel.columns)}), got {len(self.specs)}")
        for position, allowed in self.kernel.categories.items():
            spec = self.specs[position]
            if spec.categories is not None and spec.codes != len(allowed):
                raise ValueError(f"column '{spec.name}' holds the {self.kernel.columns[position]}s of statistic "
                                 f"'{self.kernel.name}': declare exactly {len(allowed)} categories in the order of "
                                 f"{'/'.join(str(a) for a in allowed)}, got {spec.codes} "
                                 f"({spec.describe_categories()})")
        self.kernel.check_precisions([spec.precision for spec in self.specs])
        self._check_noise_budget()

    def _check_noise_budget(self) -> None:
        """Refuse an epsilon the integer noise cannot serve, before any data is shared: the necessary condition at
        ``delta_max = 1`` (docs/umpc_analysis.md)."""
        if self.noise == "parties" and self.delta > 0:
            return
        count = len(self.outputs)
        name = "epsilon" if count == 1 else "epsilon per released sum"
        for output in self.outputs:
            if self.noise == "mpc":
                plan_secret_laplace(epsilon=self.epsilon / count, sensitivity=output.sensitivity,
                                    delta_budget=self.delta / count if self.delta > 0 else DEFAULT_SAMPLER_DELTA)
            else:
                check_noise_scale(self.epsilon / count, output.sensitivity, name=name)


def prepare_rows(query: UStatQuery, values: np.ndarray) -> FixedPointRows:
    """A party's rows, validated, clipped (if local clipping), in fixed point and kernel encoding
    (:func:`prepare_kernel_rows`)."""
    return prepare_kernel_rows(query, values, clip=query.clipping == "local")


def kernel_specs(columns: KernelColumns) -> list[ColumnSpec]:
    """The declared columns, a label column without a category list taking the kernel's labels."""
    specs = list(columns.specs)
    for position, allowed in columns.kernel.categories.items():
        spec = specs[position]
        if spec.categories is None:
            specs[position] = ColumnSpec(spec.name, min(allowed), max(allowed), 0, tuple(allowed))
    return specs


def prepare_kernel_rows(columns: KernelColumns, values: np.ndarray, *, clip: bool) -> FixedPointRows:
    """A party's rows for the kernel columns of any query, validated, clipped to their declared domains if ``clip``
    (else refused outside them), in fixed point and the kernel's encoding (labels: :func:`kernel_specs`); InputError
    on a label or category outside its declared values."""
    fixed = to_fixed_point(values, kernel_specs(columns), clip=clip)
    fixed.columns = fixed.integers
    fixed.integers = columns.kernel.encode(fixed.integers)
    return fixed


def sample_for(query: UStatQuery, rows: int, seed: int) -> np.ndarray:
    """The public tuples ``E`` for ``rows`` rows, from the public seed (same at every party)."""
    return sample_tuples(query.sampling, rows, query.tuples, query.kernel.degree, public_generator(seed))


def check_rows(degree: int, rows: int) -> None:
    """Raise ``ValueError`` if ``rows`` rows over all parties are too few for a degree-``degree`` kernel."""
    if rows < degree:
        raise ValueError(f"need at least {degree} rows over all parties for a degree-{degree} kernel, got {rows}")


def check_sizes(query: UStatQuery, rows: int) -> None:
    """Raise ``ValueError`` if ``rows`` rows cannot give the requested tuples."""
    degree = query.kernel.degree
    check_rows(degree, rows)
    if query.tuples is not None and query.tuples > tuple_count(rows, degree):
        raise ValueError(f"--pairs {query.tuples} exceeds the C({rows}, {degree}) = {tuple_count(rows, degree)} "
                         "distinct tuples; use --pairs all")


def noise_plans(query: UStatQuery, degree: int, parties: int, threshold: int) -> list[NoisePlan]:
    """Noise plans of every released sum (the budget split evenly) when one row is in at most ``degree`` tuples (an
    owner's ``unit_rows`` rows: ``unit_rows`` times as many)."""
    count = len(query.outputs)
    return [plan_noise(output, max_degree=query.unit_rows * degree, epsilon=query.epsilon / count,
                       delta=query.delta / count, parties=parties, threshold=threshold, source=query.noise)
            for output in query.outputs]


def plans_for(query: UStatQuery, tuples: np.ndarray, rows: int, parties: int, threshold: int) -> list[NoisePlan]:
    """Noise plans of every released sum for the sampled ``tuples``."""
    return noise_plans(query, max_degree(tuples, rows), parties, threshold)


def _sum_ranges(query: UStatQuery, count: int, plans: Sequence[NoisePlan]) -> list[Any]:
    from secure.aggregation import SumRange

    return [SumRange(count * out.low, count * out.high, plan.slack) for out, plan in zip(query.outputs, plans)]


def estimate_noise_std(query: UStatQuery, count: int, plans: Sequence[NoisePlan], sums: Sequence[float]) -> float:
    """Standard deviation of the estimate due to the noise (given the tuples): ``sqrt(Var eta) / (|E| scale)``; for
    a ratio ``N/D`` (AUC, VUS) the delta method ``sqrt(Var N / D^2 + N^2 Var D / D^4)`` with the released (noisy)
    sums plugged in (post-processing of the release)."""
    outputs = query.outputs
    if len(outputs) == 1:
        return math.sqrt(plans[0].variance) / (count * outputs[0].scale)
    numerator, denominator = sums[0] / outputs[0].scale, sums[1] / outputs[1].scale
    if denominator <= 0:
        return float("nan")
    var_numerator = plans[0].variance / outputs[0].scale ** 2
    var_denominator = plans[1].variance / outputs[1].scale ** 2
    return math.sqrt(var_numerator / denominator ** 2 + numerator ** 2 * var_denominator / denominator ** 4)


def sampler_summary(query: UStatQuery, plans: Sequence[NoisePlan]) -> tuple[float, float, dict[str, list[Any]]]:
    """``(delta of the release, total delta_s, sampler record)``: with noise sampled in MPC the query's delta if it
    gave one (the ``delta_s`` sum to at most that), else their sum; for party noise ``(query.delta, 0.0, {})``."""
    used = samplers(plans)
    if not used:
        return query.delta, 0.0, {}
    total = sum(sampler.delta for sampler in used)
    record = {key: [getattr(sampler, key) for sampler in used] for key in ("digits", "bits", "delta", "tv", "slack")}
    return (query.delta if query.delta > 0 else total), total, record


def sampling_error_bound(query: UStatQuery, rows: int, tuples: np.ndarray, sums: Sequence[float]) -> float:
    """One sd of the tuple-sampling (incompleteness) error ``U_{f,E} - U`` (Sinh & Ramon App. D.1.2): 0 for all
    tuples; one output: ``sqrt`` of :func:`dp.umpc.sampler_variance.incompleteness_variance_bound` (public values
    only); a ratio ``N/D``: ``sqrt(bound / p)`` with ``p`` the released ``D / |E|`` (``nan`` if ``D <= 0``).
    Derivation: docs/umpc_analysis.md."""
    if query.tuples is None:
        return 0.0
    outputs = query.outputs
    first = outputs[0]
    variance = incompleteness_variance_bound(query.sampling, rows=rows, degree=query.kernel.degree,
                                             tuples=query.tuples, value_range=(first.high - first.low) / first.scale,
                                             design=tuples)
    if len(outputs) == 1:
        return math.sqrt(variance)
    share = float(sums[1]) / (outputs[1].scale * len(tuples))
    return float("nan") if share <= 0 else math.sqrt(variance / min(1.0, share))


def uncertainty_text(query: UStatQuery) -> str:
    """Which errors ``noise_std``, ``sampling_error_bound`` and ``error_bound`` cover (the record's words)."""
    if query.tuples is None:
        return "DP noise only: all tuples, no sampling error (the rows themselves are not a sample of anything here)"
    ratio = len(query.outputs) > 1
    how = ("first-order bound with the released comparable share plugged in (post-processing)" if ratio
           else "data-independent bound from the kernel's output range, n, k and |E|")
    if query.sampling == "balanced" and query.kernel.degree > 2:
        how += "; for BalancedSamp of degree > 2 the paper's Claim D.1 (uniform) bound, not proven here"
    return (f"DP noise (noise_std) and the sampling of the {query.sampling} tuples (sampling_error_bound, 1 sd, "
            f"{how}); error_bound = sqrt of the sum of squares; not the sampling of the rows from a population")


def _noise_std(query: UStatQuery, count: int, plans: Sequence[NoisePlan]) -> list[float]:
    """Standard deviation of the noise in each released sum, in statistic units (sum / (|E| scale))."""
    return [math.sqrt(plan.variance) / (count * out.scale) for out, plan in zip(query.outputs, plans)]


@dataclass
class Simulation:
    """Result of :func:`simulate`: estimates over runs, and the noiseless references."""

    estimates: np.ndarray
    exact_on_tuples: float
    sums: np.ndarray
    tuples: np.ndarray
    plans: list[NoisePlan]
    noise: np.ndarray


def simulate(query: UStatQuery, rows_by_party: Sequence[np.ndarray], *, threshold: int, seed: int,
             runs: int = 1, noise: np.ndarray | None = None,
             noise_rng: np.random.Generator | None = None) -> Simulation:
    """Run Pi_U-MPC in one process (plain NumPy), ``runs`` times with fresh noise on the tuples of the public
    ``seed``; ``noise``: fixed draws (:func:`simulated`); ``noise_rng``: the draws' generator (tests)."""
    parties = len(rows_by_party)
    fixed = np.vstack([prepare_rows(query, np.asarray(rows, dtype=float).reshape(-1, len(query.specs))).integers
                       for rows in rows_by_party])
    rows = fixed.shape[0]
    check_sizes(query, rows)
    tuples = sample_for(query, rows, seed)
    if query.clipping == "secure":
        fixed = _clip_encoded(query, fixed)
    plans = plans_for(query, tuples, rows, parties, threshold)
    return simulated(query, _plaintext_sums(query, fixed, tuples), tuples, plans, count=len(tuples), runs=runs,
                     parties=parties, noise=noise, noise_rng=noise_rng)


def simulated(query: UStatQuery, values: np.ndarray, tuples: np.ndarray, plans: Sequence[NoisePlan], *, count: int,
              runs: int, parties: int, noise: np.ndarray | None = None,
              noise_rng: np.random.Generator | None = None) -> Simulation:
    """``runs`` simulated releases of the exact ``values`` over ``count`` tuples.  The noise, object ints of shape
    ``(runs, sums, draws)``: each party's draw per sum, or for noise sampled in MPC one joint value per sum and run
    from the sampler's plaintext mirror (:func:`dp.secret_noise.simulate_secret_laplace`); ``noise`` given: those
    fixed draws, reshaped (tests)."""
    if noise is None and query.noise == "mpc":
        noise = np.stack([plan.draw(noise_rng, runs) for plan in plans], axis=1)
    elif noise is None:
        noise = np.stack([plan.draw(noise_rng, runs * parties).reshape(runs, parties) for plan in plans],
                         axis=1).astype(object)
    noise = np.asarray(noise, dtype=object)
    noise = noise.reshape(runs, len(plans), parties if query.noise != "mpc" else -1 if noise.ndim == 3 else 1)
    noisy = values[None, :] + noise.sum(axis=2)
    estimates = np.array([query.kernel.estimate(list(sums), count, query.widths) for sums in noisy])
    return Simulation(estimates, query.kernel.estimate(list(values), count, query.widths), values, tuples,
                      list(plans), noise)


def _clip_encoded(query: UStatQuery, fixed: np.ndarray) -> np.ndarray:
    widths = _clip_widths(query, fixed.shape[1])
    chosen = [j for j, w in enumerate(widths) if w is not None]
    clipped = fixed.copy()
    clipped[:, chosen] = clip_local(fixed[:, chosen], [w for w in widths if w is not None])
    return clipped


def _clip_widths(query: UStatQuery, shared_columns: int) -> list[int | None]:
    """Per shared column: the width to clip to, or ``None`` for label and categorical columns (their
    codes are validated locally, never clipped)."""
    widths: list[int | None] = [None] * shared_columns
    for position, spec in enumerate(query.specs):
        if position not in query.kernel.categories and not spec.is_categorical and position < shared_columns:
            widths[position] = spec.width
    return widths


def _plaintext_sums(query: UStatQuery, fixed: np.ndarray, tuples: np.ndarray) -> np.ndarray:
    totals = np.zeros(len(query.outputs), dtype=object)
    for start in range(0, len(tuples), TUPLES_PER_BATCH):
        batch = tuples[start:start + TUPLES_PER_BATCH]
        outputs = query.kernel.plaintext([fixed[batch[:, j]] for j in range(batch.shape[1])])
        totals += np.array([int(np.sum(out, dtype=np.int64)) for out in outputs], dtype=object)
    return totals


def sampled_bit_length(query: UStatQuery, rows: int, parties: int, threshold: int) -> int:
    """Signed bit length the sampled (tuples) path needs for ``rows`` rows, from public parameters only: the
    kernel's comparisons and the noisy sums at their worst (most tuples times the largest output, plus the noise's
    tail bound at the largest ``delta_G_max``; in-MPC noise: its digits), at least 32 (docs/umpc_analysis.md)."""
    bits = query.kernel.comparison_bits(query.widths)
    complete = tuple_count(rows, query.kernel.degree)
    most = complete if query.tuples is None or query.sampling == "bernoulli" else min(query.tuples, complete)
    try:
        plans = noise_plans(query, max(1, min(most, tuple_count(rows - 1, query.kernel.degree - 1))), parties, threshold)
    except ValueError:  # refused later with its own line, once the tuples are known
        plans = []
    slack = max((int(plan.slack) for plan in plans), default=0)
    largest = max(max(abs(most * out.low), abs(most * out.high)) for out in query.outputs) + slack
    digits = max((plan.digits for plan in plans), default=0)
    return max(32, bits, largest.bit_length() + 2, digits + 2)


def secure_integer_type(query: Any, rows: int | None = None) -> tuple[Any, int]:
    """MPyC's secure integers (without ``-L``: :func:`sampled_bit_length` given ``rows``) and the comparison bit
    length the kernel needs; InputError (the same verdict at every party) if a given ``-L`` is too short."""
    from mpyc.runtime import mpc

    from secure.session import run_settings

    bits = query.kernel.comparison_bits(query.widths)
    given = run_settings().bit_length
    if given is not None:
        sectype = secure_integers(given)
    elif rows is not None and isinstance(query, UStatQuery):
        sectype = secure_integers(sampled_bit_length(query, rows, len(mpc.parties), int(mpc.threshold)))
    else:
        sectype = secure_integers(max(bits, int(mpc.options.bit_length)))
    if bits > sectype.bit_length:
        raise InputError(f"all parties: the domains of columns {', '.join(s.name for s in query.specs)} at "
                         f"{max(s.precision for s in query.specs)} fractional bits need {bits}-bit secure "
                         f"integers, got -L {sectype.bit_length}; give -L {bits} or a lower --precision")
    return sectype, bits


NoiseSource = Callable[[NoisePlan, int], int]


def _draw_at(draw: NoiseSource, plan: NoisePlan, *, index: int) -> int:
    """``draw(plan, index)``: a party's draw for released sum ``index``, as a one-argument source."""
    return draw(plan, index)


async def noise_and_reveal(meter: Any, totals: Sequence[Any], plans: Sequence[NoisePlan], ranges: Sequence[Any],
                           noise_source: NoiseSource | None,
                           receivers: Sequence[int] | None) -> tuple[list[Any], dict[str, Any]]:
    """The phases ``noise`` and ``reveal`` of a run, and its phases' costs over all parties: the secure ``totals``
    plus their noise by the plans' (one) source -- sampled inside MPC, every party's coalition-calibrated draw, or the
    delegates' draws only -- opened at ``receivers`` if inside their ``ranges`` (empty elsewhere);
    ``noise_source`` (``f(plan, index) -> int``) replaces this party's OS draws in tests."""
    from secure.aggregation import add_party_noise, guarded_reveal

    draw: NoiseSource = noise_source or (lambda noise_plan, index: noise_plan.draw())  # default: this party's OS draw
    with meter.phase("noise"):
        if plans[0].source == "mpc":
            noisy = [total + eta for total, eta in zip(totals, secret_laplace_noise(type(totals[0]), samplers(plans)))]
        elif plans[0].source == "delegates":
            noisy = [add_delegated_noise(total, plan, plan.delegates,
                                         noise_source=functools.partial(_draw_at, draw, index=index))
                     for index, (total, plan) in enumerate(zip(totals, plans))]
        else:
            noisy = [add_party_noise(total, draw(plan, index))
                     for index, (total, plan) in enumerate(zip(totals, plans))]
        await meter.settle(*noisy)
    with meter.phase("reveal"):
        opened = await guarded_reveal(noisy, ranges, receivers)
    return opened, await meter.totals_over_parties()


@restores_security_parameter
async def run_secure(query: UStatQuery, fixed: FixedPointRows | Owners, *, seed: int | None = None,
                     missing: str = "refuse", noise_source: NoiseSource | None = None,
                     receivers: Sequence[int] | None = None, noise_delegates: int | None = None,
                     corrupt_delegates: int | None = None, delegation_failure: float = 0.0) -> UStatRelease | None:
    """Run Pi_U-MPC on the started MPyC runtime, every party with its own rows (or the servers' ``Owners``); the
    release at ``receivers``, ``None`` elsewhere.  Parameters, M_HF delegation and errors: docs/umpc_analysis.md."""
    from mpyc.runtime import mpc

    from secure.aggregation import secure_sum
    from secure.meter import CostMeter, report_progress

    if query.noise == "mpc" and (noise_source is not None or noise_delegates is not None):
        raise ValueError("noise sampled inside MPC has no party draws: noise_source and noise_delegates "
                         "(--delegate-noise) apply to party noise only")
    if noise_delegates is not None:
        if isinstance(noise_delegates, bool) or not isinstance(noise_delegates, int):
            raise TypeError(f"noise_delegates is the number |Z| of noise delegates, got {noise_delegates!r}: "
                            "Z is drawn from fresh joint randomness of the run, not given")
        delegate_noise_shape(noise_delegates, corrupt_delegates)  # t_Z in [0, |Z| - 1], before any data is shared
    parties, threshold = len(mpc.parties), int(mpc.threshold)
    if noise_delegates is not None and noise_delegates > parties:
        raise ValueError(f"noise_delegates must be at most the number of parties ({parties}), got {noise_delegates}")
    meter = CostMeter()

    with meter.phase("intake"):
        counts = await fixed.counts()
        rows = sum(counts)
        try:
            check_sizes(query, rows)
            leak_planned = tuples_leak_plan(query, rows)  # MPyC's -K raised before any secure type or comparison
        except ValueError as exc:
            raise InputError(f"all parties: {exc}") from None
        if isinstance(fixed, Owners):  # the campaign's field; rows rejected by the checks drop out
            bits = query.kernel.comparison_bits(query.widths)
            sectype = fixed.secure_type(max(bits, sampled_bit_length(query, rows, parties, threshold)),
                                        f"the {query.kernel.name} of n = {rows} rows on sampled tuples")
            shared, rows = await fixed.columns(sectype, [spec.name for spec in query.specs]), fixed.rows
        else:
            sectype, bits = secure_integer_type(query, rows)
            shared = share_rows(sectype, fixed.integers, counts)
            if query.clipping == "secure":  # (owners' values are checked on the grid by the intake)
                shared = await clip_secure_in_steps(shared, _clip_widths(query, fixed.integers.shape[1]))
        await meter.settle(shared)

    with meter.phase("seed"):
        public_seed = seed if seed is not None else await joint_seed()
        try:  # the sensitivity is delta_max times the output's: the epsilon may be too small only now
            check_sizes(query, rows)  # (owners: after the rejected ones dropped out)
            tuples = sample_for(query, rows, public_seed)
            plans = plans_for(query, tuples, rows, parties, threshold)
        except ValueError as exc:  # public parameters only: the same verdict at every party, before any reveal
            raise InputError(f"all parties: {exc}") from None
        digits = max(plan.digits for plan in plans)
        if digits > sectype.bit_length - 2:
            raise InputError(f"all parties: the noise sampled in MPC has {digits} binary digits (|noise| < 2^{digits}), "
                             f"which -L {sectype.bit_length} cannot hold; give -L {digits + 2} or more")

    with meter.phase("kernel"):
        totals: list[Any] | None = None
        size = batch_size(len(tuples))
        batches = -(-len(tuples) // size)
        report_progress("kernel batches", 0, batches)
        for number, start in enumerate(range(0, len(tuples), size), start=1):
            batch = tuples[start:start + size]
            parts = [shared[batch[:, j]] for j in range(batch.shape[1])]
            sums = [secure_sum(out) for out in query.kernel.secure(parts, bits)]
            totals = sums if totals is None else [a + b for a, b in zip(totals, sums)]
            await meter.settle(*sums)  # batch by batch, so that progress is real (and memory bounded)
            report_progress("kernel batches", number, batches)
        assert totals is not None
        await meter.settle(*totals)

    delegates: tuple[int, ...] | None = None
    drawn_from = ""
    if noise_delegates is not None:
        with meter.phase("delegates"):  # its own call of joint randomness, right before the noise: never the seed
            delegates, drawn_from = await draw_delegates(parties, noise_delegates), DELEGATES_DRAWN_FROM
        plans = [delegate_plan(plan, delegates, corrupt_delegates=corrupt_delegates,
                               epsilon_fail=delegation_failure or None) for plan in plans]

    opened, phases = await noise_and_reveal(meter, totals, plans, _sum_ranges(query, len(tuples), plans),
                                            noise_source, receivers)
    if not opened:
        return None
    failure = delegation_failure if noise_delegates is not None else 0.0
    leak = leak_of_run(leak_planned, tuples_path_openings(query.kernel, query.specs, tuples=len(tuples), rows=rows,
                                                          clipping=query.clipping), epsilon=query.epsilon)
    return ustat_release(query, plans, opened, phases, leak, rows=rows, count=len(tuples),
                         max_degree=max_degree(tuples, rows), failure=failure, delegates=delegates,
                         sampling=query.sampling if query.tuples else "all", missing=missing, clipping=query.clipping,
                         seed=public_seed, sampling_error_bound=sampling_error_bound(query, rows, tuples, opened),
                         delegates_drawn_from=drawn_from, uncertainty_covers=uncertainty_text(query))


def ustat_release(query: UStatQuery, plans: Sequence[NoisePlan], opened: list[Any], phases: dict[str, Any],
                  leak: ComparisonLeak, *, rows: int, count: int, max_degree: int, sampling: str, missing: str,
                  clipping: str, uncertainty_covers: str, failure: float = 0.0,
                  delegates: tuple[int, ...] | None = None, seed: int | None = None, sampling_error_bound: float = 0.0,
                  delegates_drawn_from: str = "", path: str = "tuples", plan: str = "") -> UStatRelease:
    """The release of the noisy sums ``opened`` over ``count`` tuples (either path), its delta including the
    delegation's ``failure`` and the comparisons' ``leak``; the rest: the path's own record keys."""
    delta, sampler_delta, sampler = sampler_summary(query, plans)
    delta += failure
    delta += leak.delta  # (1 + e^eps) s of the comparisons (dp.comparison_leakage), <= 2^-40
    kernel, first = query.kernel, plans[0]
    if query.noise == "mpc":  # the one-line guarantee (dp.noise_defaults): which noise ran and what it gives
        guarantee = mpc_guarantee(query.epsilon, delta, sampler_delta)
    elif delegates is not None:  # failure: the probability that all delegates who drew the noise are corrupt
        guarantee = delegated_guarantee(query.epsilon, delta, failure, len(delegates), first.mechanism)
    else:
        guarantee = party_guarantee(query.epsilon, delta, first.parties, first.threshold, first.mechanism)
    return UStatRelease(
        statistic=kernel.name, estimate=kernel.estimate(opened, count, query.widths), epsilon=query.epsilon,
        delta=delta, n=rows, pairs=count, parties=first.parties, threshold=first.threshold, degree=kernel.degree,
        max_degree=max_degree, mechanism=first.mechanism, noise_std=_noise_std(query, count, plans), noisy_sums=opened,
        estimate_std=estimate_noise_std(query, count, plans, opened), **run_costs(phases), noise_source=query.noise,
        sampler_delta=sampler_delta, sampler=sampler, delegation_failure=failure,
        delegates=None if delegates is None else list(delegates), comparison_leak=leak.record(),
        guarantee=guarantee + "; " + leak.describe(), sampling=sampling, missing=missing, clipping=clipping, seed=seed,
        sampling_error_bound=sampling_error_bound, delegates_drawn_from=delegates_drawn_from,
        uncertainty_covers=uncertainty_covers, path=path, plan=plan)
