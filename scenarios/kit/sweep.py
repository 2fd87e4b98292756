"""One sweep harness for the paper reproductions (``python -m scenarios.papers.<name>``): grid, Monte Carlo runs,
CSV and PNG outputs, tables, the ``--secure`` check and the party lifecycle (docs/papers/harness.md).
Threat model: simulated at party 0 on embedded or synthetic public data (exempt from the budget); the other
parties agree on the parameters and the seed and, with ``--secure``, run the protocol once on the MPyC path."""
from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario
from scenarios.kit.datasets import framingham_with_scores, load_embedded, numeric_columns
from secure.public_randomness import public_generator
from scenarios.kit.experiments import (
    CommonOptions, add_common_options, agree_seed, check_results_dir, common_options, exempt_spend,
    finish_secure_checks, noise_generator, parse_integer_list, parse_positive_list, progress, seed_note,
    summarize, summarize_runs, write_csv)

__all__ = ["Sweep", "Output", "axis", "points", "monte_carlo", "public_parameters", "framingham_scores",
           "complete_rows", "check_coalition", "add_coalition_options", "row_limit", "whole_list",
           "error_summary"]


@dataclass(frozen=True)
class Output:
    """One table of a sweep: ``<name>.csv`` (``columns``; none: a figure only), drawn by ``plot(rows, png_path)``."""

    name: str
    columns: Sequence[str]
    rows: list[dict[str, Any]]
    plot: Callable[[list[dict[str, Any]], str], None] | None = None


def axis(text: str | None, option: str, *, default: Sequence[Any], quick: Sequence[Any], is_quick: bool,
         integers: tuple[int, int] | None = None) -> tuple[Any, ...]:
    """The values of one grid axis: ``--option A,B,...`` parsed (positive numbers, or integers in ``integers``;
    else :class:`UsageError` naming ``option``), or the default (``quick`` with ``--quick``)."""
    if not text:
        return tuple(quick if is_quick else default)
    if integers is not None:
        return parse_integer_list(text, option, low=integers[0], high=integers[1])
    return parse_positive_list(text, option)


def whole_list(text: str, option: str) -> tuple[int, ...]:
    """A comma-separated list of positive whole numbers, sorted; :class:`UsageError` with one line."""
    values = parse_positive_list(text, option)
    if any(v != int(v) for v in values):
        raise UsageError(f"{option} expects whole numbers, got '{text}'")
    return tuple(int(v) for v in values)


