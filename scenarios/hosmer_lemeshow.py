"""The private Hosmer-Lemeshow calibration test across parties (Barczewski, Mawass & Ramon §5.2, Alg. 2).

Every party holds its own rows: a model's predicted probability and the true label.  The parties
release, with one epsilon split as Theorem 2 states (eps' = eps / (L + 9), L = log2 of the grid size):
the private ECDF of the predicted probabilities on the grid i/N (tree mechanism, (L + 1) eps': per-party
counts, secure sums, every party's node draws secret-shared), the Q - 1 group boundaries at the private
deciles by the inverse ECDF (Algorithm 1, post-processing at party 0), then the 4Q noisy expected and
observed counts per group (8 eps': every party's own group sums plus its own discrete Laplace shares,
summed securely, opened once), and from them the HL statistic H (eq. 5) and its p-value against chi2
with Q - 2 degrees of freedom (scipy).  Party 0 adds the noise band of H and p (dp.ecdf.hosmer_lemeshow.noise_band:
the released counts re-noised 2000 times with the public noise law, public seed; the central 95 % of H and p --
the noise's spread around the released values, not a confidence interval for the noiseless H), the noise's
expected part of H, and a "warning:" line when the noise dominates (an expected count raised to the floor, the
noise part above the degrees of freedom, H's band wider than chi2's chance range, p's band over half of 0..1);
the record has them as interval and warning.  The protocol is dp.ecdf.hosmer_lemeshow_secure; for the same
noise draws it releases what the simulated path dp.ecdf.hosmer_lemeshow.private_hosmer_lemeshow does
(the Fig. 6 experiment, scenarios.papers.hosmer_lemeshow, measures that path's error).

Threat model: passive, static adversary corrupting at most t < m/2 parties (MPyC -T); the coalition
learns the row counts, the boundaries and (with party 0) the released ECDF and statistics, all
epsilon-DP against it because the honest parties' draws alone are calibrated (variance x m/(m - t)).

Run it with three local parties::

    python -m scenarios.hosmer_lemeshow -M3                      # embedded Framingham, logistic-regression scores
    python -m scenarios.hosmer_lemeshow -M3 --epsilon 5 --groups 10 --json hl.json --table hl.csv --plot hl.png
    python -m scenarios.hosmer_lemeshow -M3 --data 'site{pid}.csv' --columns p_hat,outcome --budget 10

Options: --data PATH (CSV; {pid} in the path gives each party its own file, otherwise party i keeps rows
i, i+m, ...; default: the embedded Framingham rows not used to fit the public logistic regression of
TenYearCHD, with its predicted probability as column score), --columns SCORE,LABEL (default
score,TenYearCHD; scores are clipped to [0, 1] at each party, labels must be 0 or 1), --epsilon (total
budget, default 1), --groups Q (default 10), --points N (ECDF grid i/N, a power of two, default
1024: L = 10, eps' = eps/19; the old name --grid-points still works, with a warning), --domain SCORE=0:1[:BITS]
(the scores' declared domain, always 0:1 here: predicted probabilities; BITS as --precision), --precision B
(fractional bits of the fixed-point scores, default 16),
--smoothed (boundaries on the monotone-smoothed ECDF, eq. 3, instead of the raw one), --accounting
paper|joint (paper: Theorem 2 as proved; joint: the same 8 eps' on the statistics' joint sensitivity,
half the noise scale), --seed S (public seed of the split that fits the embedded data's model, default 1:
the data of scenarios.papers.hosmer_lemeshow), --json PATH (party 0 writes the record), --table PATH.csv
(party 0 writes one row per group q = 1..Q: group, lower, upper (the released boundaries t_{q-1}, t_q),
expected_positive, observed_positive, expected_negative, observed_negative (the noisy counts as released,
before any raising), contribution (the group's two cells of eq. 5, by dp.ecdf.hosmer_lemeshow_terms from the
counts as used -- expected raised to the floor, observed to 0 -- so the column sums to H) and raised (which
of the group's counts were raised before dividing, empty if none)), --plot PATH.png (party 0 draws the
calibration figure: left, observed against expected positives per group with +-1.96 released noise std
error bars and the diagonal; right, the released ECDF of the scores on the grid, raw and smoothed if
--smoothed, with the Q - 1 boundaries), --missing
refuse|fill and --fill COLUMN=V (a missing cell stops the run, the default with --data, or takes the
declared value; the embedded scored rows have none), and the budget options --ledger, --budget,
--accountant, --dataset-name (a run on --data spends --epsilon from every party's ledger).
"""
from __future__ import annotations

