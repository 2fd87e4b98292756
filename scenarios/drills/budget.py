"""Averaging-attack drill: the same query asked again and again, with the privacy-budget ledger off and on.

Averaging R answers of an epsilon-DP query shrinks the noise like ``1/sqrt(R)``; a ledger that refuses at budget
``B`` caps that at ``floor(B / epsilon)`` answers.  The drill simulates the attack, then runs it for real with
``-M3`` parties, the ledger off and then on until refused (docs/drills.md)::

    python -m scenarios.drills.budget                 # full: 16 real runs off, budget 4
    python -m scenarios.drills.budget --quick         # small (for make drills: well under a minute)

Threat model: the attacker is the analyst who receives the releases (or a passive coalition of ``t < m/2``
parties); each honest data holder's ledger refuses on its own once its budget is spent.  It protects nothing
if a data holder deletes its own ledger (see :mod:`dp.budget.ledger`)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import new_figure, save_figure
from scenarios.kit.packages import require_packages
from scenarios.drills.harness import REPO_ROOT, drill_main, framingham_columns
from secure.errors import InputError

__all__ = ["main", "parse_options", "DrillOptions", "simulate_attack", "fitted_slope", "slope_tolerance",
           "run_real", "ledger_attack", "COLUMNS", "DOMAIN"]

COLUMNS = ("sysBP", "diaBP")
DOMAIN = "sysBP=80:300:2,diaBP=40:160:2"
#: the budget delta of the ledger-on runs (covers the in-MPC sampler's truncation, 2^-40 per released sum)
BUDGET_DELTA = 1e-9


@dataclass(frozen=True)
class DrillOptions:
    """The drill's options (resolved for ``--quick``)."""

    rows: int
    epsilon: float
    budget: float
    max_runs: int
    attackers: int
    real_runs: int
    seed: int
    results_dir: str
    json: str | None


def parse_options(argv: Sequence[str]) -> DrillOptions | None:
    """Parse the options and prepare what the run needs (matplotlib, ``--results-dir``); ``None`` after ``--help``;
    :raise UsageError: one line."""
    parser = ScenarioParser(prog="python -m scenarios.drills.budget", description=__doc__, runs_as="launcher")
    for option, kind, default, text in (("--rows", int, 60, "Framingham rows"), ("--epsilon", float, 1.0, "per run"),
            ("--budget", float, None, "the ledger's budget (default: 4; quick 3)"),
            ("--max-runs", int, None, "simulated answers (default: 256; quick 64)"),
            ("--attackers", int, None, "simulated attackers (default: 4000; quick 2000)"),
            ("--real-runs", int, None, "real runs with the ledger off (default: 16; quick 4)"),
            ("--seed", int, 2026, "data split and simulation noise"), ("--results-dir", str, "results", "CSV and PNG"),
            ("--json", str, None, "writes the record")):
        parser.add_argument(option, type=kind, default=default, help=text)
    parser.add_argument("--quick", action="store_true", help="small sizes (for make drills)")
    try:
        args = parser.parse_args(list(argv))
    except SystemExit:
        return None
    quick = bool(args.quick)
    budget = args.budget if args.budget is not None else (3.0 if quick else 4.0)
    max_runs = args.max_runs if args.max_runs is not None else (64 if quick else 256)
    attackers = args.attackers if args.attackers is not None else (2000 if quick else 4000)
    real_runs = args.real_runs if args.real_runs is not None else (4 if quick else 16)
    if not 9 <= args.rows <= 3000:
        raise UsageError(f"--rows must lie in [9, 3000], got {args.rows}")
    if not (math.isfinite(args.epsilon) and 0 < args.epsilon <= 20):
        raise UsageError(f"--epsilon must lie in (0, 20], got {args.epsilon:g}")
    if not (math.isfinite(budget) and budget >= args.epsilon):
        raise UsageError(f"--budget must be finite and at least --epsilon, got {budget:g}")
    if budget / args.epsilon > 20:
        raise UsageError(f"--budget / --epsilon must be at most 20 (real runs), got {budget / args.epsilon:g}")
    for option, value, low, high in (("--max-runs", max_runs, 4, 4096), ("--attackers", attackers, 100, 100_000),
                                     ("--real-runs", real_runs, 1, 64)):
        if not low <= value <= high:
            raise UsageError(f"{option} must lie in [{low}, {high}], got {value}")
    if args.seed < 0:
        raise UsageError(f"--seed must be non-negative, got {args.seed}")
    try:
        require_packages("matplotlib", purpose="this drill's figure")
        os.makedirs(args.results_dir, exist_ok=True)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--results-dir {args.results_dir}: {exc.strerror or exc}") from None
    return DrillOptions(args.rows, float(args.epsilon), float(budget), max_runs, attackers, real_runs, args.seed,
                        args.results_dir, args.json)


