"""FedAUC's data side: ranks, the rank-sum AUC of eq. (1), client layouts and local statistics (Sun et al.).

Threat model: label DP (Sun et al. §3, Definition 2.1); scores, ranks and client layout are public.  Nothing here
releases a label-dependent value.  Details: docs/fedauc.md."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from dp.validation import check_choice, check_generator, check_positive_int
from secure.noise.party import os_generator

__all__ = ["LAYOUTS", "average_ranks", "auc_from_ranks", "server_auc", "client_layout", "LocalStatistics",
           "local_statistics"]

#: Client layouts (§6.2.2): uniform random, contiguous blocks of sorted scores, one sample each.
LAYOUTS: Final[tuple[str, ...]] = ("iid", "non_iid", "one_per_client")


def _check_scores(scores: npt.ArrayLike) -> np.ndarray:
    values = np.asarray(scores)
    if values.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {values.shape}")
    if values.dtype == np.bool_ or not (np.issubdtype(values.dtype, np.integer)
                                        or np.issubdtype(values.dtype, np.floating)):
        raise TypeError(f"scores must be numbers, got dtype {values.dtype}")
    values = values.astype(np.float64)
    if values.size < 2:
        raise ValueError(f"scores must hold at least 2 samples, got {values.size}")
    if values.size >= 1 << 25:
        raise ValueError(f"scores must hold fewer than 2**25 samples (exact rank sums), got {values.size}")
    if not np.all(np.isfinite(values)):
        raise ValueError("scores must be finite")
    return values


def _check_labels(labels: npt.ArrayLike, samples: int) -> np.ndarray:
    values = np.asarray(labels)
    if values.ndim != 1 or values.size != samples:
        raise ValueError(f"labels must be one-dimensional of length {samples}, got shape {values.shape}")
    if not (values.dtype == np.bool_ or np.issubdtype(values.dtype, np.integer)
            or np.issubdtype(values.dtype, np.floating)):
        raise TypeError(f"labels must be 0/1, got dtype {values.dtype}")
    if not np.all((values == 0) | (values == 1)):
        raise ValueError("labels must be 0 or 1")
    out = values.astype(np.int64)
    positives = int(out.sum())
    if positives == 0 or positives == samples:
        raise ValueError(f"labels must contain both classes, got {positives} positives of {samples}")
    return out


def _check_generator(rng: np.random.Generator | None, name: str, allow_none: bool) -> np.random.Generator:
    if rng is None:
        if allow_none:
            return os_generator()
        raise TypeError(f"{name} must be a numpy.random.Generator, got None")
    return check_generator(rng, name)


def _twice_ranks(scores: np.ndarray) -> np.ndarray:
    """Twice the 0-based average ranks: integers in ``[0, 2 (M - 1)]``."""
    return np.rint(2.0 * (rankdata(scores, method="average") - 1.0)).astype(np.int64)


def average_ranks(scores: npt.ArrayLike) -> np.ndarray:
    """The 0-based ranks of §4.2 step 2 of the ``M >= 2`` finite scores, ties given their average rank (multiples of
    1/2).  Details: docs/fedauc.md.
    :raise ValueError: if scores are not a finite one-dimensional array of at least 2 values."""
    return _twice_ranks(_check_scores(scores)) / 2.0


def _check_ranks(ranks: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(ranks, twice_ranks)`` after checking that ranks are multiples of 1/2 in ``[0, M - 1]``."""
    values = np.asarray(ranks, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"ranks must be one-dimensional with at least 2 values, got shape {values.shape}")
    twice = 2.0 * values
    if not np.all(np.isfinite(values)) or not np.all(twice == np.rint(twice)):
        raise ValueError("ranks must be multiples of 1/2")
    if values.min() < 0 or values.max() > values.size - 1:
        raise ValueError(f"ranks must lie in [0, {values.size - 1}]")
    return values, np.rint(twice).astype(np.int64)


