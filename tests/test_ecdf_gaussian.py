"""Theorem 3's Gaussian form of the tree mechanism: integer node noise at the zCDP scale."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dp.ecdf.grid import node_count, tree_depth
from dp.ecdf.tree import continual_gaussian_sigma, draw_gaussian_tree_noise, noisy_counts
from secure.noise.party import discrete_gaussian_variance


@pytest.mark.parametrize("replace_one", [True, False])
def test_gaussian_node_noise_has_the_zcdp_scale(replace_one: bool) -> None:
    rho, points = 0.5, 300
    draws = draw_gaussian_tree_noise(rho=rho, points=points, replace_one=replace_one, rng=np.random.default_rng(3))
    assert draws.dtype == np.int64 and draws.shape == (node_count(points),)
    levels = tree_depth(points) + 1
    shifted = levels if replace_one else (levels + 1) // 2
    sigma = continual_gaussian_sigma(rho, points, replace_one=replace_one)
    assert shifted / (2 * sigma ** 2) == pytest.approx(rho)  # the zCDP parameter of a +-1 shift of k nodes


def test_gaussian_node_noise_variance_and_counts() -> None:
    """Sample variance within a 99.9 % interval (Gaussian kurtosis: relative SE sqrt(2/(n-1)))."""
    rho, points = 0.05, 2000
    draws = np.concatenate([draw_gaussian_tree_noise(rho=rho, points=points, rng=np.random.default_rng(s))
                            for s in range(3)]).astype(float)
    sigma2 = continual_gaussian_sigma(rho, points, replace_one=True) ** 2
    expected = discrete_gaussian_variance(sigma2)
    z = stats.norm.ppf(0.9995)
    assert abs(draws.var(ddof=1) / expected - 1) < z * math.sqrt(2 / (draws.size - 1))
    assert abs(draws.mean()) < z * math.sqrt(expected / draws.size)
    counts = np.arange(points)
    noise = draw_gaussian_tree_noise(rho=rho, points=points, rng=np.random.default_rng(9))
    assert noisy_counts(counts, noise).dtype == np.int64
