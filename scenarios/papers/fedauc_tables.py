"""Sun et al. (FedAUC, label-DP AUC in vertical FL): Tables 1, 2, 3 and 7 on Framingham.

Run: ``python -m scenarios.papers.fedauc_tables [--quick]`` (``-M3 --secure``: each method once in the paper's
deployment on real parties, no MPC).  Noise comes from the OS, never from ``--seed``.  Method, data and findings
beside ours: ``docs/papers/fedauc.md``."""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, print_table
from scenarios.kit.experiments import CommonOptions, SecureCheck, check_noise_generator, new_figure, style_axes
from scenarios.kit.sweep import Output, Sweep, framingham_scores

__all__ = ["main", "parse_options", "FedAucOptions", "EPSILONS", "CLIENT_COUNTS", "RR_EPSILONS"]

#: privacy budgets of Tables 1, 2, 7.
EPSILONS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
#: numbers of clients (plus one row per client).
CLIENT_COUNTS: tuple[int, ...] = (10, 100, 1000)
#: privacy budgets of Table 3 (plus no privacy).
RR_EPSILONS: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 4.0, 10.0, math.inf)
#: the paper's Table 2 ratio GlobalLaplace / LocalLaplace (IID) at one row per client, per epsilon.
PAPER_RATIO_EXACT: dict[float, float] = {1.0: 1.10e-2 / 6.44e-3, 2.0: 5.65e-3 / 2.87e-3,
                                         4.0: 2.68e-3 / 1.56e-3, 8.0: 1.34e-3 / 8.09e-4}
#: the paper's Table 7 ratio (noisy counts, alpha = 0.5) at one row per client.
PAPER_RATIO_NOISY: dict[float, float] = {1.0: 2.77e-2 / 1.99e-2, 2.0: 1.32e-2 / 8.86e-3,
                                         4.0: 7.02e-3 / 4.38e-3, 8.0: 2.99e-3 / 2.29e-3}
#: the paper's Table 1 ratio LocalLaplace / adaptive, IID and non-IID, at its fewest and most clients
#: (10 and 45,840 clients: 45,840 and 10 rows per client).
PAPER_ADAPTIVE_GAIN: dict[float, tuple[str, str]] = {
    1.0: ("2.19 .. 1.94", "3.06 .. 5.29"), 2.0: ("2.21 .. 2.46", "2.89 .. 5.58"),
    4.0: ("2.29 .. 2.05", "3.19 .. 5.52"), 8.0: ("2.15 .. 1.85", "2.72 .. 5.43")}

CSV_FIELDS: tuple[str, ...] = ("table", "counts", "epsilon", "clients", "rows_per_client", "layout", "method",
                               "runs", "mean", "std", "predicted_std", "paper_std", "predicted_mean",
                               "undefined_runs", "exact_auc")


@dataclass(frozen=True)
class FedAucOptions:
    common: CommonOptions


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--runs", type=int, default=None, help="Monte Carlo repetitions (default 100; --quick 20)")
    parser.add_argument("--quick", action="store_true", help="a few settings, for tests")
    parser.add_argument("--seed", type=int, default=None,
                        help="public seed of the data split and client layouts (default: a joint seed)")
    parser.add_argument("--results-dir", dest="results_dir", default="results",
                        help="party 0 writes fedauc_std.csv/.png, fedauc_rr_debias.csv here (default results)")
    parser.add_argument("--secure", action="store_true",
                        help="also run each method once in the paper's deployment on the real parties (clients "
                             "spread over the parties, reports sent to party 0) and show it equals the simulation")


def method_grid(clients: int | None) -> list[tuple[str, str, str]]:
    """``(counts, family, layout)`` of the Laplace/Gaussian rows at ``clients`` (None or 0: one row per client):
    noisy counts (Tables 1/7: global, local, adaptive), then exact counts (Table 2: global, local)."""
    layouts = ("iid", "non_iid") if clients else ("one_per_client",)
    return [(counts, family, layout) for counts, families in (("noisy", ("local", "adaptive")), ("exact", ("local",)))
            for family, layout in [("global", layouts[0]), *((f, lay) for lay in layouts for f in families)]]


