"""Audit cases for every local and label-DP randomizer of the suite, with negative controls.

Threat model: local DP (one user's report against an untrusted aggregator colluding with every other
user) or label DP (one label against the other).  Cases, controls and sample sizes: docs/audit.md."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dp.baselines import ghazi
from dp.bell import generic as ldp_generic
from dp.bell import hadamard, hierarchical, quantize
from dp.fedauc import mechanisms as fedauc
from dp.audit.engine import AuditCase, paired
from dp.audit.planning import CONTROL_MARGIN, MECHANISM_RESOLUTION, resolving_samples
from dp.validation import check_epsilon, check_int_at_least, check_int_range, check_integer, check_positive

__all__ = ["LocalAuditCase", "local_cases", "krr_case", "hadamard_case", "hierarchy_users_case",
           "hierarchy_budget_case", "ghazi_case", "label_rr_case", "control_krr_binary_denominator",
           "control_label_rr_double_epsilon"]

#: Decimals kept of a continuous privacy-loss statistic (merges floating-point variants of a value).
LOSS_DECIMALS = 9

Exact = tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]


@dataclass(frozen=True)
class LocalAuditCase(AuditCase):
    """An :class:`dp.audit.engine.AuditCase` with what is known exactly about its pair: ``true_epsilon`` (``None`` if
    not in closed form), ``best_event`` ``(p, q)`` under ``D`` and ``D'`` (``p >= q``) and ``exact_outputs`` ``(values,
    pmf on D, pmf on D')`` of a discrete output (or ``None``); its ``samples`` are power-derived (docs/audit.md)."""

    true_epsilon: float | None = None
    best_event: tuple[float, float] | None = None
    exact_outputs: Exact | None = None


def _exact(values: np.ndarray, first: np.ndarray, second: np.ndarray) -> tuple[Exact, float, tuple[float, float]]:
    """Exact pmfs of a discrete output: the loss ``max |ln(P/P')|`` and the best singleton's ``(p, q)``.
    Details: docs/audit.md."""
    best: tuple[float, float, float] = (-math.inf, 0.0, 1.0)
    for top, bottom in ((first, second), (second, first)):
        for p, q in zip(top, bottom):
            if p <= 0.0 and q <= 0.0:
                continue
            ratio = math.inf if q <= 0.0 else (math.log(p / q) if p > 0.0 else -math.inf)
            if (ratio, p) > (best[0], best[1]):
                best = (ratio, float(p), float(q))
    exact = (tuple(float(v) for v in values), tuple(float(v) for v in first), tuple(float(v) for v in second))
    return exact, best[0], (best[1], best[2])


Report = Callable[[Any, int, np.random.Generator], np.ndarray]


def _case(found: tuple[Exact | None, float, tuple[float, float]], report: Report, pair: tuple[Any, Any], *,
          control: bool = False, neighbours: str | None = None, **fields: Any) -> LocalAuditCase:
    """The case of ``found = (exact outputs, exact loss, best event)`` sampling ``report`` on the datasets of ``pair``
    (``neighbours`` by default one user's value ``pair[0]`` vs ``pair[1]``): pure DP, its power-derived samples."""
    exact, loss, event = found
    # a control's bound clears its claim by CONTROL_MARGIN sds; a mechanism's exceeds 0.9 of its true loss
    samples = (resolving_samples(*event, target=fields["epsilon"], margin=CONTROL_MARGIN) if control
               else resolving_samples(*event, target=(1.0 - MECHANISM_RESOLUTION) * loss))
    return LocalAuditCase(delta=0.0, control=control, samples=samples, true_epsilon=loss, best_event=event,
                          exact_outputs=exact, sample=paired(report, *pair),
                          neighbours=neighbours or f"one user's value {pair[0]} vs {pair[1]}", **fields)