import csv
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table, run_scenario
from scenarios.kit.records import write_record
from scenarios.kit.missing_values import add_missing_arguments, describe_policy, local_note, missing_policy

__all__ = ["main", "parse_options", "spend_of", "HosmerLemeshowOptions", "SPLIT_SALT", "TABLE_COLUMNS",
           "write_group_table", "draw_calibration"]

#: xor-ed into --seed for the embedded data's model split: the same rows as scenarios.papers.hosmer_lemeshow
SPLIT_SALT = 0x5C0E


@dataclass
class HosmerLemeshowOptions:
    """Parsed options."""

    data: str | None
    columns: list[str]
    epsilon: float
    groups: int
    grid_points: int
    precision: int
    smoothed: bool
    accounting: str
    seed: int
    json: str | None
    missing: Any = None
    budget: Any = None
    table: str | None = None
    plot: str | None = None

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        return {"columns": self.columns, "epsilon": self.epsilon, "groups": self.groups,
                "grid_points": self.grid_points, "precision": self.precision, "smoothed": self.smoothed,
                "accounting": self.accounting, "seed": self.seed, "embedded": self.data is None,
                "missing": self.missing.mode, "fill": [list(item) for item in self.missing.fills]}

    def query(self) -> Any:
        """The :class:`dp.ecdf.hosmer_lemeshow.HosmerLemeshowQuery` of these options."""
        from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery

        return HosmerLemeshowQuery(self.epsilon, groups=self.groups, grid_points=self.grid_points,
                                   precision=self.precision, smoothed=self.smoothed, accounting=self.accounting)

    def specs(self) -> list[Any]:
        """The declared columns: the score on [0, 1] with ``precision`` bits, the label as categories 0/1."""
        from secure.intake import ColumnSpec

        return [ColumnSpec(self.columns[0], 0.0, 1.0, self.precision),
                ColumnSpec.categorical(self.columns[1], (0, 1))]


def build_parser() -> ScenarioParser:
    """The option parser (MPyC's options are removed before it runs)."""
    from scenarios.kit.budget_run import add_budget_arguments
    from scenarios.kit.options import add_renamed_option

    parser = ScenarioParser(prog="python -m scenarios.hosmer_lemeshow", description=__doc__)
    parser.add_argument("--data", default=None)
    parser.add_argument("--columns", default="score,TenYearCHD", metavar="SCORE,LABEL")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--groups", type=int, default=10)
    add_renamed_option(parser, "--points", "--grid-points", type=int, default=1024)
    parser.add_argument("--domain", default=None)
    parser.add_argument("--precision", type=int, default=16)
    parser.add_argument("--smoothed", action="store_true")
    parser.add_argument("--accounting", choices=("paper", "joint"), default="paper")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", default=None, metavar="PATH.csv")
    parser.add_argument("--plot", default=None, metavar="PATH.png")
    add_missing_arguments(parser)
    add_budget_arguments(parser)
    return parser