def simulated_row(scores: np.ndarray, labels: np.ndarray, seed: int, /, *, method: str, epsilon: float, runs: int,
                  noise_rng: np.random.Generator | None, clients: int | None = None, layout: str = "iid",
                  counts: str = "noisy", sum_fraction: float = 0.5, delta: float = 0.0, **extra: Any) -> dict[str, Any]:
    """One setting simulated (:func:`dp.fedauc.montecarlo.simulate_fedauc`, the layout from :func:`layout_rng`;
    ``clients`` None or 0: one row per client, or RR; layout ``none``: RR) as a row: ``extra``, the setting, the
    Monte Carlo summaries and the closed forms."""
    from dp.fedauc.montecarlo import simulate_fedauc

    result = simulate_fedauc(scores, labels, method=method, epsilon=epsilon, clients=clients or None,
                             layout=layout if layout != "none" else "iid", runs=runs, rng=layout_rng(seed),
                             sum_fraction=sum_fraction, delta=delta, counts=counts, noise_rng=noise_rng)
    return {**extra, "counts": counts, "epsilon": epsilon, "delta": delta,
            "clients": result.clients or "",  # 0 for randomized response
            "rows_per_client": scores.size / result.clients if result.clients else "",
            "layout": layout, "method": method, "runs": result.runs, "mean": result.mean,
            "std": result.std, "predicted_std": result.predicted_std,
            "paper_std": result.paper_std if result.paper_std is not None else "",
            "predicted_mean": result.predicted_mean, "undefined_runs": result.undefined_runs,
            "exact_auc": result.exact_auc}


def _find(rows: Sequence[dict[str, Any]], **keys: Any) -> dict[str, Any]:
    """The first row with the given values (:func:`_run_tables` runs every setting a table or figure shows)."""
    return next(row for row in rows if all(row[name] == value for name, value in keys.items()))


def _cell(row: dict[str, Any], second: str = "predicted_std") -> str:
    extra = row[second]
    text = f"{row['std']:.2e} ({extra:.2e})" if extra != "" else f"{row['std']:.2e}"
    if row["undefined_runs"]:
        text += f" [{row['undefined_runs']} undef.]"
    return text


def _print_std_tables(rows: Sequence[dict[str, Any]], samples: int) -> None:
    epsilons = sorted({row["epsilon"] for row in rows if row["table"] == "1/7"})
    client_counts = sorted({row["clients"] for row in rows if row["table"] == "1/7" and row["clients"] != ""})
    header = "  ".join(f"{('K=' + str(k) if k != samples else 'one per client'):>26}" for k in client_counts)
    laplace = [("GlobalLaplace", "global_laplace", None), ("LocalLaplace (IID)", "local_laplace", "iid"),
               ("LocalLaplace (non-IID)", "local_laplace", "non_iid")]

    def pick(table: str, method: str, eps: float, k: int, layout: str | None) -> dict[str, Any]:
        where = {} if method == "rr" else {"clients": k} if k == samples else {"clients": k, "layout": layout or "iid"}
        return _find(rows, table=table, method=method, epsilon=eps, **where)

    for title, table, lines, second in (
            ("\nTables 1/7: std of the AUC estimate, noisy counts, alpha = 0.5; Monte Carlo (our closed form, delta "
             "method)", "1/7", [("RR (debiased)", "rr", None), *laplace, ("adaptive (IID)", "adaptive_laplace", "iid"),
                                ("adaptive (non-IID)", "adaptive_laplace", "non_iid")], "predicted_std"),
            ("\nTable 2: std with accurate P and N (whole budget on localSum; not label-DP); Monte Carlo (paper's "
             "eq. 8 / eq. 9)", "2", laplace, "paper_std")):
        print(title)
        print(f"  {'':<8}{'':<24}{header}")
        for eps in epsilons:
            for label, method, layout in lines:
                cells = [_cell(pick(table, method, eps, k, layout), second)
                         if method != "rr" or k == client_counts[0] else "" for k in client_counts]
                print(f"  {'eps=' + format(eps, 'g'):<8}{label:<24}" + "  ".join(f"{c:>26}" for c in cells))
        if table == "1/7":
            print("  (one row per client: the IID and non-IID layouts coincide; GlobalLaplace does not depend on the "
                  "layout)")


