"""Bell et al., Fig. 3: error of the locally private AUC protocol against the domain size d = 2^alpha.

Run: ``python -m scenarios.papers.bell_auc_domain [--quick]`` (``-M3 --secure``: once per split and alpha as
deployed on real parties, local DP, no MPC; equal to the simulation).  Writes ``bell_auc_domain.csv`` and
``.png``.  Method, data and findings beside ours: ``docs/papers/bell.md``."""
from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, SecureCheck, check_noise_generator, errorbars, format_mean,
                                       new_figure, print_rows, save_figure, style_axes)
from scenarios.kit.sweep import Output, Sweep, axis, monte_carlo, points
from scenarios.kit.sweep import framingham_scores as load_scores

__all__ = ["main", "parse_options", "DomainOptions", "domain_panel", "SERIES_STYLES", "ldp_auc_deployment",
           "load_scores", "synthetic_scores", "quantize_scores", "run_experiment", "regime", "DATASETS",
           "PAPER_POSITIVES", "PAPER_NEGATIVES", "CSV_COLUMNS", "METRICS"]

DEFAULT_ALPHAS = tuple(range(4, 15))
QUICK_ALPHAS = (4, 9, 14)
DEFAULT_EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
QUICK_EPSILONS = (1.0, 10.0)
MAX_ALPHA = 40
SPLITS = ("users", "budget")

#: per-run measurements; the CSV has ``<metric>_mean`` and ``<metric>_se`` for each.
METRICS = ("estimate", "squared_error", "absolute_error", "privacy_squared_error")
DATASETS = ("framingham", "synthetic")
#: the paper's smallest class (v1 §6) and the negatives derived from the Diabetes base rate (docs/papers/bell.md)
PAPER_POSITIVES = 661
PAPER_NEGATIVES = 5262
MAX_CLASS = 10**7
CSV_COLUMNS = ("dataset", "split", "alpha", "domain_size", "epsilon", "runs", "positives", "negatives", "exact_auc",
               "quantized_auc", *(f"{metric}_{part}" for metric in METRICS for part in ("mean", "se")), "seed")


@dataclass(frozen=True)
class DomainOptions:
    alphas: tuple[int, ...]
    epsilons: tuple[float, ...]
    splits: tuple[str, ...]
    common: CommonOptions
    dataset: str = "framingham"
    positives: int = PAPER_POSITIVES
    negatives: int = PAPER_NEGATIVES


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--alphas", help="exponents alpha of d = 2^alpha (default 4..14; --quick: 4,9,14)")
    parser.add_argument("--epsilon-grid", help="epsilons (default 0.5,1,2,5,10; --quick: 1,10)")
    parser.add_argument("--split", choices=("users", "budget", "both"), default="users",
                        help="each user at one level (users), every level with epsilon/alpha (budget) or both")
    parser.add_argument("--dataset", choices=DATASETS, default="framingham",
                        help="Framingham scores, or synthetic binormal scores with the paper's class sizes")
    parser.add_argument("--positives", type=int, default=PAPER_POSITIVES, help="synthetic positives (default 661)")
    parser.add_argument("--negatives", type=int, default=PAPER_NEGATIVES, help="synthetic negatives (default 5262)")


def _resolve(args: Any, common: CommonOptions) -> DomainOptions:
    for option, value in (("--positives", args.positives), ("--negatives", args.negatives)):
        if not 1 <= value <= MAX_CLASS:
            raise UsageError(f"{option} must lie in [1, {MAX_CLASS}], got {value}")
    return DomainOptions(alphas=axis(args.alphas, "--alphas", default=DEFAULT_ALPHAS, quick=QUICK_ALPHAS,
                                     is_quick=args.quick, integers=(1, MAX_ALPHA)),
                         epsilons=axis(args.epsilon_grid, "--epsilon-grid", default=DEFAULT_EPSILONS,
                                       quick=QUICK_EPSILONS, is_quick=args.quick),
                         splits=SPLITS if args.split == "both" else (args.split,), common=common,
                         dataset=args.dataset, positives=args.positives, negatives=args.negatives)