def points(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, the first axis slowest: ``points(a=(1, 2), b=(3,))``."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*axes.values())]


Trial = Callable[[Mapping[str, Any], int, "np.random.Generator | None"], Mapping[str, float]]


def monte_carlo(grid: Sequence[Mapping[str, Any]], trial: Trial, *, metrics: Sequence[str], common: CommonOptions,
                seed: int, name: str, tally: Callable[[list[Mapping[str, float]]], Mapping[str, Any]] | None = None
                ) -> list[dict[str, Any]]:
    """Run ``trial(point, run, noise)`` ``common.runs`` times per point (noise: :func:`noise_generator`); one row per
    point: the point (without its keys that start with ``_``: data the trial needs, not columns), ``runs``,
    ``<metric>_mean`` and ``<metric>_se`` (:func:`summarize_runs`), ``tally(records)`` if given, ``seed``."""
    rows = []
    with progress(len(grid) * common.runs, name) as bar:
        for setting, point in enumerate(grid):
            shown = {key: value for key, value in point.items() if not key.startswith("_")}
            bar.set_postfix_str(" ".join(f"{key}={value}" for key, value in shown.items()))
            records = []
            for run in range(common.runs):
                records.append(trial(point, run, noise_generator(seed, setting, run, os_noise=common.os_noise)))
                bar.update(1)
            rows.append({**shown, "runs": common.runs, **summarize_runs(records, metrics),
                         **(tally(records) if tally else {}), "seed": seed})
    return rows


def error_summary(estimates: Any, exact: float) -> dict[str, Any]:
    """``runs``, ``mse_mean``, ``mse_se``, ``bias_mean`` and ``bias_se`` of the runs' estimates against ``exact``."""
    errors = np.asarray(estimates, dtype=float) - exact
    mse, mse_se, _ = summarize(errors ** 2)
    bias, bias_se, _ = summarize(errors)
    return {"runs": len(errors), "mse_mean": mse, "mse_se": mse_se, "bias_mean": bias, "bias_se": bias_se}


def public_parameters(options: Any) -> dict[str, Any]:
    """The parameters every party must share: ``options`` (a dataclass) as a dict, without the results directory."""
    record = asdict(options)
    record["common"] = {k: v for k, v in record["common"].items() if k != "results_dir"}
    return record


@dataclass(frozen=True)
class Sweep:
    """A paper scenario, driven by :meth:`main`; its fields (the scenario's options, run, report, ``--secure``
    check) are described in docs/papers/harness.md."""

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
    min_runs: int = 1
    own_options: bool = False
    footer: Callable[[Any, int, list[str], float], None] | None = None
    collect: Callable[[Any, int], Awaitable[Any]] | None = None

    def parse(self, argv: Sequence[str]) -> Any:
        """Parse and validate the options (nothing is computed here); :class:`UsageError` with one line."""
        parser = ScenarioParser(prog=f"python -m scenarios.papers.{self.module}", description=self.doc)
        self.declare(parser)
        if not self.own_options:
            runs = f"Monte Carlo repetitions per setting (default {self.runs}; --quick: {self.quick_runs})"
            add_common_options(parser, secure=self.checks is not None, runs=runs)
        args = parser.parse_args(list(argv))
        return self.resolve(args, common_options(args, runs=self.runs, quick_runs=self.quick_runs,
                                                 min_runs=self.min_runs))

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
        if self.footer is not None:
            self.footer(options, seed, files, time.perf_counter() - started)
        else:
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
            if self.collect is not None:
                options = await self.collect(options, seed)
            found = await self.checks(options, seed) if self.checks is not None and options.common.secure else None
            return (lambda: self.deliver(options, seed, found)) if mpc.pid == 0 else None

        return run_scenario(self.parse, body, public_parameters, argv, spend=self.spend)


def framingham_scores(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The embedded Framingham logistic-regression scores and 0/1 ``TenYearCHD`` labels (float64, int64), the
    model's training split drawn from the public ``seed``."""
    table = framingham_with_scores(public_generator(int(seed)))
    score, label = table.header.index("score"), table.header.index("TenYearCHD")
    scores = np.array([float(row[score]) for row in table.rows])
    return scores, np.array([int(float(row[label])) for row in table.rows], dtype=np.int64)


def complete_rows(dataset: str, columns: Sequence[str]) -> np.ndarray:
    """Float rows ``(n, len(columns))`` of ``columns`` of an embedded dataset, rows with a missing value dropped."""
    values, complete = numeric_columns(load_embedded(dataset), columns)
    return values[complete]


def check_coalition(parties: int, coalition: int) -> None:
    """``--parties`` at least 1 and ``0 <= --coalition < M/2``, else :class:`UsageError` with one line."""
    if parties < 1:
        raise UsageError(f"--parties must be at least 1, got {parties}")
    if not 0 <= coalition or not 2 * coalition < parties:
        raise UsageError(f"--coalition must satisfy 0 <= T < M/2 (M = {parties}), got {coalition}")


def add_coalition_options(parser: ScenarioParser) -> None:
    """``--parties`` (simulated parties holding the rows) and ``--coalition`` (checked by :func:`check_coalition`)."""
    parser.add_argument("--parties", type=int, default=3, help="simulated parties holding the rows (default 3)")
    parser.add_argument("--coalition", type=int, default=1,
                        help="coalition size the noise is calibrated for, T < M/2 (default 1)")


def row_limit(args: Any, quick_rows: int) -> int | None:
    """``--rows`` (default all: ``None``; ``--quick``: ``quick_rows``), at least 2 per party; :class:`UsageError`."""
    rows: int | None = args.rows if args.rows is not None else (quick_rows if args.quick else None)
    if rows is not None and rows < 2 * args.parties:
        raise UsageError(f"--rows must be at least 2 per party ({2 * args.parties}), got {rows}")
    return rows
