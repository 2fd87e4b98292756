"""The sort's cost in closed form (issue 25, item 3): Batcher's network is counted, never built, when planning.

``secure.ranking.sorting_network_size`` must equal the network ``sorting_stages`` builds (the one ``mpc.np_sort``
runs) for every small ``n``, Batcher's formula at powers of two for every ``n`` the planner can see, and planning or
counting the comparison leakage of ``10^7`` rows must not call the network builder at all.
"""
from __future__ import annotations

import tracemalloc

import pytest

import secure.ranking as ranking
from secure.columns import ColumnSpec
from secure.kernels import get_kernel
from secure.ranking import sort_costs, sorting_network_size, sorting_stages


def _built(n: int) -> tuple[int, int]:
    stages = sorting_stages(n)
    return sum(len(lower) for lower, _ in stages), len(stages)


@pytest.mark.parametrize("n", [*range(0, 600), 1023, 1024, 1025, 2047, 2559, 3001, 4096, 4097, 6000])
def test_the_closed_form_counts_the_built_network(n: int) -> None:
    assert sorting_network_size(n) == _built(n)


def test_every_stage_of_the_network_compares_something() -> None:
    """``stages`` is also the depth only if no stage is empty (the closed form says ``t (t + 1) / 2`` stages)."""
    for n in range(2, 600):
        assert all(len(lower) for lower, _ in sorting_stages(n)), n


@pytest.mark.parametrize("t", range(1, 64))
def test_powers_of_two_give_batchers_formula(t: int) -> None:
    """Knuth 5.3.4 eq. (5): ``(t^2 - t + 4) 2^(t-2) - 1`` comparators in ``t (t + 1) / 2`` stages for ``n = 2^t``."""
    assert sorting_network_size(1 << t) == (((t * t - t + 4) << t) // 4 - 1, t * (t + 1) // 2)


def test_the_count_grows_like_n_log_squared_and_is_monotone() -> None:
    """Between powers of two the count is monotone in ``n`` (a network on more inputs has all the comparators of one
    on fewer, truncated) and stays below the next power's; a mutation of a bit test breaks it."""
    previous = 0
    for n in range(2, 5000, 7):
        count, _ = sorting_network_size(n)
        assert previous <= count <= sorting_network_size(1 << (n - 1).bit_length())[0]
        previous = count


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="n must be a non-negative integer, got -1"):
        sorting_network_size(-1)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make building the network an error for the test's duration."""

    def refuse(n: int) -> list:
        raise AssertionError(f"built the sorting network of {n} positions")

    monkeypatch.setattr(ranking, "sorting_stages", refuse)


@pytest.mark.usefixtures("no_network")
@pytest.mark.parametrize("rows", [10 ** 3, 10 ** 5, 10 ** 7])
def test_planning_the_sort_builds_no_network(rows: int) -> None:
    """The AUC and Gini plans at any ``n`` (the sort path is costed even when the histogram path wins) and the
    comparison leakage's counts take the closed form; planning ``10^7`` rows holds well under a megabyte of Python
    objects (building the network held about 11 GB)."""
    from dp.comparison_leakage import sort_path_openings  # noqa: F401  (imported: the module must not build it)
    from dp.umpc.planner import plan_path
    from secure.leakage import sort_openings

    auc = get_kernel("auc", precision=16)
    specs = (ColumnSpec("s", 0.0, 1.0, 16), ColumnSpec("label", 0, 1, 0))
    plan_path(auc, specs, rows=10, parties=3)  # the modules the plan imports, before memory is traced
    tracemalloc.start()
    try:
        plan = plan_path(auc, specs, rows=rows, parties=3, choice="auto")
        gini = plan_path(get_kernel("gini", precision=16), specs[:1], rows=rows, parties=3)
        openings = sort_openings("auc", rows, bits=19, type_bits=64)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert plan.costs["sort"].available and gini.costs["sort"].available
    assert openings.comparisons == sorting_network_size(rows)[0] == sort_costs(rows, 19).comparisons
    assert peak < 1 << 20
