"""Complete U-statistics (all ``C(n, k)`` tuples) by the histogram path or by one secure sort.

The same release as Pi_U-MPC (Sinh & Ramon, Protocol 3.1) with ``E`` = every tuple; exact on the
fixed-point rows, sensitivity ``C(n-1, k-1) * Delta_f`` (replace-one).  Threat model: passive, static,
``t < m/2``; the per-party counts never leave their party.  Paths, sensitivity per kernel and the
integer length: docs/umpc_analysis.md."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dp.comparison_leakage import sort_leak_plan
from dp.noise_plans import NoisePlan
from dp.umpc.owners import Owners
from dp.umpc.planner import PathPlan, SampledAccuracy, histogram_grid, plan_path, sort_bits
from dp.umpc.protocol import (NoiseSource, Simulation, UStatQuery, UStatRelease, _noise_std, _sum_ranges, check_rows,
                              kernel_specs, noise_and_reveal, noise_plans, plans_for, prepare_rows, sample_for,
                              simulated, uncertainty_text, ustat_release)
from dp.umpc.sampler_variance import incompleteness_variance_bound
from dp.sampling import tuple_count
from secure.clipping import clip_secure_in_steps
from secure.counting import CountedRows
from secure.errors import InputError
from secure.histograms import (STREAMED, checked_secure_histogram, histogram_sums, histogram_value_bound,
                               local_histogram, special_form, streamed_histogram_sums)
from secure.intake import FixedPointRows, share_rows
from secure.kernels import Kernel, VolumeUnderSurface
from secure.ranking import sorted_auc_sums, sorted_gini_sum
from secure.security_parameter import restores_security_parameter, secure_integers

__all__ = ["plan_for", "histogram_possible", "complete_max_degree", "complete_plans", "grid_values", "local_cells",
           "complete_bit_length", "simulate_complete", "run_complete",
           "secure_complete_sums", "complete_secure_type"]


def plan_for(query: UStatQuery, *, rows: int, parties: int, pairs: str, delegated: bool = False,
             rtt: float = 0.0, owners: Owners | None = None) -> PathPlan:
    """The path of ``query`` for ``rows`` rows from public parameters, ``pairs`` saying how the tuples were asked for;
    ValueError: a forced path that cannot run here, or that contradicts ``pairs`` (docs/umpc_analysis.md)."""
    check_rows(query.kernel.degree, rows)  # before any cost is modelled
    choice = query.path
    if choice in ("histogram", "sort") and (pairs in ("count", "per-row") or delegated):
        why = "noise drawn by delegates" if delegated else f"{query.tuples} sampled tuples"
        raise ValueError(f"path '{choice}' computes the complete statistic over all tuples, which contradicts {why}")
    chosen_by: str | None = None  # what chose the path when the user did not (the plan line says it)
    if choice == "auto" and delegated:
        choice, chosen_by = "tuples", "--delegate-noise runs on sampled tuples only"
    elif choice == "auto" and pairs in ("count", "per-row"):
        choice, chosen_by = "tuples", f"--pairs asks for {query.tuples} sampled tuples"
    unavailable = {} if owners is None else owners.unavailable([spec.name for spec in query.specs], query.kernel.name)
    if query.clipping == "secure" and owners is None:
        unavailable["histogram"] = ("--clip secure clips inside MPC, but the histogram path counts each party's rows "
                                    "at the party, so its clipping is local; use --path sort or tuples")
    accuracy = sampled_accuracy(query, rows, parties) if pairs == "auto" and choice == "auto" else None
    return plan_path(query.kernel, query.specs, rows=rows, parties=parties, choice=choice,  # type: ignore[arg-type]
                     tuples=query.tuples, sample_if_cheaper=pairs == "auto", unavailable=unavailable, why=chosen_by,
                     accuracy=accuracy, epsilon=query.epsilon, rtt=rtt,
                     noise="mpc" if query.noise == "mpc" else "parties",
                     histogram_seconds=0.0 if owners is None else owners.dpf_seconds())


def histogram_possible(query: UStatQuery, *, parties: int, pairs: str, delegated: bool = False) -> bool:
    """Whether the plan may be the histogram path whatever n: then a party counts its file while reading it
    (:func:`secure.counting.count_file`), and reads its rows only if the plan is another path."""
    if query.path not in ("auto", "histogram") or pairs in ("count", "per-row") or delegated:
        return False
    try:
        plan_for(replace(query, path="histogram"), rows=query.kernel.degree, parties=parties, pairs="all")
    except ValueError:
        return False
    return True


def sampled_accuracy(query: UStatQuery, rows: int, parties: int) -> SampledAccuracy | None:
    """The modelled sampling error and noise std of ``query``'s ``|E|`` sampled tuples, for ``--pairs auto`` to weigh
    (Sinh & Ramon App. D.1.2; docs/umpc_analysis.md); ``None`` for all tuples or noise that cannot be planned."""
    if query.tuples is None or query.tuples >= tuple_count(rows, query.kernel.degree):
        return None
    try:
        design = sample_for(query, rows, 0)
        plans = plans_for(query, design, rows, parties, (parties - 1) // 2)
    except (ValueError, TypeError):
        return None
    first = query.outputs[0]
    variance = incompleteness_variance_bound(query.sampling, rows=rows, degree=query.kernel.degree,
                                             tuples=query.tuples, value_range=(first.high - first.low) / first.scale,
                                             design=design)
    return SampledAccuracy(math.sqrt(variance), _noise_std(query, len(design), plans)[0])


def complete_max_degree(rows: int, degree: int, kernel: Kernel | None = None) -> int:
    """``delta_max`` of the complete release, the most tuples whose kernel value one replaced row changes:
    ``C(n-1, k-1)``, for VUS ``floor((n-1)^2 / 4)`` (why: docs/umpc_analysis.md)."""
    if kernel is not None and type(kernel) is VolumeUnderSurface:
        return min(math.comb(rows - 1, 2), (rows - 1) ** 2 // 4)
    return math.comb(rows - 1, degree - 1)


def complete_plans(query: UStatQuery, rows: int, parties: int, threshold: int) -> list[NoisePlan]:
    """Noise plans of the released sums of the complete statistic (sensitivity ``C(n-1, k-1) Delta_f``)."""
    return noise_plans(query, complete_max_degree(rows, query.kernel.degree, query.kernel), parties, threshold)


def grid_values(query: UStatQuery) -> list[np.ndarray]:
    """The fixed-point value of every grid point of each kernel column (codes for labels/categories)."""
    return [spec.grid_values() for spec in kernel_specs(query)]


def local_cells(query: UStatQuery, fixed: FixedPointRows) -> np.ndarray:
    """This party's rows (:func:`dp.umpc.protocol.prepare_rows`, before the kernel's re-encoding) as grid indices
    of the kernel's columns, clipped to the domains here, at the party (also under ``--clip secure``)."""
    columns = fixed.columns if fixed.columns is not None else fixed.integers
    specs = kernel_specs(query)
    cells = np.empty((columns.shape[0], len(specs)), dtype=np.int64)
    for j, spec in enumerate(specs):
        values = columns[:, j]
        if not spec.is_categorical:
            values = np.clip(values, 0, spec.width)
        cells[:, j] = spec.grid_index(values)
    return cells