def parse_options(argv: Sequence[str]) -> HosmerLemeshowOptions:
    """Parse and validate the options (no data is read here).

    :raise UsageError: with a one-line message.
    """
    from dp.validation import check_noise_scale, check_seed
    from scenarios.kit.budget_run import budget_options
    from scenarios.kit.options import parse_columns
    from scenarios.kit.outputs import check_output_path

    args = build_parser().parse_args(list(argv))
    columns = parse_columns(args.columns, expected=2, names="SCORE,LABEL")
    if args.groups < 3:  # one line for every Q below 3, 0 and negative included
        raise UsageError(f"--groups must be at least 3 (the test has Q - 2 degrees of freedom), got {args.groups}")
    precision = _declared_precision(args.domain, columns[0], args.precision)
    options = HosmerLemeshowOptions(args.data, list(columns), args.epsilon, args.groups, args.points,
                                    precision, args.smoothed, args.accounting, args.seed, args.json)
    try:
        check_seed(args.seed, "--seed")
        query = options.query()
        query.tree_plan()  # the node noise must be drawable
        check_noise_scale(query.statistics_rate, query.scale, name="epsilon of the group statistics")
        specs = options.specs()
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    check_output_path(args.json, "--json")
    check_output_path(args.table, "--table")
    check_output_path(args.plot, "--plot")
    options.table, options.plot = args.table, args.plot
    options.missing = missing_policy(args.missing, args.fill, specs,
                                     dataset=None if args.data is not None else "framingham",
                                     roles={columns[0]: ("score", "choose a column of predicted probabilities"),
                                            columns[1]: ("label", "choose a column of 0/1 labels")})
    options.budget = budget_options(args)
    return options


def _declared_precision(text: str | None, score: str, precision: int) -> int:
    """``--domain SCORE=0:1[:BITS]`` (or ``0:1[:BITS]``), the one form of every job: the scores are predicted
    probabilities, so the domain can only be 0:1; its BITS, if given, are the fixed-point precision.

    :raise UsageError: another range, a STEP, a column other than the score.
    """
    from scenarios.kit.options import domain_of, parse_domains, parse_steps

    declared = domain_of(parse_domains(text, single=score), score, [score])
    if declared is None:
        return precision
    if (declared[0], declared[1]) != (0.0, 1.0):
        raise UsageError(f"--domain {score}: the scores are predicted probabilities, on 0:1 (the ECDF grid is i/N "
                         f"of [0, 1]), got {declared[0]:g}:{declared[1]:g}")
    if parse_steps(text, single=score):
        raise UsageError(f"--domain {score}=0:1 takes no STEP here: the grid is i/N (--points)")
    return declared[2] if declared[2] is not None else precision


async def _read_rows(options: HosmerLemeshowOptions) -> tuple[np.ndarray, np.ndarray]:
    """Every party: its rows (scores clipped to [0, 1] in fixed point, labels 0/1), its verdict shared.

    :return: ``(probabilities, labels)`` of this party (probabilities on the fixed-point grid).
    :raise secure.errors.InputError: a bad file or cell at any party, at every party alike.
    """
    from mpyc.runtime import mpc

    from scenarios.kit.datasets import framingham_with_scores
    from secure.intake import party_rows, rows_from_table, to_fixed_point
    from secure.public_randomness import public_generator
    from secure.session import InputError, agree_verdict

    specs = options.specs()
    error, detail = None, None
    probabilities, labels, filled, clipped = np.empty(0), np.empty(0, dtype=np.int64), 0, 0
    try:
        if options.data is not None:
            rows = party_rows(options.data, options.columns, party=mpc.pid, parties=len(mpc.parties),
                              missing=options.missing, specs=specs)
        else:
            table = framingham_with_scores(public_generator(options.seed ^ SPLIT_SALT))
            rows = rows_from_table(table.header, table.rows, options.columns, source="embedded framingham",
                                   party=mpc.pid, parties=len(mpc.parties), missing=options.missing, specs=specs)
        fixed = to_fixed_point(rows.values, specs)
        probabilities = specs[0].decode(fixed.integers[:, 0])
        labels = fixed.integers[:, 1].astype(np.int64)
        filled, clipped = rows.filled, sum(fixed.clipped.values())
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    print(local_note(filled=filled, clipped=clipped))
    return probabilities, labels


async def _release(options: HosmerLemeshowOptions) -> Callable[[], None] | None:
    """Every party: read its rows, run the secure Algorithm 2.

    :return: party 0's delivery (the table, ``--json``), run after the orderly shutdown.
    """
    from dp.ecdf.hosmer_lemeshow_secure import run_secure_hosmer_lemeshow

    probabilities, labels = await _read_rows(options)
    result = await run_secure_hosmer_lemeshow(probabilities, labels, options.query(), receivers=[0])
    if result is None:
        return None
    return lambda: _report(options, result)