def krr_case(*, bins: int = 4, epsilon: float = 1.0) -> LocalAuditCase:
    """Bell et al.'s user side (randomized rounding on ``[0, 1]``, then k-RR on ``k >= 2`` ``bins``) on ``x = 0`` vs
    ``x' = 1``, ``epsilon`` claimed per report.  :raise ValueError: on invalid parameters."""
    eps = check_epsilon(epsilon)
    k = check_int_at_least(bins, "bins", 2)
    quantizer = quantize.Quantizer.interval(lower=0.0, upper=1.0, bins=k, rounding="randomized")
    channel = ldp_generic.rr_channel(bins=k, epsilon=eps)

    def report(value: float, count: int, rng: np.random.Generator) -> np.ndarray:
        return ldp_generic.randomize(quantizer.quantize(np.full(count, value), rng=rng), bins=k, epsilon=eps, rng=rng)

    return _case(
        _exact(np.arange(k), channel[0], channel[k - 1]), report, (0.0, 1.0),
        name="ldp-krr-quantized", epsilon=eps,
        mechanism=(f"Bell et al. Algorithm 1 user side: randomized rounding of [0, 1] to {k} bins, then k-RR "
                   f"with beta = k/(k + e^eps - 1) (dp.bell.quantize.Quantizer.quantize + randomize)"),
        statistic="the reported bin",
        neighbours=f"one user's value 0 (bin 0) vs 1 (bin {k - 1})")


def _encode_report(reports: hadamard.HadamardReports) -> np.ndarray:
    return 2 * np.asarray(reports.rows, dtype=np.int64) + (np.asarray(reports.signs) > 0)


def hadamard_case(*, bits: int = 2, epsilon: float = 1.0) -> LocalAuditCase:
    """Hadamard response (Bell et al. Algorithm 2) on ``x = 0`` vs ``x' = 2^bits - 1``, ``1 <= bits <= 8``, ``epsilon``
    claimed per report (docs/audit.md).  :raise ValueError: on invalid parameters."""
    eps = check_epsilon(epsilon)
    width = check_int_range(bits, "bits", low=1, high=8)
    pair = (0, (1 << width) - 1)
    tables = [hadamard.hadamard_output_probabilities(v, bits=width, epsilon=eps).ravel() for v in pair]

    def report(value: int, count: int, rng: np.random.Generator) -> np.ndarray:
        values = np.full(count, value, dtype=np.int64)
        return _encode_report(hadamard.hadamard_randomize(values, bits=width, epsilon=eps, rng=rng))

    return _case(
        _exact(np.arange(tables[0].size), tables[0], tables[1]), report, pair,
        name="ldp-hadamard", epsilon=eps,
        mechanism=(f"Bell et al. App. B Algorithm 2: Hadamard response on a domain of 2^{width} values, flip "
                   f"probability 1/(1 + e^eps) rounded up to 2^-53 (dp.bell.hadamard.hadamard_randomize)"),
        statistic="the report (row j, bit z) encoded as 2 j + [z = +1]")


def _hierarchy(domain_size: int, largest: int, shown: str, epsilon: float, split: str) -> tuple[int, int, float]:
    """``(d, levels, level epsilon)`` of a hierarchy case: ``d`` a power of two in ``[4, largest]``."""
    size = check_integer(domain_size, "domain_size")
    if size < 4 or size > largest or size & (size - 1):
        raise ValueError(f"domain_size must be a power of two in [4, {shown}], got {domain_size}")
    levels = size.bit_length() - 1
    return size, levels, hierarchical.level_epsilon(epsilon, levels=levels, split=split)


