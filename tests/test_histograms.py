"""Complete U-statistic sums from the joint histogram: exact against brute force and external oracles.

Every case uses data with many ties (few grid points, 30-60 rows) so brute force over all pairs or
triples with ``kernel.plaintext`` is cheap and ties are exercised; secure results come from a
single-process MPyC run.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any, Sequence

import numpy as np
import pytest
from mpyc.runtime import mpc
from sklearn.metrics import rand_score, roc_auc_score

from secure import histograms
from secure.aggregation import sum_party_vectors
from secure.histograms import GENERIC_MAX_CELLS, histogram_sums, histogram_value_bound, local_histogram
from secure.kernels import Kernel, KernelOutput, get_kernel

#: per kernel: the grid of each column (fixed-point values, or codes for label / categorical columns)
GRIDS: dict[str, list[np.ndarray]] = {
    "kendall": [np.array([0, 3, 4, 9, 10, 16, 40]), np.array([2, 5, 6, 7, 20])],
    "gini": [np.array([0, 1, 5, 6, 12, 30, 31, 64])],
    "auc": [np.array([0, 16, 32, 48, 64, 80, 96, 112, 128]), np.arange(2)],
    "duplicate": [np.arange(6)],
    "rand": [np.arange(3), np.arange(4)],
    "vus": [np.array([0, 2, 4, 6, 8, 10, 12]), np.arange(3)],
}


def _kernel(name: str) -> Kernel:
    return get_kernel(name, precision=4)


def _sample(grids: Sequence[np.ndarray], rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid indices (skewed, so many rows share cells) and the rows' fixed-point values."""
    generator = np.random.default_rng(seed)
    columns = []
    for grid in grids:
        weights = generator.random(len(grid)) ** 2 + 0.05
        columns.append(generator.choice(len(grid), size=rows, p=weights / weights.sum()))
    cells = np.column_stack(columns)
    values = np.column_stack([grid[cells[:, j]] for j, grid in enumerate(grids)])
    return cells, values


def _brute(kernel: Kernel, values: np.ndarray) -> tuple[int, ...]:
    """Sum of ``kernel.plaintext`` over ALL unordered k-tuples of rows (after ``kernel.encode``)."""
    encoded = kernel.encode(values)
    tuples = np.array(list(itertools.combinations(range(len(values)), kernel.degree)))
    outputs = kernel.plaintext([encoded[tuples[:, i]] for i in range(kernel.degree)])
    return tuple(int(np.sum(o)) for o in outputs)


def _histogram(grids: Sequence[np.ndarray], cells: np.ndarray) -> np.ndarray:
    return local_histogram(cells, [len(g) for g in grids])


class WithinBand(Kernel):
    """A user's own degree-2 kernel: ``I[|x_i - x_j| <= 3] * (y_i + y_j)`` (symmetric, two columns)."""

    name = "within-band"
    columns = ("x", "y")

    def outputs(self, widths: Sequence[int]) -> tuple[KernelOutput, ...]:
        return (KernelOutput("band weight", 1, 0, 2 * int(widths[1])), KernelOutput("band pairs", 1, 0, 1))

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        a, b = parts
        near = (np.abs(a[:, 0] - b[:, 0]) <= 3).astype(np.int64)
        return near * (a[:, 1] + b[:, 1]), near


class Ordered(Kernel):
    """Not symmetric: ``I[x_i < x_j]`` -- the generic path must refuse it."""

    name = "ordered"
    columns = ("x",)

    def outputs(self, widths: Sequence[int]) -> tuple[KernelOutput, ...]:
        return (KernelOutput("ordered", 1, 0, 1),)

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        a, b = parts
        return ((a[:, 0] < b[:, 0]).astype(np.int64),)


USER_GRIDS = [np.array([0, 1, 2, 5, 6, 9, 13]), np.array([0, 1, 2, 3])]


