"""The benchmark scenarios of issue 13 (``bench_paths``, ``bench_scale``) in quick mode with ``-M3``.

Each runs as real party processes through subprocess (party 0 launches the others on the free ports
``-B`` names) and writes its CSV and PNG; the tests check their rows and columns and the statistics the
tables claim, with thresholds derived from the distributions below -- never from timings.

Monte Carlo error of a mean squared error.  With ``R`` independent errors ``X_r`` of mean 0, variance
``s^2`` and kurtosis ``kappa = E X^4 / s^4``, the estimate ``mean(X_r^2)`` of ``s^2`` has standard deviation
``s^2 sqrt((kappa - 1) / R)``.  The complete paths' error is the DP noise alone: one discrete Laplace
``DLap(alpha)`` per released sum (the in-MPC sampler, within total variation ``2^-40`` of it), whose kurtosis
is ``6 + (1 - alpha)^2 / (2 alpha)`` (twice the cumulants of a geometric variable); a weighted sum of
independent such variables (the delta method of a ratio, AUC) has a kurtosis at most the largest of
theirs.  Here ``alpha = exp(-epsilon' / s)`` with the per-sum budget ``epsilon' <= epsilon`` and the
sensitivity ``s >= n - 1``, so ``(1 - alpha)^2 / (2 alpha) <= (epsilon / (n - 1))^2 / (2 exp(-epsilon / (n - 1)))``.
"""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np

from conftest import free_base_port, run_command, scenario_command

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _noise_kurtosis_bound(epsilon: float, rows: int) -> float:
    """Largest kurtosis of the complete release's noise (module docstring)."""
    ratio = epsilon / (rows - 1)
    return 6.0 + ratio ** 2 / (2 * math.exp(-ratio))


def test_bench_paths_quick(tmp_path: Path) -> None:
    """Rows and columns; the complete paths' RMSE is their noise sd; sampled Kendall's error falls with |E|."""
    from scenarios.bench_paths import COLUMNS, MULTIPLES, QUICK_KERNELS, QUICK_ROWS

    runs, epsilon = 200, 8.0
    out = tmp_path / "paths"
    done = run_command(scenario_command("bench_paths", "-M3", "-B", str(free_base_port()), "--no-log", "--quick",
                                        "--seed", "7", "--epsilon", str(epsilon), "--runs", str(runs),
                                        "--results-dir", str(out)), timeout=240)
    assert done.code == 0, done.stderr[-2000:]
    header, rows = _read_csv(out / "bench_paths.csv")
    assert header == COLUMNS
    assert (out / "bench_paths.png").read_bytes()[:8] == PNG_MAGIC
    expected = {(kernel, path) for kernel in QUICK_KERNELS
                for path in [f"{k}n" for k in MULTIPLES] + (["sort"] if kernel in ("auc", "gini") else []) + ["histogram"]}
    assert {(row["kernel"], row["path"]) for row in rows} == expected
    assert len(rows) == len(expected)
    for row in rows:
        n, tuples = int(row["n"]), int(row["tuples"])
        assert n == QUICK_ROWS  # the first 120 rows of each dataset (AUC: of its evaluation rows)
        assert tuples == (int(row["path"][:-1]) * n if row["path"].endswith("n") else math.comb(n, 2))
        assert int(row["runs"]) == runs
        assert int(row["undefined"]) == 0  # at n = 120, epsilon = 8 no noisy AUC denominator comes near 0
        assert float(row["seconds"]) > 0 and float(row["model_seconds"]) > 0 and int(row["bytes"]) > 0
        assert float(row["noise_sd"]) > 0 and math.isfinite(float(row["rmse"]))
    for kernel in QUICK_KERNELS:
        assert len({row["exact"] for row in rows if row["kernel"] == kernel}) == 1

    # complete paths: total error = noise alone, E[rmse^2] = noise_sd^2; 4 sd of the Monte Carlo
    kappa = _noise_kurtosis_bound(epsilon, QUICK_ROWS)
    tolerance = 4 * math.sqrt((kappa - 1) / runs)
    for row in rows:
        if row["path"] in ("sort", "histogram"):
            ratio = float(row["rmse"]) ** 2 / float(row["noise_sd"]) ** 2
            assert abs(ratio - 1) <= tolerance, (row["kernel"], row["path"], ratio, tolerance)
            # the secure run released the complete statistic: its error is Laplace-tailed noise,
            # P(|error| > 8 sd) <= exp(-8 sqrt 2) ~ 1e-5
            assert abs(float(row["estimate"]) - float(row["exact"])) <= 8 * float(row["noise_sd"]), row

    by_path = {(row["kernel"], row["path"]): row for row in rows}
    # sampled, one released sum: MSE = noise variance + sampling variance >= noise variance (4 MC sd)
    for kernel in ("kendall", "gini"):
        for k in MULTIPLES:
            row = by_path[(kernel, f"{k}n")]
            assert float(row["rmse"]) ** 2 >= float(row["noise_sd"]) ** 2 - 4 * float(row["mse_se"]), row
    # Kendall's sampling variance falls about as 1/|E| (16x from 2n to 32n) while the noise sd stays
    # (delta_max grows with |E|): at n = 120, epsilon = 8 the sampling error (~0.045 at 2n) dwarfs the
    # noise (~0.006), so the expected gap is about 6 Monte Carlo sd at 200 runs; the test asks for 3
    low, high = by_path[("kendall", "32n")], by_path[("kendall", "2n")]
    gap = float(high["rmse"]) ** 2 - float(low["rmse"]) ** 2
    assert gap > 3 * math.hypot(float(high["mse_se"]), float(low["mse_se"])), (high, low)