def _print_ratios(rows: Sequence[dict[str, Any]], samples: int) -> None:
    epsilons = sorted({row["epsilon"] for row in rows if row["table"] == "1/7"})
    ratio_rows = []
    for eps in epsilons:
        parts = []
        for table, paper in (("2", PAPER_RATIO_EXACT), ("1/7", PAPER_RATIO_NOISY)):
            glob = _find(rows, table=table, method="global_laplace", epsilon=eps, clients=samples)
            loc = _find(rows, table=table, method="local_laplace", epsilon=eps, clients=samples)
            closed = "paper_std" if table == "2" else "predicted_std"
            parts.append(f"{'accurate counts' if table == '2' else 'noisy counts'}: MC {glob['std'] / loc['std']:.2f}, "
                         f"closed form {glob[closed] / loc[closed]:.2f}, paper {paper[eps]:.2f}")
        ratio_rows.append((f"eps={eps:g}", "; ".join(parts)))
    print_table(ratio_rows, title="\nGlobalLaplace / LocalLaplace at one row per client "
                                  "(paper: about sqrt(3) = 1.73 with accurate counts, eq. 8 / eq. 9)")
    gain_rows = []
    client_counts = sorted({row["clients"] for row in rows if row["table"] == "1/7" and row["clients"] != ""})
    for eps in epsilons:
        for layout in ("iid", "non_iid"):
            parts = []
            for k in client_counts:
                lay = "one_per_client" if k == samples else layout
                if k == samples and layout == "non_iid":
                    continue
                naive = _find(rows, table="1/7", method="local_laplace", epsilon=eps, clients=k, layout=lay)
                adaptive = _find(rows, table="1/7", method="adaptive_laplace", epsilon=eps, clients=k, layout=lay)
                name = "one/client" if k == samples else f"K={k}"
                parts.append(f"{name} {naive['std'] / adaptive['std']:.2f} "
                             f"({naive['predicted_std'] / adaptive['predicted_std']:.2f})")
            paper_gain = PAPER_ADAPTIVE_GAIN.get(eps, ("?", "?"))[0 if layout == "iid" else 1]
            gain_rows.append((f"eps={eps:g} {layout}", ", ".join(parts) + f"; paper {paper_gain}"))
    print_table(gain_rows, title="\nLocalLaplace naive (alpha = 0.5) / adaptive: std ratio, "
                                 "Monte Carlo (closed form); > 1 means adaptive is better")


def _print_rr_table(rows: Sequence[dict[str, Any]], sklearn_auc: float) -> None:
    from dp.fedauc.mechanisms import flip_probability

    out = []
    for eps in sorted({row["epsilon"] for row in rows if row["table"] == "3"}):
        noisy = _find(rows, table="3", method="rr_noisy", epsilon=eps)
        debiased = _find(rows, table="3", method="rr", epsilon=eps)
        out.append((f"eps={eps:g}", f"rho={flip_probability(eps):.2e}  noisy {noisy['mean']:.6f} "
                                    f"(expected {noisy['predicted_mean']:.6f})  debiased {debiased['mean']:.6f} "
                                    f"+- {debiased['std']:.2e}"))
    exact = rows[-1]["exact_auc"]
    out.append(("eq. (1)", f"{exact:.6f}   scikit-learn roc_auc_score {sklearn_auc:.6f} "
                           f"(difference {abs(exact - sklearn_auc):.1e})"))
    print_table(out, title="\nTable 3: noisy vs debiased RR AUC, mean over the runs")


