"""Complete U-statistics from the parties' joint histogram on the declared grid (no secure comparison).
Each party counts its rows on the public grid in the clear, the count vectors are summed securely
(optionally checked against each party's public row count), and every sum over all unordered tuples is
a polynomial in the joint histogram, evaluated by one formula for plaintext and secure arrays
(Sinh & Ramon, Def. 2.1, eq. 1, kernels of App. A.5).
Threat model: passive, static, at most ``t < m/2`` corrupted parties; only each party's count vector
is input (secret-shared), the grid's shape is public, no comparison is done, and only the (noised, by
the caller) sums are opened.  Details: docs/secure_layer.md."""
from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any, Callable, ContextManager, Sequence

import numpy as np

from secure.kernels import KERNELS, Kernel

__all__ = ["local_histogram", "checked_secure_histogram", "histogram_sums", "histogram_value_bound",
           "GENERIC_MAX_CELLS", "special_form", "streamed_histogram_sums", "STREAMED", "FOLD_CELLS"]

SecureArray = Any  # an MPyC secure NumPy array

#: Largest flattened grid the generic degree-2 path accepts (``G^2`` table entries per output; docs/secure_layer.md).
GENERIC_MAX_CELLS = 4096

#: table entries evaluated per block by the generic path (bounds its memory to a few tens of MB)
_BLOCK_ENTRIES = 1 << 20

def special_form(kernel: Kernel) -> str | None:
    """Name of the kernel's closed histogram formula, or ``None`` (then only the generic path applies).
    Dispatch is on the exact built-in class, so a user's kernel or subclass gets the generic path."""
    return kernel.name if KERNELS.get(kernel.name) is type(kernel) else None