@pytest.mark.parametrize("name", list(GRIDS))
@pytest.mark.parametrize("rows, seed", [(30, 1), (47, 2), (60, 3)])
def test_plaintext_sums_equal_brute_force_over_all_tuples(name: str, rows: int, seed: int) -> None:
    kernel, grids = _kernel(name), GRIDS[name]
    cells, values = _sample(grids, rows, seed)
    counts = _histogram(grids, cells)
    expected = _brute(kernel, values)
    assert histogram_sums(kernel, counts, grids, secure=False) == expected
    assert len(expected) == len(kernel.outputs([int(g.max()) for g in grids]))
    if kernel.degree == 2:
        assert histogram_sums(kernel, counts, grids, secure=False, generic=True) == expected


@pytest.mark.parametrize("rows, seed", [(31, 4), (58, 5)])
def test_user_kernel_generic_path_equals_brute_force(rows: int, seed: int) -> None:
    cells, values = _sample(USER_GRIDS, rows, seed)
    sums = histogram_sums(WithinBand(), _histogram(USER_GRIDS, cells), USER_GRIDS, secure=False)
    assert sums == _brute(WithinBand(), values)


def test_external_oracles_with_ties() -> None:
    rows = 55
    # AUC: sklearn counts ties 1/2, as the kernel's 2U does
    cells, values = _sample(GRIDS["auc"], rows, 11)
    twice_u, pairs = histogram_sums(_kernel("auc"), _histogram(GRIDS["auc"], cells), GRIDS["auc"], secure=False)
    assert pairs == int(values[:, 1].sum()) * int((1 - values[:, 1]).sum())
    assert twice_u / 2 / pairs == pytest.approx(roc_auc_score(values[:, 1], values[:, 0]), abs=1e-12)
    # Kendall's tau-a = (concordant - discordant) / C(n, 2), counted pair by pair
    cells, values = _sample(GRIDS["kendall"], rows, 12)
    (concordance,) = histogram_sums(_kernel("kendall"), _histogram(GRIDS["kendall"], cells), GRIDS["kendall"],
                                    secure=False)
    net = 0
    for (x1, y1), (x2, y2) in itertools.combinations(values.tolist(), 2):
        net += (1 if (x1 - x2) * (y1 - y2) > 0 else -1 if (x1 - x2) * (y1 - y2) < 0 else 0)
    assert concordance / math.comb(rows, 2) == net / math.comb(rows, 2)
    # Rand index: sklearn
    cells, values = _sample(GRIDS["rand"], rows, 13)
    (agreeing,) = histogram_sums(_kernel("rand"), _histogram(GRIDS["rand"], cells), GRIDS["rand"], secure=False)
    assert agreeing / math.comb(rows, 2) == pytest.approx(rand_score(values[:, 0], values[:, 1]), abs=1e-12)
    # duplicate pairs: a Counter
    cells, values = _sample(GRIDS["duplicate"], rows, 14)
    (equal,) = histogram_sums(_kernel("duplicate"), _histogram(GRIDS["duplicate"], cells), GRIDS["duplicate"],
                              secure=False)
    assert equal == sum(math.comb(c, 2) for c in Counter(values[:, 0].tolist()).values())
    # Gini: all |x_i - x_j| at once
    cells, values = _sample(GRIDS["gini"], rows, 15)
    (spread,) = histogram_sums(_kernel("gini"), _histogram(GRIDS["gini"], cells), GRIDS["gini"], secure=False)
    assert spread == int(np.abs(values[:, :1] - values[:, 0]).sum()) // 2
    # VUS: over class-0 x class-1 x class-2 triples, weights 1, 1/2, 1/2, 1/6 (times 12)
    cells, values = _sample(GRIDS["vus"], 40, 16)
    ordered, triples = histogram_sums(_kernel("vus"), _histogram(GRIDS["vus"], cells), GRIDS["vus"], secure=False)
    by_class = [values[values[:, 1] == c, 0].tolist() for c in range(3)]
    weight = 0
    for s0, s1, s2 in itertools.product(*by_class):
        weight += (12 if s0 < s1 < s2 else 6 if (s0 == s1 < s2 or s0 < s1 == s2) else 2 if s0 == s1 == s2 else 0)
    assert (ordered, triples) == (weight, math.prod(len(c) for c in by_class))