def band_of(options: HosmerLemeshowOptions, release: Any) -> Any:
    """The noise band of the release and its warnings (:func:`dp.ecdf.hosmer_lemeshow.noise_band`: released values
    re-noised with the public noise law, public seed; post-processing at party 0)."""
    from dp.ecdf.hosmer_lemeshow import noise_band

    return noise_band(release, options.query())


def record_of(options: HosmerLemeshowOptions, result: Any, band: Any = None) -> dict[str, Any]:
    """The JSON record of party 0 (:func:`_report`): with ``interval`` (the noise band of H and p, its meaning)
    and ``warning`` (the band's warnings joined, or null)."""
    release = result.release
    budget = release.budget
    band = band_of(options, release) if band is None else band
    return {"statistic": "hosmer_lemeshow", "estimate": release.statistic, "p_value": release.p_value,
            "interval": band.record(), "warning": " ".join(f"{w}." for w in band.warnings) or None,
            "degrees_of_freedom": release.degrees_of_freedom, "groups": options.groups,
            "epsilon": release.epsilon, "delta": 0.0, "n": release.n, "pairs": None,
            "parties": release.parties, "threshold": release.threshold,
            "budget_split": {"epsilon_prime": budget.epsilon_prime, **budget.parts()},
            "accounting": release.accounting, "grid_points": options.grid_points, "depth": budget.depth,
            "precision": options.precision, "smoothed": options.smoothed,
            "boundaries": release.boundaries.tolist(), "expected": release.expected.tolist(),
            "observed": release.observed.tolist(), "floored": release.floored,
            "left_out_groups": [int(q) + 1 for q in np.flatnonzero(release.empty)],
            "ecdf_count_std": float(np.sqrt(release.ecdf_count_variance)),
            "expected_noise_std": float(np.sqrt(release.expected_noise_variance)),
            "observed_noise_std": float(np.sqrt(release.observed_noise_variance)),
            "noise_std": None, "sampling_error_bound": 0.0, "seed": options.seed if options.data is None else None,
            "uncertainty_covers": "DP noise only (per released count: ecdf_count_std, expected_noise_std, "
                                  "observed_noise_std); exact counts, no sampling error",
            "missing": options.missing.mode, "fill": dict(options.missing.fills),
            "seconds": result.seconds, "bytes_sent": result.bytes_sent, "phases": result.phases,
            "noise_source": result.noise_source, "guarantee": result.guarantee}


def _band_text(band: Any) -> str:
    """``H a to b, p c to d; ...`` for the table."""
    low, high = band.statistic
    p_low, p_high = band.p_value
    return (f"H {low:.4g} to {high:.4g}, p {p_low:.2g} to {p_high:.2g}; noise adds about {band.noise_part:.3g} to H "
            f"on average (chance range of chi2({band.degrees_of_freedom}): {band.chance_range[0]:.3g} to "
            f"{band.chance_range[1]:.3g})")


