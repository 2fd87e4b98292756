"""The main job: a differentially private U-statistic over the union of the parties' rows.

Protocol Pi_U-MPC of Sinh & Ramon (Protocol 3.1) on MPyC.  Each party reads its own rows, shares
them, the joint seed picks the tuples (BalancedSamp by default, |E| = 2n), the kernel runs on secret
shares, the parties sample one discrete Laplace together inside MPC, which no party knows (the default,
``--noise mpc``; or, with ``--noise parties``, every party adds its own coalition-calibrated share of
the distributed discrete Laplace noise), and only the noisy sum is opened.  With no flags it runs in
one process on the embedded Framingham data.

Default noise (:mod:`dp.noise_defaults`): measured with ``-M3``, the in-MPC sampler costs 0.03 s and
0.26 MB per released sum next to a 4.1 s, 78 MB kernel phase (Kendall, n = 4238, ``--pairs 2n``), about 1 %, for a
better guarantee: no party knows the noise, a single discrete Laplace's variance (no ``m/(m-t)``),
no floating-point sampler.  Every output names the noise that ran and its guarantee.

Run it with three local parties::

    python -m scenarios.ustat -M3                                   # Kendall's tau of sysBP, diaBP
    python -m scenarios.ustat -M3 --stat auc --epsilon 0.5          # AUC of logistic-regression scores
    python -m scenarios.ustat -M3 --stat gini --columns BMI --pairs 20000 --sampling uniform
    python -m scenarios.ustat -M3 --stat vus                        # degree 3: VUS on UCI Heart Disease
    python -m scenarios.ustat -M3 --noise parties                   # party-drawn noise shares
    python -m scenarios.ustat -M3 --data 'site{pid}.csv' --stat kendall --columns a,b \\
        --domain a=0:10,b=0:100 --precision 4 --budget 3 --json result.json   # --budget: the account's total

Every option is explained by ``-h``; the category, missing-value and budget options in
docs/command_line.md."""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any, Sequence, cast

from dp.noise_defaults import NOISE_CHOICES
from dp.umpc.delegation import delegate_size, delegates_for_run
from dp.umpc.report import public_categories
from dp.umpc.scripting import Query, option_words, parse_tuples, pure_account_query, release
from dp.validation import check_seed
from scenarios.kit.budget_run import add_budget_arguments, budget_options, pure_budget_of
from scenarios.kit.categories import add_category_arguments, category_specs
from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario, usage_errors
from scenarios.kit.datasets import declared_specs, framingham_with_scores, load_embedded, uci_with_severity
from scenarios.kit.missing_values import add_missing_arguments, missing_policy
from scenarios.kit.outputs import check_output_path
from scenarios.kit.options import add_owner_arguments, check_rtt, owner_intake, parse_domains, parse_steps
from scenarios.kit.records import write_record
from secure.intake import ColumnSpec, rows_from_table
from secure.kernels import get_kernel
from secure.public_randomness import public_generator

__all__ = ["main", "build_parser", "parse_options", "load_rows", "STAT_DEFAULTS"]

#: statistic -> (embedded dataset, default columns)
STAT_DEFAULTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "kendall": ("framingham", ("sysBP", "diaBP")),
    "gini": ("framingham", ("totChol",)),
    "auc": ("framingham", ("score", "TenYearCHD")),
    "duplicate": ("framingham", ("education",)),
    "rand": ("framingham", ("prevalentHyp", "diabetes")),
    "vus": ("heart_disease_uci", ("oldpeak", "severity")),
}


