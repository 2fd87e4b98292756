"""Kernels: plaintext functions against independent references, secure functions against plaintext."""
from __future__ import annotations

import numpy as np
import pytest
from mpyc.runtime import mpc

import references
from conftest import small_table
from dp.sampling import all_tuples
from secure.kernels import KERNELS, get_kernel
from secure.intake import ColumnSpec


def _fixed(values: np.ndarray, specs: list[ColumnSpec]) -> np.ndarray:
    return np.column_stack([spec.encode(values[:, j]) for j, spec in enumerate(specs)])


CASES = {
    # statistic: (columns of small_table, specs, reference on the float columns)
    "kendall": (["sysBP", "diaBP"], [ColumnSpec("sysBP", 80, 300, 8), ColumnSpec("diaBP", 40, 160, 8)],
                lambda v: references.kendall_tau_a(v[:, 0], v[:, 1])),
    "gini": (["totChol"], [ColumnSpec("totChol", 100, 700, 0)], lambda v: references.gini_mean_difference(v[:, 0])),
    "auc": (["score", "TenYearCHD"], [ColumnSpec("score", 0, 1, 8), ColumnSpec("TenYearCHD", 0, 1, 0, (0, 1))],
            lambda v: references.auc(v[:, 0], v[:, 1])),
    "duplicate": (["age"], [ColumnSpec("age", 20, 90, 0)], lambda v: references.duplicate_ratio(v[:, 0])),
    "rand": (["clusterA", "clusterB"], [ColumnSpec("clusterA", 0, 2, 0), ColumnSpec("clusterB", 0, 2, 0)],
             lambda v: references.rand_index(v[:, 0], v[:, 1])),
    "vus": (["score", "grade"], [ColumnSpec("score", 0, 1, 8), ColumnSpec("grade", 0, 2, 0, (0, 1, 2))],
            lambda v: references.volume_under_surface(v[:, 0], v[:, 1])),
}


def _case(name: str, rows: int = 40):
    header, table = small_table(rows)
    columns, specs, reference = CASES[name]
    values = table[:, [header.index(c) for c in columns]]
    kernel = get_kernel(name, precision=specs[0].precision)
    fixed = kernel.encode(_fixed(values, specs))
    return kernel, specs, values, fixed, reference


@pytest.mark.parametrize("name", sorted(CASES))
def test_plaintext_kernel_over_all_tuples_equals_reference(name: str) -> None:
    kernel, specs, values, fixed, reference = _case(name)
    tuples = all_tuples(len(fixed), kernel.degree)
    outputs = kernel.plaintext([fixed[tuples[:, j]] for j in range(kernel.degree)])
    widths = [s.width for s in specs]
    estimate = kernel.estimate([int(o.sum()) for o in outputs], len(tuples), widths)
    assert estimate == pytest.approx(reference(values), abs=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_stay_within_declared_bounds(name: str) -> None:
    kernel, specs, _, fixed, _ = _case(name)
    tuples = all_tuples(len(fixed), kernel.degree)
    outputs = kernel.plaintext([fixed[tuples[:, j]] for j in range(kernel.degree)])
    for out, declared in zip(outputs, kernel.outputs([s.width for s in specs])):
        assert declared.low <= out.min() and out.max() <= declared.high


@pytest.mark.parametrize("name", sorted(CASES))
def test_secure_kernel_equals_plaintext(name: str) -> None:
    kernel, specs, _, fixed, _ = _case(name, rows=14)
    tuples = all_tuples(len(fixed), kernel.degree)
    parts = [fixed[tuples[:, j]] for j in range(kernel.degree)]
    expected = kernel.plaintext(parts)
    secint = mpc.SecInt(32)
    bits = kernel.comparison_bits([s.width for s in specs])

    async def evaluate() -> list[np.ndarray]:
        shared = [secint.array(part) for part in parts]
        return [await mpc.output(out) for out in kernel.secure(shared, bits)]

    got = mpc.run(evaluate())
    for out, want in zip(got, expected):
        np.testing.assert_array_equal(np.asarray(out, dtype=np.int64), want)


def test_kernels_are_symmetric_in_tuple_order() -> None:
    for name in CASES:
        kernel, specs, _, fixed, _ = _case(name, rows=12)
        tuples = all_tuples(len(fixed), kernel.degree)
        base = kernel.plaintext([fixed[tuples[:, j]] for j in range(kernel.degree)])
        reversed_parts = [fixed[tuples[:, j]] for j in reversed(range(kernel.degree))]
        for a, b in zip(base, kernel.plaintext(reversed_parts)):
            np.testing.assert_array_equal(a, b)


def test_unknown_statistic_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown statistic 'median'"):
        get_kernel("median")
    assert set(KERNELS) == {"kendall", "gini", "auc", "duplicate", "rand", "vus"}