def _plot(path: Path, rows: Sequence[dict[str, Any]], samples: int) -> None:
    epsilons = sorted({row["epsilon"] for row in rows if row["table"] == "1/7"})
    figure, panels = new_figure(4.2 * len(epsilons), 7.5, panels=(2, len(epsilons)))
    axes = [panels[:len(epsilons)], panels[len(epsilons):]]
    series = [("global_laplace", None, "GlobalLaplace", "tab:red"),
              ("local_laplace", "iid", "LocalLaplace IID", "tab:blue"),
              ("local_laplace", "non_iid", "LocalLaplace non-IID", "tab:cyan"),
              ("adaptive_laplace", "iid", "adaptive IID", "tab:green"),
              ("adaptive_laplace", "non_iid", "adaptive non-IID", "tab:olive")]
    for column, eps in enumerate(epsilons):
        for line, table in enumerate(("1/7", "2")):
            axis = axes[line][column]
            for method, layout, label, color in series:
                picked = [row for row in rows if row["table"] == table and row["method"] == method
                          and row["epsilon"] == eps and row["clients"] != ""
                          and (row["clients"] == samples or layout is None or row["layout"] == layout)]
                if not picked:
                    continue
                picked.sort(key=lambda row: row["clients"])
                x = [row["clients"] for row in picked]
                axis.plot(x, [row["std"] for row in picked], "o-", color=color, label=label)
                axis.plot(x, [row["predicted_std"] for row in picked], ":", color=color)
            if table == "1/7":
                rr = _find(rows, table="1/7", method="rr", epsilon=eps)
                axis.axhline(rr["std"], color="black", linestyle="--", label="RR (debiased)")
            setting = "noisy counts (Table 1/7)" if table == "1/7" else "accurate P, N (Table 2)"
            style_axes(axis, title=f"eps = {eps:g}, {setting}", legend=7 if line == column == 0 else None,
                       xlabel=f"clients K (M = {samples}; rightmost: one row each)" if line == 1 else None,
                       ylabel="std of AUC estimate" if column == 0 else None)
    figure.suptitle("FedAUC on Framingham (stand-in for Criteo): Monte Carlo (markers), closed form (dotted)",
                    fontsize=10)
    figure.savefig(path, dpi=120)


@dataclass(frozen=True)
class DeploymentSetting:
    """One FedAUC setting the ``--secure`` check runs once on real parties (noisy counts)."""

    method: str
    epsilon: float
    clients: int | None = None       # None: randomized response (no clients) or one row per client
    layout: str = "one_per_client"   # with clients: iid or non_iid
    sum_fraction: float = 0.5
    delta: float = 0.0

    def label(self) -> str:
        """A short description for the check table."""
        if self.method in ("rr", "rr_noisy"):
            return f"{self.method}, epsilon={self.epsilon:g}"
        where = "one row per client" if self.clients is None else f"K={self.clients}, {self.layout}"
        return f"{self.method}, epsilon={self.epsilon:g}, {where}, fraction={self.sum_fraction:g}"


def layout_rng(seed: int) -> np.random.Generator:
    """The public generator of the client layouts (the same layout for every method of a (K, layout))."""
    from secure.public_randomness import public_generator

    return public_generator(seed ^ 0xFEDA)


