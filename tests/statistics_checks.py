"""Shared statistical assertions of the tests: a fixed two-sided level, derived bounds, no tuning.

Every Monte Carlo check in the suite compares a sample statistic with its target at the two-sided
99.9 % normal quantile ``Z999`` of the sampling distribution (CLT on the mean of i.i.d. runs), so a
correct implementation fails a given check with probability about 1e-3 for a fixed seed's draw.
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import stats

#: two-sided 99.9 % standard normal quantile (3.2905)
Z999 = float(stats.norm.ppf(1 - 0.001 / 2))


def mean_half_width(samples: npt.ArrayLike, z: float = Z999) -> float:
    """``z * s / sqrt(n)``: the half-width of the CLT interval of the mean of ``samples``."""
    values = np.asarray(samples, dtype=float).ravel()
    return z * float(np.std(values, ddof=1)) / math.sqrt(values.size)


def assert_mean_near(samples: npt.ArrayLike, target: float, *, slack: float = 0.0, z: float = Z999) -> None:
    """The mean of ``samples`` lies within ``z * s / sqrt(n) + slack`` of ``target``."""
    values = np.asarray(samples, dtype=float).ravel()
    bound = mean_half_width(values, z) + slack
    assert abs(float(values.mean()) - target) <= bound, (float(values.mean()), target, bound)