def test_large_counts_stay_exact() -> None:
    """Counts of ten million rows: the VUS numerator (about 12 n^3 / 27) leaves int64, still exact."""
    generator = np.random.default_rng(21)
    counts = generator.multinomial(10 ** 7, np.full(21, 1 / 21)).reshape(7, 3)
    ordered, triples = histogram_sums(_kernel("vus"), counts, GRIDS["vus"], secure=False)
    assert triples == math.prod(int(c) for c in counts.sum(axis=0))
    # too many rows to enumerate: check the closed form against a direct triple sum over grid cells
    weight = 0
    values = GRIDS["vus"][0].tolist()
    for (a, s0), (b, s1), (c, s2) in itertools.product(enumerate(values), repeat=3):
        w = 12 if s0 < s1 < s2 else 6 if (s0 == s1 < s2 or s0 < s1 == s2) else 2 if s0 == s1 == s2 else 0
        weight += w * int(counts[a, 0]) * int(counts[b, 1]) * int(counts[c, 2])
    assert ordered == weight and ordered > 2 ** 63


def _secure_sums(kernel: Kernel, counts: np.ndarray, grids: Sequence[np.ndarray], generic: bool) -> list[int]:
    rows = int(counts.sum())
    bits = histogram_value_bound(kernel, rows, grids, generic=generic).bit_length() + 2

    async def run() -> list[int]:
        shared = sum_party_vectors(mpc.SecInt(bits), counts.reshape(-1)).reshape(counts.shape)
        sums = histogram_sums(kernel, shared, grids, secure=True, generic=generic)
        return [int(v) for v in await mpc.output(list(sums))]

    return mpc.run(run())


@pytest.mark.parametrize("name", list(GRIDS) + ["user"])
def test_secure_sums_equal_plaintext_in_process(name: str) -> None:
    kernel, grids = (WithinBand(), USER_GRIDS) if name == "user" else (_kernel(name), GRIDS[name])
    cells, _ = _sample(grids, 45, 31)
    counts = _histogram(grids, cells)
    plain = list(histogram_sums(kernel, counts, grids, secure=False))
    assert _secure_sums(kernel, counts, grids, generic=False) == plain
    if kernel.degree == 2 and name != "user":
        assert _secure_sums(kernel, counts, grids, generic=True) == plain


def test_secure_halving_is_exact_for_odd_and_even_counts() -> None:
    """duplicate and rand halve a secure value by the field inverse of 2: exact on integers."""
    for counts in (np.array([1, 0, 2, 3, 0, 5]), np.array([4, 1, 1, 0, 0, 1]), np.array([7, 0, 0, 0, 0, 0])):
        plain = histogram_sums(_kernel("duplicate"), counts, GRIDS["duplicate"], secure=False)
        assert plain == (sum(math.comb(int(c), 2) for c in counts),)
        assert _secure_sums(_kernel("duplicate"), counts, GRIDS["duplicate"], generic=False) == list(plain)


class _Recorder(np.ndarray):
    """Object array that records the largest |entry| of every ufunc result computed from it."""

    largest = 0

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = tuple(x.view(np.ndarray) if isinstance(x, _Recorder) else x for x in inputs)
        result = getattr(ufunc, method)(*plain, **kwargs)
        _Recorder.note(result)
        return result.view(_Recorder) if isinstance(result, np.ndarray) else result

    @staticmethod
    def note(value: Any) -> None:
        array = np.asarray(value, dtype=object).ravel()
        if array.size:
            _Recorder.largest = max(_Recorder.largest, max(abs(int(v)) for v in array))