def synthetic_scores(seed: int, *, positives: int = PAPER_POSITIVES,
                     negatives: int = PAPER_NEGATIVES) -> tuple[np.ndarray, np.ndarray]:
    """Binormal logit scores with Framingham's per-class shape and the given class sizes (docs/papers/bell.md).

    :return: ``(scores, labels)``: ``positives`` ones then ``negatives`` zeros, scores in ``(0, 1)``."""
    framingham, labels = load_scores(seed)
    logits = np.log(framingham / (1.0 - framingham))
    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(2,))))
    classes = [(logits[labels == label], count) for label, count in ((1, positives), (0, negatives))]
    parts = [generator.normal(float(chosen.mean()), float(chosen.std()), size=count) for chosen, count in classes]
    scores = 1.0 / (1.0 + np.exp(-np.concatenate(parts)))
    return scores, np.concatenate([np.ones(positives, dtype=np.int64), np.zeros(negatives, dtype=np.int64)])


def quantize_scores(scores: np.ndarray, domain_size: int) -> np.ndarray:
    """The paper's ``fp(s, d)``: scores in ``[0, 1]`` to integers ``min(floor(s d), d - 1)`` in ``[0, d)``."""
    clipped = np.clip(np.asarray(scores, dtype=float), 0.0, 1.0)
    return np.minimum(np.floor(clipped * domain_size), domain_size - 1).astype(np.int64)


