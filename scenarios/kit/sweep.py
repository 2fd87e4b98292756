"""One sweep harness for the paper reproductions (``python -m scenarios.papers.<name>``).

A paper scenario declares its grid (the axes' values, each an option with a default and a ``--quick``
value: :func:`axis`), a function that runs the grid (per point, or per Monte Carlo run of a point:
:func:`monte_carlo`) and returns :class:`Output` tables with their plots, and a report that prints its
tables.  :class:`Sweep` parses the common options once (``--runs``, ``--quick``, ``--results-dir``,
``--seed``, ``--os-noise``, ``--secure``: :func:`scenarios.kit.experiments.add_common_options`), runs
the party lifecycle, writes ``<name>.csv`` and ``<name>.png`` per output, prints the tables, the seed
and the page of ``docs/papers/`` where the paper's findings stand beside ours.

Threat model: the sweeps are simulated at party 0 on embedded or synthetic public data (exempt from the
privacy budget); the other parties agree on the parameters and the seed and, with ``--secure``, run the
protocol once on the MPyC path (:func:`scenarios.kit.experiments.finish_secure_checks`).
"""
from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario
from scenarios.kit.experiments import (
    CommonOptions, add_common_options, agree_seed, check_results_dir, common_options, exempt_spend,
    finish_secure_checks, noise_generator, parse_integer_list, parse_positive_list, progress, seed_note,
    summarize_runs, write_csv)

__all__ = ["Sweep", "Output", "axis", "points", "monte_carlo", "public_parameters"]


@dataclass(frozen=True)
class Output:
    """One table of a sweep: written to ``<name>.csv`` (``columns``; none: a figure only), drawn by
    ``plot(rows, png_path)``."""

    name: str
    columns: Sequence[str]
    rows: list[dict[str, Any]]
    plot: Callable[[list[dict[str, Any]], str], None] | None = None


def axis(text: str | None, option: str, *, default: Sequence[Any], quick: Sequence[Any], is_quick: bool,
         integers: tuple[int, int] | None = None) -> tuple[Any, ...]:
    """The values of one grid axis: ``--option A,B,...`` parsed (positive numbers, or integers in
    ``integers``), else the default (``quick`` with ``--quick``).

    :raise UsageError: on a bad list (one line naming ``option``).
    """
    if not text:
        return tuple(quick if is_quick else default)
    if integers is not None:
        return parse_integer_list(text, option, low=integers[0], high=integers[1])
    return parse_positive_list(text, option)