def _client_reports(setting: DeploymentSetting, scores: np.ndarray, labels: np.ndarray, seed: int, index: int,
                    pid: int, parties: int) -> dict[str, Any]:
    """What party ``pid`` sends to the server: the clients' side of Algorithm 1 / 4 for the clients it hosts
    (client ``k``, or sample ``k`` for RR, at party ``k % m``; the others' labels zeroed first)."""
    from dp.fedauc.mechanisms import (_flip_threshold, _flips, client_releases, noisy_client_reports,
                                      zcdp_budget)
    from dp.fedauc.ranks import _twice_ranks, client_layout, local_statistics

    twice = _twice_ranks(scores)
    generator = check_noise_generator(seed, index)
    if setting.method in ("rr", "rr_noisy"):
        mine = np.arange(scores.size) % parties == pid
        flips = _flips(_flip_threshold(setting.epsilon), (1, scores.size), generator)[0]   # Algorithm 1
        noisy = np.logical_xor(labels.astype(bool), flips) & mine
        return {"twice_sum": int(twice[noisy].sum()), "positives": int(noisy.sum())}
    clients = scores.size if setting.clients is None else setting.clients
    client_of = client_layout(scores, clients=setting.clients, layout=setting.layout, rng=layout_rng(seed))
    own_clients = np.flatnonzero(np.arange(clients) % parties == pid)
    own_labels = np.where(np.isin(client_of, own_clients), labels, 0)
    stats = local_statistics(twice / 2.0, own_labels, client_of)
    parts = client_releases(stats, method=setting.method, samples=int(scores.size),
                            sum_fraction=setting.sum_fraction, counts="noisy")
    gaussian = setting.method.endswith("_gaussian")
    budget = zcdp_budget(setting.epsilon, setting.delta) if gaussian else setting.epsilon
    released = noisy_client_reports(parts, budget=budget, gaussian=gaussian, runs=1, rng=generator)
    return {"clients": own_clients.tolist(), **{name: value[0, own_clients].tolist() for name, value in released.items()}}


def _server_estimate(setting: DeploymentSetting, scores: np.ndarray, reports: Sequence[dict[str, Any]],
                     seed: int) -> float:
    """The server's side (party 0): eq. (1) on the received reports (eq. 3-4 for ``rr``), Algorithms 2-4."""
    from dp.fedauc.mechanisms import aggregate_reports, flip_probability, rr_server_auc
    from dp.fedauc.ranks import _twice_ranks, client_layout

    samples = int(scores.size)
    if setting.method in ("rr", "rr_noisy"):
        rank_sum = np.array([sum(r["twice_sum"] for r in reports) / 2.0])
        pbar = np.array([float(sum(r["positives"] for r in reports))])
        return float(rr_server_auc(rank_sum, pbar, samples, flip_probability(setting.epsilon),
                                   debias=setting.method == "rr")[0])
    clients = samples if setting.clients is None else setting.clients
    columns = {name: np.zeros((1, clients), dtype=np.int64) for name in reports[0] if name != "clients"}
    for report in reports:
        for name, column in columns.items():
            column[0, report["clients"]] = report[name]
    client_of = client_layout(scores, clients=setting.clients, layout=setting.layout, rng=layout_rng(seed))
    twice_total = np.bincount(client_of, weights=_twice_ranks(scores), minlength=clients)
    sizes = np.bincount(client_of, minlength=clients)
    return float(aggregate_reports(columns, samples=samples, sizes=sizes, twice_total=twice_total)[0])


async def deployment_checks(settings: Sequence[DeploymentSetting], seed: int) -> list[Any]:
    """``--secure`` for FedAUC: each setting once in the paper's deployment (Sun et al. §3, Algorithms 1-4; no
    MPC) beside one simulation with the same layout and noise (``docs/papers/fedauc.md``).  Collective; the
    checks at party 0, ``[]`` elsewhere."""
    from mpyc.runtime import mpc

    from dp.fedauc.montecarlo import simulate_fedauc

    scores, labels = framingham_scores(seed)
    parties, pid = len(mpc.parties), int(mpc.pid)
    checks: list[Any] = []
    for index, setting in enumerate(settings):
        own = _client_reports(setting, scores, labels, seed, index, pid, parties)
        reports = await mpc.transfer(own, senders=list(range(parties)), receivers=[0])
        if pid != 0:
            continue
        secure = _server_estimate(setting, scores, list(reports), seed)
        simulation = simulate_fedauc(scores, labels, method=setting.method, epsilon=setting.epsilon,
                                     clients=setting.clients, layout=setting.layout, runs=1, rng=layout_rng(seed),
                                     sum_fraction=setting.sum_fraction, delta=setting.delta, counts="noisy",
                                     noise_rng=check_noise_generator(seed, index))
        checks.append(SecureCheck(f"{setting.label()}, m={parties}", secure, float(simulation.estimates[0])))
    return checks