def _kendall_tau_a(values: np.ndarray) -> float:
    """Brute-force tau-a over all pairs (ties count 0)."""
    x, y = values[:, 0], values[:, 1]
    signs = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
    rows = len(x)
    return float(np.triu(signs, 1).sum()) / math.comb(rows, 2)


def test_bench_scale_quick(tmp_path: Path) -> None:
    """Rows and columns, the skip rule from the planner, and the complete tau within its noise of the exact."""
    from scenarios.bench_scale import COLUMNS, QUICK_SIZES, party_size, plan, synthetic_rows

    seed, epsilon = 11, 1.0
    # a limit between the modelled times of the two sampled runs: 10^3 runs, 10^4 is skipped
    small, large = (plan(epsilon, "tuples", n, 3).costs["tuples"].seconds for n in QUICK_SIZES)
    limit = math.sqrt(small * large)
    out = tmp_path / "scale"
    done = run_command(scenario_command("bench_scale", "-M3", "-B", str(free_base_port()), "--no-log", "--quick",
                                        "--seed", str(seed), "--max-model-seconds", repr(limit),
                                        "--results-dir", str(out)), timeout=360)
    assert done.code == 0, done.stderr[-2000:]
    header, every = _read_csv(out / "bench_scale.csv")
    assert header == COLUMNS
    assert (out / "bench_scale.png").read_bytes()[:8] == PNG_MAGIC
    assert [(int(row["n"]), row["kernel"], row["path"]) for row in every] == [
        (n, k, p) for n in QUICK_SIZES for k, p in (("kendall", "histogram"), ("kendall", "tuples"), ("auc", "histogram"))]
    for row in every:  # the AUC beside its bare-MPyC script of the same sums and noise, measured in the same run
        if row["status"] != "measured":
            continue
        assert float(row["count_seconds"]) >= 0 and 0 <= float(row["plan_seconds"]) and float(row["share_mb"]) > 0
        bare = [float(row[key]) for key in ("bare_seconds", "bare_bytes", "bare_party_seconds", "bare_party_bytes")]
        assert all(value > 0 for value in bare) if row["kernel"] == "auc" else all(math.isnan(v) for v in bare)
    assert "planning auc (every path costed, closed forms): 10^3" in done.stdout
    rows = [row for row in every if row["kernel"] == "kendall"]
    for row in rows:
        n, path = int(row["n"]), row["path"]
        modelled = plan(epsilon, path, n, 3).costs[path].seconds
        assert float(row["model_seconds"]) == modelled
        skipped = path == "tuples" and modelled > limit
        if skipped:
            assert row["status"].startswith("skipped: sampled |E| = 2n modelled"), row
            assert math.isnan(float(row["seconds"]))
            assert row["status"] in done.stdout
            continue
        assert row["status"] == "measured", row
        assert int(row["tuples"]) == (math.comb(n, 2) if path == "histogram" else 2 * n)
        assert float(row["seconds"]) > 0 and float(row["bytes"]) > 0 and float(row["load_seconds"]) >= 0
        peaks = [float(peak) for peak in row["peak_mb_parties"].split("/")]
        assert len(peaks) == 3 and min(peaks) > 0
        assert abs(float(row["peak_mb"]) - max(peaks)) <= 0.5  # per-party values are written rounded to 1 MB
        if path == "histogram":
            values = np.vstack([synthetic_rows(seed, party, party_size(n, party, 3)) for party in range(3)])
            if n <= 1000:
                # discrete Laplace noise on the pair sum, sensitivity 2 (n - 1), alpha = exp(-epsilon / (2 (n - 1))):
                # sd <= sqrt(2 / alpha) 2 (n - 1) / (epsilon C(n, 2)); P(|noise| > 8 sd) < exp(-8 sqrt 2) ~ 1e-5
                alpha = math.exp(-epsilon / (2 * (n - 1)))
                sd = math.sqrt(2 / alpha) * 2 * (n - 1) / (epsilon * math.comb(n, 2))
                assert abs(float(row["estimate"]) - _kendall_tau_a(values)) <= 8 * sd
    assert [row["status"].startswith("skipped") for row in rows] == [False, False, False, True]


MPYC_LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def test_bench_usage_errors() -> None:
    """Bad options stop the (single) party with one error line and exit code 2."""
    for module, option in (("bench_paths", ["--kernels", "kendall,bogus"]),
                           ("bench_scale", ["--measure", "1000:sideways", "--seed", "1"])):
        done = run_command(scenario_command(module, *option), timeout=60)
        assert done.code == 2, done.stderr
        # MPyC's own log lines (timestamped, on stderr since stdout holds the result alone) are not error lines
        lines = [line for line in done.stderr.splitlines() if line.strip() and not MPYC_LOG_LINE.match(line)]
        assert len(lines) == 1 and lines[0].startswith("error: party 0: "), done.stderr


def test_a_party_is_charged_its_own_peak_memory_not_its_launchers() -> None:
    """A process launched by a parent that once held 200 MB reports its own peak (``VmHWM``): ``ru_maxrss`` would
    carry the parent's over ``vfork`` and ``exec`` (every party of a benchmark is launched by a larger process)."""
    import subprocess
    import sys

    from conftest import ROOT

    parent = ("import subprocess, sys\nheld = bytearray(200 * 2 ** 20)\nheld[::4096] = b'1' * len(held[::4096])\n"
              "del held\nsys.exit(subprocess.run([sys.executable, '-c', 'from scenarios.kit.measure import "
              "peak_rss_bytes; print(peak_rss_bytes())']).returncode)")
    done = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert 0 < int(done.stdout) < 150 * 2 ** 20  # an interpreter with the kit: tens of MB, far below the parent's 200