def hierarchy_users_case(*, domain_size: int = 8, epsilon: float = 1.0) -> LocalAuditCase:
    """Hierarchical histogram, users split across levels (App. B.2.2 (i); docs/audit.md): ``domain_size`` a power of
    two in ``[4, 128]``, ``epsilon`` the user's budget.  :raise ValueError: on invalid parameters."""
    eps = check_epsilon(epsilon)
    size, levels, eps0 = _hierarchy(domain_size, 128, "128", eps, "users")
    pair = (0, size - 1)
    pmfs = [np.concatenate([hadamard.hadamard_output_probabilities(value >> (levels - level), bits=level,
                                                                  epsilon=eps0).ravel() / levels
                            for level in range(1, levels + 1)]) for value in pair]

    def report(value: int, count: int, rng: np.random.Generator) -> np.ndarray:
        hierarchy = hierarchical.randomize_hierarchy(np.full(levels * count, value, dtype=np.int64),
                                                     domain_size=size, epsilon=eps, split="users", rng=rng)
        codes = np.stack([(1 << (level + 1)) - 4 + _encode_report(hierarchy.reports[level - 1])[:count]
                          for level in range(1, levels + 1)])  # (levels, count): count reports per level
        chosen = rng.integers(0, levels, size=count)  # one user's level: uniform, independent of the data
        return codes[chosen, np.arange(count)]

    return _case(
        _exact(np.arange(pmfs[0].size), pmfs[0], pmfs[1]), report, pair,
        name="ldp-hierarchy-users", epsilon=eps,
        mechanism=(f"Bell et al. App. B.2.2 (i): hierarchical Hadamard histogram on d = {size}, users split "
                   f"across the {levels} levels, one report each at the full epsilon "
                   f"(dp.bell.hierarchical.randomize_hierarchy, split='users')"),
        statistic="one user's whole report (level l, row j, bit z) encoded as 2^(l+1) - 4 + 2 j + [z = +1]",
        neighbours=f"one user's score {pair[0]} vs {pair[1]} (different nodes at every level)")


def _vote(rows: np.ndarray, signs: npt.ArrayLike, values: tuple[int, int], shift: int) -> np.ndarray:
    """A report's vote at one level for ``values[0]`` over ``values[1]`` (their nodes ``value >> shift``): ``+1`` if
    row ``j`` separates them and the bit agrees with the first, ``-1`` if it separates them otherwise, else 0."""
    first = hadamard.hadamard_entry(rows, values[0] >> shift).astype(np.int64)
    second = hadamard.hadamard_entry(rows, values[1] >> shift).astype(np.int64)
    return np.where(first != second, np.where(np.asarray(signs, dtype=np.int64) == first, 1, -1), 0)


def hierarchy_budget_case(*, domain_size: int = 8, epsilon: float = 1.5) -> LocalAuditCase:
    """Hierarchical histogram, budget split (App. B.2.2 (ii), ``delta = 0``; docs/audit.md): ``domain_size`` a power of
    two in ``[4, 2^20]``, ``epsilon`` the user's total.  :raise ValueError: on invalid parameters."""
    eps = check_epsilon(epsilon)
    size, levels, eps0 = _hierarchy(domain_size, 1 << 20, "2^20", eps, "budget")
    pair = (0, size - 1)
    # exact law of the vote: per level from the module's exact output table, convolved over levels
    pmfs = []
    for value in pair:
        pmf = np.ones(1)
        for level in range(1, levels + 1):
            table = hadamard.hadamard_output_probabilities(value >> (levels - level), bits=level, epsilon=eps0)
            rows = np.arange(1 << level, dtype=np.int64)
            vote = np.zeros(3)  # P(vote = -1, 0, +1)
            for column, sign in ((0, -1), (1, 1)):
                np.add.at(vote, _vote(rows, sign, pair, levels - level) + 1, table[:, column])
            pmf = np.convolve(pmf, vote)
        pmfs.append(pmf)
    found = _exact(np.arange(-levels, levels + 1), pmfs[0], pmfs[1])
    composed = hierarchical.composed_epsilon(eps0, levels=levels)

    def report(value: int, count: int, rng: np.random.Generator) -> np.ndarray:
        hierarchy = hierarchical.randomize_hierarchy(np.full(count, value, dtype=np.int64), domain_size=size,
                                                     epsilon=eps, split="budget", rng=rng)
        votes = np.zeros(hierarchy.users, dtype=np.int64)
        for level, reports in enumerate(hierarchy.reports, start=1):
            votes += _vote(np.asarray(reports.rows, dtype=np.int64), reports.signs, pair, levels - level)
        return votes

    return _case(
        found, report, pair,
        name="ldp-hierarchy-budget", epsilon=eps,
        mechanism=(f"Bell et al. App. B.2.2 (ii): hierarchical Hadamard histogram on d = {size}, every user "
                   f"reports at all {levels} levels with eps/{levels} each, basic composition to "
                   f"{composed:g} (dp.bell.hierarchical.randomize_hierarchy, split='budget', delta=0)"),
        statistic=("net vote over the levels for x against x' (rows that separate them: +1 if the bit agrees "
                   "with x, -1 otherwise): the privacy-loss statistic of the report vector, up to a factor"),
        neighbours=f"one user's score {pair[0]} vs {pair[1]} (different nodes at every level)")