def points(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, the first axis slowest: ``points(a=(1, 2), b=(3,))``."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*axes.values())]


def monte_carlo(grid: Sequence[Mapping[str, Any]], trial: Callable[[Mapping[str, Any], np.random.Generator | None],
                                                                   Mapping[str, float]],
                *, metrics: Sequence[str], common: CommonOptions, seed: int, name: str) -> list[dict[str, Any]]:
    """Run ``trial(point, noise)`` ``common.runs`` times per point; one row per point: the point (without
    its keys that start with ``_``: data the trial needs, not columns), ``runs``, ``<metric>_mean`` and ``<metric>_se`` (:func:`scenarios.kit.experiments.summarize_runs`), ``seed``.

    Run ``r`` of point ``s`` draws its noise from :func:`scenarios.kit.experiments.noise_generator`
    ``(seed, s, r)`` (simulation only; ``None``, i.e. OS randomness, with ``--os-noise``).
    """
    bar = progress(len(grid) * common.runs, name)
    rows = []
    try:
        for setting, point in enumerate(grid):
            bar.set_postfix_str(" ".join(f"{key}={value}" for key, value in point.items() if not key.startswith("_")))
            records = []
            for run in range(common.runs):
                records.append(trial(point, noise_generator(seed, setting, run, os_noise=common.os_noise)))
                bar.update(1)
            shown = {key: value for key, value in point.items() if not key.startswith("_")}
            rows.append({**shown, "runs": common.runs, **summarize_runs(records, metrics), "seed": seed})
    finally:
        bar.close()
    return rows


def public_parameters(options: Any) -> dict[str, Any]:
    """The parameters every party must share: ``options`` as a dict, without the results directory."""
    record = asdict(options) if is_dataclass(options) and not isinstance(options, type) else dict(options)
    record["common"] = {k: v for k, v in record["common"].items() if k != "results_dir"}
    return record


@dataclass(frozen=True)
class Sweep:
    """A paper scenario: its options, its run, its outputs and its report, driven by :meth:`main`.

    :param module: ``scenarios.papers.<module>``, the command line's program name.
    :param doc: the module docstring (the ``-h`` description).
    :param page: the ``docs/papers/`` page with the paper's findings beside ours (printed after the tables).
    :param declare: ``parser -> None`` adds the scenario's own options.
    :param resolve: ``(args, common) -> options`` (a frozen dataclass with a ``common`` field); raises
        :class:`UsageError` with one line.
    :param run: ``(options, seed) -> [Output]`` at party 0.
    :param report: ``(options, outputs) -> None`` prints the tables.
    :param checks: ``async (options, seed) -> [SecureCheck]`` the ``--secure`` check (every party), or ``None``.
    :param check_name: ``options -> name`` of the check's ``<name>_secure.csv`` (default ``module``).
    :param note: printed before the checks' table: what they do not cover.
    :param runs: default ``--runs``; ``quick_runs`` with ``--quick``.
    :param spend: ``options -> SpendRequest`` (default exempt: embedded or synthetic public data).
    """

    module: str
    doc: str
    page: str
    declare: Callable[[ScenarioParser], None]
    resolve: Callable[[Any, CommonOptions], Any]
    run: Callable[[Any, int], Sequence[Output]]
    report: Callable[[Any, Sequence[Output]], None]
    runs: int
    quick_runs: int
    checks: Callable[[Any, int], Awaitable[Sequence[Any]]] | None = None
    check_name: Callable[[Any], str] | None = None
    note: str = ""
    spend: Callable[[Any], Any] = field(default=exempt_spend)

    def parse(self, argv: Sequence[str]) -> Any:
        """Parse and validate the options (nothing is computed here); :class:`UsageError` with one line."""
        parser = ScenarioParser(prog=f"python -m scenarios.papers.{self.module}", description=self.doc)
        self.declare(parser)
        add_common_options(parser, secure=self.checks is not None)
        runs = next(action for action in parser._actions if "--runs" in action.option_strings)
        runs.help = f"Monte Carlo repetitions per setting (default {self.runs}; --quick: {self.quick_runs})"
        args = parser.parse_args(list(argv))
        return self.resolve(args, common_options(args, runs=self.runs, quick_runs=self.quick_runs))

    def deliver(self, options: Any, seed: int, found: Sequence[Any] | None = None) -> None:
        """At party 0: run the sweep, write its CSVs and PNGs, print its tables and where the findings are."""
        common: CommonOptions = options.common
        started = time.perf_counter()
        outputs = self.run(options, seed)
        files = []
        for output in outputs:
            base = os.path.join(common.results_dir, output.name)
            if output.columns:
                write_csv(base + ".csv", output.columns, output.rows)
                files.append(base + ".csv")
            if output.plot is not None:
                output.plot(output.rows, base + ".png")
                files.append(base + ".png")
        self.report(options, outputs)
        print(f"  {seed_note(seed, common.os_noise)}; {common.runs} runs per setting")
        print(f"  total {time.perf_counter() - started:.1f} s; wrote {', '.join(files)}")
        print(f"  the paper's findings beside ours: {self.page}")
        sys.stdout.flush()
        if found is not None:
            name = self.check_name(options) if self.check_name else self.module
            finish_secure_checks(name, found, common.results_dir, note=self.note)

    def main(self, argv: Sequence[str] | None = None) -> int:
        """One party's life: agree on the seed, check ``--results-dir``, run the ``--secure`` check if asked
        (every party); then, at party 0 after the orderly shutdown, :meth:`deliver`.  The exit code."""

        async def body(options: Any) -> Callable[[], None] | None:
            from mpyc.runtime import mpc

            seed = await agree_seed(options.common.seed)
            await check_results_dir(options.common.results_dir)
            found = await self.checks(options, seed) if self.checks is not None and options.common.secure else None
            if mpc.pid != 0:
                return None
            return lambda: self.deliver(options, seed, found)

        return run_scenario(self.parse, body, public_parameters, argv, spend=self.spend)


def usage_check(condition: bool, message: str) -> None:
    """Raise :class:`UsageError` ``message`` unless ``condition``."""
    if not condition:
        raise UsageError(message)