def build_parser() -> ScenarioParser:
    parser = ScenarioParser(prog="python -m scenarios.ustat", description=__doc__)
    parser.add_argument("--stat", choices=sorted(STAT_DEFAULTS), default="kendall", help="the kernel")
    parser.add_argument("--data", metavar="PATH", help="CSV with a header; '{pid}' in PATH gives each party its own "
                        "file, otherwise party i keeps rows i, i+m, ... (default: embedded data)")
    parser.add_argument("--columns", metavar="A[,B]",
                        help="kernel columns (auc: score,label; vus: score,class; rand: two clusterings)")
    parser.add_argument("--domain", metavar="C=LO:HI[:BITS[:STEP]],...",
                        help="declared public domain of numeric columns: fractional BITS, recording resolution "
                             "STEP (values lie on LO, LO+STEP, ...: the grid the histogram path counts on)")
    parser.add_argument("--precision", type=int, metavar="BITS", help="fractional bits for every numeric column")
    parser.add_argument("--epsilon", type=float, default=1.0, help="privacy budget of the release")
    parser.add_argument("--delta", type=float, default=0.0,
                        help="in-MPC noise: the budget of its truncation (0: delta_s <= 2^-40 per released sum); "
                             "--noise parties: 0 = pure DP (discrete Laplace shares), else binomial party noise")
    parser.add_argument("--pairs", default="auto", metavar="auto|all|N|Kn",
                        help="which tuples: auto = all tuples when the cost model finds it no slower than 2n "
                             "sampled ones, else 2n; all = the complete statistic; N or Kn (like 8n) sampled tuples")
    parser.add_argument("--path", choices=("auto", "histogram", "sort", "tuples"), default="auto",
                        help="auto: the cost model chooses and prints every path's cost; histogram: counts on the "
                             "declared grid, no comparison; sort: one secure sort, rank sums (auc, gini); tuples: "
                             "the kernel on each tuple (Pi_U-MPC)")
    parser.add_argument("--rtt", type=float, default=0.0, metavar="MS",
                        help="declared network round-trip time in ms (0: local parties); the cost model adds each "
                             "path's rounds times MS / 2, so auto prefers fewer rounds on a slow network")
    parser.add_argument("--sampling", default="balanced", metavar="{balanced,uniform,bernoulli}",
                        help="tuple sampler")
    parser.add_argument("--clip", choices=("local", "secure"), default="local",
                        help="clip to the domain at each party or inside MPC")
    add_missing_arguments(parser)
    add_category_arguments(parser)
    add_budget_arguments(parser)
    add_owner_arguments(parser)
    parser.add_argument("--seed", type=int, help="public seed for the tuples "
                        "(default: a joint seed every party contributes to)")
    parser.add_argument("--delegate-noise", metavar="F:H",
                        help="threat model M_HF: a random subgroup of ceil(log F / log(1 - H)) parties, drawn from "
                             "fresh joint randomness (never --seed), draws party noise; (epsilon, delta + F)-DP")
    parser.add_argument("--noise", choices=NOISE_CHOICES,
                        help="mpc (default): one discrete Laplace sampled inside MPC, known to nobody; parties: each "
                             "party adds coalition-calibrated Polya shares (x m/(m-t) variance); a pure budget "
                             "switches the default to parties")
    parser.add_argument("--mpc-noise", action="store_true", help="the same as --noise mpc (old command lines)")
    parser.add_argument("--json", metavar="PATH", help="party 0 writes the result record there")
    return parser


@dataclass
class Options:
    """Parsed scenario options: the query of the API (:class:`dp.umpc.Query`, ``face``) and the job's own."""

    data: str | None
    columns: tuple[str, ...]
    dataset: str | None
    face: Any
    seed: int | None
    json: str | None
    raw: dict[str, Any]
    missing: Any = None
    budget: Any = None
    #: the line saying that a pure budget turned the default in-MPC noise into party shares (above the table)
    noise_switch: str | None = None
    owners: Any = None

    @property
    def query(self) -> Any:
        """The protocol's query (:class:`dp.umpc.protocol.UStatQuery`): ``--pairs N`` set, ``Kn`` not yet."""
        tuples = self.face.tuples
        return replace(self.face.base, tuples=tuples) if isinstance(tuples, int) else self.face.base


def _parse_pairs(text: str) -> tuple[str, int | str]:
    """``(mode, the query's tuples)``: ``all`` -> (all, all); ``2n`` -> (per-row, 2n); ``5000`` -> (count, 5000)
    (:func:`dp.umpc.scripting.parse_tuples`, the API's reading of the same words)."""
    text = text.strip().lower()
    try:
        mode, amount = parse_tuples(int(text) if text.lstrip("+-").isdigit() else text)
    except (ValueError, TypeError):
        if text.lstrip("+-").isdigit() and int(text) < 1:
            raise UsageError(f"--pairs must be at least 1, got {int(text)}") from None
        raise UsageError(f"--pairs expects 'auto', 'all', a number of tuples >= 1 or a positive finite multiple of n "
                         f"like '2n', got '{text}'") from None
    return mode, int(amount) if mode == "count" else text


