"""Which way to compute a U-statistic: the histogram path, one secure sort, or evaluated tuples.

docs/design.md ("Three ways to compute a U-statistic").  No threat model here (public parameters only);
each path states its own.  Details: docs/umpc_analysis.md."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

from dp.comparison_leakage import plan_leak
from dp.sampling import tuple_count
from dp.umpc.costs import KERNEL_OPERATIONS
from secure.columns import ColumnSpec
from secure.aggregation import INPUT_CELLS, NONNEGATIVE_MAX_ELEMENTS
from secure.histograms import FOLD_CELLS, GENERIC_MAX_CELLS, STREAMED, special_form
from secure.kernels import Kernel
from secure.leakage import MaskedOpenings
from secure.ranking import sort_costs, sorting_network_size
from secure.security_parameter import field_bits

__all__ = ["field_scale", "LAUNCH_SECURITY_PARAMETER", "Path", "PathChoice", "PATHS", "PATH_CHOICES", "PathCost", "PathPlan", "plan_path", "path_costs",
           "histogram_grid", "sort_bits", "SORT_KERNELS", "HISTOGRAM_MEMORY_LIMIT", "HISTOGRAM_SECONDS_LIMIT",
           "SampledAccuracy", "AUTO_CHEAP_SECONDS", "AUTO_ACCURACY_SECONDS", "PURE_ACCOUNT_COMPARISONS",
           "pure_account_path", "comparison_rounds", "NOISE_ROUNDS", "path_rounds", "sharing_blocks", "batch_size",
           "TUPLES_PER_BATCH", "MIN_PROGRESS_BATCH"]

Path = Literal["histogram", "sort", "tuples"]
PathChoice = Literal["auto", "histogram", "sort", "tuples"]
PATHS: tuple[Path, ...] = ("histogram", "sort", "tuples")
PATH_CHOICES: tuple[PathChoice, ...] = ("auto", "histogram", "sort", "tuples")

#: kernels with a rank-sum form after one sort (:mod:`secure.ranking`)
SORT_KERNELS = ("auc", "gini")

#: the cost model's constants, each measured on the workload docs/umpc_analysis.md ("Constants of the cost model")
#: names: seconds per comparison bit, per compare-exchange bit of a sort, per histogram cell, per product, per run
SECONDS_PER_COMPARISON_BIT = 24e-6
SECONDS_PER_EXCHANGE_BIT = 15e-6
SECONDS_PER_CELL = 8.75e-6
SECONDS_PER_PRODUCT = 4e-6
SECONDS_FIXED = 0.3
#: bytes of one field element in memory, on the wire per receiving party; a party's memory before any data
BYTES_PER_ELEMENT = 64
WIRE_BYTES = 11
BASE_MEMORY = 70e6
#: bytes sent by all parties per discrete Laplace sampled inside MPC; memory per evaluated tuple (tuples path)
NOISE_BYTES_PER_SUM = 4e5
MEMORY_PER_TUPLE = 4.5e3
#: the histogram path is refused above this modelled memory per party ...
HISTOGRAM_MEMORY_LIMIT = 8 << 30
#: ... or above this modelled time
HISTOGRAM_SECONDS_LIMIT = 3600.0

#: ``--pairs auto`` computes the complete statistic (no sampling error) whenever a complete path is modelled
#: at most this many seconds, even if sampling would be faster: a wait this short buys exactness
AUTO_CHEAP_SECONDS = 30.0
#: ... and, when the sampled run's sampling error would exceed its noise (:class:`SampledAccuracy`), whenever
#: a complete path is modelled at most this many seconds (beyond it, ``--pairs all`` asks for it explicitly)
AUTO_ACCURACY_SECONDS = 600.0

#: secure comparisons and products per tuple of each kernel in Pi_U-MPC (secure.kernels), VUS included
_TUPLE_WORK = {**KERNEL_OPERATIONS, "vus": (2, 16)}


@dataclass(frozen=True)
class PathCost:
    """The modelled cost of one path: seconds, bytes sent by all parties, memory per party.
    ``available`` is ``False`` with a ``reason`` when the path cannot run for these parameters."""

    path: Path
    seconds: float
    bytes_sent: float
    memory: float
    tuples: int
    available: bool = True
    reason: str = ""
    #: communication rounds on the critical path (:func:`path_rounds`), of them the noise's; ``seconds`` holds
    #: ``rounds * rtt / 2`` of latency (one round: every party sends, then waits one one-way delay)
    rounds: int = 0
    noise_rounds: int = 0
    rtt: float = 0.0

    def describe(self) -> str:
        """``histogram: 1.2 s, 12 rounds, 3.4 MB sent, 56 MB per party`` (or why it is unavailable)."""
        if not self.available:
            return f"{self.path}: unavailable ({self.reason})"
        return (f"{self.path}: {self.seconds:.3g} s, {self.rounds} rounds, {self.bytes_sent / 1e6:.3g} MB sent, "
                f"{self.memory / 1e6:.3g} MB per party (modelled)")


@dataclass(frozen=True)
class SampledAccuracy:
    """The modelled uncertainty of the sampled run that ``--pairs auto`` weighs against a complete path.
    Details: docs/umpc_analysis.md."""

    sampling_error: float
    noise_std: float

    @property
    def sampling_dominates(self) -> bool:
        """Whether the sampling error would exceed the noise (exactness then buys more than the noise costs)."""
        return self.sampling_error > self.noise_std

    def describe(self) -> str:
        """``sampling error <= 0.024 vs noise std 0.0077``."""
        return f"sampling error <= {self.sampling_error:.2g} vs noise std {self.noise_std:.2g}"


@dataclass(frozen=True)
class PathPlan:
    """The chosen path, why, and the modelled cost of every path."""

    path: Path
    reason: str
    costs: dict[str, PathCost] = field(default_factory=dict)
    tuples: int | None = None

    def describe(self) -> str:
        """One line: the choice, the reason, the round-trip time the model used, the modelled costs."""
        others = "; ".join(cost.describe() for cost in self.costs.values())
        rtt = max((cost.rtt for cost in self.costs.values()), default=0.0)
        return f"path {self.path} ({self.reason}); rtt {rtt * 1e3:g} ms (--rtt); {others}"


def histogram_grid(kernel: Kernel, specs: Sequence[ColumnSpec]) -> list[int]:
    """Grid size of each kernel column (a label column without a list takes the kernel's labels)."""
    sizes = []
    for position, spec in enumerate(specs):
        if position in kernel.categories and spec.categories is None:
            sizes.append(len(kernel.categories[position]))
        else:
            sizes.append(spec.grid_size)
    return sizes


#: rounds of the noise phase: each party inputs its draw (``parties``), or the in-MPC sampler
#: (:mod:`secure.noise.mpc`): one round of joint random bits (PRSS: ``r^2`` opened), then ``ceil(log2 64)`` rounds
#: of the coins' prefix products at the default ``b = 64``-bit coins (measured: 7, ``scenarios.bench_rounds``)
NOISE_ROUNDS: dict[str, int] = {"parties": 1, "mpc": 1 + 6}
#: the comparison each kernel makes per tuple and its product layers after it (:mod:`secure.kernels`)
_TUPLE_ROUNDS: dict[str, tuple[str, int]] = {"kendall": ("sign", 1), "gini": ("lt", 1), "auc": ("sign", 2),
                                             "duplicate": ("eq", 0), "rand": ("eq", 1), "vus": ("sign", 2)}


#: the tuples path's kernel batches: about :data:`PROGRESS_STEPS` of them, so that its progress
#: (:func:`secure.meter.report_progress`) moves in steps of about 5 %, each of at least :data:`MIN_PROGRESS_BATCH`
TUPLES_PER_BATCH = 1 << 16
PROGRESS_STEPS = 20
MIN_PROGRESS_BATCH = 1024


def batch_size(tuples: int) -> int:
    """Tuples per secure kernel batch: :data:`PROGRESS_STEPS` steps in ``[MIN_PROGRESS_BATCH, TUPLES_PER_BATCH]``."""
    return min(TUPLES_PER_BATCH, max(MIN_PROGRESS_BATCH, -(-tuples // PROGRESS_STEPS)))


def comparison_rounds(bits: int, kind: Literal["lt", "sign", "eq"]) -> int:
    """Rounds of MPyC's ``mpc.np_sgn(x, l=bits)`` (``lt``, a full ``sign``, or ``eq``) once its random bits are there
    (MPyC 0.11, Toft's comparison; the count: docs/umpc_analysis.md)."""
    if kind == "eq":
        return 1 + max(1, (bits - 1).bit_length())
    return 2 + bits.bit_length() + (kind == "sign")  # bit_length(bits) = ceil(log2(bits + 1))


def sharing_blocks(kernel: Kernel, shape: Sequence[int], *, rows: int, parties: int) -> int:
    """Slices in which the histogram path secret-shares the parties' counts, each awaited before the next: 0 for the
    bit proof's one block (small grids), else per :data:`~secure.aggregation.INPUT_CELLS` cells or, streamed, per
    :data:`~secure.histograms.FOLD_CELLS` cells of whole grid rows (docs/umpc_analysis.md)."""
    cells, width = math.prod(shape), max(1, -(-max(rows, 1) // max(parties, 1))).bit_length()
    if cells * width <= NONNEGATIVE_MAX_ELEMENTS:
        return 0
    if special_form(kernel) in STREAMED and len(shape) > 1:
        return -(-int(shape[0]) // max(1, FOLD_CELLS // math.prod(shape[1:])))
    return -(-cells // INPUT_CELLS)


def path_rounds(path: Path, kernel: Kernel, *, rows: int, bits: int, tuples: int = 0, noise: str = "mpc",
                shape: Sequence[int] = (1,), parties: int = 3) -> int:
    """Communication rounds (message latencies) on the critical path of one run of ``path``, phase by phase, from
    public parameters only; ``shape``: the histogram's grid.  Details: docs/umpc_analysis.md."""
    noise_part = NOISE_ROUNDS.get(noise, NOISE_ROUNDS["mpc"])
    if path == "histogram":
        blocks = sharing_blocks(kernel, shape, rows=rows, parties=parties)  # the bit proof: bits, seed, product
        overlapped = special_form(kernel) in STREAMED and blocks > 0  # each block's product overlaps what follows
        return 1 + (blocks or 3) + 1 + (0 if overlapped else 2 if kernel.name == "vus" else 1) + noise_part + 1
    if path == "sort":
        _, stages = sorting_network_size(rows)
        own = 1 + 1 + stages * (comparison_rounds(bits, "lt") + 1)
        if kernel.name == "auc":
            own += comparison_rounds(bits, "eq") + max(1, (rows - 1).bit_length()) + 1 + 1
        else:
            own += 1
        return 2 + own + noise_part + 1
    kind, layers = _TUPLE_ROUNDS.get(kernel.name, ("sign", 2))
    batches = -(-max(tuples, 1) // batch_size(max(tuples, 1)))
    return 2 + 1 + batches * (2 + comparison_rounds(bits, kind) + layers) + noise_part + 1  # type: ignore[arg-type]


def _histogram_cost(kernel: Kernel, specs: Sequence[ColumnSpec], parties: int, rows: int, rtt: float = 0.0,
                    noise: str = "mpc", extra: float = 0.0) -> PathCost:
    sizes = histogram_grid(kernel, specs)
    cells = math.prod(sizes)
    total = tuple_count(rows, kernel.degree) if rows >= kernel.degree else 0
    special = special_form(kernel) is not None
    if not special and kernel.degree != 2:
        return PathCost("histogram", math.inf, math.inf, math.inf, total, False,
                        f"no histogram form for a degree-{kernel.degree} kernel other than VUS")
    if not special and cells > GENERIC_MAX_CELLS:
        return PathCost("histogram", math.inf, math.inf, math.inf, total, False,
                        f"the generic form needs a {cells} x {cells} table; at most {GENERIC_MAX_CELLS} cells")
    rounds = path_rounds("histogram", kernel, rows=rows, bits=0, noise=noise, shape=sizes, parties=parties)
    seconds = SECONDS_FIXED + SECONDS_PER_CELL * cells * max(1, parties) / 3 + rounds * rtt / 2 + extra
    wire = WIRE_BYTES * cells * parties * max(parties - 1, 1) + _noise_bytes(kernel, specs)
    memory = BASE_MEMORY + BYTES_PER_ELEMENT * cells * (parties + 2)
    return PathCost("histogram", seconds, wire, memory, total, rounds=rounds, noise_rounds=NOISE_ROUNDS.get(
        noise, NOISE_ROUNDS["mpc"]), rtt=rtt)


def _noise_bytes(kernel: Kernel, specs: Sequence[ColumnSpec]) -> float:
    return NOISE_BYTES_PER_SUM * len(kernel.outputs([spec.width for spec in specs]))


#: MPyC's default ``-K`` and ``-L``: the field of :data:`WIRE_BYTES` (``L + K + 2 = 64`` bits)
LAUNCH_SECURITY_PARAMETER = 30
MODEL_BIT_LENGTH = 32


def field_scale(openings: MaskedOpenings, *, parties: int, epsilon: float) -> tuple[int, float]:
    """``(K, scale)``: the ``-K`` a run with these masked openings raises to (:func:`dp.comparison_leakage.plan_leak`
    at MPyC's default ``t``) and the factor ``(L + K + 2) / (L + 30 + 2)``, ``L = 32``, by which its field (every
    byte on the wire) outgrows the calibration's 64 bits."""
    raised = plan_leak(openings, epsilon=epsilon, parties=parties, threshold=(parties - 1) // 2,
                       launched=LAUNCH_SECURITY_PARAMETER).security_parameter
    base = field_bits(MODEL_BIT_LENGTH, LAUNCH_SECURITY_PARAMETER)
    return raised, field_bits(MODEL_BIT_LENGTH, raised) / base


def _sort_cost(kernel: Kernel, specs: Sequence[ColumnSpec], parties: int, rows: int,
               epsilon: float = 1.0, rtt: float = 0.0, noise: str = "mpc") -> PathCost:
    total = tuple_count(rows, kernel.degree) if rows >= kernel.degree else 0
    if special_form(kernel) not in SORT_KERNELS:
        return PathCost("sort", math.inf, math.inf, math.inf, total, False,
                        f"no rank-sum form for '{kernel.name}' (only {', '.join(SORT_KERNELS)})")
    bits = sort_bits(kernel, specs)
    cost = sort_costs(rows, bits, statistic=special_form(kernel) or "auc")
    seconds = SECONDS_FIXED + SECONDS_PER_EXCHANGE_BIT * bits * cost.comparisons \
        + SECONDS_PER_COMPARISON_BIT * bits * cost.equality_tests + SECONDS_PER_PRODUCT * cost.products
    _, scale = field_scale(MaskedOpenings(cost.comparisons, cost.equality_tests, cost.conversions), parties=parties,
                           epsilon=epsilon)  # -K raised for the sort's openings: a larger field
    wire = 2 * WIRE_BYTES * scale * parties * max(parties - 1, 1) * (bits * (cost.comparisons + cost.equality_tests)
                                                              + cost.products) + _noise_bytes(kernel, specs)
    memory = BASE_MEMORY + BYTES_PER_ELEMENT * rows * (len(specs) + 4) * 2
    rounds = path_rounds("sort", kernel, rows=rows, bits=bits, noise=noise)
    return PathCost("sort", seconds + rounds * rtt / 2, wire, memory, total, rounds=rounds,
                    noise_rounds=NOISE_ROUNDS.get(noise, NOISE_ROUNDS["mpc"]), rtt=rtt)


def sort_bits(kernel: Kernel, specs: Sequence[ColumnSpec]) -> int:
    """Signed bit length of the sort's comparisons: keys ``2 score + label`` (AUC) or the value (Gini)."""
    width = int(specs[0].width)
    return (2 * width + 1).bit_length() + 1 if kernel.name == "auc" else width.bit_length() + 1


def _tuples_cost(kernel: Kernel, specs: Sequence[ColumnSpec], parties: int, rows: int,
                 tuples: int | None, epsilon: float = 1.0, rtt: float = 0.0, noise: str = "mpc") -> PathCost:
    count = tuple_count(rows, kernel.degree) if tuples is None else tuples
    comparisons, products = _TUPLE_WORK.get(kernel.name, (2, 2))
    bits = kernel.comparison_bits([spec.width for spec in specs])
    seconds = SECONDS_FIXED + count * (comparisons * bits * SECONDS_PER_COMPARISON_BIT + products * SECONDS_PER_PRODUCT)
    _, scale = field_scale(MaskedOpenings(comparisons=comparisons * count), parties=parties, epsilon=epsilon)
    wire = WIRE_BYTES * scale * parties * max(parties - 1, 1) * count * (comparisons * bits * 4 + products) \
        + _noise_bytes(kernel, specs)
    memory = BASE_MEMORY + BYTES_PER_ELEMENT * rows * len(specs) + MEMORY_PER_TUPLE * count
    rounds = path_rounds("tuples", kernel, rows=rows, bits=bits, tuples=count, noise=noise)
    return PathCost("tuples", seconds + rounds * rtt / 2, wire, memory, count, rounds=rounds,
                    noise_rounds=NOISE_ROUNDS.get(noise, NOISE_ROUNDS["mpc"]), rtt=rtt)


def path_costs(kernel: Kernel, specs: Sequence[ColumnSpec], *, rows: int, parties: int, tuples: int | None,
               epsilon: float = 1.0, rtt: float = 0.0, noise: str = "mpc", histogram_seconds: float = 0.0
               ) -> dict[str, PathCost]:
    """The modelled cost of every path; ``tuples``: the sampled ``|E|`` (``None``: all tuples); ``histogram_seconds``
    added to the histogram path's (owners' DPF evaluation).  Details: docs/umpc_analysis.md."""
    return {"histogram": _histogram_cost(kernel, specs, parties, rows, rtt, noise, histogram_seconds),
            "sort": _sort_cost(kernel, specs, parties, rows, epsilon, rtt, noise),
            "tuples": _tuples_cost(kernel, specs, parties, rows, tuples, epsilon, rtt, noise)}


def plan_path(kernel: Kernel, specs: Sequence[ColumnSpec], *, rows: int, parties: int,
              choice: PathChoice = "auto", tuples: int | None = None, sample_if_cheaper: bool = False,
              unavailable: dict[str, str] | None = None, why: str | None = None,
              accuracy: SampledAccuracy | None = None, epsilon: float = 1.0, rtt: float = 0.0,
              noise: str = "mpc", histogram_seconds: float = 0.0) -> PathPlan:
    """Choose how to compute the statistic, from public parameters only; ValueError: a forced path that cannot run
    (no form for this kernel, or a histogram grid too large).  Every parameter and the ``auto`` rule:
    docs/umpc_analysis.md."""
    if choice not in PATH_CHOICES:
        raise ValueError(f"unknown path '{choice}'; choose one of: {', '.join(PATH_CHOICES)}")
    if not (math.isfinite(rtt) and rtt >= 0):
        raise ValueError(f"rtt must be a non-negative number of seconds, got {rtt}")
    costs = path_costs(kernel, specs, rows=rows, parties=parties, tuples=tuples, epsilon=epsilon, rtt=rtt,
                       noise=noise, histogram_seconds=histogram_seconds)
    for name, reason in (unavailable or {}).items():
        costs[name] = PathCost(costs[name].path, math.inf, math.inf, math.inf, costs[name].tuples, False, reason)
    if choice != "auto":
        cost = costs[choice]
        if not cost.available:
            raise ValueError(f"--path {choice} cannot compute '{kernel.name}' here: {cost.reason}")
        if not _histogram_fits(cost):
            sizes = " x ".join(str(size) for size in histogram_grid(kernel, specs))
            raise ValueError(f"--path histogram: the {sizes} grid is too large (modelled {cost.memory / 2 ** 30:.3g} "
                             f"GiB per party and {cost.seconds:.3g} s; limits {HISTOGRAM_MEMORY_LIMIT / 2 ** 30:g} GiB, "
                             f"{HISTOGRAM_SECONDS_LIMIT:g} s): declare the columns' recording resolution "
                             "(--domain C=LO:HI:BITS:STEP) or fewer fractional bits, or use --path sort/tuples")
        return PathPlan(choice, why or "forced", costs, tuples if choice == "tuples" else None)
    complete = [cost for name, cost in costs.items() if cost.available and name != "tuples"
                and _histogram_fits(cost)]
    best = min(complete, key=lambda cost: cost.seconds, default=None)
    sampled = costs["tuples"]
    if sample_if_cheaper:
        because = _complete_reason(best, sampled, accuracy)
        if best is not None and because is not None:
            return PathPlan(best.path, because, costs)
        return PathPlan("tuples", _sampled_reason(best, sampled, accuracy), costs, tuples)
    if best is not None and best.seconds <= sampled.seconds:
        return PathPlan(best.path, "the cheapest complete way, modelled", costs)
    return PathPlan("tuples", "all tuples evaluated: the cheapest complete way, modelled", costs, tuples)


def _complete_reason(best: PathCost | None, sampled: PathCost, accuracy: SampledAccuracy | None) -> str | None:
    """Why ``auto`` takes the complete path ``best`` over ``sampled`` tuples, or ``None`` if it does not."""
    if best is None:
        return None
    weighed = f" ({accuracy.describe()} for them)" if accuracy is not None else ""
    if best.seconds <= sampled.seconds:
        return (f"complete and exact, modelled {best.seconds:.3g} s <= {sampled.seconds:.3g} s for "
                f"|E| = {sampled.tuples} sampled tuples{weighed}")
    if best.seconds <= AUTO_CHEAP_SECONDS:
        return (f"complete and exact, modelled {best.seconds:.3g} s, under {AUTO_CHEAP_SECONDS:g} s: no sampling "
                f"error for {best.seconds - sampled.seconds:.3g} s more than |E| = {sampled.tuples} sampled "
                f"tuples{weighed}")
    if accuracy is not None and accuracy.sampling_dominates and best.seconds <= AUTO_ACCURACY_SECONDS:
        return (f"complete and exact, modelled {best.seconds:.3g} s (<= {AUTO_ACCURACY_SECONDS:g} s): |E| = "
                f"{sampled.tuples} sampled tuples ({sampled.seconds:.3g} s) would have a larger sampling error than "
                f"noise ({accuracy.describe()})")
    return None


def _sampled_reason(best: PathCost | None, sampled: PathCost, accuracy: SampledAccuracy | None) -> str:
    """Why ``auto`` samples: no complete path fits, or the complete one is slow and (or) the noise dominates."""
    if best is None:
        return f"|E| = {sampled.tuples} sampled tuples: no complete path can run here"
    head = f"|E| = {sampled.tuples} sampled tuples, modelled faster than a complete path"
    slow = f"{best.path} modelled {best.seconds:.3g} s > {AUTO_CHEAP_SECONDS:g} s"
    if accuracy is None:
        return f"{head} ({slow})"
    if accuracy.sampling_dominates:
        return (f"{head} ({slow}; {accuracy.describe()}, but {best.seconds:.3g} s > {AUTO_ACCURACY_SECONDS:g} s: "
                "--pairs all computes the complete statistic)")
    return f"{head} ({slow}; {accuracy.describe()}: the noise dominates)"


#: why a pure account (delta 0) cannot run a comparing path, and what to do (the end of its one line)
PURE_ACCOUNT_COMPARISONS = ("comparisons leak up to delta 2^-40 (MPyC's masks), which a pure account cannot pay: use "
                            "--path histogram, or give the account a delta with `python -m scenarios.budget raise "
                            "... --budget EPS:DELTA`")


def pure_account_path(kernel: Kernel, specs: Sequence[ColumnSpec], *, parties: int, choice: str,
                      sampled: str | None = None, clipping: str = "local") -> Path:
    """The path of a run that spends from a pure account (delta 0): the histogram path, the only one that opens no
    comparison; ValueError (one line) if what was asked compares, or no histogram path exists here."""
    if choice in ("sort", "tuples"):
        raise ValueError(f"--path {choice} compares secret values and this party's account is pure: "
                         f"{PURE_ACCOUNT_COMPARISONS}")
    if clipping == "secure":
        raise ValueError(f"--clip secure compares secret values and this party's account is pure: "
                         f"{PURE_ACCOUNT_COMPARISONS.replace('use --path histogram', 'use --clip local with --path histogram')}")
    if sampled is not None:
        raise ValueError(f"{sampled} runs on sampled tuples, which compare secret values, and this party's account "
                         f"is pure: {PURE_ACCOUNT_COMPARISONS.replace('use --path histogram', 'use --pairs all with --path histogram')}")
    if choice == "histogram":
        return "histogram"  # whether it can run here: plan_path's own check, as for any account
    cost = _histogram_cost(kernel, specs, parties, kernel.degree)
    if not cost.available or not _histogram_fits(cost):
        why = cost.reason or (f"the {' x '.join(str(size) for size in histogram_grid(kernel, specs))} grid is too large "
                              f"for it")
        raise ValueError(f"this party's account is pure and only comparing paths can compute '{kernel.name}' here "
                         f"(no histogram path: {why}); comparisons leak up to delta 2^-40 (MPyC's masks), which a "
                         f"pure account cannot pay: declare a coarser grid (--domain C=LO:HI:BITS:STEP), or give the "
                         f"account a delta with `python -m scenarios.budget raise ... --budget EPS:DELTA`")
    return "histogram"


def _histogram_fits(cost: PathCost) -> bool:
    return cost.path != "histogram" or (cost.memory <= HISTOGRAM_MEMORY_LIMIT and cost.seconds <= HISTOGRAM_SECONDS_LIMIT)