def complete_bit_length(query: UStatQuery, rows: int, path: str, plans: Sequence[NoisePlan]) -> int:
    """Signed bit length the secure integers need on ``path`` for ``rows`` rows, from public parameters: the noisy
    sums, the histogram polynomial's values, the sort's comparisons and weights, the in-MPC noise's digits."""
    tuples = tuple_count(rows, query.kernel.degree)
    slack = max(int(plan.slack) for plan in plans)
    largest = max(max(abs(tuples * out.low), abs(tuples * out.high)) for out in query.outputs) + slack
    if path == "histogram":
        largest = max(largest, int(histogram_value_bound(query.kernel, rows, grid_values(query))) + slack)
    else:  # the sort's rank sums: weights (2k - n - 1) times values, and counts of pairs
        width = max(spec.width for spec in query.specs)
        largest = max(largest, rows * rows * max(width, 2) + slack)
    bits = largest.bit_length() + 2
    if path == "sort":
        bits = max(bits, sort_bits(query.kernel, query.specs) + 1)
    digits = max((plan.digits for plan in plans), default=0)
    return max(bits, digits + 2)


def complete_secure_type(query: UStatQuery, rows: int, path: str, plans: Sequence[NoisePlan]) -> Any:
    """MPyC's secure integers for ``path``: the derived length, or ``-L`` if given (refused if too short); the
    prime field fits the current ``-K`` (:func:`secure.security_parameter.secure_integers`)."""
    from secure.session import run_settings

    needed = complete_bit_length(query, rows, path, plans)
    given = run_settings().bit_length
    if given is not None and given < needed:
        raise InputError(f"all parties: the complete {query.kernel.name} of n = {rows} rows on the {path} path "
                         f"needs {needed}-bit secure integers (sums over all tuples and their noise), got -L {given}; "
                         f"give -L {needed} or more, or leave -L out")
    return secure_integers(given if given is not None else needed)