def run_experiment(options: DomainOptions, seed: int) -> list[Output]:
    """Every (split, alpha, epsilon) ``options.common.runs`` times; one summary row per setting."""
    from sklearn.metrics import roc_auc_score

    from dp.bell.auc import ldp_auc

    scores, labels = _data(options, seed)
    exact = float(roc_auc_score(labels, scores))
    fixed = {"dataset": options.dataset, "positives": int(labels.sum()), "negatives": int((labels == 0).sum()),
             "exact_auc": exact}
    grid = []
    for point in points(split=options.splits, alpha=options.alphas, epsilon=options.epsilons):
        quantized = quantize_scores(scores, 2**point["alpha"])
        grid.append({**point, **fixed, "domain_size": 2**point["alpha"],
                     "quantized_auc": float(roc_auc_score(labels, quantized)),
                     "_pos": quantized[labels == 1], "_neg": quantized[labels == 0]})

    def trial(point: Any, _: int, noise: np.random.Generator | None) -> dict[str, float]:
        estimate = float(ldp_auc(point["_pos"], point["_neg"], domain_size=point["domain_size"],
                                 epsilon=point["epsilon"], split=point["split"], rng=noise).auc)
        return {"estimate": estimate, "squared_error": (estimate - exact) ** 2, "absolute_error": abs(estimate - exact),
                "privacy_squared_error": (estimate - point["quantized_auc"]) ** 2}

    rows = monte_carlo(grid, trial, metrics=METRICS, common=options.common, seed=seed, name="bell_auc_domain")
    return [Output("bell_auc_domain", CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


def regime(row: dict[str, Any]) -> str:
    """Which error decides a setting: ``"privacy"`` if the privacy MSE exceeds the squared quantization bias,
    else ``"quantization"``."""
    bias2 = (row["quantized_auc"] - row["exact_auc"]) ** 2
    return "privacy" if row["privacy_squared_error_mean"] > bias2 else "quantization"


#: line style, marker and marker fill of the first and the second series (split, protocol; colour: epsilon): the
#: marker tells them apart in the legend, where an errorbar's handle hardly shows the line style
SERIES_STYLES = (("-", "o", "full"), ("--", "s", "none"))


def domain_panel(axes: Any, series: Sequence[tuple[str, list[dict[str, Any]], int]], epsilons: Sequence[float],
                 **finish: Any) -> None:
    """MSE against the domain size of every series ``(label format, rows, style index)`` at every epsilon, the
    label ``label.format(epsilon)``; the panel finished by :func:`style_axes` with ``finish``."""
    for label, rows, style in series:
        line, marker, fill = SERIES_STYLES[style]
        for index, epsilon in enumerate(epsilons):
            chosen = [row for row in rows if row["epsilon"] == epsilon and math.isfinite(row["squared_error_mean"])]
            if chosen:
                errorbars(axes, chosen, "domain_size", "squared_error", marker=marker, markersize=4, fillstyle=fill,
                          linestyle=line, capsize=2, color=f"C{index}", label=label.format(epsilon))
    style_axes(axes, xlabel="domain size d", ylabel="mean squared error of the AUC estimate", base=2,
               handlelength=4.0, **finish)


def _plot(options: DomainOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, axes = new_figure()
    source = ("Framingham LR scores" if options.dataset == "framingham"
              else "synthetic binormal scores (Framingham's shape, the paper's class sizes)")
    suffix = len(options.splits) > 1
    domain_panel(axes, [("epsilon = {:g}" + (f" ({split})" if suffix else ""),
                         [row for row in rows if row["split"] == split], SPLITS.index(split))
                        for split in options.splits], options.epsilons,
                 title=f"LDP AUC protocol (Bell et al. Fig. 3)\non {source}\n{rows[0]['positives']} positives, "
                       f"{rows[0]['negatives']} negatives, {options.common.runs} runs, split: "
                       f"{', '.join(options.splits)}")
    save_figure(figure, path)


def _report(options: DomainOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    table = [[row["split"], str(row["alpha"]), f"{row['epsilon']:g}",
              format_mean(row["estimate_mean"], row["estimate_se"], 4),
              format_mean(row["squared_error_mean"], row["squared_error_se"]),
              format_mean(row["absolute_error_mean"], row["absolute_error_se"]),
              f"{row['quantized_auc']:.4f}"] for row in rows]
    first = rows[0]
    print_rows("LDP AUC protocol against the domain size (Bell et al., Fig. 3): mean ± s.e. over runs",
               ["split", "alpha", "epsilon", "estimate", "MSE", "abs. error", "quantized AUC"], table,
               notes=[f"{options.dataset} scores: {first['positives']} positives, {first['negatives']} negatives; "
                      f"exact AUC of the unquantized scores {first['exact_auc']:.4f}"])
    best: dict[tuple[str, float], dict[str, Any]] = {}  # per (split, epsilon): the row of the smallest MSE
    for row in (row for row in rows if math.isfinite(row["squared_error_mean"])):
        key = (row["split"], row["epsilon"])
        if key not in best or row["squared_error_mean"] < best[key]["squared_error_mean"]:
            best[key] = row
    summary = [[split, f"{epsilon:g}", str(row["alpha"]),
                format_mean(row["squared_error_mean"], row["squared_error_se"]),
                f"{math.sqrt(row['squared_error_mean']):.3g}", f"{(row['quantized_auc'] - row['exact_auc']) ** 2:.3g}",
                f"{row['privacy_squared_error_mean']:.3g}", regime(row)]
               for (split, epsilon), row in sorted(best.items())]
    print_rows("Best domain size per epsilon (smallest MSE)",
               ["split", "epsilon", "best alpha", "MSE", "RMSE", "bias^2", "privacy MSE", "regime"], summary)
    for split in options.splits:
        five, ten = best.get((split, 5.0)), best.get((split, 10.0))
        if five is not None and ten is not None:
            print(f"  {split}: best MSE at epsilon 5 is {five['squared_error_mean']:.3g}, at epsilon 10 "
                  f"{ten['squared_error_mean']:.3g} (gain x{five['squared_error_mean'] / ten['squared_error_mean']:.2f})")


def _own_reports(values: np.ndarray, *, domain_size: int, epsilon: float, split: str, pid: int, parties: int,
                 generator: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One class at party ``pid``: its users (user ``i`` at party ``i % m``) randomise their scores
    (:func:`dp.bell.hierarchical.randomize_hierarchy`, the others' scores zeroed first: the party never
    uses them), and per level the party keeps ``(positions, rows, signs)`` of its own users' reports."""
    from dp.bell.hierarchical import randomize_hierarchy

    users, levels = int(values.size), domain_size.bit_length() - 1
    mine = np.arange(users) % parties == pid
    # which users report at each level: all, or (users split) by the permutation randomize_hierarchy draws first
    order = copy.deepcopy(generator).permutation(users) if split == "users" else None
    members = [np.arange(users) if order is None else order[level - 1::levels] for level in range(1, levels + 1)]
    reports = randomize_hierarchy(np.where(mine, values, 0), domain_size=domain_size, epsilon=epsilon, split=split,
                                  rng=generator)
    kept = []
    for chosen, level in zip(members, reports.reports):
        keep = np.flatnonzero(mine[chosen])
        kept.append((keep, np.asarray(level.rows)[keep], np.asarray(level.signs)[keep]))
    return kept


def _server_hierarchy(received: Sequence[Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]], users: int, *,
                      domain_size: int, epsilon: float, split: str) -> Any:
    """The server (party 0) assembles one class's reports from every party into its hierarchy: per level, every
    party's reports at the positions it gave (together, every position of the level)."""
    from dp.bell.hadamard import HadamardReports
    from dp.bell.hierarchical import HadamardHierarchy, HierarchyReports, level_epsilon

    levels = domain_size.bit_length() - 1
    eps0 = level_epsilon(epsilon, levels=levels, split=split)
    reports = []
    for level in range(1, levels + 1):
        parts = [party[level - 1] for party in received]
        size = sum(positions.size for positions, _, _ in parts)
        rows, signs = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int8)
        for positions, party_rows, party_signs in parts:
            rows[positions], signs[positions] = party_rows, party_signs
        reports.append(HadamardReports(bits=level, epsilon=eps0, rows=rows, signs=signs))
    return HadamardHierarchy(HierarchyReports(domain_size=domain_size, split=split, users=users, epsilon=float(epsilon),
                                              delta=0.0, level_epsilon=eps0, reports=tuple(reports)))


async def ldp_auc_deployment(label: str, scores: Sequence[np.ndarray], *, alpha: int, epsilon: float, split: str,
                             seed: int, setting: int) -> list[SecureCheck]:
    """One run of the LDP AUC protocol as deployed (Bell et al. §4) on the ``(positives, negatives)`` scores at
    ``d = 2^alpha``: user ``i`` of a class randomises at party ``i % m`` and its report goes to party 0 (the untrusted
    server) with ``mpc.transfer``, which traverses the hierarchies as :func:`dp.bell.auc.ldp_auc` and runs it on the
    same scores and stream.  Collective; at party 0 the ``equal`` check ``"<label>, m=<m>"``, else ``[]``."""
    from mpyc.runtime import mpc

    from dp.bell.auc import hierarchical_auc, ldp_auc

    parties, pid, size = len(mpc.parties), int(mpc.pid), 2**alpha
    positives, negatives = (quantize_scores(values, size) for values in scores)
    generator = check_noise_generator(seed, setting)   # positives first, then negatives, as ldp_auc
    own = [_own_reports(values, domain_size=size, epsilon=epsilon, split=split, pid=pid, parties=parties,
                        generator=generator) for values in (positives, negatives)]
    received = await mpc.transfer(own, senders=list(range(parties)), receivers=[0])
    if pid != 0:
        return []
    hierarchies = [_server_hierarchy([party[index] for party in received], int(values.size), domain_size=size,
                                     epsilon=epsilon, split=split)
                   for index, values in enumerate((positives, negatives))]
    deployed = float(hierarchical_auc(*hierarchies).auc)
    simulated = float(ldp_auc(positives, negatives, domain_size=size, epsilon=epsilon, split=split,
                              rng=check_noise_generator(seed, setting)).auc)
    return [SecureCheck(f"{label}, m={parties}", deployed, simulated)]


def _data(options: DomainOptions, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if options.dataset == "synthetic":
        return synthetic_scores(seed, positives=options.positives, negatives=options.negatives)
    return load_scores(seed)


async def secure_checks(options: DomainOptions, seed: int) -> list[Any]:
    """``--secure``: every split and alpha once at the first epsilon, deployed on the real parties
    (:func:`ldp_auc_deployment`); the checks at party 0, ``[]`` elsewhere."""
    scores, labels = _data(options, seed)
    epsilon = options.epsilons[0]
    checks: list[Any] = []
    for setting, (split, alpha) in enumerate(itertools.product(options.splits, options.alphas)):
        checks += await ldp_auc_deployment(f"LDP AUC, {split} split, alpha={alpha}, epsilon={epsilon:g}",
                                           (scores[labels == 1], scores[labels == 0]), alpha=alpha, epsilon=epsilon,
                                           split=split, seed=seed, setting=setting)
    return checks


SWEEP = Sweep(module="bell_auc_domain", doc=__doc__ or "", page="docs/papers/bell.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=20, quick_runs=3, checks=secure_checks)

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