def _pair_loss(factorization: ghazi.Factorization, scales: tuple[float, float], x: int, y: int) -> tuple[float, int]:
    """Exact loss of the pair ``(x, y)`` and the number of coordinates that change."""
    loss, changed = 0.0, 0
    for matrix, scale in ((factorization.left, scales[0]), (factorization.right, scales[1])):
        delta = np.abs(matrix[:, x] - matrix[:, y])
        loss += float(delta.sum()) / scale
        changed += int(np.count_nonzero(delta > 1e-12 * max(1.0, float(np.abs(matrix).max()))))
    return loss, changed


def _privacy_loss(reports: tuple[np.ndarray, np.ndarray], factorization: ghazi.Factorization,
                  scales: tuple[float, float], pair: tuple[int, int]) -> np.ndarray:
    total = np.zeros(reports[0].shape[0])
    for observed, matrix, scale in zip(reports, (factorization.left, factorization.right), scales):
        mine, theirs = matrix[:, pair[0]], matrix[:, pair[1]]
        total += (np.abs(observed - theirs).sum(axis=1) - np.abs(observed - mine).sum(axis=1)) / scale
    return np.round(total, LOSS_DECIMALS)


def ghazi_case(*, bins: int = 2, epsilon: float = 1.0) -> LocalAuditCase:
    """Ghazi et al.'s randomizer as simulated in :mod:`dp.baselines.ghazi` on ``2 <= bins <= 16`` bins of ``[0, 1]``,
    on the bin pair of largest exact loss (docs/audit.md).  :raise ValueError: on invalid parameters."""
    eps = check_epsilon(epsilon)
    t = check_int_range(bins, "bins", low=2, high=16)
    quantizer = quantize.Quantizer.interval(lower=0.0, upper=1.0, bins=t)
    factorization = ghazi.factorize(quantize.kernel_matrix(quantize.gini_kernel, quantizer, kind="midpoint"))
    scales = ghazi.laplace_scales(factorization, epsilon=eps)
    candidates = [(*_pair_loss(factorization, scales, x, y), (x, y)) for x in range(t) for y in range(x + 1, t)]
    loss, changed, pair = max(candidates, key=lambda c: (round(c[0], 12), -c[1]))
    p = 2.0 ** -changed

    def report(value: int, count: int, rng: np.random.Generator) -> np.ndarray:
        reports = ghazi.randomize(np.full(count, value, dtype=np.int64), factorization, epsilon=eps, rng=rng)
        return _privacy_loss(reports, factorization, ghazi.laplace_scales(factorization, epsilon=eps), pair)

    return _case(
        (None, loss, (p, p * math.exp(-loss))), report, pair,
        name="ldp-ghazi-laplace", epsilon=eps,
        mechanism=(f"Ghazi et al. (as simulated in dp.baselines.ghazi): Gini kernel on {t} bins, balanced SVD factorization "
                   f"(d = {factorization.d}), floating-point Laplace with eps/2 per vector (by design: a simulated "
                   f"baseline, never a release; floating-point leaks are outside this audit)"),
        statistic=(f"privacy loss of the report pair (o^L, o^R) for bins {pair}, "
                   f"sum_c (|o_c - mu'_c| - |o_c - mu_c|)/b, rounded to {LOSS_DECIMALS} decimals"),
        neighbours=f"one party's bin {pair[0]} vs {pair[1]} (the pair with the largest loss)")