def simulate_complete(query: UStatQuery, rows_by_party: Sequence[np.ndarray], *, threshold: int, runs: int = 1,
                      noise: np.ndarray | None = None, noise_rng: np.random.Generator | None = None) -> Simulation:
    """The complete release in one process: exact sums plus noise drawn as the parties would (the noise plans and
    estimator of :func:`run_complete`; ``noise`` as in :func:`dp.umpc.protocol.simulate`)."""
    parties = len(rows_by_party)
    fixed = [prepare_rows(query, np.asarray(rows, dtype=float).reshape(-1, len(query.specs))) for rows in rows_by_party]
    rows = sum(int(f.integers.shape[0]) for f in fixed)
    check_rows(query.kernel.degree, rows)
    plans, degree = complete_plans(query, rows, parties, threshold), query.kernel.degree
    # the exact sums: the histogram polynomial on the joint histogram, the formula the secure path evaluates on shares
    counts = sum(local_histogram(local_cells(query, part), histogram_grid(query.kernel, query.specs)) for part in fixed)
    sums = histogram_sums(query.kernel, np.asarray(counts), grid_values(query), secure=False)
    return simulated(query, np.array([int(value) for value in sums], dtype=object),
                     np.empty((0, degree), dtype=np.int64), plans, count=tuple_count(rows, degree), runs=runs,
                     parties=parties, noise=noise, noise_rng=noise_rng)


async def secure_complete_sums(query: UStatQuery, fixed: FixedPointRows | Owners, path: str, sectype: Any,
                               counts: Sequence[int], meter: Any) -> tuple[list[Any], Any]:
    """The secure sums of the kernel's outputs over all tuples on ``path`` (histogram or sort: docs/umpc_analysis.md)
    and, for AUC, the secure number of positives (:mod:`dp.rank_auc` releases it; else ``None``)."""
    kernel = query.kernel
    rows = sum(counts)
    if path == "histogram":
        shape = histogram_grid(kernel, query.specs)
        with meter.phase("histogram"):  # this party's counts, in the clear
            local = None if isinstance(fixed, Owners) else fixed.histogram if isinstance(fixed, CountedRows) else \
                local_histogram(local_cells(query, fixed), shape)
        if local is not None and special_form(kernel) in STREAMED:  # phases per block of the grid's rows
            totals, positives = await streamed_histogram_sums(kernel, sectype, local, counts, grid_values(query),
                                                              phase=meter.phase)
            with meter.phase("sums"):
                await meter.settle(*totals)
            return totals, positives
        with meter.phase("histogram"):
            if isinstance(fixed, Owners):  # from the owners' DPF keys, one-hot checked
                joint = await fixed.histogram(sectype, shape)
            elif local is not None:  # each party's counts sum to its rows
                joint = await checked_secure_histogram(sectype, local, counts)
            await meter.settle(joint)
        with meter.phase("sums"):
            totals = list(histogram_sums(kernel, joint, grid_values(query), secure=True))
            positives = None
            if kernel.name == "auc":
                from mpyc.runtime import mpc

                positives = mpc.np_sum(joint[:, 1])
            await meter.settle(*totals)
        return totals, positives
    if isinstance(fixed, CountedRows):
        raise ValueError("the sort path shares the rows, which were counted while read, not kept")
    with meter.phase("intake"):
        if isinstance(fixed, Owners):  # the owners' shares, degree- and grid-checked
            shared, rows = await fixed.columns(sectype, [spec.name for spec in query.specs]), fixed.rows
        else:  # --clip local: clipped and counted once, by the party's intake (secure.intake.to_fixed_point)
            shared = share_rows(sectype, fixed.columns if fixed.columns is not None else fixed.integers, counts)
            if query.clipping == "secure":  # shared as they are, clipped inside MPC
                shared = await clip_secure_in_steps(shared, [None if spec.is_categorical else spec.width
                                                             for spec in kernel_specs(query)])
        await meter.settle(shared)
    with meter.phase("sort"):
        bits = sort_bits(kernel, query.specs)
        if kernel.name == "auc":
            twice_u, positives = await sorted_auc_sums(shared[:, 0], shared[:, 1], bits=bits)
            totals = [twice_u, positives * (rows - positives)]
        else:
            totals, positives = [await sorted_gini_sum(shared[:, 0], bits=bits)], None
        await meter.settle(*totals)
    return totals, positives