def auc_from_ranks(ranks: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Eq. (1): ``(sum_i r_i y_i - P (P - 1)/2) / (P N)``, correctly rounded, from 0-based average ranks
    (:func:`average_ranks`) and 0/1 labels with both classes present.  Details: docs/fedauc.md.
    :raise ValueError: on ranks that are not multiples of 1/2 in ``[0, M-1]`` or bad labels."""
    _, twice = _check_ranks(ranks)
    return _twice_rank_auc(twice, _check_labels(labels, twice.size))


def _twice_rank_auc(twice: np.ndarray, y: np.ndarray) -> float:
    """Eq. (1) from twice the ranks and checked 0/1 labels, in integers until the one division."""
    p = int(y.sum())
    return (int(twice[y == 1].sum()) - p * (p - 1)) / (2 * p * (y.size - p))


def server_auc(rank_sum: npt.ArrayLike, positives: npt.ArrayLike, samples: int) -> np.ndarray:
    """Eq. (1) on aggregated, possibly noisy, reports ``globalSum`` and ``Pbar`` (broadcastable) of ``M`` public
    samples (Algorithm 2 line 35, Algorithm 4 line 39); NaN where undefined.  Details: docs/fedauc.md.
    :raise ValueError: if ``samples < 2``."""
    m = check_positive_int(samples, "samples")
    if m < 2:
        raise ValueError(f"samples must be at least 2, got {samples}")
    total = np.asarray(rank_sum, dtype=np.float64)
    pbar = np.asarray(positives, dtype=np.float64)
    nbar = m - pbar
    denominator = pbar * nbar
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (total - pbar * (pbar - 1.0) / 2.0) / denominator
    return np.where((pbar > 0) & (nbar > 0), out, np.nan)


def client_layout(scores: npt.ArrayLike, *, clients: int | None, layout: str,
                  rng: np.random.Generator) -> np.ndarray:
    """Every sample's client in ``[0, K)`` (§6.2.2) from the public generator ``rng``: ``layout`` one of
    :data:`LAYOUTS`, ``1 <= K <= M`` (``one_per_client``: ``None`` or ``M``).  Details: docs/fedauc.md.
    :raise ValueError: on an unknown layout or an invalid number of clients."""
    values = _check_scores(scores)
    m = values.size
    gen = _check_generator(rng, "rng", allow_none=False)
    check_choice(layout, LAYOUTS, "layout")
    if layout == "one_per_client":
        if clients is not None and check_positive_int(clients, "clients") != m:
            raise ValueError(f"clients must equal the number of samples ({m}) for one_per_client, got {clients}")
        return np.arange(m, dtype=np.int64)
    if clients is None:
        raise ValueError(f"clients must be given for layout {layout!r}")
    k = check_positive_int(clients, "clients")
    if k > m:
        raise ValueError(f"clients must be at most the number of samples ({m}), got {clients}")
    out = np.empty(m, dtype=np.int64)
    # positions 0..M-1 cut into K contiguous blocks of sizes differing by <= 1
    order = gen.permutation(m) if layout == "iid" else np.lexsort((gen.permutation(m), values))
    out[order] = (np.arange(m, dtype=np.int64) * k) // m
    return out


def _check_assignment(client_of: npt.ArrayLike, samples: int) -> tuple[np.ndarray, int]:
    values = np.asarray(client_of)
    if values.ndim != 1 or values.size != samples or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"client_of must be a one-dimensional integer array of length {samples}")
    if values.min() < 0:
        raise ValueError("client_of must be non-negative")
    clients = int(values.max()) + 1
    if np.unique(values).size != clients:
        raise ValueError("client_of must use every client index 0..K-1 (no empty client)")
    return values.astype(np.int64), clients


@dataclass(frozen=True)
class LocalStatistics:
    """Step 3 of Algorithm 4 at every client, before noise, with the public facts about its ranks; the fields:
    docs/fedauc.md."""

    sizes: np.ndarray
    local_sum: np.ndarray
    local_positives: np.ndarray
    rank_total: np.ndarray
    max_rank: np.ndarray
    min_rank: np.ndarray

    @property
    def clients(self) -> int:
        return int(self.sizes.size)

    @property
    def mean_rank(self) -> np.ndarray:
        """``rbar_k`` (``u' = rbar_k u``)."""
        return self.rank_total / self.sizes

    @property
    def spread(self) -> np.ndarray:
        """``||v'||_inf = max_i |r_i - rbar_k|``."""
        mean = self.mean_rank
        return np.maximum(self.max_rank - mean, mean - self.min_rank)


def local_statistics(ranks: npt.ArrayLike, labels: npt.ArrayLike, client_of: npt.ArrayLike) -> LocalStatistics:
    """Every client's ``localSum``, ``localP`` and rank facts (vectorised) from 0-based ranks, 0/1 labels (both
    classes present) and every sample's client (:func:`client_layout`, every index used).
    :raise ValueError: on inconsistent inputs."""
    _, twice = _check_ranks(ranks)
    y = _check_labels(labels, twice.size)
    owner, k = _check_assignment(client_of, twice.size)
    sizes = np.bincount(owner, minlength=k).astype(np.int64)
    twice_sum = np.bincount(owner, weights=(twice * y).astype(np.float64), minlength=k)
    positives = np.bincount(owner, weights=y.astype(np.float64), minlength=k)
    twice_total = np.bincount(owner, weights=twice.astype(np.float64), minlength=k)
    order = np.argsort(owner, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    sorted_twice = twice[order]
    twice_max = np.maximum.reduceat(sorted_twice, starts)
    twice_min = np.minimum.reduceat(sorted_twice, starts)
    return LocalStatistics(sizes=sizes, local_sum=np.rint(twice_sum) / 2.0,
                           local_positives=np.rint(positives).astype(np.int64),
                           rank_total=np.rint(twice_total) / 2.0, max_rank=twice_max / 2.0,
                           min_rank=twice_min / 2.0)