def _powers(limit: int) -> list[int]:
    return [1 << k for k in range(limit.bit_length())]  # 1, 2, 4, ... up to limit


def simulate_attack(rows: np.ndarray, *, epsilon: float, max_runs: int, attackers: int,
                    seed: int) -> tuple[float, float, list[dict[str, float]]]:
    """The simulated averaging attack: ``(exact value, std of one answer, rows of the table)``; per R in 1, 2, 4,
    ..., ``max_runs``, the RMSE of ``attackers`` averages of R answers (:func:`dp.umpc.simulate`), ``std / sqrt(R)``."""
    from dp.umpc import Query, exact, simulate
    from secure.columns import numeric

    query = Query(statistic="kendall", tuples="all", epsilon=epsilon,
                  columns=[numeric("sysBP", lower=80, upper=300, bits=2),
                           numeric("diaBP", lower=40, upper=160, bits=2)])
    parts = [rows[index::3] for index in range(3)]
    truth = float(exact(query, parts))
    generator = np.random.default_rng(seed)
    table = []
    single_std = math.nan
    for runs in _powers(max_runs):
        answers = np.asarray(simulate(query, parts, seed=seed, runs=runs * attackers, noise_rng=generator).estimates,
                             dtype=float).reshape(attackers, runs)
        if runs == 1:
            single_std = float(np.sqrt(np.mean((answers[:, 0] - truth) ** 2)))
        averages = answers.mean(axis=1)
        rmse = float(np.sqrt(np.mean((averages - truth) ** 2)))
        table.append({"runs": runs, "rmse": rmse, "theory": single_std / math.sqrt(runs)})
    return truth, single_std, table


def fitted_slope(table: Sequence[dict[str, float]]) -> float:
    """Least-squares slope of ln RMSE against ln R (-1/2 for noise averaging out)."""
    x = np.log([row["runs"] for row in table])
    y = np.log([row["rmse"] for row in table])
    return float(np.polyfit(x, y, 1)[0])


def slope_tolerance(table: Sequence[dict[str, float]], attackers: int) -> float:
    """Five standard errors of :func:`fitted_slope`: ``sqrt(5 / T) / 2`` per ln RMSE (kurtosis at most 6) over
    ``sqrt(sum (ln R - mean)^2)`` (derivation: docs/drills.md)."""
    x = np.log([row["runs"] for row in table])
    spread = float(np.sqrt(np.sum((x - x.mean()) ** 2)))
    return 5.0 * math.sqrt(5.0 / attackers) / 2.0 / spread


@dataclass
class RealRun:
    """One real ``-M3`` run: its exit code, estimate (or ``None``), budget line and error line."""

    code: int
    estimate: float | None
    budget_line: str = ""
    error_line: str = ""
    seconds: float = 0.0