def _report(options: HosmerLemeshowOptions, result: Any) -> None:
    from secure.meter import seconds_label

    release = result.release
    budget = release.budget
    band = band_of(options, release)
    print_table([
        ("statistic", f"Hosmer-Lemeshow H = {release.statistic:.4g}, p-value = {release.p_value:.2g} "
                      f"(chi2, {release.degrees_of_freedom} df)"),
        (f"noise band {band.level:.0%}", _band_text(band)),
        ("columns", f"score column {options.columns[0]}, label column {options.columns[1]}; {options.groups} "
                    f"groups at the "
                    f"private quantiles of the score"),
        ("epsilon", f"{release.epsilon:g} = ECDF (L+1) eps' {budget.ecdf_epsilon:.4g} + group statistics 8 eps' "
                    f"{budget.statistics_epsilon:.4g}; eps' = eps/(L+9) = {budget.epsilon_prime:.4g}, "
                    f"L = {budget.depth} ({options.grid_points} grid points)"),
        ("accounting", release.accounting + (" (each of the 4Q statistics eps'-DP, at most 8 change)"
                                             if release.accounting == "paper" else
                                             " (joint weighted-L1 sensitivity 4 gets the same 8 eps')")),
        ("noise std", f"ECDF count {np.sqrt(release.ecdf_count_variance):.3g}, expected count "
                      f"{np.sqrt(release.expected_noise_variance):.3g}, observed count "
                      f"{np.sqrt(release.observed_noise_variance):.3g}"),
        ("n", f"{release.n} rows"),
        ("missing values", describe_policy(options.missing)),
        ("parties", f"{release.parties} (threshold t = {release.threshold})"),
        (seconds_label(), f"{result.seconds:.2f}"),
        ("bytes", f"{format_bytes(result.bytes_sent)} sent by all parties"),
    ], title="Private Hosmer-Lemeshow test (Barczewski, Mawass & Ramon, Algorithm 2)")
    print(f"  noise: {result.guarantee}")
    print(f"  band: {band.meaning()}")
    for warning in band.warnings:
        print(f"  warning: {warning}")
    print("  boundaries: " + ", ".join(f"{b:.4g}" for b in release.boundaries[1:-1])
          + (" (smoothed ECDF)" if options.smoothed else " (raw released ECDF)"))
    print("  group  " + "  ".join(f"{q + 1:>7}" for q in range(options.groups)))
    for label, values in (("E pos", release.expected[1]), ("O pos", release.observed[1]),
                          ("E neg", release.expected[0]), ("O neg", release.observed[0])):
        print(f"  {label}  " + "  ".join(f"{v:>7.1f}" for v in values))
    if release.floored:
        print(f"  {release.floored} noisy expected count(s) raised to {options.query().expected_floor:g} before "
              f"dividing (post-processing)")
    if release.empty.any():
        left_out = ", ".join(str(q + 1) for q in np.flatnonzero(release.empty))
        print(f"  group(s) {left_out} empty by construction (equal released boundaries): left out of H and of the "
              f"degrees of freedom ({release.degrees_of_freedom} df)"
              + ("; fewer than 3 groups left: no p-value" if release.degrees_of_freedom < 1 else ""))
    print("  phases: " + ", ".join(f"{k} {v['seconds']:.2f} s / {format_bytes(int(v['bytes_sent']))}"
                                   for k, v in result.phases.items()))
    if options.json:
        write_record(options.json, record_of(options, result, band))
    if options.table:
        write_group_table(options.table, release, floor=options.query().expected_floor)
    if options.plot:
        draw_calibration(options.plot, release)


#: the columns of ``--table``, in order
TABLE_COLUMNS: tuple[str, ...] = ("group", "lower", "upper", "expected_positive", "observed_positive",
                                  "expected_negative", "observed_negative", "contribution", "raised", "left_out")


def write_group_table(path: str, release: Any, *, floor: float) -> None:
    """``--table``: one row per group of the released statistics (:data:`TABLE_COLUMNS`).

    Only released values and their post-processing: the boundaries, the noisy ``E``/``O`` as released, and
    each group's contribution to ``H`` from :func:`dp.ecdf.hosmer_lemeshow.hosmer_lemeshow_terms` -- the code
    that computes ``H`` -- so the contributions sum to the released ``H``; ``left_out`` marks a group empty by
    construction (equal released boundaries), whose noisy counts are pure noise and add nothing to ``H``.

    :param release: a :class:`dp.ecdf.hosmer_lemeshow.HosmerLemeshowRelease`.
    :param floor: the query's ``expected_floor`` (the smallest denominator).
    """
    from dp.ecdf.hosmer_lemeshow import hosmer_lemeshow_terms

    terms = hosmer_lemeshow_terms(release.expected, release.observed, floor=floor, empty=release.empty)
    contributions = terms.per_group
    classes = ((1, "positive"), (0, "negative"))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(TABLE_COLUMNS)
        for q in range(release.expected.shape[1]):
            raised = [f"{kind}_{name}" for kind, mask in (("expected", terms.expected_raised),
                                                          ("observed", terms.observed_raised))
                      for s, name in classes if mask[s, q]]
            writer.writerow([q + 1, repr(float(release.boundaries[q])), repr(float(release.boundaries[q + 1])),
                             repr(float(release.expected[1, q])), int(release.observed[1, q]),
                             repr(float(release.expected[0, q])), int(release.observed[0, q]),
                             repr(float(contributions[q])), " ".join(raised), bool(release.empty[q])])


