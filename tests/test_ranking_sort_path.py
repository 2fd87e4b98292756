"""The sort path (issue 13): AUC sums by one secure sort with equality runs, Gini by one sort.

Single-process MPyC (m = 1) for the logic; the benchmark scenario once with -M3.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mpyc.runtime import mpc
from sklearn.metrics import roc_auc_score

from conftest import run_parties
from secure.ranking import (sort_by_stages, sort_costs, sorted_auc_sums, sorted_auc_sums_plain, sorted_gini_sum,
                            sorted_gini_sum_plain, sorting_stages, twice_mann_whitney)


def _brute_twice_u(scores: np.ndarray, labels: np.ndarray) -> int:
    """2U over all positive-negative pairs: 2 when the positive is higher, 1 on a tie."""
    positives, negatives = scores[labels == 1], scores[labels == 0]
    return int(2 * (positives[:, None] > negatives[None, :]).sum() + (positives[:, None] == negatives[None, :]).sum())


def _brute_gini(values: np.ndarray) -> int:
    return sum(abs(int(a) - int(b)) for i, a in enumerate(values) for b in values[i + 1:])


def _cases() -> dict[str, tuple[np.ndarray, np.ndarray, int]]:
    """name -> (scores, labels, width bits of the scores)."""
    generator = np.random.default_rng(1313)
    many_ties = generator.integers(0, 5, 61), generator.integers(0, 2, 61)
    no_ties = generator.permutation(200)[:45], generator.integers(0, 2, 45)
    single = generator.integers(0, 9, 30), np.eye(1, 30, 7, dtype=np.int64)[0]
    single_negative = generator.integers(0, 9, 30), 1 - np.eye(1, 30, 3, dtype=np.int64)[0]
    return {"many ties": (*many_ties, 3), "all tied": (np.full(33, 6), generator.integers(0, 2, 33), 3),
            "no ties": (*no_ties, 8), "single positive": (*single, 4), "single negative": (*single_negative, 4),
            "two rows": (np.array([5, 5]), np.array([1, 0]), 3)}


CASES = _cases()


def _secure_sums(scores: np.ndarray, labels: np.ndarray, bits: int, length: int) -> tuple[list[int], list[int]]:
    """(sorted_auc_sums, twice_mann_whitney) opened, on SecInt(length), comparisons at ``bits``."""
    secint = mpc.SecInt(length)

    async def both() -> tuple[list[int], list[int]]:
        one = await sorted_auc_sums(secint.array(scores), secint.array(labels), bits=bits)
        two = await twice_mann_whitney(secint.array(scores), secint.array(labels))
        return ([int(v) for v in await mpc.output(list(one))], [int(v) for v in await mpc.output(list(two))])

    return mpc.run(both())


@pytest.mark.parametrize("name", list(CASES))
def test_one_sort_auc_sums_equal_sklearn_and_the_two_sorts(name: str) -> None:
    scores, labels, width_bits = CASES[name]
    one, two = _secure_sums(scores, labels, width_bits + 2, 32)
    expected = _brute_twice_u(scores, labels)
    assert one == [expected, int(labels.sum())]
    assert two == one
    positives, negatives = int(labels.sum()), len(labels) - int(labels.sum())
    if positives and negatives:
        auc = roc_auc_score(labels, scores)
        assert one[0] == pytest.approx(auc * positives * negatives * 2, abs=1e-9)


def test_one_sort_on_a_type_much_longer_than_the_keys() -> None:
    scores, labels, width_bits = CASES["many ties"]
    one, two = _secure_sums(scores, labels, width_bits + 2, 120)
    assert one == two == [_brute_twice_u(scores, labels), int(labels.sum())]


def test_fine_scores_at_sixteen_bits() -> None:
    generator = np.random.default_rng(16)
    labels = generator.integers(0, 2, 90)
    scores = np.rint(np.clip(0.4 + 0.3 * labels + generator.normal(0, 0.3, 90), 0, 1) * 2 ** 16).astype(np.int64)
    one, two = _secure_sums(scores, labels, 19, 48)  # scores in [0, 2^16]: 17 bits, keys 19 bits signed
    assert one == two == [_brute_twice_u(scores, labels), int(labels.sum())]
    assert one[0] == pytest.approx(roc_auc_score(labels, scores) * labels.sum() * (90 - labels.sum()) * 2, abs=1e-6)


@pytest.mark.parametrize("name", ["many ties", "all tied", "no ties", "single positive"])
def test_gini_sum_by_one_sort_equals_all_pairs(name: str) -> None:
    values, _, width_bits = CASES[name]
    secint = mpc.SecInt(64)

    async def gini() -> int:
        return int(await mpc.output(await sorted_gini_sum(secint.array(values), bits=width_bits + 1)))

    assert mpc.run(gini()) == _brute_gini(values)


@pytest.mark.parametrize("name", list(CASES))
def test_plaintext_mirrors_equal_brute_force(name: str) -> None:
    scores, labels, _ = CASES[name]
    assert sorted_auc_sums_plain(scores, labels) == (_brute_twice_u(scores, labels), int(labels.sum()))
    assert sorted_gini_sum_plain(scores) == _brute_gini(scores)


def test_plaintext_mirror_refuses_bad_labels() -> None:
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        sorted_auc_sums_plain([1, 2, 3], [0, 2, 1])


def test_sort_by_stages_orders_columns_by_a_key_row() -> None:  # as sorted_auc_sums sorts
    generator = np.random.default_rng(5)
    table = np.vstack([generator.integers(0, 100, 37), np.arange(37)])
    secint = mpc.SecInt(64)

    async def sort() -> np.ndarray:
        ordered = await sort_by_stages(secint.array(table), lambda block: block[..., 0:1, :], bits=8)
        return np.asarray(await mpc.output(ordered))

    ordered = mpc.run(sort())
    assert np.array_equal(ordered[0], np.sort(table[0]))
    assert sorted(ordered[1].tolist()) == list(range(37))                    # a permutation of the columns
    assert np.array_equal(table[0][ordered[1].astype(int)], ordered[0])      # each column moved whole


def test_bits_outside_the_type_are_refused() -> None:
    secint = mpc.SecInt(16)
    with pytest.raises(ValueError, match=r"bits must lie in \[2, 16\]"):
        mpc.run(sorted_auc_sums(secint.array(np.arange(4)), secint.array(np.array([0, 1, 0, 1])), bits=17))
    with pytest.raises(ValueError, match="at least 2 rows"):
        mpc.run(sorted_auc_sums(secint.array(np.arange(1)), secint.array(np.array([1])), bits=5))


def test_comparisons_run_at_bits_and_match_the_cost_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every secure sign of the sort path uses l = bits; their counts are those of sort_costs."""
    calls: list[tuple[Any, bool, bool, int]] = []
    converted: list[int] = []
    original, original_convert = mpc.np_sgn, mpc.convert

    def recording(a: Any, l: Any = None, LT: bool = False, EQ: bool = False) -> Any:  # noqa: E741
        calls.append((l, LT, EQ, a.size))
        return original(a, l=l, LT=LT, EQ=EQ)

    def recording_convert(x: Any, t_type: Any) -> Any:
        converted.append(len(x))
        return original_convert(x, t_type)

    monkeypatch.setattr(mpc, "np_sgn", recording)
    monkeypatch.setattr(mpc, "convert", recording_convert)
    scores, labels, width_bits = CASES["many ties"]
    n, bits = len(scores), width_bits + 2
    one, _ = _secure_sums(scores, labels, bits, 64)
    assert one[0] == _brute_twice_u(scores, labels)
    sort_path = calls[:len(sorting_stages(n)) + 1]   # the one-sort path runs first in _secure_sums
    costs = sort_costs(n, bits)
    assert {l for l, _, _, _ in sort_path} == {bits}
    assert sum(size for _, lt, _, size in sort_path if lt) == costs.comparisons
    assert sum(size for _, _, eq, size in sort_path if eq) == costs.equality_tests == n - 1
    assert sum(converted) == costs.conversions == 3 * n   # SecInt(64) in, SecInt(max(bits, 8)) sort, back
    gini = sort_costs(n, bits, statistic="gini")
    assert (gini.comparisons, gini.equality_tests, gini.conversions, gini.rounds) == (
        costs.comparisons, 0, 2 * n, len(sorting_stages(n)) + 2)
    with pytest.raises(ValueError, match="unknown statistic"):
        sort_costs(n, bits, statistic="kendall")


@pytest.mark.multiparty
def test_bench_sort_quick_with_three_parties() -> None:
    runs = run_parties([["--quick"]] * 3, module="bench_sort", timeout=180.0)
    assert [run.code for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    table = runs[0].stdout
    for step in ("bare np_sort", "AUC one sort", "Gini one sort", "AUC two sorts", "ratio"):
        assert step in table
    assert table.count(", exact") == 3 and "NOT EXACT" not in table