def run_real(data: str, epsilon: float, ledger: list[str], directory: str, number: int) -> RealRun:
    """One real run of ``scenarios.ustat -M3`` (party 0 launches the others on free ports)."""
    record = os.path.join(directory, f"run{number}.json")
    started = time.perf_counter()
    command = [sys.executable, "-m", "scenarios.ustat", "-M3", "--data", data, "--stat", "kendall", "--columns",
               ",".join(COLUMNS), "--domain", DOMAIN, "--pairs", "all", "--epsilon", f"{epsilon!r}", *ledger,
               "--json", record, "--no-log", "--silence-limit", "20"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    seconds = time.perf_counter() - started
    estimate = None
    if done.returncode == 0 and os.path.exists(record):
        with open(record, encoding="utf-8") as handle:
            estimate = float(json.load(handle)["estimate"])
    budget = next((line.strip() for line in done.stdout.splitlines() if "privacy budget:" in line), "")
    error = next((line.strip() for line in done.stderr.splitlines() if line.startswith("error:")), "")
    return RealRun(done.returncode, estimate, budget, error, seconds)


def ledger_attack(data: str, epsilon: float, budget: float, directory: str) -> list[RealRun]:
    """Repeat the run with the ledger on until it is refused (at most ``floor(B/epsilon) + 2`` tries)."""
    ledger = ["--ledger", os.path.join(directory, "ledger"), "--budget", f"{budget!r}:{BUDGET_DELTA:g}"]
    runs: list[RealRun] = []
    for number in range(int(math.floor(budget / epsilon + 1e-9)) + 2):
        run = run_real(data, epsilon, ledger, directory, 1000 + number)
        runs.append(run)
        if run.code != 0:
            break
    return runs


@dataclass
class Outcome:
    truth: float
    single_std: float
    simulated: list[dict[str, float]]
    slope: float
    tolerance: float
    off: list[RealRun]
    on: list[RealRun]
    expected_answers: int
    files: list[str] = field(default_factory=list)

    def failures(self) -> list[str]:
        wrong = []
        if abs(self.slope + 0.5) > self.tolerance:
            wrong.append(f"simulated slope {self.slope:.3f} is not -1/2 within {self.tolerance:.3f}")
        if any(run.code != 0 for run in self.off):
            wrong.append("a real run with the ledger off failed: " + next(r.error_line for r in self.off if r.code))
        answered = sum(1 for run in self.on if run.code == 0)
        if answered != self.expected_answers:
            wrong.append(f"the ledger answered {answered} runs, expected floor(B/epsilon) = {self.expected_answers}")
        last = self.on[-1] if self.on else None
        if last is None or last.code != 2 or "privacy budget for this data does not cover" not in last.error_line:
            wrong.append("the ledger's refusal was not exit 2 with its one line")
        return wrong


def run_drill(options: DrillOptions, directory: str) -> tuple[DrillOptions, Outcome]:
    """Simulate the attack, run it for real with the ledger off and on; its CSV and figure in ``--results-dir``."""
    rows = np.array(framingham_columns(COLUMNS, options.rows), dtype=float)  # both columns present
    truth, single_std, table = simulate_attack(rows, epsilon=options.epsilon, max_runs=options.max_runs,
                                               attackers=options.attackers, seed=options.seed)
    data = os.path.join(directory, "site.csv")
    with open(data, "w", encoding="utf-8") as handle:
        handle.write(",".join(COLUMNS) + "\n" + "".join(",".join(f"{v:g}" for v in row) + "\n" for row in rows))
    off = [run_real(data, options.epsilon, ["--ledger", "off"], directory, number)
           for number in range(options.real_runs)]
    on = ledger_attack(data, options.epsilon, options.budget, directory)
    outcome = Outcome(truth, single_std, table, fitted_slope(table), slope_tolerance(table, options.attackers), off,
                      on, int(math.floor(options.budget / options.epsilon + 1e-9)))
    base = os.path.join(options.results_dir, "budget_drill")
    with open(base + ".csv", "w", encoding="utf-8") as handle:
        handle.write("runs,simulated_rmse,std_over_sqrt_runs\n")
        for row in outcome.simulated:
            handle.write(f"{row['runs']:.0f},{row['rmse']:.6g},{row['theory']:.6g}\n")
    plot(options, outcome, base + ".png")
    outcome.files = [base + ".csv", base + ".png"]
    return options, outcome


def _real_errors(outcome: Outcome) -> dict[int, float]:
    """|running average of the real ledger-off answers - exact| after R = 1, 2, 4, ... of them."""
    answers = [run.estimate for run in outcome.off if run.estimate is not None]
    return {runs: abs(float(np.mean(answers[:runs])) - outcome.truth) for runs in _powers(len(answers))}


def report(options: DrillOptions, outcome: Outcome) -> None:
    """Print the table and the ledger's refusal."""
    print(f"Averaging attack on Kendall's tau of {', '.join(COLUMNS)} (first {options.rows} Framingham rows, 3 parties, "
          f"--pairs all: noise is the only error), epsilon {options.epsilon:g} per run; exact value {outcome.truth:.4f}, "
          f"std of one answer {outcome.single_std:.4f}")
    real = _real_errors(outcome)
    print(f"  {'R runs':>7}  {'simulated RMSE of the average':>30}  {'std/sqrt(R)':>12}  {'real |avg - exact|':>19}")
    for row in outcome.simulated:
        runs = int(row["runs"])
        real_text = f"{real[runs]:.4f}" if runs in real else "-"
        print(f"  {runs:>7}  {row['rmse']:>30.4f}  {row['theory']:>12.4f}  {real_text:>19}")
    print(f"  fitted slope of ln RMSE vs ln R: {outcome.slope:.3f} (expected -0.5, tolerance {outcome.tolerance:.3f}; "
          f"simulated path dp.umpc.simulate, {options.attackers} attackers per R, seeded noise)")
    seconds = [run.seconds for run in outcome.off]
    print(f"  ledger off, real -M3 runs: {len(outcome.off)} answered ({np.mean(seconds):.1f} s each): the "
          f"attacker can go on; after {outcome.simulated[-1]['runs']:.0f} runs its error would be "
          f"{outcome.simulated[-1]['rmse']:.4f}")
    answered = sum(1 for run in outcome.on if run.code == 0)
    print(f"  ledger on (budget {options.budget:g}:{BUDGET_DELTA:g}), real -M3 runs: {answered} answered, "
          f"floor(B/epsilon) = {outcome.expected_answers}; the attacker's error stays about "
          f"{outcome.single_std / math.sqrt(max(answered, 1)):.4f}")
    if outcome.on and outcome.on[-1].code != 0:
        print(f"  run {len(outcome.on)} refused (exit {outcome.on[-1].code}): {outcome.on[-1].error_line}")
    if outcome.on and outcome.on[0].budget_line:
        print(f"  first run's budget line: {outcome.on[0].budget_line}")
    for path in outcome.files:
        print(f"  wrote {path}")


def plot(options: DrillOptions, outcome: Outcome, path: str) -> None:
    """RMSE of the attacker's average against R (log-log), the 1/sqrt(R) line, and where the ledger stops."""
    figure, axes = new_figure(6.4, 4.4)
    runs = [row["runs"] for row in outcome.simulated]
    axes.loglog(runs, [row["rmse"] for row in outcome.simulated], "o-", label="ledger off: simulated RMSE of the average")
    axes.loglog(runs, [row["theory"] for row in outcome.simulated], "--", color="grey", label="std / sqrt(R)")
    real = _real_errors(outcome)
    if real:
        axes.loglog(list(real), [max(value, 1e-6) for value in real.values()], "s", color="tab:green",
                    label="ledger off: real -M3 runs, |average - exact|")
    stop = outcome.expected_answers
    axes.axvline(stop, color="tab:red", linestyle=":", label=f"ledger on: refused after {stop} runs (B = {options.budget:g})")
    axes.axhspan(outcome.single_std / math.sqrt(stop), axes.get_ylim()[1], color="tab:red", alpha=0.08)
    axes.set_xlabel("R: answers the attacker averages")
    axes.set_ylabel("error of the attacker's average")
    axes.set_title(f"Averaging attack, Kendall tau, epsilon {options.epsilon:g} per run", fontsize=9)
    axes.legend(fontsize=7)
    save_figure(figure, path)


def _record(options: DrillOptions, outcome: Outcome) -> dict[str, Any]:
    return {"rows": options.rows, "epsilon": options.epsilon, "budget": options.budget, "exact": outcome.truth,
            "single_std": outcome.single_std, "simulated": outcome.simulated, "slope": outcome.slope,
            "slope_tolerance": outcome.tolerance,
            "real_off": [{"code": r.code, "estimate": r.estimate} for r in outcome.off],
            "real_on": [{"code": r.code, "estimate": r.estimate, "error": r.error_line} for r in outcome.on],
            "expected_answers": outcome.expected_answers, "failures": outcome.failures()}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the drill; 0 as expected, 1 not (one ``error:`` line), 2 bad usage."""
    return drill_main(argv, name="budget drill", parse=parse_options, run=run_drill, report=lambda run: report(*run),
                      record=lambda options, run: _record(options, run[1]), failures=lambda run: run[1].failures(),
                      what="the averaging-attack drill")


if __name__ == "__main__":
    sys.exit(main())