def draw_calibration(path: str, release: Any) -> None:
    """``--plot``: the calibration figure of a release (PNG, Agg canvas).

    Left: the released observed against expected positives per group, error bars +-1.96 times the released
    noise std of each count, and the diagonal ``y = x`` (perfect calibration).  Right: the released ECDF of
    the scores on the grid (raw, and smoothed when the boundaries came from the smoothed curve) with the
    ``Q - 1`` group boundaries as vertical lines.

    :param release: a :class:`dp.ecdf.hosmer_lemeshow.HosmerLemeshowRelease`.
    """
    from scenarios.kit.experiments import new_figure, save_figure

    figure, _ = new_figure(11.0, 4.6)
    figure.clear()
    left, right = figure.subplots(1, 2)
    expected, observed = release.expected[1], release.observed[1]
    x_error = 1.96 * float(np.sqrt(release.expected_noise_variance))
    y_error = 1.96 * float(np.sqrt(release.observed_noise_variance))
    left.errorbar(expected, observed, xerr=x_error, yerr=y_error, fmt="o", capsize=3,
                  label="group (+-1.96 noise std)")
    for q, (x, y) in enumerate(zip(expected, observed)):
        left.annotate(str(q + 1), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    low = min(0.0, float(np.min(expected)) - x_error, float(np.min(observed)) - y_error)
    high = max(float(np.max(expected)) + x_error, float(np.max(observed)) + y_error, 1.0)
    left.plot([low, high], [low, high], color="grey", linestyle="--", label="y = x")
    left.set_xlabel("expected positives E_1q (released)")
    left.set_ylabel("observed positives O_1q (released)")
    left.set_title(f"H = {release.statistic:.4g}, p = {release.p_value:.3g} ({release.degrees_of_freedom} df)")
    left.legend(loc="upper left")
    right.plot(release.grid, release.ecdf, drawstyle="steps-post", linewidth=0.8, label="released ECDF (raw)")
    if release.smoothed_ecdf is not None:
        right.plot(release.grid, release.smoothed_ecdf, linewidth=1.2, label="smoothed (eq. 3)")
    for k, boundary in enumerate(release.boundaries[1:-1]):
        right.axvline(float(boundary), color="grey", linewidth=0.6, linestyle=":",
                      label="group boundaries" if k == 0 else None)
    right.set_xlabel("predicted probability")
    right.set_ylabel("F(t)")
    right.set_title(f"scores' ECDF, epsilon {release.epsilon:g}, n = {release.n}")
    right.legend(loc="lower right")
    figure.suptitle("Private Hosmer-Lemeshow calibration (Barczewski, Mawass & Ramon, Algorithm 2)")
    save_figure(figure, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the private Hosmer-Lemeshow test; returns the exit code."""
    return run_scenario(parse_options, _release, lambda options: options.public(), argv, spend=spend_of)


def spend_of(options: HosmerLemeshowOptions) -> Any:
    """What one run spends (:mod:`scenarios.kit.budget_run`): ``--epsilon``, pure DP (discrete Laplace on the
    ECDF tree nodes and on the 4Q group statistics, Theorem 2's split); embedded data exempt unless
    ``--ledger``/``--budget`` is given."""
    from dp.budget.accountants import Spend
    from scenarios.kit.budget_run import spend_request

    spend = Spend(epsilon=float(options.epsilon), mechanism="distributed discrete Laplace (ECDF tree nodes and "
                                                            "group statistics)",
                  what=f"Hosmer-Lemeshow of {options.columns[0]} by {options.columns[1]}, Q = {options.groups}")
    return spend_request(options.budget, spend, scenario="scenarios.hosmer_lemeshow", data=options.data,
                         embedded=None if options.data is not None else "framingham")


if __name__ == "__main__":
    sys.exit(main())