@restores_security_parameter
async def run_complete(query: UStatQuery, fixed: FixedPointRows | Owners, plan: PathPlan, *, missing: str = "refuse",
                       noise_source: NoiseSource | None = None,
                       receivers: Sequence[int] | None = None) -> UStatRelease | None:
    """Every party: the complete statistic on ``plan.path`` (``histogram`` or ``sort``), noise, reveal; the release
    at receivers, ``None`` elsewhere.  InputError (the same verdict at every party): too few rows, ``-L`` too short,
    epsilon too small; ProtocolFailure: an opened sum outside its range (phases: docs/umpc_analysis.md)."""
    from mpyc.runtime import mpc

    from secure.meter import CostMeter
    from secure.session import run_settings

    if plan.path not in ("histogram", "sort"):
        raise ValueError(f"run_complete computes the histogram or sort path, got '{plan.path}'")
    if query.noise == "mpc" and noise_source is not None:
        raise ValueError("noise sampled inside MPC has no party draws: noise_source applies to party noise only")
    parties, threshold = len(mpc.parties), int(mpc.threshold)
    kernel = query.kernel
    meter = CostMeter()
    with meter.phase("intake"):
        counts = await fixed.counts()
        rows = sum(counts)
        try:
            check_rows(kernel.degree, rows)
            plans = complete_plans(query, rows, parties, threshold)
        except ValueError as exc:
            raise InputError(f"all parties: {exc}") from None
        type_bits = run_settings().bit_length or complete_bit_length(query, rows, plan.path, plans)
        leak = sort_leak_plan(query, rows, plan.path, bits=sort_bits(kernel, query.specs), type_bits=type_bits)
        # made after -K is raised: its field fits; owners' shares: the campaign's field
        sectype = fixed.secure_type(type_bits, f"the {kernel.name} of n = {rows} rows on the sort path") \
            if isinstance(fixed, Owners) and plan.path == "sort" else \
            complete_secure_type(query, rows, plan.path, plans)
    totals, _ = await secure_complete_sums(query, fixed, plan.path, sectype, counts, meter)
    if isinstance(fixed, Owners) and fixed.rows != rows:  # owners rejected by the checks: fewer rows, public
        if fixed.rows < kernel.degree:
            raise InputError(f"all servers: {fixed.rows} rows accepted, a degree-{kernel.degree} kernel needs more")
        rows, plans = fixed.rows, complete_plans(query, fixed.rows, parties, threshold)
    tuples = tuple_count(rows, kernel.degree)
    opened, phases = await noise_and_reveal(meter, totals, plans, _sum_ranges(query, tuples, plans), noise_source,
                                            receivers)
    if not opened:
        return None
    return ustat_release(query, plans, opened, phases, leak, rows=rows, count=tuples,
                         max_degree=complete_max_degree(rows, kernel.degree, kernel), sampling="all", missing=missing,
                         clipping="secure" if plan.path == "sort" and query.clipping == "secure" else "local",
                         path=plan.path, plan=plan.describe(),
                         uncertainty_covers=uncertainty_text(replace(query, tuples=None)))