class _RecordingOps(histograms._PlainOps):
    """Plaintext operations that record every intermediate value and count resharings and terms."""

    def __init__(self) -> None:
        self.products = 0
        self.terms = 0

    def prepare(self, counts: Any) -> Any:
        _Recorder.largest = 0
        return super().prepare(counts).view(_Recorder)

    def cumsum(self, a: Any, axis: int = 0) -> Any:
        result = super().cumsum(a, axis)
        _Recorder.note(result)
        return np.asarray(result).view(_Recorder)

    def dot(self, a: Any, b: Any) -> Any:
        self.products += 1
        self.terms += len(a)
        result = super().dot(a, b)
        _Recorder.note(result)
        return result

    def mul(self, a: Any, b: Any) -> Any:
        self.products += 1
        self.terms += 1
        result = super().mul(a, b)
        _Recorder.note(result)
        return result

    def row_dots(self, left: Sequence[Any], right: Sequence[Any]) -> Any:
        self.products += len(left[0])
        self.terms += len(left[0]) * len(left)
        result = super().row_dots(left, right)
        _Recorder.note(result)
        return result

    def total(self, a: Any, axis: int | None = None) -> Any:
        result = super().total(a, axis)
        _Recorder.note(result)
        return result

    def half(self, x: Any) -> Any:
        _Recorder.note(x)
        return super().half(x)


def _extreme(grids: Sequence[np.ndarray], rows: int, parts: int) -> np.ndarray:
    """Rows split evenly over ``parts`` cells on the grid's diagonal, corners included (the largest
    prefix sums and products: e.g. a third of the rows per VUS class, in increasing order)."""
    counts = np.zeros([len(g) for g in grids], dtype=np.int64)
    for part in range(parts):
        cell = tuple(round(part * (len(g) - 1) / (parts - 1)) for g in grids)
        counts[cell] += rows // parts + (part < rows % parts)
    return counts


def _modelled(kernel: Kernel, shape: tuple[int, ...], generic: bool) -> tuple[int, int]:
    """``(resharings, share products)`` each formula must cost: an inner product of any length is ONE resharing
    (MPyC reshares only its result), behind it ``G`` local share products for ``G`` cells."""
    cells, form = math.prod(shape), None if generic else histograms.special_form(kernel)
    if form in ("gini", "duplicate"):
        return 1, cells
    if form == "kendall":
        return 1, (shape[0] - 1) * shape[1]
    if form == "auc":
        return 2, shape[0] + 1
    if form == "rand":
        return 1, cells + shape[0] + shape[1] + 1
    if form == "vus":
        return shape[0] + 3, 3 * shape[0] + 2
    outputs = len(kernel.outputs([s - 1 for s in shape]))
    return outputs, outputs * cells