def parse_options(argv: Sequence[str]) -> Options:
    """Parse and validate the scenario options (no data is read here).  :raise UsageError: one line."""
    args = build_parser().parse_args(list(argv))
    dataset: str | None
    dataset, default_columns = STAT_DEFAULTS[args.stat]
    columns = tuple(c.strip() for c in args.columns.split(",")) if args.columns else default_columns
    owners, specs = owner_intake(args, columns)  # the campaign's servers: its declarations, no --domain
    if args.data is not None or owners is not None:
        dataset = None
    kernel = get_kernel(args.stat, precision=0)  # its columns and labels (the query's kernel takes the columns' bits)
    if len(columns) != len(kernel.columns):
        raise UsageError(f"--stat {args.stat} needs {len(kernel.columns)} columns ({','.join(kernel.columns)}), "
                         f"got {len(columns)}: {','.join(columns)}")
    domains, steps = parse_domains(args.domain), parse_steps(args.domain)
    declared = declared_specs(dataset, columns) if dataset else {}
    categorical = category_specs(kernel, columns, categories=args.categories, other=args.other, domains=domains,
                                 dataset=dataset)
    for position, name in enumerate(columns if owners is None else ()):
        if position in categorical:  # labels, classes, and the columns duplicate/rand compare for equality
            specs.append(categorical[position])
            continue
        step = steps.get(name)
        if name in domains:
            low, high, bits = domains[name]
            precision = bits if bits is not None else (args.precision if args.precision is not None else 8)
        elif name in declared:
            low, high = declared[name].lower, declared[name].upper
            precision = args.precision if args.precision is not None else declared[name].precision
            embedded = declared[name].step  # the data dictionary's resolution, if the bits can hold it
            if step is None and embedded is not None and embedded * 2 ** precision >= 1:
                step = embedded
        else:
            raise UsageError(f"no declared domain for column '{name}': give --domain {name}=LOW:HIGH")
        with usage_errors():
            specs.append(ColumnSpec(name, low, high, precision, step=step))
    mode, tuples = _parse_pairs(args.pairs)
    if args.path in ("histogram", "sort") and mode in ("count", "per-row"):
        raise UsageError(f"--path {args.path} computes the complete statistic over all tuples, but --pairs {args.pairs} "
                         "asks for sampled tuples: give --pairs all (or auto), or --path tuples")
    if args.path in ("histogram", "sort") and args.delegate_noise is not None:
        raise UsageError(f"--delegate-noise applies to sampled tuples (--path tuples), not to --path {args.path}")
    if args.seed is not None:
        with usage_errors():
            check_seed(args.seed, "--seed")
    check_output_path(args.json, "--json")
    check_rtt(args.rtt)
    budget = budget_options(args)
    runtime = sys.modules.get("mpyc.runtime")  # set up before the options are parsed; none in a test: (m, t) = (1, 0)
    parties, threshold = (len(runtime.mpc.parties), int(runtime.mpc.threshold)) if runtime is not None else (1, 0)
    delegation = _parse_delegation(args.delegate_noise, parties=parties)
    if args.mpc_noise and args.noise == "parties":
        raise UsageError("--mpc-noise means --noise mpc, which contradicts --noise parties: give one of them")
    noise = "mpc" if args.mpc_noise else args.noise  # None: the default for the budget (dp.noise_defaults)
    if args.delegate_noise is not None and noise == "mpc":
        raise UsageError("--delegate-noise chooses which parties draw the noise, but --noise mpc (--mpc-noise) "
                         "samples it inside MPC where no party draws any: give one of them")
    try:
        face = Query(statistic=args.stat, columns=specs, epsilon=args.epsilon, delta=args.delta, tuples=tuples,
                     sampling=args.sampling, clipping=args.clip, path=args.path, delegation=delegation, rtt=args.rtt,
                     noise=cast(Any, "parties" if args.delegate_noise is not None else noise))
    except (ValueError, TypeError) as exc:
        raise UsageError(option_words(str(exc), tuples, to_options=True)) from None
    switch = None  # a pure budget: the histogram path, and pure party noise by default (said above the table)
    if delegation is None and pure_budget_of(budget, data=args.data, embedded=dataset):
        face, switch, problem = pure_account_query(face, parties=parties, threshold=threshold,
                                                   budget_given=budget.budget is not None, to_options=True)
        if problem is not None:
            raise UsageError(problem)
    missing = missing_policy(args.missing, args.fill, specs, dataset=dataset)
    raw = {"delegate_noise": args.delegate_noise, "noise": face.base.noise, "stat": args.stat, "columns": list(columns), "domains": [[s.lower, s.upper, s.precision] for s in specs],
           "epsilon": args.epsilon, "delta": args.delta, "pairs": args.pairs, "path": face.path, "sampling": args.sampling,
           "clip": args.clip, "seed": args.seed, "embedded": dataset, "categories": public_categories(specs),
           "missing": missing.mode, "fill": [list(item) for item in missing.fills], "rtt": args.rtt}
    return Options(args.data, columns, dataset, face, args.seed, args.json, raw, missing, budget, switch, owners)


