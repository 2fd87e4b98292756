r"""Audit cases for every local and label-DP randomizer of the suite, with negative controls.

Each case runs the suite's *own* randomizer (with the generator :func:`dp.audit.engine.audit` passes) on a
worst-case pair of neighbouring inputs and returns one scalar per report, so that
:func:`dp.audit.engine.audit` can bound the privacy loss from below (Clopper-Pearson hockey-stick test,
Ding et al. 2018; Kong et al. 2024).  :func:`local_cases` lists them; ``python -m scenarios.drills.audit``
runs them with the central cases.

Neighbouring relation and threat model
--------------------------------------
Local DP (Bell et al.; Ghazi et al.): one user's value ``x`` against ``x'``; the output is that
single user's report, seen by an untrusted aggregator who may collude with every other user.  The
randomness is the user's own (a seeded :class:`numpy.random.Generator` here).  Label DP (Sun et
al., FedAUC): one sample's label 0 against 1; scores, ranks and client layouts are public; the
output is what the label holder releases (for randomized response, the flipped label).  A
structured report is reduced to one scalar by a fixed, injective encoding (so singleton events
apply), or by the *privacy-loss statistic* ``log P(o | x) / P(o | x')`` of the fixed pair, which is
sufficient for the pair (the likelihood ratio keeps every hockey-stick divergence: auditing it
loses nothing).  Any fixed function of the report is post-processing, so a violation found on it
is a violation of the randomizer.

Cases (paper and worst-case pair)
---------------------------------
- ``ldp-krr-quantized``: Bell, Bellet, Gascón & Kulkarni (2019/2020), Algorithm 1 and App. A.1 —
  :meth:`dp.bell.quantize.Quantizer.quantize` (randomized rounding) then
  :func:`dp.bell.generic.randomize` (k-RR, ``beta = k/(k + e^eps - 1)``).  ``x = 0`` and ``x' = 1``,
  the two ends of ``[0, 1]``, are representatives, so they round to bins ``0`` and ``k - 1``
  deterministically; any two distinct bins are worst case for k-RR and the singleton
  ``{report = 0}`` (a threshold event too) has log-ratio exactly epsilon.  Rounding is
  pre-processing: each row of the composed channel is a mixture of k-RR rows, so deterministic
  bins are the worst case.  The exact output pmfs come from :func:`dp.bell.generic.rr_channel`.
- ``ldp-hadamard``: Bell et al. App. B, Algorithm 2 — :func:`dp.bell.hadamard.hadamard_randomize`, a
  report ``(row j, bit z)`` encoded as ``2 j + [z = +1]``; ``x = 0``, ``x' = 2^bits - 1`` (any two
  distinct values differ on half of the rows; the singleton ``(j, H[j, x])`` on such a row has
  log-ratio ``ln((1 - rho)/rho) <= eps``).  Exact pmfs from
  :func:`dp.bell.hadamard.hadamard_output_probabilities`.
- ``ldp-hierarchy-users``: App. B.2.2 (i), :func:`dp.bell.hierarchical.randomize_hierarchy` with
  ``split="users"``: each user reports at *one* level, drawn independently of the data, with the
  full epsilon (:func:`dp.bell.hierarchical.level_epsilon`).  The audited output is the user's whole report
  ``(level l, j, z)``, encoded as ``2^(l+1) - 4 + 2 j + [z = +1]``; its law is the mixture
  ``P(l) P(j, z | l, x)`` with a data-independent ``P(l) = 1/levels``, so its loss is the largest
  per-level loss, epsilon.  ``x = 0`` and ``x' = d - 1`` differ at every level.  Sampling: the
  suite's function is run on ``levels * count`` copies of ``x``, which puts exactly ``count``
  independent reports at every level; report ``i`` of the audit takes level ``l_i`` (uniform, from
  the audit's generator) and that level's ``i``-th report — the law of one user's report.
- ``ldp-hierarchy-budget``: App. B.2.2 (ii), ``split="budget"`` with ``delta = 0``: every user
  reports at every level with ``eps_0 = eps / levels``; basic composition
  (:func:`dp.bell.hierarchical.composed_epsilon`) gives ``levels * eps_0 = eps`` for the report vector.  The
  statistic is the net vote ``sum_l s_l`` with ``s_l = 0`` when ``H[j_l, x_l] = H[j_l, x'_l]``
  (the row does not separate the pair), ``+1`` when ``z_l = H[j_l, x_l]`` and ``-1`` otherwise:
  the privacy-loss statistic divided by ``ln((1 - rho_0)/rho_0)``, so the audit sees the whole
  composed vector.  ``{vote = levels}`` has log-ratio ``levels ln((1 - rho_0)/rho_0) <= eps``.
  The ``(eps, delta)`` advanced-composition budget (``delta > 0``) is not a separate case: it is a
  weaker claim, and for the few levels an audit can afford :func:`dp.bell.hierarchical.level_epsilon` falls
  back to basic composition anyway.
- ``ldp-ghazi-laplace``: Ghazi, Kamath, Kumar, Manurangsi & Sealfon (NeurIPS 2023), as simulated
  in :mod:`dp.baselines.ghazi` — :func:`dp.baselines.ghazi.factorize` of the Gini matrix on 2 bins,
  :func:`dp.baselines.ghazi.laplace_scales` and :func:`dp.baselines.ghazi.randomize`.  The report is the pair of noisy
  vectors ``(L e_x + z^L, R e_x + z^R)``; the statistic is its privacy loss
  ``sum_c (|o_c - mu'_c| - |o_c - mu_c|) / b_c`` for the pair (rounded to 9 decimals, which
  merges floating-point variants of the same value), whose maximum is attained with probability
  ``2^-m`` under ``x`` (every coordinate with a non-zero change lies on ``x``'s side of both
  centres) and ``2^-m e^-eps_pair`` under ``x'``.  The pair maximises ``eps_pair`` over all bin
  pairs (it equals epsilon for this symmetric kernel).  **The noise is floating-point Laplace by
  design** (the module is a simulated MSE baseline, never a release): the audit treats it as the
  ideal continuous mechanism and cannot see floating-point leaks (Mironov 2012).
- ``label-rr``: Sun et al., FedAUC_RR (§4, Algorithm 1, eq. 2) — :func:`dp.fedauc.mechanisms.randomized_response`
  on one label, 0 against 1; the flip probability :func:`dp.fedauc.mechanisms.flip_probability` is
  ``1/(1 + e^eps)`` rounded up to the ``2^-53`` grid, so the exact loss is at most epsilon.
- FedAUC_Lap and its Gaussian form (Sun et al. §5) are central mechanisms on the clients'
  integer reports; they are audited in :mod:`dp.audit.central_cases` (``fedauc-*``).

Post-processing, not audited separately: the server side of every protocol — the histogram and
the ``A^Mid``/``A^Avg`` (eq. 14/15) or midpoint estimators of :mod:`dp.bell.generic`
(:func:`~dp.bell.generic.estimate_from_histogram`, :func:`~dp.bell.generic.simulate`, the Rényi-2
entropy), the frequency oracle and the pruned traversal of :mod:`dp.bell.auc`
(:class:`~dp.bell.hadamard.FrequencyOracle`, :func:`~dp.bell.auc.hierarchical_auc`), the estimators of
:mod:`dp.baselines.ghazi` and the debiasing of :mod:`dp.fedauc.mechanisms` — only read the reports, so their privacy is
the randomizers'.

Left out: the discrete-Gaussian FedAUC forms (``*_gaussian``: an ``(eps, delta)`` claim through a
zCDP conversion, whose exact Python-loop sampler makes a resolving audit too slow for CI), and
``counts="exact"``, which is not label-DP by construction.

Negative controls (``control=True``, must fail)
-----------------------------------------------
- ``control-krr-binary-denominator``: k-RR keeping the true value with the *binary* formula
  ``e^eps/(e^eps + 1)`` and spreading the rest over the other ``k - 1`` values — the realistic bug
  of reusing the ``k = 2`` denominator.  Its exact loss is
  ``ln[(e^eps/(e^eps + 1)) / (1/((e^eps + 1)(k - 1)))] = eps + ln(k - 1)`` (it is k-RR at
  ``eps + ln(k - 1)``), ``1 + ln 3 = 2.0986`` for ``k = 4``, ``eps = 1``.
- ``control-label-rr-2eps``: FedAUC's randomized response whose flip probability is computed for
  ``2 eps`` (:func:`dp.fedauc.mechanisms.randomized_response` called with ``2 eps``), claimed at ``eps``: exact
  loss ``ln((1 - rho_hat)/rho_hat)`` with ``rho_hat = flip_probability(2 eps)``, i.e. ``2 eps`` up to
  the ``2^-52`` grid rounding (below ``2 eps``).

Sample sizes (power argument)
-----------------------------
Each case carries the probabilities ``(p, q)`` of its best event under ``D`` and ``D'`` (when known
in closed form) and the exact loss of its pair; its recommended sample size comes from
:mod:`dp.audit.planning` (:func:`~dp.audit.planning.control_samples`: the bound clears the claim by
4 standard deviations; :func:`~dp.audit.planning.mechanism_samples`: the bound resolves the true
loss to 10 %).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from dp.baselines import ghazi
from dp.bell import generic as ldp_generic
from dp.bell import hadamard, hierarchical, quantize
from dp.fedauc import mechanisms as fedauc
from dp.audit.engine import AuditCase
from dp.audit.planning import control_samples, mechanism_samples
from dp.validation import check_epsilon, check_integer, check_positive

__all__ = [
    "LocalAuditCase",
    "local_cases",
    "krr_case",
    "hadamard_case",
    "hierarchy_users_case",
    "hierarchy_budget_case",
    "ghazi_case",
    "label_rr_case",
    "control_krr_binary_denominator",
    "control_label_rr_double_epsilon",
]

#: Decimals kept of a continuous privacy-loss statistic (merges floating-point variants of a value).
LOSS_DECIMALS = 9

Exact = tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]


@dataclass(frozen=True)
class LocalAuditCase(AuditCase):
    """An :class:`dp.audit.engine.AuditCase` with what is known exactly about its pair.

    Its ``samples`` (recommended samples per dataset) is power-derived (module docstring).

    :param true_epsilon: the exact privacy loss of the audited pair (``None`` if not in closed form).
    :param best_event: ``(p, q)``, the probabilities of the best event under ``D`` and ``D'``
        (``p >= q``), or ``None``.
    :param exact_outputs: ``(values, pmf on D, pmf on D')`` of a discrete output, or ``None``.
    """

    true_epsilon: float | None = None
    best_event: tuple[float, float] | None = None
    exact_outputs: Exact | None = None


def _exact(values: np.ndarray, first: np.ndarray, second: np.ndarray) -> tuple[Exact, float, tuple[float, float]]:
    """Exact pmfs of a discrete output: the loss ``max |ln(P/P')|`` and the best singleton's ``(p, q)``.

    The best singleton is the one with the largest log-ratio (either direction), ties broken by the
    larger ``p``.  Cells where both probabilities are zero are skipped; a cell with only one zero
    would make the loss infinite (pure DP fails), which is reported as ``inf``.
    """
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


# --------------------------------------------------------------------------------------------------
# Bell et al.: k-RR on quantized values (dp.bell.generic)

def _sample_krr(count: int, rng: np.random.Generator, *, quantizer: quantize.Quantizer, values: tuple[float, float],
                epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    outputs = []
    for value in values:
        bins = quantizer.quantize(np.full(count, value), rng=rng)
        outputs.append(ldp_generic.randomize(bins, bins=quantizer.bins, epsilon=epsilon, rng=rng))
    return outputs[0], outputs[1]


def krr_case(*, bins: int = 4, epsilon: float = 1.0) -> LocalAuditCase:
    """Bell et al.'s user side (randomized rounding on ``[0, 1]``, then k-RR) on ``x = 0`` vs ``x' = 1``.

    :param bins: ``k >= 2`` bins.
    :param epsilon: the claimed epsilon per report.
    :raise ValueError: on invalid parameters.
    """
    eps = check_epsilon(epsilon)
    k = check_integer(bins, "bins")
    if k < 2:
        raise ValueError(f"bins must be at least 2, got {bins}")
    quantizer = quantize.Quantizer.interval(lower=0.0, upper=1.0, bins=k, rounding="randomized")
    channel = ldp_generic.rr_channel(bins=k, epsilon=eps)
    exact, loss, event = _exact(np.arange(k), channel[0], channel[k - 1])
    return LocalAuditCase(
        name="ldp-krr-quantized",
        mechanism=(f"Bell et al. Algorithm 1 user side: randomized rounding of [0, 1] to {k} bins, then k-RR "
                   f"with beta = k/(k + e^eps - 1) (dp.bell.quantize.Quantizer.quantize + randomize)"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_krr, quantizer=quantizer, values=(0.0, 1.0), epsilon=eps),
        statistic="the reported bin",
        neighbours=f"one user's value 0 (bin 0) vs 1 (bin {k - 1})",
        samples=mechanism_samples(*event, loss), true_epsilon=loss, best_event=event, exact_outputs=exact)


# --------------------------------------------------------------------------------------------------
# Bell et al.: Hadamard response and hierarchical histograms (dp.bell.hadamard, dp.bell.hierarchical)

def _encode_report(reports: hadamard.HadamardReports) -> np.ndarray:
    return 2 * np.asarray(reports.rows, dtype=np.int64) + (np.asarray(reports.signs) > 0)


def _sample_hadamard(count: int, rng: np.random.Generator, *, bits: int, values: tuple[int, int],
                     epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    first, second = (_encode_report(hadamard.hadamard_randomize(np.full(count, v, dtype=np.int64), bits=bits,
                                                                epsilon=epsilon, rng=rng)) for v in values)
    return first, second


def hadamard_case(*, bits: int = 2, epsilon: float = 1.0) -> LocalAuditCase:
    """Hadamard response (Bell et al. Algorithm 2) on ``x = 0`` vs ``x' = 2^bits - 1``.

    :param bits: the domain has ``2^bits`` values, ``1 <= bits <= 8`` (at most 512 outputs).
    :param epsilon: the claimed epsilon per report.
    :raise ValueError: on invalid parameters.
    """
    eps = check_epsilon(epsilon)
    width = check_integer(bits, "bits")
    if not 1 <= width <= 8:
        raise ValueError(f"bits must lie in [1, 8], got {bits}")
    pair = (0, (1 << width) - 1)
    tables = [hadamard.hadamard_output_probabilities(v, bits=width, epsilon=eps).ravel() for v in pair]
    exact, loss, event = _exact(np.arange(tables[0].size), tables[0], tables[1])
    return LocalAuditCase(
        name="ldp-hadamard",
        mechanism=(f"Bell et al. App. B Algorithm 2: Hadamard response on a domain of 2^{width} values, flip "
                   f"probability 1/(1 + e^eps) rounded up to 2^-53 (dp.bell.hadamard.hadamard_randomize)"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_hadamard, bits=width, values=pair, epsilon=eps),
        statistic="the report (row j, bit z) encoded as 2 j + [z = +1]",
        neighbours=f"one user's value {pair[0]} vs {pair[1]}",
        samples=mechanism_samples(*event, loss), true_epsilon=loss, best_event=event, exact_outputs=exact)


def _sample_hierarchy_users(count: int, rng: np.random.Generator, *, domain_size: int, values: tuple[int, int],
                            epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    levels = domain_size.bit_length() - 1
    outputs = []
    for value in values:
        hierarchy = hierarchical.randomize_hierarchy(np.full(levels * count, value, dtype=np.int64),
                                                domain_size=domain_size, epsilon=epsilon, split="users", rng=rng)
        codes = np.stack([(1 << (level + 1)) - 4 + _encode_report(hierarchy.reports[level - 1])[:count]
                          for level in range(1, levels + 1)])  # (levels, count): count reports per level
        chosen = rng.integers(0, levels, size=count)  # one user's level: uniform, independent of the data
        outputs.append(codes[chosen, np.arange(count)])
    return outputs[0], outputs[1]


def hierarchy_users_case(*, domain_size: int = 8, epsilon: float = 1.0) -> LocalAuditCase:
    """Hierarchical histogram, users split across levels (App. B.2.2 (i)): one user's ``(level, j, z)``.

    :param domain_size: ``d``, a power of two in ``[4, 128]``.
    :param epsilon: the user's budget (each user reports once, with all of it).
    :raise ValueError: on invalid parameters.
    """
    eps = check_epsilon(epsilon)
    size = check_integer(domain_size, "domain_size")
    if size < 4 or size > 128 or size & (size - 1):
        raise ValueError(f"domain_size must be a power of two in [4, 128], got {domain_size}")
    levels = size.bit_length() - 1
    eps0 = hierarchical.level_epsilon(eps, levels=levels, split="users")
    pair = (0, size - 1)
    pmfs = []
    for value in pair:
        pmfs.append(np.concatenate([hadamard.hadamard_output_probabilities(value >> (levels - level), bits=level,
                                                                          epsilon=eps0).ravel() / levels
                                    for level in range(1, levels + 1)]))
    exact, loss, event = _exact(np.arange(pmfs[0].size), pmfs[0], pmfs[1])
    return LocalAuditCase(
        name="ldp-hierarchy-users",
        mechanism=(f"Bell et al. App. B.2.2 (i): hierarchical Hadamard histogram on d = {size}, users split "
                   f"across the {levels} levels, one report each at the full epsilon "
                   f"(dp.bell.hierarchical.randomize_hierarchy, split='users')"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_hierarchy_users, domain_size=size, values=pair, epsilon=eps),
        statistic="one user's whole report (level l, row j, bit z) encoded as 2^(l+1) - 4 + 2 j + [z = +1]",
        neighbours=f"one user's score {pair[0]} vs {pair[1]} (different nodes at every level)",
        samples=mechanism_samples(*event, loss), true_epsilon=loss, best_event=event, exact_outputs=exact)


def _votes(hierarchy: hierarchical.HierarchyReports, values: tuple[int, int]) -> np.ndarray:
    """Net vote for the first value over the second, summed over every level of each user."""
    levels = hierarchy.levels
    total = np.zeros(hierarchy.users, dtype=np.int64)
    for level in range(1, levels + 1):
        reports = hierarchy.reports[level - 1]
        rows = np.asarray(reports.rows, dtype=np.int64)
        first = hadamard.hadamard_entry(rows, values[0] >> (levels - level)).astype(np.int64)
        second = hadamard.hadamard_entry(rows, values[1] >> (levels - level)).astype(np.int64)
        agree = np.where(np.asarray(reports.signs, dtype=np.int64) == first, 1, -1)
        total += np.where(first != second, agree, 0)
    return total


def _sample_hierarchy_budget(count: int, rng: np.random.Generator, *, domain_size: int, values: tuple[int, int],
                             epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    first, second = (_votes(hierarchical.randomize_hierarchy(np.full(count, v, dtype=np.int64), domain_size=domain_size,
                                                        epsilon=epsilon, split="budget", rng=rng), values)
                     for v in values)
    return first, second


def hierarchy_budget_case(*, domain_size: int = 8, epsilon: float = 1.5) -> LocalAuditCase:
    """Hierarchical histogram, budget split (App. B.2.2 (ii), ``delta = 0``): one user's report vector.

    :param domain_size: ``d``, a power of two in ``[4, 2^20]``.
    :param epsilon: the user's total budget (``epsilon / levels`` per level).
    :raise ValueError: on invalid parameters.
    """
    eps = check_epsilon(epsilon)
    size = check_integer(domain_size, "domain_size")
    if size < 4 or size > 1 << 20 or size & (size - 1):
        raise ValueError(f"domain_size must be a power of two in [4, 2^20], got {domain_size}")
    levels = size.bit_length() - 1
    eps0 = hierarchical.level_epsilon(eps, levels=levels, split="budget")
    pair = (0, size - 1)
    # exact law of the vote: per level from the module's exact output table, convolved over levels
    pmfs = []
    for value in pair:
        pmf = np.ones(1)
        for level in range(1, levels + 1):
            table = hadamard.hadamard_output_probabilities(value >> (levels - level), bits=level, epsilon=eps0)
            rows = np.arange(1 << level, dtype=np.int64)
            first = hadamard.hadamard_entry(rows, pair[0] >> (levels - level))
            second = hadamard.hadamard_entry(rows, pair[1] >> (levels - level))
            vote = np.zeros(3)  # P(vote = -1, 0, +1)
            for column, sign in ((0, -1), (1, 1)):
                cast = np.where(first != second, np.where(first == sign, 1, -1), 0)
                np.add.at(vote, cast + 1, table[:, column])
            pmf = np.convolve(pmf, vote)
        pmfs.append(pmf)
    exact, loss, event = _exact(np.arange(-levels, levels + 1), pmfs[0], pmfs[1])
    composed = hierarchical.composed_epsilon(eps0, levels=levels)
    return LocalAuditCase(
        name="ldp-hierarchy-budget",
        mechanism=(f"Bell et al. App. B.2.2 (ii): hierarchical Hadamard histogram on d = {size}, every user "
                   f"reports at all {levels} levels with eps/{levels} each, basic composition to "
                   f"{composed:g} (dp.bell.hierarchical.randomize_hierarchy, split='budget', delta=0)"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_hierarchy_budget, domain_size=size, values=pair, epsilon=eps),
        statistic=("net vote over the levels for x against x' (rows that separate them: +1 if the bit agrees "
                   "with x, -1 otherwise): the privacy-loss statistic of the report vector, up to a factor"),
        neighbours=f"one user's score {pair[0]} vs {pair[1]} (different nodes at every level)",
        samples=mechanism_samples(*event, loss), true_epsilon=loss, best_event=event, exact_outputs=exact)


# --------------------------------------------------------------------------------------------------
# Ghazi et al. baseline (dp.baselines.ghazi)

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


def _sample_ghazi(count: int, rng: np.random.Generator, *, factorization: ghazi.Factorization, pair: tuple[int, int],
                  epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    scales = ghazi.laplace_scales(factorization, epsilon=epsilon)
    first, second = (_privacy_loss(ghazi.randomize(np.full(count, v, dtype=np.int64), factorization, epsilon=epsilon,
                                                   rng=rng), factorization, scales, pair) for v in pair)
    return first, second


def ghazi_case(*, bins: int = 2, epsilon: float = 1.0) -> LocalAuditCase:
    """Ghazi et al.'s randomizer as simulated in :mod:`dp.baselines.ghazi` (Gini kernel, exact SVD factorization).

    The pair is the bin pair with the largest exact loss (fewest changed coordinates on ties).

    :param bins: ``t >= 2`` bins of ``[0, 1]`` (simple rounding, midpoint matrix).
    :param epsilon: the claimed epsilon for the pair of reports.
    :raise ValueError: on invalid parameters.
    """
    eps = check_epsilon(epsilon)
    t = check_integer(bins, "bins")
    if not 2 <= t <= 16:
        raise ValueError(f"bins must lie in [2, 16], got {bins}")
    quantizer = quantize.Quantizer.interval(lower=0.0, upper=1.0, bins=t)
    factorization = ghazi.factorize(quantize.kernel_matrix(quantize.gini_kernel, quantizer, kind="midpoint"))
    scales = ghazi.laplace_scales(factorization, epsilon=eps)
    candidates = [(*_pair_loss(factorization, scales, x, y), (x, y)) for x in range(t) for y in range(x + 1, t)]
    loss, changed, pair = max(candidates, key=lambda c: (round(c[0], 12), -c[1]))
    p = 2.0 ** -changed
    event = (p, p * math.exp(-loss))
    return LocalAuditCase(
        name="ldp-ghazi-laplace",
        mechanism=(f"Ghazi et al. (as simulated in dp.baselines.ghazi): Gini kernel on {t} bins, balanced SVD factorization "
                   f"(d = {factorization.d}), floating-point Laplace with eps/2 per vector (by design: a simulated "
                   f"baseline, never a release; floating-point leaks are outside this audit)"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_ghazi, factorization=factorization, pair=pair, epsilon=eps),
        statistic=(f"privacy loss of the report pair (o^L, o^R) for bins {pair}, "
                   f"sum_c (|o_c - mu'_c| - |o_c - mu_c|)/b, rounded to {LOSS_DECIMALS} decimals"),
        neighbours=f"one party's bin {pair[0]} vs {pair[1]} (the pair with the largest loss)",
        samples=mechanism_samples(*event, loss), true_epsilon=loss, best_event=event)


# --------------------------------------------------------------------------------------------------
# FedAUC label DP (dp.fedauc.mechanisms)

def _sample_label_rr(count: int, rng: np.random.Generator, *, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    first, second = (fedauc.randomized_response(np.full(count, label, dtype=np.int64), epsilon, rng=rng)
                     for label in (0, 1))
    return first, second


def _label_rr_exact(flip: float) -> tuple[Exact, float, tuple[float, float]]:
    return _exact(np.arange(2), np.array([1.0 - flip, flip]), np.array([flip, 1.0 - flip]))


def label_rr_case(*, epsilon: float = 1.0) -> LocalAuditCase:
    """FedAUC_RR (Sun et al. Algorithm 1): one label, 0 vs 1.

    :param epsilon: the claimed epsilon per label.
    :raise ValueError: if epsilon is not finite and positive.
    """
    eps = check_epsilon(epsilon)
    exact, loss, event = _label_rr_exact(fedauc.flip_probability(eps))
    return LocalAuditCase(
        name="label-rr",
        mechanism=("Sun et al. FedAUC_RR (Algorithm 1, eq. 2): label flipped with probability 1/(1 + e^eps) "
                   "rounded up to 2^-53 (dp.fedauc.mechanisms.randomized_response)"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_label_rr, epsilon=eps),
        statistic="the released (flipped) label",
        neighbours="one sample's label 0 vs 1",
        samples=mechanism_samples(*event, loss), true_epsilon=loss, best_event=event, exact_outputs=exact)


# --------------------------------------------------------------------------------------------------
# negative controls

def _binary_denominator_rr(values: np.ndarray, bins: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """BROKEN on purpose: k-RR with the binary keep probability ``e^eps/(e^eps + 1)``."""
    keep = 1.0 / (1.0 + math.exp(-epsilon))  # = e^eps/(e^eps + 1): right for k = 2 only
    stay = rng.random(values.shape) < keep
    other = (values + rng.integers(1, bins, size=values.shape)) % bins  # uniform over the other k - 1 values
    return np.where(stay, values, other)


def _sample_binary_denominator(count: int, rng: np.random.Generator, *, bins: int,
                               epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    first, second = (_binary_denominator_rr(np.full(count, v, dtype=np.int64), bins, epsilon, rng)
                     for v in (0, bins - 1))
    return first, second


def control_krr_binary_denominator(*, bins: int = 4, epsilon: float = 1.0) -> LocalAuditCase:
    """Negative control: k-RR with ``e^eps/(e^eps + 1)`` as keep probability; true loss ``eps + ln(k - 1)``.

    :param bins: ``k >= 3`` (for ``k = 2`` the formula is right).
    :param epsilon: the (wrongly) claimed epsilon.
    :raise ValueError: on invalid parameters.
    """
    eps = check_epsilon(epsilon)
    k = check_integer(bins, "bins")
    if k < 3:
        raise ValueError(f"bins must be at least 3 (the binary formula is right for 2), got {bins}")
    keep = 1.0 / (1.0 + math.exp(-eps))
    rows = [np.where(np.arange(k) == v, keep, (1.0 - keep) / (k - 1)) for v in (0, k - 1)]
    exact, loss, event = _exact(np.arange(k), rows[0], rows[1])
    # loss = ln(keep / ((1 - keep)/(k - 1))) = eps + ln(k - 1) exactly (k-RR at eps + ln(k - 1))
    return LocalAuditCase(
        name="control-krr-binary-denominator",
        mechanism=(f"BROKEN k-RR ({k} values): keeps the true value with e^eps/(e^eps + 1), the binary formula, "
                   f"instead of e^eps/(e^eps + k - 1); true epsilon eps + ln(k - 1) = {eps + math.log(k - 1):.4f}"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_binary_denominator, bins=k, epsilon=eps),
        statistic="the reported value",
        neighbours=f"one user's value 0 vs {k - 1}",
        control=True,
        samples=control_samples(*event, eps), true_epsilon=loss, best_event=event, exact_outputs=exact)


def control_label_rr_double_epsilon(*, epsilon: float = 0.5) -> LocalAuditCase:
    """Negative control: FedAUC's label RR with the flip probability computed for ``2 eps``.

    :param epsilon: the (wrongly) claimed epsilon.
    :raise ValueError: if epsilon is not finite and positive.
    """
    eps = check_epsilon(epsilon)
    doubled = check_positive(2.0 * eps, "2 epsilon")
    exact, loss, event = _label_rr_exact(fedauc.flip_probability(doubled))
    return LocalAuditCase(
        name="control-label-rr-2eps",
        mechanism=(f"BROKEN FedAUC_RR: flip probability computed for 2 eps = {doubled:g} "
                   f"(dp.fedauc.mechanisms.randomized_response(labels, 2 eps)); true epsilon {loss:.6f}"),
        epsilon=eps, delta=0.0,
        sample=partial(_sample_label_rr, epsilon=doubled),
        statistic="the released (flipped) label",
        neighbours="one sample's label 0 vs 1",
        control=True,
        samples=control_samples(*event, eps), true_epsilon=loss, best_event=event, exact_outputs=exact)


# --------------------------------------------------------------------------------------------------

def local_cases() -> list[AuditCase]:
    """Every local / label-DP randomizer of the suite on a worst-case pair, then the negative controls."""
    return [
        krr_case(),
        hadamard_case(),
        hierarchy_users_case(),
        hierarchy_budget_case(),
        ghazi_case(),
        label_rr_case(),
        control_krr_binary_denominator(),
        control_label_rr_double_epsilon(),
    ]