@pytest.mark.parametrize("name", list(GRIDS) + ["user"])
def test_value_bound_holds_every_intermediate_and_costs_count_the_products(name: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, grids = (WithinBand(), USER_GRIDS) if name == "user" else (_kernel(name), GRIDS[name])
    generics = [False, True] if kernel.degree == 2 and name != "user" else [name == "user"]
    cases = [_histogram(grids, _sample(grids, rows, seed)[0]) for rows, seed in [(40, 41), (300, 42), (1000, 43)]]
    cases += [_extreme(grids, 500, 2), _extreme(grids, 600, 3)]
    for generic in generics:
        for counts in cases:
            ops = _RecordingOps()
            monkeypatch.setattr(histograms, "_SecureOps", lambda: ops)  # the recording operations stand in
            sums = histogram_sums(kernel, counts, grids, secure=True, generic=generic)
            assert sums == histogram_sums(kernel, counts, grids, secure=False, generic=generic)
            bound = histogram_value_bound(kernel, int(counts.sum()), grids, generic=generic)
            assert _Recorder.largest > 0 and bound >= _Recorder.largest
            assert all(abs(int(s)) <= bound for s in sums)
            assert _modelled(kernel, counts.shape, generic) == (ops.products, ops.terms)


def test_local_histogram_counts_and_refuses_bad_indices() -> None:
    cells = np.array([[0, 1], [2, 0], [0, 1], [1, 2]])
    counts = local_histogram(cells, [3, 3])
    assert counts.dtype == np.int64 and counts.shape == (3, 3)
    assert counts.tolist() == [[0, 2, 0], [0, 0, 1], [1, 0, 0]]
    assert local_histogram(np.zeros((0, 2), dtype=np.int64), [2, 4]).tolist() == [[0] * 4] * 2
    for bad, message in [(np.array([[0, 3]]), "0..2"), (np.array([[-1, 0]]), "0..2"),
                         (np.array([[0, 1, 2]]), "shape"), (np.array([[0.0, 1.0]]), "integer")]:
        with pytest.raises(ValueError, match=message):
            local_histogram(bad, [3, 3])


def test_refusals() -> None:
    kernel = _kernel("kendall")
    counts = np.ones((7, 5), dtype=np.int64)
    with pytest.raises(ValueError, match="shape"):
        histogram_sums(kernel, counts[:, :4], GRIDS["kendall"], secure=False)
    with pytest.raises(ValueError, match="strictly increasing"):
        histogram_sums(kernel, counts, [GRIDS["kendall"][0][::-1], GRIDS["kendall"][1]], secure=False)
    with pytest.raises(ValueError, match="codes"):
        histogram_sums(_kernel("auc"), np.ones((9, 2), dtype=np.int64), [GRIDS["auc"][0], np.array([0, 2])],
                       secure=False)
    with pytest.raises(ValueError, match="degree"):
        histogram_sums(_kernel("vus"), np.ones((7, 3), dtype=np.int64), GRIDS["vus"], secure=False, generic=True)
    with pytest.raises(ValueError, match="not symmetric"):
        histogram_sums(Ordered(), np.ones(4, dtype=np.int64), [np.arange(4)], secure=False)
    big = np.arange(GENERIC_MAX_CELLS + 1)
    with pytest.raises(ValueError, match=f"at most {GENERIC_MAX_CELLS} cells"):
        histogram_sums(_kernel("duplicate"), np.ones(big.size, dtype=np.int64), [big], secure=False, generic=True)
    with pytest.raises(TypeError, match="secure array"):
        histogram_sums(kernel, counts, GRIDS["kendall"], secure=True)


@pytest.mark.parametrize("total", [15, 16])
def test_a_large_grid_is_shared_in_slices_with_the_same_sum_and_check(monkeypatch: pytest.MonkeyPatch,
                                                                      total: int) -> None:
    """A grid beyond ``INPUT_CELLS`` cells (without the bit proof) is secret-shared a slice at a time: the same joint
    histogram, and a party whose counts miss its row count refused with the same line."""
    import secure.aggregation as aggregation
    from secure.errors import InputError
    from secure.histograms import checked_secure_histogram

    monkeypatch.setattr(aggregation, "INPUT_CELLS", 4)
    monkeypatch.setattr(aggregation, "NONNEGATIVE_MAX_ELEMENTS", 0)
    counts = np.arange(15, dtype=np.int64).reshape(3, 5) % 3

    async def run() -> list[int]:
        joint = await checked_secure_histogram(mpc.SecInt(32), counts, [total])
        assert joint.shape == (3, 5)
        return [int(v) for v in await mpc.output(list(joint.reshape(-1)))]

    if total == int(counts.sum()):
        assert mpc.run(run()) == counts.reshape(-1).tolist()
    else:
        with pytest.raises(InputError, match=r"^party 0: its histogram does not sum to its public row count "
                                             r"\(deviating party\); nothing is released$"):
            mpc.run(run())


@pytest.mark.parametrize("cells", [1, 10, 15, 35])
def test_kendall_in_blocks_of_rows_is_exact(monkeypatch: pytest.MonkeyPatch, cells: int) -> None:
    """The Kendall formula a block of ``FOLD_CELLS // columns`` rows at a time (1, 2, 3 or 7 rows of the 7 x 5
    grid, with a carry of the rows before): the sum over all pairs, plaintext and secure."""
    kernel, grids = _kernel("kendall"), GRIDS["kendall"]
    cells_of_rows, values = _sample(grids, 60, 8)
    counts = _histogram(grids, cells_of_rows)
    monkeypatch.setattr(histograms, "FOLD_CELLS", cells)
    assert list(histogram_sums(kernel, counts, grids, secure=False)) == list(_brute(kernel, values))
    assert _secure_sums(kernel, counts, grids, generic=False) == list(_brute(kernel, values))


@pytest.mark.parametrize("name", ["kendall", "auc"])
@pytest.mark.parametrize("fold_cells, proof", [(1, False), (10, False), (35, False), (4096, True)])
def test_streamed_sums_a_block_of_rows_at_a_time_are_exact(monkeypatch: pytest.MonkeyPatch, name: str,
                                                           fold_cells: int, proof: bool) -> None:
    """The streamed sums (each block of grid rows secret-shared, summed and folded in, then dropped): the sums over all
    pairs (and AUC's positives), with blocks of ``FOLD_CELLS // columns`` rows (Kendall's 7 x 5 grid: 1, 2 or 7 rows;
    AUC's 9 x 2: 1, 5 or 9) or, with the bit proof, the checked grid in one block; no folded block exceeds
    ``FOLD_CELLS`` cells (or the grid)."""
    import secure.aggregation as aggregation

    kernel, grids = _kernel(name), GRIDS[name]
    cells_of_rows, values = _sample(grids, 60, 9)
    counts = _histogram(grids, cells_of_rows)
    monkeypatch.setattr(histograms, "FOLD_CELLS", fold_cells)
    monkeypatch.setattr(aggregation, "NONNEGATIVE_MAX_ELEMENTS", 1 << 19 if proof else 0)
    sizes: list[int] = []
    fold_class = histograms._FOLDS[name]
    fold = fold_class.__call__

    def recorded(self: Any, block: Any) -> None:
        sizes.append(int(block.size))
        fold(self, block)

    monkeypatch.setattr(fold_class, "__call__", recorded)

    async def run() -> list[int]:
        sums, positives = await histograms.streamed_histogram_sums(kernel, mpc.SecInt(32), counts, [60], grids)
        return [int(v) for v in await mpc.output(sums + ([] if positives is None else [positives]))]

    rows, columns = counts.shape
    expected = list(_brute(kernel, values)) + ([int(counts[:, 1].sum())] if name == "auc" else [])
    assert mpc.run(run()) == expected
    step = rows if proof else max(1, fold_cells // columns)
    assert sizes == [columns * min(step, rows - start) for start in range(0, rows, step)]


def test_streamed_sums_refuse_counts_off_the_row_count_and_other_kernels() -> None:
    """A party whose streamed counts do not sum to its public rows is refused with the histogram's line (after the
    last block, before anything is opened); a kernel without a formula over blocks of rows is refused."""
    from secure.errors import InputError

    counts = _histogram(GRIDS["kendall"], _sample(GRIDS["kendall"], 30, 4)[0])
    with pytest.raises(InputError, match=r"^party 0: its histogram does not sum to its public row count "
                                         r"\(deviating party\); nothing is released$"):
        mpc.run(histograms.streamed_histogram_sums(_kernel("kendall"), mpc.SecInt(32), counts, [31],
                                                   GRIDS["kendall"]))
    with pytest.raises(ValueError, match="no formula over blocks of rows"):
        mpc.run(histograms.streamed_histogram_sums(_kernel("gini"), mpc.SecInt(32), np.ones(8, dtype=np.int64), [8],
                                                   GRIDS["gini"]))