def _label_rr(found_epsilon: float, **fields: Any) -> LocalAuditCase:
    """FedAUC's label RR with the flip probability of ``found_epsilon`` on one label, 0 vs 1 (``fields``: the rest)."""
    flip = fedauc.flip_probability(found_epsilon)

    def report(label: int, count: int, rng: np.random.Generator) -> np.ndarray:
        return fedauc.randomized_response(np.full(count, label, dtype=np.int64), found_epsilon, rng=rng)

    return _case(_exact(np.arange(2), np.array([1.0 - flip, flip]), np.array([flip, 1.0 - flip])), report, (0, 1),
                 statistic="the released (flipped) label", neighbours="one sample's label 0 vs 1", **fields)


def label_rr_case(*, epsilon: float = 1.0) -> LocalAuditCase:
    """FedAUC_RR (Sun et al. Algorithm 1): one label, 0 vs 1, ``epsilon`` claimed per label.
    :raise ValueError: if epsilon is not finite and positive."""
    eps = check_epsilon(epsilon)
    return _label_rr(eps, name="label-rr", epsilon=eps,
                     mechanism=("Sun et al. FedAUC_RR (Algorithm 1, eq. 2): label flipped with probability 1/(1 + e^eps) "
                                "rounded up to 2^-53 (dp.fedauc.mechanisms.randomized_response)"))


def control_krr_binary_denominator(*, bins: int = 4, epsilon: float = 1.0) -> LocalAuditCase:
    """Negative control: k-RR with ``e^eps/(e^eps + 1)`` as keep probability on ``bins`` ``k >= 3`` (docs/audit.md).
    :raise ValueError: on invalid parameters."""
    eps = check_epsilon(epsilon)
    k = check_integer(bins, "bins")
    if k < 3:
        raise ValueError(f"bins must be at least 3 (the binary formula is right for 2), got {bins}")
    keep = 1.0 / (1.0 + math.exp(-eps))  # = e^eps/(e^eps + 1): right for k = 2 only

    def report(value: int, count: int, rng: np.random.Generator) -> np.ndarray:  # BROKEN on purpose
        stay = rng.random(count) < keep
        other = (value + rng.integers(1, k, size=count)) % k  # uniform over the other k - 1 values
        return np.where(stay, value, other)

    rows = [np.where(np.arange(k) == v, keep, (1.0 - keep) / (k - 1)) for v in (0, k - 1)]
    found = _exact(np.arange(k), rows[0], rows[1])
    # loss = ln(keep / ((1 - keep)/(k - 1))) = eps + ln(k - 1) exactly (k-RR at eps + ln(k - 1))
    return _case(
        found, report, (0, k - 1),
        name="control-krr-binary-denominator", epsilon=eps,
        mechanism=(f"BROKEN k-RR ({k} values): keeps the true value with e^eps/(e^eps + 1), the binary formula, "
                   f"instead of e^eps/(e^eps + k - 1); true epsilon eps + ln(k - 1) = {eps + math.log(k - 1):.4f}"),
        statistic="the reported value",
        control=True)


def control_label_rr_double_epsilon(*, epsilon: float = 0.5) -> LocalAuditCase:
    """Negative control: FedAUC's label RR with the flip probability computed for ``2 eps`` (``epsilon``: the wrongly
    claimed one).  :raise ValueError: if epsilon is not finite and positive."""
    eps = check_epsilon(epsilon)
    doubled = check_positive(2.0 * eps, "2 epsilon")
    flip = fedauc.flip_probability(doubled)
    return _label_rr(doubled, name="control-label-rr-2eps", epsilon=eps, control=True,
                     mechanism=(f"BROKEN FedAUC_RR: flip probability computed for 2 eps = {doubled:g} "
                                f"(dp.fedauc.mechanisms.randomized_response(labels, 2 eps)); true epsilon "
                                f"{math.log((1.0 - flip) / flip):.6f}"))


def local_cases() -> list[AuditCase]:
    """Every local / label-DP randomizer of the suite on a worst-case pair, then the negative controls."""
    return [make() for make in (krr_case, hadamard_case, hierarchy_users_case, hierarchy_budget_case, ghazi_case,
                                label_rr_case, control_krr_binary_denominator, control_label_rr_double_epsilon)]