def local_histogram(cells: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Int64 counts (shape ``tuple(sizes)``) of this party's rows on the grid, local and in the clear: ``cells`` are
    ``(rows, d)`` grid indices, column ``j`` in ``0 .. sizes[j] - 1``; ``sizes`` the public grid sizes.
    :raise ValueError: for a bad shape, non-integer indices, or an index outside its grid."""
    shape = tuple(int(s) for s in sizes)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"grid sizes must be positive integers, got {list(sizes)}")
    cells = np.asarray(cells)
    if cells.ndim == 1 and len(shape) == 1:
        cells = cells.reshape(-1, 1)
    if cells.ndim != 2 or cells.shape[1] != len(shape):
        raise ValueError(f"cells must have shape (rows, {len(shape)}), got {cells.shape}")
    if cells.size and not np.issubdtype(cells.dtype, np.integer):
        raise ValueError(f"cells must be integer grid indices, got dtype {cells.dtype}")
    cells = cells.astype(np.int64, copy=False)
    for j, size in enumerate(shape):
        column = cells[:, j]
        if column.size and (int(column.min()) < 0 or int(column.max()) >= size):
            raise ValueError(f"grid index of column {j} must lie in 0..{size - 1}")
    flat = np.ravel_multi_index(tuple(cells.T), shape)  # empty: no index, every count 0
    return np.bincount(flat, minlength=math.prod(shape)).astype(np.int64).reshape(shape)


#: grid cells (whole rows) per block secret-shared, summed and folded by :func:`streamed_histogram_sums`
FOLD_CELLS = 1 << 12


async def streamed_histogram_sums(kernel: Kernel, sectype: Any, local: np.ndarray, totals: Sequence[int],
                                  grid_values: Sequence[np.ndarray], *,
                                  phase: Callable[[str], ContextManager[None]] = lambda _: nullcontext()
                                  ) -> tuple[list[Any], Any]:
    """:func:`histogram_sums` of the joint histogram of every party's counts ``local``, checked as
    :func:`checked_secure_histogram` checks them, for a kernel of :data:`STREAMED` (Kendall, AUC), a block of
    :data:`FOLD_CELLS` grid cells at a time (phases ``histogram`` and ``sums``; docs/secure_layer.md).
    :return: the sums, and for AUC the secure number of positives (else ``None``).
    :raise secure.errors.InputError: as :func:`checked_secure_histogram`, after the last block.
    :raise ValueError: as :func:`histogram_sums`, or a kernel outside :data:`STREAMED`."""
    from secure.aggregation import counted_blocks

    form = special_form(kernel)
    if form not in STREAMED:
        raise ValueError(f"statistic '{kernel.name}' has no formula over blocks of rows (only {', '.join(STREAMED)})")
    counts = np.asarray(local, dtype=np.int64)
    _check_special(kernel, form, _grid_arrays(kernel, grid_values, counts.shape))
    ops = _SecureOps()
    ops.sectype = sectype
    fold, blocks = _FOLDS[form](ops), counted_blocks(sectype, counts, totals, what="histogram", cells=FOLD_CELLS)
    while True:
        with phase("histogram"):
            block = await anext(blocks, None)
        if block is None:
            return list(fold.sums()), fold.positives
        with phase("sums"):
            fold(block)


async def checked_secure_histogram(sectype: Any, local: np.ndarray, totals: Sequence[int]) -> SecureArray:
    """The joint histogram (MPyC secure array of the grid's shape): every party's counts ``local``
    (:func:`local_histogram`) summed as ``sectype`` (its bit length: :func:`histogram_value_bound`), refused at every
    party unless each party's counts sum to its public rows ``totals``.
    :raise secure.errors.InputError: ``party i: its histogram does not sum to its public row count
        (deviating party); nothing is released``, at every party.  Details: docs/secure_layer.md."""
    from secure.aggregation import sum_counted_vectors

    counts = np.asarray(local, dtype=np.int64)
    joint = await sum_counted_vectors(sectype, counts.reshape(-1), totals, what="histogram")
    return joint.reshape(counts.shape)


class _PlainOps:
    """Exact integer arithmetic on NumPy object arrays (Python ints: no int64 overflow)."""

    def prepare(self, counts: Any) -> np.ndarray:
        array = np.asarray(counts)
        if array.size and not np.issubdtype(array.dtype, np.integer) and array.dtype != object:
            raise ValueError(f"counts must be integers, got dtype {array.dtype}")
        result = array.astype(object)
        if array.size and min(int(v) for v in result.ravel()) < 0:
            raise ValueError("counts must be non-negative")
        return result

    def cumsum(self, a: Any, axis: int = 0) -> Any:
        return np.cumsum(a, axis=axis)

    def total(self, a: Any, axis: int | None = None) -> Any:
        return int(np.sum(a)) if axis is None else np.sum(a, axis=axis)

    def concat(self, arrays: Sequence[Any]) -> Any:
        return np.concatenate(list(arrays))

    def dot(self, a: Any, b: Any) -> Any:
        """Inner product of two vectors (secure: one resharing)."""
        return int(np.dot(a, b)) if len(a) else 0

    def mul(self, a: Any, b: Any) -> Any:
        """Product of two scalars (secure: one resharing)."""
        return int(a) * int(b)

    def row_dots(self, left: Sequence[Any], right: Sequence[Any]) -> Any:
        """``sum_k left[k] * right[k]`` elementwise over vectors (secure: one resharing per element)."""
        return sum((a * b for a, b in zip(left, right)), np.zeros(len(left[0]), dtype=object))

    def public(self, values: np.ndarray) -> Any:
        return np.asarray(values).astype(object)

    def public_matvec(self, table: np.ndarray, h: Any) -> Any:
        return table.astype(object) @ h

    def public_dot(self, public: np.ndarray, h: Any) -> Any:
        return int(np.dot(public.astype(object), h))

    def half(self, x: Any) -> Any:
        value = int(x)
        if value % 2:
            raise AssertionError("an odd value was halved: the histogram formula is wrong")
        return value // 2

    def zero(self) -> Any:
        return 0


class _SecureOps:
    """The same operations on MPyC secure arrays (function-local import: no argv parsing on import)."""

    def __init__(self) -> None:
        from mpyc.runtime import mpc

        self.mpc = mpc
        self.sectype: Any = None

    def prepare(self, counts: Any) -> Any:
        if not isinstance(counts, self.mpc.SecureArray):
            raise TypeError(f"secure=True needs an MPyC secure array of counts, got {type(counts).__name__}")
        self.sectype = type(counts).sectype
        return counts

    def cumsum(self, a: Any, axis: int = 0) -> Any:
        return self.mpc.np_cumsum(a, axis=axis)

    def total(self, a: Any, axis: int | None = None) -> Any:
        return self.mpc.np_sum(a, axis=axis)

    def concat(self, arrays: Sequence[Any]) -> Any:
        return self.mpc.np_concatenate(list(arrays))

    def dot(self, a: Any, b: Any) -> Any:
        return self.mpc.np_matmul(a, b) if a.shape[0] else self.zero()

    def mul(self, a: Any, b: Any) -> Any:
        return a * b

    def row_dots(self, left: Sequence[Any], right: Sequence[Any]) -> Any:
        mpc = self.mpc
        size, width = left[0].shape[0], len(left)
        stacked_left = mpc.np_stack(list(left), axis=1).reshape(size, 1, width)
        stacked_right = mpc.np_stack(list(right), axis=1).reshape(size, width, 1)
        return mpc.np_matmul(stacked_left, stacked_right).reshape(size)

    def public(self, values: np.ndarray) -> Any:
        return np.asarray(values, dtype=np.int64)

    def public_matvec(self, table: np.ndarray, h: Any) -> Any:
        return self.mpc.np_matmul(table, h)

    def public_dot(self, public: np.ndarray, h: Any) -> Any:
        # np_sum, not np_matmul: a public-by-secure matmul of two vectors yields a 0-d field array
        # inside a secure scalar, which mpc.output of a list then mishandles
        return self.mpc.np_sum(h * np.asarray(public, dtype=np.int64))

    def half(self, x: Any) -> Any:
        # exact: the true value is an even integer, and 1/2 is a field element (odd prime modulus)
        return x / 2

    def zero(self) -> Any:
        return self.sectype(0)


_Ops = Any  # _PlainOps or _SecureOps


def _gini(ops: _Ops, counts: Any, values: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """Gini mean difference (App. A.5.2, eq. 9): ``sum_{i<j} |x_i - x_j|``; one inner product (docs/secure_layer.md)."""
    v = ops.public(values[0])
    below = ops.cumsum(counts) - counts
    weighted = counts * v
    below_sum = ops.cumsum(weighted) - weighted
    return (ops.dot(counts, below * v - below_sum),)


class _AucRows:
    """AUC numerator and denominator (App. A.5.3, eq. 10), ties 1/2, fed the grid's score rows in order, a block at a
    time: ``carry`` holds the negatives below the block, so a block's term needs only the block (docs/secure_layer.md).
    """

    def __init__(self, ops: _Ops) -> None:
        self.ops, self.twice_u, self.carry, self.positives = ops, ops.zero(), None, ops.zero()

    def __call__(self, block: Any) -> _AucRows:
        ops, negatives, positives = self.ops, block[:, 0], block[:, 1]
        through = ops.cumsum(negatives)  # the negatives up to each score of the block, and those below it
        if self.carry is not None:
            through = through + self.carry
        self.twice_u = self.twice_u + ops.dot(positives, 2 * through - negatives)
        self.positives = self.positives + ops.total(positives)
        self.carry = through[-1:]
        return self

    def sums(self) -> tuple[Any, ...]:
        return self.twice_u, self.ops.mul(self.positives, self.ops.total(self.carry))


class _KendallRows:
    """Kendall's concordance sum (App. A.5.1, eq. 8) fed the grid's rows in order, a block at a time: ``carry`` holds
    the column sums of every row before the block, so a block's term needs only the block (docs/secure_layer.md)."""

    positives: Any = None  # no count of positives (the AUC's fold has one)

    def __init__(self, ops: _Ops) -> None:
        self.ops, self.total, self.carry = ops, ops.zero(), None

    def __call__(self, block: Any) -> None:
        ops = self.ops
        through = ops.cumsum(block, axis=0)  # per column: the rows up to each row of the block, and those before it
        first = 1 if self.carry is None else 0  # the grid's first row has no row before it: its term is 0
        if self.carry is not None:
            through = through + self.carry
        before = (through - block)[first:]
        lower = ops.cumsum(before, axis=1)
        difference = 2 * lower - before - lower[:, -1:]
        self.total = self.total + ops.dot(block[first:].reshape(-1), difference.reshape(-1))
        self.carry = through[-1:, :]

    def sums(self) -> tuple[Any, ...]:
        return (self.total,)


def _kendall(ops: _Ops, counts: Any, values: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """Kendall's concordance sum (App. A.5.1, eq. 8); one inner product per block of rows (docs/secure_layer.md)."""
    rows, columns = counts.shape
    fold, step = _KendallRows(ops), max(1, FOLD_CELLS // columns)  # a block of rows at a time (memory)
    for start in range(0, rows if columns > 1 else 0, step):
        fold(counts[start:start + step, :])
    return fold.sums()


def _duplicate(ops: _Ops, counts: Any, values: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """Equal pairs (Sinh & Ramon §6.2.3): ``(H . H - n) / 2``; one inner product (docs/secure_layer.md)."""
    return (ops.half(ops.dot(counts, counts) - ops.total(counts)),)


def _rand(ops: _Ops, counts: Any, values: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """Agreeing pairs of two clusterings (App. A.5.4) from the contingency table; one inner product (docs/secure_layer.md)."""
    rows, cols = ops.total(counts, axis=1), ops.total(counts, axis=0)
    flat = counts.reshape(-1)
    everything = ops.total(rows.reshape(1, -1), axis=1)  # a 1-element vector
    left = ops.concat([2 * flat, -1 * rows, -1 * cols, everything])
    right = ops.concat([flat, rows, cols, everything])
    return (ops.half(ops.dot(left, right) - ops.total(counts)),)


def _vus(ops: _Ops, counts: Any, values: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """VUS numerator ``sum 12 w`` and denominator ``n0 n1 n2`` (degree 3; ties as Nakas & Yiannoutsos); two rounds
    (docs/secure_layer.md)."""
    zero, one, two = counts[:, 0], counts[:, 1], counts[:, 2]
    below = 2 * ops.cumsum(zero) - zero
    above = 2 * ops.total(two) - 2 * ops.cumsum(two) + two
    weights = ops.row_dots([3 * below, -1 * zero], [above, two])
    pairs = ops.mul(ops.total(zero), ops.total(one))
    return ops.dot(one, weights), ops.mul(pairs, ops.total(two))


#: the formulas that fold over blocks of the grid's rows, in order (:func:`streamed_histogram_sums`)
_FOLDS: dict[str, type[_KendallRows] | type[_AucRows]] = {"kendall": _KendallRows, "auc": _AucRows}
#: built-in kernels whose histogram is streamed a block of grid rows at a time
STREAMED = tuple(_FOLDS)

_FORMULAS = {"gini": _gini, "auc": lambda ops, counts, _: _AucRows(ops)(counts).sums(), "kendall": _kendall,
             "duplicate": _duplicate, "rand": _rand, "vus": _vus}

#: per special form: which columns must be strictly increasing (ordered), and which are label codes
_ORDERED = {"gini": (0,), "auc": (0,), "kendall": (0, 1), "duplicate": (), "rand": (), "vus": (0,)}


def _grid_arrays(kernel: Kernel, grid_values: Sequence[np.ndarray], shape: tuple[int, ...]) -> list[np.ndarray]:
    if len(grid_values) != len(kernel.columns):
        raise ValueError(f"statistic '{kernel.name}' reads {len(kernel.columns)} columns "
                         f"({', '.join(kernel.columns)}), got grid values for {len(grid_values)}")
    arrays = []
    for j, values in enumerate(grid_values):
        array = np.asarray(values)
        if array.ndim != 1 or not array.size:
            raise ValueError(f"grid values of column '{kernel.columns[j]}' must be a non-empty vector")
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"grid values of column '{kernel.columns[j]}' must be fixed-point integers, "
                             f"got dtype {array.dtype}")
        arrays.append(array.astype(np.int64))
    expected = tuple(len(a) for a in arrays)
    if tuple(shape) != expected:
        raise ValueError(f"the histogram has shape {tuple(shape)} but the grid of "
                         f"({', '.join(kernel.columns)}) has shape {expected}")
    return arrays


def _check_special(kernel: Kernel, form: str, arrays: Sequence[np.ndarray]) -> None:
    for j in _ORDERED[form]:
        if len(arrays[j]) > 1 and not bool(np.all(np.diff(arrays[j]) > 0)):
            raise ValueError(f"grid values of column '{kernel.columns[j]}' must be strictly increasing")
    for j, codes in kernel.categories.items():
        if list(arrays[j]) != list(codes):
            raise ValueError(f"the grid of label column '{kernel.columns[j]}' must be the codes "
                             f"{list(codes)}, got {arrays[j].tolist()}")
    for j in kernel.categorical:
        if len(np.unique(arrays[j])) != len(arrays[j]):
            raise ValueError(f"grid values of categorical column '{kernel.columns[j]}' must be distinct")


def _widths(arrays: Sequence[np.ndarray]) -> list[int]:
    """Fixed-point widths of the columns: the spread of each grid (``ColumnSpec.width`` on its grid)."""
    return [int(a.max()) - int(a.min()) for a in arrays]


def _generic(kernel: Kernel, ops: _Ops, counts: Any, arrays: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """Any symmetric degree-2 kernel from its public table ``F``: ``(H . (F H) - diag(F) . H) / 2`` (Sinh & Ramon,
    Def. 2.1 over a finite grid; docs/secure_layer.md)."""
    if kernel.degree != 2:
        raise ValueError(f"the generic histogram path is for degree-2 kernels; statistic '{kernel.name}' "
                         f"has degree {kernel.degree}")
    cells = math.prod(len(a) for a in arrays)
    if cells > GENERIC_MAX_CELLS:
        raise ValueError(f"the grid of statistic '{kernel.name}' has {cells} cells; the generic histogram "
                         f"path evaluates a table of cells^2 entries and accepts at most "
                         f"{GENERIC_MAX_CELLS} cells (declare a coarser grid, or use sampled tuples)")
    outputs = kernel.outputs(_widths(arrays))
    mesh = np.meshgrid(*arrays, indexing="ij")  # the encoded row of every cell of the grid, in C (ravel) order
    encoded = np.asarray(kernel.encode(np.stack([m.reshape(-1) for m in mesh], axis=1)), dtype=np.int64)
    flat = counts.reshape(-1)
    diagonal = [np.asarray(o, dtype=np.int64) for o in kernel.plaintext([encoded, encoded])]
    block = max(1, _BLOCK_ENTRIES // cells)
    mapped: list[list[Any]] = [[] for _ in outputs]
    for start in range(0, cells, block):
        stop = min(cells, start + block)
        first = np.repeat(encoded[start:stop], cells, axis=0)
        second = np.tile(encoded, (stop - start, 1))
        forward = kernel.plaintext([first, second])
        backward = kernel.plaintext([second, first])
        if len(forward) != len(outputs):
            raise ValueError(f"statistic '{kernel.name}' declares {len(outputs)} outputs but its plaintext "
                             f"returns {len(forward)}")
        for index, (out, there, back) in enumerate(zip(outputs, forward, backward)):
            table = np.asarray(there, dtype=np.int64).reshape(stop - start, cells)
            if not np.array_equal(table, np.asarray(back, dtype=np.int64).reshape(stop - start, cells)):
                raise ValueError(f"statistic '{kernel.name}' is not symmetric on its grid: a U-statistic "
                                 f"kernel must give the same value for (a, b) and (b, a)")
            if int(table.min()) < out.low or int(table.max()) > out.high:
                raise ValueError(f"statistic '{kernel.name}' output '{out.name}' leaves its declared range "
                                 f"[{out.low}, {out.high}] on the grid")
            mapped[index].append(ops.public_matvec(table, flat))
    table_times_counts = [parts[0] if len(parts) == 1 else ops.concat(parts) for parts in mapped]
    return tuple(ops.half(ops.dot(flat, product) - ops.public_dot(diagonal[index], flat))
                 for index, product in enumerate(table_times_counts))


def histogram_sums(kernel: Kernel, counts: Any, grid_values: Sequence[np.ndarray], *, secure: bool,
                   generic: bool = False) -> tuple[Any, ...]:
    """Sums over ALL unordered ``k``-tuples of rows of each kernel output (at its integer scale), from the joint
    histogram ``counts`` (NumPy, or MPyC secure with ``secure``) over the product grid ``grid_values`` of
    ``kernel.columns``; the six built-in kernels have closed formulas, any other degree-2 kernel (or ``generic``)
    the table path.  Parameters: docs/secure_layer.md.
    :raise ValueError: grid and counts disagree, a grid that is not increasing / not the label codes,
        a degree-3 kernel without a closed form, or a generic grid beyond :data:`GENERIC_MAX_CELLS`."""
    ops = _SecureOps() if secure else _PlainOps()
    histogram = ops.prepare(counts)
    arrays = _grid_arrays(kernel, grid_values, tuple(histogram.shape))
    form = None if generic else special_form(kernel)
    if form is None:
        return _generic(kernel, ops, histogram, arrays)
    _check_special(kernel, form, arrays)
    return _FORMULAS[form](ops, histogram, arrays)


def histogram_value_bound(kernel: Kernel, rows: int, grid_values: Sequence[np.ndarray], *,
                          generic: bool = False) -> int:
    """Upper bound on ``|value|`` of every intermediate and final secure value, for ``rows`` rows.
    The secure integers only have to hold these values (no comparison); the caller adds the noise tail.
    Per-kernel bounds: docs/secure_layer.md."""
    if rows < 0:
        raise ValueError(f"rows must be non-negative, got {rows}")
    n = max(int(rows), 1)
    pairs = n * (n - 1) // 2
    arrays = [np.asarray(v, dtype=np.int64) for v in grid_values]
    form = None if generic else special_form(kernel)
    if form == "gini":
        largest = max(int(np.abs(arrays[0]).max()), 1)
        spread = int(arrays[0].max()) - int(arrays[0].min())
        return max(2 * n * largest, pairs * spread)
    closed = {"kendall": max(2 * n, pairs), "auc": max(2 * n, n * n // 2), "duplicate": n * n,
              "rand": 3 * n * n + n, "vus": max(3 * n * n, 12 * n ** 3 // 27)}
    if form is not None:
        return closed[form]
    largest = max(max(abs(o.low), abs(o.high)) for o in kernel.outputs(_widths(arrays)))
    return n * n * max(largest, 1)