def _parse_delegation(text: str | None, *, parties: int) -> tuple[float, float] | None:
    """``EPS_FAIL:HONEST_FRACTION`` (threat model M_HF) -> the pair, validated; with ``m > 1`` parties a pair that
    needs more delegates than parties is refused (:func:`dp.umpc.delegation.delegates_for_run`: every party would
    draw a full noise); one process keeps its single delegate (``EPS_FAIL`` charged as recorded, an upper bound)."""
    if text is None:
        return None
    try:
        fail, honest = (float(x) for x in text.split(":"))
        delegate_size(fail, honest)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--delegate-noise expects EPS_FAIL:HONEST_FRACTION like 1e-6:0.5 ({exc})") from None
    if parties > 1:
        try:
            delegates_for_run(fail, honest, parties=parties)
        except ValueError as exc:
            raise UsageError(f"--delegate-noise {text}: {exc}; give a larger failure probability or honest fraction, "
                             "or leave --delegate-noise out (every party then draws noise calibrated to the "
                             "threshold t)") from None
    return fail, honest


def load_rows(options: Options, seed: int, party: int, parties: int) -> Any:
    """This party's rows of the job's columns in the embedded table, with its derived columns: Framingham's ``score``
    from a model fitted on rows picked by ``seed``, UCI's ``severity`` (``--data`` is read by the release)."""
    if "score" in options.columns and options.dataset == "framingham":
        table = framingham_with_scores(public_generator(seed ^ 0x5C0E))
    elif "severity" in options.columns and options.dataset == "heart_disease_uci":
        table = uci_with_severity()
    else:
        table = load_embedded(options.dataset or "framingham")
    return rows_from_table(table.header, table.rows, options.columns, source=f"embedded {table.name}",
                           party=party, parties=parties, missing=options.missing, specs=options.query.specs)


async def _release(options: Options, command: Sequence[str]) -> Any:
    """Every party: the release of :func:`dp.umpc.release` on its rows (read once the spend is reserved, with the
    public seed); the delivery (print; party 0 writes JSON), run after the orderly shutdown (``run_scenario``)."""
    from mpyc.runtime import mpc

    rows = options.owners or options.data or (lambda seed: load_rows(options, seed, mpc.pid, len(mpc.parties)))
    result = await release(options.face, rows, seed=options.seed, missing=options.missing,
                           job=("scenarios.ustat", command),
                           **options.budget.account(options.data or None, embedded=str(options.dataset)))

    def deliver() -> None:
        if options.noise_switch is not None and result.noise_source != "mpc":
            print(options.noise_switch)
        print(result.table(), flush=True)
        if options.json and mpc.pid == 0:
            write_record(options.json, result.record())

    return deliver


def main(argv: Sequence[str] | None = None) -> int:
    command = list(sys.argv[1:] if argv is None else argv)  # before MPyC takes its options off sys.argv
    return run_scenario(parse_options, lambda options: _release(options, command), lambda options: options.raw, argv)


if __name__ == "__main__":
    sys.exit(main())