def deployment_settings() -> list[DeploymentSetting]:
    """The settings the ``--secure`` check runs once each (``docs/papers/fedauc.md``)."""
    epsilon, clients = EPSILONS[0], CLIENT_COUNTS[0]
    return [DeploymentSetting("rr", epsilon), DeploymentSetting("rr_noisy", epsilon),
            DeploymentSetting("global_laplace", epsilon, clients, "iid"),
            DeploymentSetting("local_laplace", epsilon, clients, "non_iid"),
            DeploymentSetting("adaptive_laplace", epsilon, clients, "iid"),
            DeploymentSetting("local_laplace", epsilon, None)]


def _run_tables(options: FedAucOptions, seed: int) -> list[Output]:
    from sklearn.metrics import roc_auc_score
    from tqdm import tqdm

    start = time.perf_counter()
    scores, labels = framingham_scores(seed)
    samples = int(scores.size)
    epsilons = (1.0, 8.0) if options.common.quick else EPSILONS
    client_counts = (10,) if options.common.quick else CLIENT_COUNTS
    rr_epsilons = (1.0, math.inf) if options.common.quick else RR_EPSILONS
    jobs: list[dict[str, Any]] = []
    for eps in epsilons:
        jobs.append(dict(table="1/7", method="rr", epsilon=eps, layout="none"))
        for k in (*client_counts, None):
            jobs += [dict(table="1/7" if counts == "noisy" else "2", method=f"{family}_laplace", counts=counts,
                          epsilon=eps, clients=k, layout=layout) for counts, family, layout in method_grid(k)]
    for eps in rr_epsilons:
        jobs += [dict(table="3", method=method, epsilon=eps, layout="none") for method in ("rr_noisy", "rr")]
    rows = [simulated_row(scores, labels, seed, runs=options.common.runs, noise_rng=None, **job)
            for job in tqdm(jobs, desc="FedAUC settings", unit="setting", disable=None, file=sys.stderr)]
    std_rows = [row for row in rows if row["table"] != "3"]
    summary = {"samples": samples, "positives": int(labels.sum()), "sklearn_auc": float(roc_auc_score(labels, scores)),
               "settings": len(rows), "seconds": time.perf_counter() - start, "seed": seed}
    return [Output("fedauc_std", CSV_FIELDS, std_rows, lambda rows, path: _plot(Path(path), rows, samples)),
            Output("fedauc_rr_debias", CSV_FIELDS, [row for row in rows if row["table"] == "3"]),
            Output("summary", (), [summary])]


def _report(options: FedAucOptions, outputs: Sequence[Output]) -> None:
    std_rows, rr_rows, (summary,) = (output.rows for output in outputs)
    samples, positives = summary["samples"], summary["positives"]
    print_table([
        ("data", f"Framingham, logistic-regression scores (stand-in for Criteo): M = {samples}, "
                 f"P = {positives}, N = {samples - positives}, AUC = {rr_rows[-1]['exact_auc']:.6f}"),
        ("runs", f"{options.common.runs} per setting, noise from the OS; public seed {summary['seed']} (data split, "
                 "layouts)"),
        ("settings", f"{summary['settings']} in {summary['seconds']:.1f} s"),
    ], title="FedAUC (Sun et al.): label-DP AUC across clients, the paper's deployment")
    _print_std_tables(std_rows, samples)
    _print_ratios(std_rows, samples)
    _print_rr_table(rr_rows, summary["sklearn_auc"])


def _footer(options: FedAucOptions, *_: Any) -> None:
    names = ("fedauc_std.csv", "fedauc_rr_debias.csv", "fedauc_std.png")
    print("\nwrote " + ", ".join(str(Path(options.common.results_dir) / name) for name in names))


SWEEP = Sweep(module="fedauc_tables", doc=__doc__ or "", page="docs/papers/fedauc.md", declare=_declare,
              resolve=lambda args, common: FedAucOptions(common), run=_run_tables, report=_report, runs=100,
              quick_runs=20, min_runs=2, own_options=True, footer=_footer,
              checks=lambda options, seed: deployment_checks(deployment_settings(), seed))

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
