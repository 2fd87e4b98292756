r"""Audits of the FSS ECDF release (:mod:`dp.audit.fss_cases`) and mutation tests of its calibration.

Each case drives the shipped two-server release (:func:`dp.ecdf.fss_release.fss_noise_plan` rebuilt at every
batch, the owners' ``draw_party`` draws split by ``split_noise``, DCF keys from :func:`secure.fss.dcf.gen`,
the servers' ``key_sums`` / ``server_shares`` / ``decode``).  A mutation monkeypatches the calibration
*where* :func:`~dp.ecdf.fss_release.fss_noise_plan` *looks it up* (``dp.ecdf.fss_release.plan_tree_noise``)
and the test asserts that :func:`dp.audit.engine.audit` proves ``eps_lb > epsilon`` (the claim fixed when
the case was built, before the patch); the unmutated tests assert that each case passes.

Mutations:

- ``node-scale``: the node noise calibrated for ``(L + 1) epsilon`` (Theorem 1's division by ``L + 1``
  dropped: node rate ``epsilon`` instead of ``epsilon/(L + 1)``): true loss ``3 epsilon = 6`` on the
  cases' pair (3 nodes), resolved by the linear statistic.

Not resolved by the cases' linear statistic, and asserted as such (so the limit is explicit):

- ``eps-doubled`` (node rate ``2 epsilon/(L + 1)``): a real violation (loss ``3 x 1.0 = 3 > 2``: the
  LP value times the mutated rate, exact because an integer node shift of that norm exists), but the
  statistic sums 8 nodes and reaches that loss only in tails rarer than the audit can see (its best
  usable event has log-ratio 1.84 < 2);
- ``shape-1/m`` (each owner's Polya shape ``1/m`` instead of ``1/(m - c)``): on ``m = 3, t = 1`` no
  violation on ``N = 2^L`` points (the tree's claim exceeds its loss by ``(L + 1)/L``, see
  ``tests/test_audit_mutations.py``); on ``m = 2, t = 0`` (one honest owner, shape ``1/2``) the node law
  is more concentrated than ``DLap`` but the linear statistic's best usable event has log-ratio 1.13 < 2.

Sample sizes (derived, not tuned), with the conventions of ``tests/test_audit_complete.py``: under the patch,
the exact law of ``w . c~`` -- a sum of ``k`` whole honest nodes (``A^T w`` has entries in ``{-1, 0, 1}``,
the honest node pmf is symmetric), i.e. the ``k``-fold convolution of
:func:`dp.audit.engine.honest_noise_pmf` of the mutated plan's shape and alpha -- gives the probabilities
of the audit's candidate events (:func:`dp.audit.statistics.event_probabilities`);
:func:`dp.audit.statistics.planned_lower_bound` with the counts held ``PESSIMISM = 3`` standard deviations
against the audit, at ``CONFIDENCE = 0.999``, picks the smallest of :data:`SIZES` whose bound exceeds the
claim.  A mutation is missed with probability about ``Phi(-3)``; a correct case is flagged with
probability at most 0.1 % per audit.  Seeds are fixed.

Threat model: that of the cases (passive non-colluding servers, each with up to ``c - 1`` other owners;
the coalition subtracts its own draws).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import dp.ecdf.fss_release
from dp.audit import central_cases as audit_cases
from dp.audit.engine import audit, honest_noise_pmf
from dp.audit.fss_cases import (FSS_EPSILON, FSS_SAMPLES, FSS_SETTINGS, FssNeighbours, fss_case_names, fss_counts,
                                fss_neighbours, fss_release_mirror)
from dp.audit.statistics import event_probabilities, planned_lower_bound, tree_weights
from dp.ecdf.grid import prefix_incidence
from dp.ecdf.tree import noisy_counts

CONFIDENCE = 0.999


def fss_case_neighbours(name: str) -> FssNeighbours:
    """The pair of FSS audit case ``name`` (its setting in FSS_SETTINGS, in the order of fss_case_names)."""
    return fss_neighbours(*FSS_SETTINGS[fss_case_names().index(name)])

PESSIMISM = 3.0
SIZES = (10_000, 20_000, 50_000, 100_000, 200_000, 400_000, 800_000)
#: events rarer than this on the top dataset are not planned on (the audit's thresholds are 400 quantiles)
SMALLEST_EVENT = 0.005

_SHIPPED: Callable[..., Any] = dp.ecdf.fss_release.plan_tree_noise


def _node_scale(**kwargs: Any) -> Any:
    return _SHIPPED(**{**kwargs, "epsilon": kwargs["epsilon"] * _SHIPPED(**kwargs).levels})


def _eps_doubled(**kwargs: Any) -> Any:
    return _SHIPPED(**{**kwargs, "epsilon": 2.0 * kwargs["epsilon"]})


KINDS: dict[str, Callable[..., Any]] = {"node-scale": _node_scale, "eps-doubled": _eps_doubled}
RESOLVED = ["node-scale"]
MUTATIONS = [(name, kind) for name in fss_case_names() for kind in RESOLVED]


@pytest.fixture(autouse=True)
def _cases_built_before_patching() -> Iterator[None]:
    audit_cases.central_cases()
    yield


def _patch(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setattr(dp.ecdf.fss_release, "plan_tree_noise", KINDS[kind])


def _law(neighbours: FssNeighbours) -> tuple[np.ndarray, np.ndarray]:
    """Event probabilities of ``w . c~`` under the plan the shipped code makes now."""
    plan = neighbours.calibrate()
    pair = neighbours.pair
    node, offset = honest_noise_pmf(neighbours.honest, plan.draw.shape, math.exp(plan.draw.log_alpha), tail=1e-13)
    coefficients = prefix_incidence(pair.grid.size).T @ pair.weights
    assert np.allclose(coefficients, np.rint(coefficients)) and np.all(np.abs(coefficients) <= 1)
    pmf, width = np.ones(1), 0
    for _ in range(int(np.count_nonzero(np.rint(coefficients)))):  # symmetric nodes: the sign is immaterial
        pmf, width = np.convolve(pmf, node), width + offset
    first = int(round(float(neighbours.first_counts @ pair.weights)))
    second = int(round(float(neighbours.second_counts @ pair.weights)))
    low = min(first, second) - width
    size = abs(first - second) + pmf.size
    p, q = np.zeros(size), np.zeros(size)
    p[first - width - low:first - width - low + pmf.size] = pmf
    q[second - width - low:second - width - low + pmf.size] = pmf
    return event_probabilities(p, q)


def _usable(law: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    top, bottom = law
    keep = (top >= SMALLEST_EVENT) & (bottom >= SMALLEST_EVENT / 10)
    return top[keep], bottom[keep]


def planned_samples(law: tuple[np.ndarray, np.ndarray], claimed: float) -> int:
    """The smallest size of :data:`SIZES` whose planned bound exceeds ``claimed``.

    :raise AssertionError: if none does.
    """
    top, bottom = _usable(law)
    for size in SIZES:
        if planned_lower_bound(top, bottom, samples=size, confidence=CONFIDENCE, pessimism=PESSIMISM) > claimed:
            return size
    raise AssertionError(f"no size in {SIZES} resolves the mutation (claim {claimed})")


_PLANNED: dict[tuple[str, str], int] = {}


def _mutated_size(name: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> int:
    if (name, kind) not in _PLANNED:
        with monkeypatch.context() as patched:
            _patch(patched, kind)
            _PLANNED[(name, kind)] = planned_samples(_law(fss_case_neighbours(name)),
                                                     audit_cases.get_case(name).epsilon)
    return _PLANNED[(name, kind)]


# --------------------------------------------------------------------------------------------------
# the audits


@pytest.mark.parametrize("name, kind", MUTATIONS, ids=[f"{n}/{k}" for n, k in MUTATIONS])
def test_fss_calibration_mutation_is_flagged(name: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = audit_cases.get_case(name)
    size = _mutated_size(name, kind, monkeypatch)
    neighbours = fss_case_neighbours(name)
    shipped_alpha = neighbours.calibrate().draw.log_alpha
    _patch(monkeypatch, kind)
    assert neighbours.calibrate().draw.log_alpha != shipped_alpha  # the patch reaches fss_noise_plan
    result = audit(case, samples=size, rng=np.random.default_rng(2026), confidence=CONFIDENCE)
    print(f"MUTATION {name} {kind} | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | samples {size}")
    assert result.epsilon_lower > case.epsilon, (name, kind, result.epsilon_lower, result.event)


@pytest.mark.parametrize("name", fss_case_names())
def test_fss_case_passes_unmutated(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = audit_cases.get_case(name)
    size = max(_mutated_size(n, kind, monkeypatch) for n, kind in MUTATIONS if n == name)
    result = audit(case, samples=size, rng=np.random.default_rng(2027), confidence=CONFIDENCE)
    print(f"UNMUTATED {name} | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | samples {size}")
    assert result.epsilon_lower <= case.epsilon, (name, result.epsilon_lower, result.event)


@pytest.mark.parametrize("name", fss_case_names())
def test_doubled_epsilon_is_a_violation_the_linear_statistic_cannot_resolve(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    neighbours = fss_case_neighbours(name)
    claimed = audit_cases.get_case(name).epsilon
    with monkeypatch.context() as patched:
        _patch(patched, "eps-doubled")
        plan = neighbours.calibrate()
        assert neighbours.pair.shift * -plan.draw.log_alpha > claimed  # 3 nodes x rate 1.0 = 3 > 2
        top, bottom = _usable(_law(neighbours))
        assert float(np.max(np.log(top / bottom))) < claimed
        with pytest.raises(AssertionError, match="no size"):
            planned_samples(_law(neighbours), claimed)


def test_shape_one_over_m_is_not_resolved_on_two_owners(monkeypatch: pytest.MonkeyPatch) -> None:
    """``m = 2, t = 0``: the one honest owner drawing shape 1/2 instead of 1 escapes the linear statistic."""
    name = "ecdf-fss-m2-t0"
    neighbours = fss_case_neighbours(name)
    claimed = audit_cases.get_case(name).epsilon
    shipped = neighbours.calibrate()
    assert shipped.draw.shape == 1.0 and neighbours.honest == 1
    with monkeypatch.context() as patched:
        patched.setattr(dp.ecdf.fss_release, "plan_tree_noise",
                        lambda **kw: _SHIPPED(epsilon=kw["epsilon"], points=kw["points"], parties=2, threshold=0))
        mutated = neighbours.calibrate()
        assert mutated.draw.shape == 0.5 and mutated.draw.log_alpha == shipped.draw.log_alpha
        with pytest.raises(AssertionError, match="no size"):
            planned_samples(_law(neighbours), claimed)


# --------------------------------------------------------------------------------------------------
# the cases, their neighbours and the mirror


def test_fss_cases_are_registered_with_the_auditor_and_the_drill() -> None:
    from scenarios.drills.audit import all_cases

    names = fss_case_names()
    assert names == ["ecdf-fss-m3-t1", "ecdf-fss-m2-t0"]
    registered = {case.name: case for case in audit_cases.central_cases(controls=False)}
    assert set(names) <= set(registered) and set(names) <= {case.name for case in all_cases()}
    for name in names:
        case = registered[name]
        assert case.samples == FSS_SAMPLES and not case.control and case.epsilon == FSS_EPSILON
        assert "§4.2" in case.mechanism and "split_noise" in case.mechanism


@pytest.mark.parametrize("name", fss_case_names())
def test_the_pair_is_the_worst_replace_one_pair_of_the_fss_release(name: str) -> None:
    """Counts differ by 1 on the pair's interval; no interval an FSS neighbour can change has a larger LP value."""
    neighbours = fss_case_neighbours(name)
    pair = neighbours.pair
    points = pair.grid.size
    a, b = pair.interval
    difference = neighbours.first_counts - neighbours.second_counts
    expected = np.zeros(points, dtype=np.int64)
    expected[a - 1:b] = 1
    assert np.array_equal(np.abs(difference), expected) and b < points
    best = max(tree_weights(points, lo, hi)[1] for lo in range(1, points) for hi in range(lo, points))
    assert pair.shift == pytest.approx(best) == pytest.approx(3.0)
    # the last count is n on any data: a value above the grid is clipped to tau_N
    assert fss_counts(np.array([0.0, 100.0]), pair.grid)[-1] == 2


def test_the_mirror_opens_the_tree_release_of_the_same_draws() -> None:
    """The one-process mirror of the shipped servers equals dp.ecdf.tree.noisy_counts, run by run."""
    neighbours = fss_case_neighbours("ecdf-fss-m3-t1")
    rng = np.random.default_rng(5)
    plan = neighbours.calibrate()
    draws = [plan.draw.draw_party(rng, runs=6) for _ in range(3)]
    opened = fss_release_mirror(neighbours.pair.first_values, neighbours.pair.grid, draws, bits=neighbours.bits,
                                owners=3)
    total = draws[0] + draws[1] + draws[2]
    for run in range(6):
        assert np.array_equal(opened[run], noisy_counts(neighbours.first_counts, total[run]))
        single = fss_release_mirror(neighbours.pair.first_values, neighbours.pair.grid,
                                    [d[run:run + 1] for d in draws], bits=neighbours.bits, owners=3)
        assert np.array_equal(single[0], opened[run])
