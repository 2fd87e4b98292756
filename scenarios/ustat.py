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

Options (lower case; MPyC's own options such as -M, -I, -T, -L, --ssl work as usual):
  --stat {kendall,gini,auc,duplicate,rand,vus}   the kernel (default kendall)
  --data PATH       CSV with a header; '{pid}' in PATH gives each party its own file, otherwise
                    party i keeps rows i, i+m, ... (default: embedded data)
  --columns A[,B]   kernel columns (auc: score,label; vus: score,class; rand: two clusterings)
  --domain C=LO:HI[:BITS[:STEP]],...  declared public domain (fractional bits, recording resolution STEP:
                    values lie on LO, LO+STEP, ...; the grid the histogram path counts on) of numeric columns
  --precision BITS  fractional bits for every numeric column
  --categories 'C=A|B|...[,D=...]'  declared public category list of a categorical column (quote it:
                    '|' is a shell pipe): duplicate's column, rand's two, auc's label (negative|positive,
                    default 0|1), vus's class (default 0|1|2).  All numbers: matched by value; else
                    strings matched exactly (case-sensitive).  Shared as the index in the list; a value
                    outside stops the run at that party -- never clipped.  duplicate/rand without a list
                    take an integer --domain C=LO:HI as the categories LO..HI
  --other C=NAME[,D=NAME]  a declared bucket NAME for every value outside C's list (one category)
  --epsilon E       privacy budget (default 1); --delta D  (default 0): with the default in-MPC noise the
                    budget of its truncation (0: delta_s <= 2^-40 per released sum); with --noise parties
                    0 = pure DP (discrete Laplace shares), else binomial party noise; a pure --budget (or an
                    existing pure account) switches the default noise to party noise
  --pairs auto|all|N|Kn  which tuples: auto (default) computes the complete statistic (all tuples) when the
                    cost model says it is no slower than |E| = 2n sampled tuples, else samples 2n; all: the
                    complete statistic (no sampling error); N or Kn (like 8n): |E| sampled tuples
  --path {auto,histogram,sort,tuples}  how (default auto: the cost model chooses from public parameters and
                    prints the modelled cost of every path): histogram = each party counts its rows on the
                    declared grid, secure sums and products of the counts, no comparison (all six kernels and
                    any degree-2 kernel); sort = one secure sort, rank sums (auc, gini); tuples = the kernel on
                    each tuple (Pi_U-MPC)
  --rtt MS          the network's round-trip time in milliseconds, declared (default 0: local parties); the
                    cost model adds each path's communication rounds times MS / 2, so on a slow network auto
                    prefers the path with fewer rounds (the histogram's ~12 over the sort's ~100 log^2 n);
                    public, the same at every party; the plan line prints the rtt used
  --sampling {balanced,uniform,bernoulli}          tuple sampler (default balanced)
  --clip {local,secure}                             clip to the domain at each party or inside MPC
  --missing {refuse,fill}  a missing cell stops the run (default with --data) or takes the column's
                    declared fill value (default with the embedded data: scenarios/data/domains.json)
  --fill C=V,...    declared public fill value per column (inside its domain, or one of its categories);
                    giving --fill turns on --missing fill (repeat it or list several C=V)
  --seed S          public seed for the tuples (default: a joint seed every party contributes to)
  --delegate-noise F:H  threat model M_HF: only a random subgroup Z of size ceil(log F / log(1 - H))
                    draws the noise (failure probability F, honest fraction H); Z comes from fresh joint
                    randomness of the run that every party contributes to, never from --seed;
                    party noise (implies --noise parties); (epsilon, delta + F)-DP, recorded as such
  --noise {mpc,parties}  mpc (default): one discrete Laplace sampled inside MPC from joint secret
                    random bits: nobody knows the noise, variance of a single DLap (no m/(m-t));
                    (epsilon, delta_s)-DP with delta_s <= 2^-40 from truncation (with --delta D: <= D).
                    parties: each party adds coalition-calibrated Polya shares (x m/(m-t) variance)
  --mpc-noise       the same as --noise mpc (kept for old command lines)
  --json PATH       party 0 writes the result record there
"""
from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

from dp.noise_defaults import NOISE_CHOICES, default_noise, pure_budget_line, switched_by_pure_budget
from scenarios.kit.categories import add_category_arguments
from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario
from scenarios.kit.missing_values import add_missing_arguments, describe_policy, local_note, missing_policy
from scenarios.kit.budget_run import add_budget_arguments
from scenarios.kit.options import parse_domains, parse_steps
from scenarios.kit.records import write_record

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
    """The option parser of this scenario (MPyC's options are removed before it runs)."""
    parser = ScenarioParser(prog="python -m scenarios.ustat", description=__doc__)
    parser.add_argument("--stat", choices=sorted(STAT_DEFAULTS), default="kendall")
    parser.add_argument("--data", default=None)
    parser.add_argument("--columns", default=None)
    parser.add_argument("--domain", default=None)
    parser.add_argument("--precision", type=int, default=None)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=0.0)
    parser.add_argument("--pairs", default="auto")
    parser.add_argument("--path", choices=("auto", "histogram", "sort", "tuples"), default="auto")
    parser.add_argument("--rtt", type=float, default=0.0, metavar="MS")
    parser.add_argument("--sampling", default="balanced")
    parser.add_argument("--clip", choices=("local", "secure"), default="local")
    add_missing_arguments(parser)
    add_category_arguments(parser)
    add_budget_arguments(parser)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--delegate-noise", default=None)
    parser.add_argument("--noise", choices=NOISE_CHOICES, default=None)
    parser.add_argument("--mpc-noise", action="store_true")
    parser.add_argument("--json", default=None)
    return parser


@dataclass
class Options:
    """Parsed scenario options, with the query they define."""

    stat: str
    data: str | None
    columns: tuple[str, ...]
    dataset: str | None
    query: Any
    seed: int | None
    json: str | None
    raw: dict[str, Any]
    delegation: tuple[float, float] | None = None
    missing: Any = None
    budget: Any = None
    #: a pure budget turned the default in-MPC noise into party shares: ``budget`` or ``account`` (said above the table)
    noise_switch: str | None = None


def _parse_pairs(text: str) -> tuple[str, float | int | None]:
    """``all`` -> (all, None); ``2n`` -> (per-row, 2.0); ``5000`` -> (count, 5000)
    (:func:`dp.umpc.scripting.parse_tuples`, the API's reading of the same words)."""
    from dp.umpc.scripting import parse_tuples

    text = text.strip().lower()
    if text == "auto":
        return "auto", 2.0
    try:
        mode, amount = parse_tuples(int(text) if text.lstrip("+-").isdigit() else text)
    except (ValueError, TypeError):
        if text.lstrip("+-").isdigit() and int(text) < 1:
            raise UsageError(f"--pairs must be at least 1, got {int(text)}") from None
        raise UsageError(f"--pairs expects 'auto', 'all', a number of tuples >= 1 or a positive finite multiple of n "
                         f"like '2n', got '{text}'") from None
    if mode == "all":
        return "all", None
    return mode, int(amount) if mode == "count" else amount


def parse_options(argv: Sequence[str]) -> Options:
    """Parse and validate the scenario options (no data is read here).

    :raise UsageError: with a one-line message.
    """
    from dp.umpc.protocol import UStatQuery
    from dp.validation import check_seed
    from scenarios.kit.budget_run import budget_options, pure_budget_of
    from scenarios.kit.categories import category_specs, public_categories
    from scenarios.kit.datasets import declared_specs
    from scenarios.kit.outputs import check_output_path
    from secure.intake import ColumnSpec
    from secure.kernels import get_kernel

    args = build_parser().parse_args(list(argv))
    dataset: str | None
    dataset, default_columns = STAT_DEFAULTS[args.stat]
    columns = tuple(c.strip() for c in args.columns.split(",")) if args.columns else default_columns
    if args.data is not None:
        dataset = None
    kernel = get_kernel(args.stat, precision=0)  # its columns and labels; gini is rebuilt below at its column's bits
    if len(columns) != len(kernel.columns):
        raise UsageError(f"--stat {args.stat} needs {len(kernel.columns)} columns ({','.join(kernel.columns)}), "
                         f"got {len(columns)}: {','.join(columns)}")
    domains = parse_domains(args.domain)
    steps = parse_steps(args.domain)
    declared = declared_specs(dataset, columns) if dataset else {}
    categorical = category_specs(kernel, columns, categories=args.categories, other=args.other, domains=domains,
                                 dataset=dataset)
    specs = []
    for position, name in enumerate(columns):
        if position in categorical:  # labels, classes, and the columns duplicate/rand compare for equality
            specs.append(categorical[position])
            continue
        if name in domains:
            low, high, bits = domains[name]
            precision = bits if bits is not None else (args.precision if args.precision is not None else 8)
        elif name in declared:
            low, high, precision = declared[name].lower, declared[name].upper, declared[name].precision
        else:
            raise UsageError(f"no declared domain for column '{name}': give --domain {name}=LOW:HIGH")
        if args.precision is not None and (name not in domains or domains[name][2] is None):
            precision = args.precision
        step = steps.get(name)
        if step is None and name not in domains and name in declared:
            embedded = declared[name].step  # the data dictionary's resolution, if the bits can hold it
            step = embedded if embedded is not None and embedded * 2 ** precision >= 1 else None
        try:
            specs.append(ColumnSpec(name, low, high, precision, step=step))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if kernel.name == "gini":
        kernel = get_kernel("gini", precision=specs[0].precision)
    mode, amount = _parse_pairs(args.pairs)
    if args.path in ("histogram", "sort") and mode in ("count", "per-row"):
        raise UsageError(f"--path {args.path} computes the complete statistic over all tuples, but --pairs {args.pairs} "
                         "asks for sampled tuples: give --pairs all (or auto), or --path tuples")
    if args.path in ("histogram", "sort") and args.delegate_noise is not None:
        raise UsageError(f"--delegate-noise applies to sampled tuples (--path tuples), not to --path {args.path}")
    if args.seed is not None:
        try:
            check_seed(args.seed, "--seed")
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None
    check_output_path(args.json, "--json")
    if not (math.isfinite(args.rtt) and 0 <= args.rtt <= 60000):
        raise UsageError(f"--rtt must be a round-trip time in milliseconds in [0, 60000], got {args.rtt:g}")
    outputs = len(kernel.outputs([spec.width for spec in specs]))
    budget = budget_options(args)
    pure = pure_budget_of(budget, data=args.data, embedded=dataset)
    path = args.path
    if pure and args.delegate_noise is None:  # (delegated noise: the ledger refuses its delta F, naming what helps)
        from dp.umpc.planner import pure_account_path

        try:  # comparisons leak up to 2^-40 of delta, which a pure account cannot pay: the histogram path or none
            path = pure_account_path(kernel, specs, parties=_party_count(), choice=args.path, clipping=args.clip,
                                     sampled=f"--pairs {args.pairs}" if mode in ("count", "per-row") else None)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    noise = _noise_source(args.noise, args.mpc_noise, args.delegate_noise,
                          (args.epsilon / outputs, args.delta / outputs), pure_budget=pure)
    chosen_by_default = args.noise is None and not args.mpc_noise and args.delegate_noise is None
    noise_switch = (("budget" if budget.budget is not None else "account") if chosen_by_default and
                    switched_by_pure_budget("ustat", args.epsilon / outputs, args.delta / outputs, pure_budget=pure)
                    else None)
    try:
        query = UStatQuery(kernel=kernel, specs=tuple(specs), epsilon=args.epsilon, delta=args.delta,
                           tuples=None if mode != "count" else int(amount or 0), sampling=args.sampling,
                           clipping=args.clip, noise=noise, path=path)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    delegation = _parse_delegation(args.delegate_noise, parties=_party_count())
    missing = missing_policy(args.missing, args.fill, specs, dataset=dataset)
    raw = {"delegate_noise": args.delegate_noise, "noise": noise, "stat": args.stat, "columns": list(columns), "domains": [[s.lower, s.upper, s.precision] for s in specs],
           "epsilon": args.epsilon, "delta": args.delta, "pairs": args.pairs, "path": path, "sampling": args.sampling,
           "clip": args.clip, "seed": args.seed, "embedded": dataset, "categories": public_categories(specs),
           "missing": missing.mode, "fill": [list(item) for item in missing.fills], "rtt": args.rtt}
    return Options(args.stat, args.data, columns, dataset, query, args.seed, args.json, raw, delegation, missing,
                   budget, noise_switch)


def _noise_source(noise: str | None, mpc_noise: bool, delegate_noise: str | None,
                  per_sum: tuple[float, float], *, pure_budget: bool = False) -> str:
    """``--noise`` (``--mpc-noise`` is ``--noise mpc``); party noise with ``--delegate-noise``; else the
    default for the budget ``per_sum`` = (epsilon, delta) of one released sum (:func:`dp.noise_defaults.default_noise`;
    ``pure_budget``: ``--budget`` without a delta, which gets pure-DP party noise).

    :raise UsageError: contradictory options.
    """
    if mpc_noise and noise == "parties":
        raise UsageError("--mpc-noise means --noise mpc, which contradicts --noise parties: give one of them")
    chosen = "mpc" if mpc_noise else noise
    if delegate_noise is not None:
        if chosen == "mpc":
            raise UsageError("--delegate-noise chooses which parties draw the noise, but --noise mpc (--mpc-noise) samples it "
                             "inside MPC where no party draws any: give one of them")
        return "parties"
    return chosen if chosen is not None else default_noise("ustat", *per_sum, pure_budget=pure_budget)


def _party_count() -> int:
    """``m``, public: MPyC's runtime is set up before the options are parsed (1 when run without it)."""
    import sys

    if "mpyc.runtime" not in sys.modules:
        return 1
    from secure.session import party_count

    return party_count()


def _parse_delegation(text: str | None, *, parties: int | None = None) -> tuple[float, float] | None:
    """``EPS_FAIL:HONEST_FRACTION`` (threat model M_HF) -> the pair, validated.

    With ``parties`` ``m > 1``, a pair that needs more delegates than there are parties is refused
    (:func:`dp.umpc.delegation.delegates_for_run`): it would quietly make every party a delegate drawing a
    full noise (std ``x sqrt(m)``), and still charge ``EPS_FAIL`` to delta.  One process (``m = 1``) keeps
    its single delegate: the noise is then that of a run without the option (the one-process demo), and
    ``EPS_FAIL`` is charged as recorded (an upper bound).
    """
    if text is None:
        return None
    from dp.umpc.delegation import delegate_size, delegates_for_run

    try:
        fail, honest = (float(x) for x in text.split(":"))
        delegate_size(fail, honest)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--delegate-noise expects EPS_FAIL:HONEST_FRACTION like 1e-6:0.5 ({exc})") from None
    if parties is not None and parties > 1:
        try:
            delegates_for_run(fail, honest, parties=parties)
        except ValueError as exc:
            raise UsageError(f"--delegate-noise {text}: {exc}; give a larger failure probability or honest fraction, "
                             "or leave --delegate-noise out (every party then draws noise calibrated to the "
                             "threshold t)") from None
    return fail, honest


def _with_tuples(options: Options, rows: int) -> Any:
    """Resolve ``--pairs Kn`` once n is known (n is public)."""
    from dataclasses import replace

    from dp.sampling import tuple_count
    from secure.session import InputError

    mode, amount = _parse_pairs(options.raw["pairs"])
    if mode in ("per-row", "auto"):
        degree = options.query.kernel.degree
        tuples = max(1, int(round(float(amount or 0) * rows)))
        if mode == "auto" and rows >= degree:
            tuples = min(tuples, tuple_count(rows, degree))
        if rows >= degree and tuples > tuple_count(rows, degree):  # the same verdict at every party: n is public
            raise InputError(f"all parties: --pairs {options.raw['pairs']} asks for more than the C({rows}, {degree}) = "
                             f"{tuple_count(rows, degree)} distinct tuples of n = {rows} rows; use --pairs all "
                             "or a smaller multiple of n")
        return replace(options.query, tuples=tuples)
    return options.query


def _plan(options: Options, query: Any, rows: int, parties: int) -> Any:
    """The path (:func:`dp.umpc.complete.plan_for`), from public parameters: the same at every party.

    :raise secure.errors.InputError: a forced path that cannot run here (same verdict at every party).
    """
    from dp.umpc.complete import plan_for
    from secure.session import InputError

    mode, _ = _parse_pairs(options.raw["pairs"])
    try:
        return plan_for(query, rows=rows, parties=parties, pairs=mode, delegated=options.delegation is not None,
                        rtt=float(options.raw.get("rtt", 0.0)) / 1000)
    except ValueError as exc:
        raise InputError(f"all parties: {exc}") from None


def load_rows(options: Options, seed: int, party: int, parties: int) -> Any:
    """This party's rows of the job's columns (``--data``, or the embedded table with its derived columns:
    Framingham's ``score`` from a model fitted on rows picked by ``seed``, UCI's ``severity``)."""
    from scenarios.kit.datasets import framingham_with_scores, load_embedded, uci_with_severity
    from secure.intake import party_rows, rows_from_table
    from secure.public_randomness import public_generator

    if options.data is not None:
        return party_rows(options.data, options.columns, party=party, parties=parties, missing=options.missing,
                          specs=options.query.specs)
    if "score" in options.columns and options.dataset == "framingham":
        table = framingham_with_scores(public_generator(seed ^ 0x5C0E))
    elif "severity" in options.columns and options.dataset == "heart_disease_uci":
        table = uci_with_severity()
    else:
        table = load_embedded(options.dataset or "framingham")
    return rows_from_table(table.header, table.rows, options.columns, source=f"embedded {table.name}",
                           party=party, parties=parties, missing=options.missing, specs=options.query.specs)


def _print_release(release: Any, options: Options, local: str | None = None) -> None:
    """Print the release; ``local`` is this party's own counts (printed as local, never shared)."""
    from scenarios.kit.cli import format_bytes, print_table
    from secure.meter import seconds_label

    kernel = options.query.kernel
    if options.noise_switch is not None and release.noise_source != "mpc":
        print(pure_budget_line(source="account" if options.noise_switch == "account" else "budget",
                               parties=release.parties, threshold=release.threshold))
    print_table([
        ("statistic", f"{kernel.description} of {', '.join(options.columns)}"),
        ("private estimate", _estimate_text(release)),
        ("epsilon", f"{release.epsilon:g}" + _delta_note(release)),
        ("n", f"{release.n} rows"),
        ("missing values", describe_policy(options.missing)),
        ("|E|", f"{release.pairs} tuples ({release.sampling}, max degree {release.max_degree})"
                + (f", complete by the {release.path} path" if release.path != "tuples" else "")),
        ("parties", f"{release.parties} (threshold t = {release.threshold})"),
        *([("noise delegates", f"Z = ({', '.join(str(p) for p in release.delegates)}), drawn from "
                               f"{release.delegates_drawn_from}")] if getattr(release, "delegates", None) else []),
        (seconds_label(), f"{release.seconds:.2f}"),
        ("bytes", f"{format_bytes(release.bytes_sent)} sent by all parties"),
    ], title="Private U-statistic (Pi_U-MPC, Sinh & Ramon)")
    if local:
        print(local)
    if release.plan:
        print(f"  {release.plan}")
    print(f"  guarantee: {release.guarantee}")
    if release.noise_source == "mpc":
        sampler = release.sampler
        print(f"  noise: discrete laplace sampled inside MPC on {len(release.noisy_sums)} released sum(s), known to "
              f"no party (single-DLap variance); J = {_listed(sampler['digits'])} digits of "
              f"b = {_listed(sampler['bits'])}-bit coins, truncation delta_s {release.sampler_delta:.2g}; "
              f"inputs clipped to the domain ({release.clipping})")
        print("  phases: " + ", ".join(f"{name} {cost['seconds']:.2f} s / {format_bytes(cost['bytes_sent'])}"
                                       for name, cost in release.phases.items()))
        return
    if options.delegation is not None:
        calibration = (f", drawn only by the delegated parties (M_HF: failure probability "
                       f"{options.delegation[0]:g} at honest fraction {options.delegation[1]:g})")
    elif release.parties == 1:
        calibration = ""
    else:
        calibration = f", coalition-calibrated (x{release.parties}/{release.parties - release.threshold} variance)"
    print(f"  noise: {release.mechanism} on {len(release.noisy_sums)} released sum(s){calibration}"
          f"; inputs clipped to the domain ({release.clipping})")
    print("  phases: " + ", ".join(f"{name} {cost['seconds']:.2f} s / {format_bytes(cost['bytes_sent'])}"
                                   for name, cost in release.phases.items()))


def _estimate_text(release: Any) -> str:
    """The estimate and its uncertainty, or why there is none: a ratio statistic (AUC, VUS, Rand) whose released
    denominator, a noisy count, is not positive has no estimate (post-processing; the record says ``null``)."""
    if not math.isfinite(release.estimate):
        return ("undefined: a released denominator (a noisy count) is not positive, so there is no estimate at this "
                "epsilon (post-processing; --json writes null)")
    return f"{release.estimate:.6g}  ({_uncertainty(release)})"


def _small(value: float) -> str:
    """A standard deviation or bound for print: ``< 1e-12`` below any statistic's fixed-point resolution (a huge
    epsilon), else two significant digits."""
    return "< 1e-12" if 0 < value < 1e-12 else f"{value:.2g}"


def _uncertainty(release: Any) -> str:
    """``noise std a; tuple sampling <= b, data-independent; total <= c`` (the record's keys, in words)."""
    if release.sampling == "all":
        return f"noise std {_small(release.estimate_std)}; all tuples, no sampling error"
    kind = "data-independent" if len(release.noisy_sums) == 1 else "plug-in of the released comparable share"
    return (f"noise std {_small(release.estimate_std)}; tuple sampling <= {_small(release.sampling_error_bound)}, "
            f"{kind}; total <= {_small(release.error_bound)}")


def _listed(values: Sequence[Any]) -> str:
    """``[8]`` -> ``8``; ``[8, 9]`` -> ``8/9`` (one entry per released sum)."""
    return "/".join(str(v) for v in values)


def _delta_note(release: Any) -> str:
    """The delta part of the epsilon line (with MPC noise: where it comes from)."""
    if release.noise_source == "mpc":
        if release.sampler_delta < release.delta:
            return f" (delta {release.delta:g}; the in-MPC sampler's truncation uses {release.sampler_delta:.2g})"
        return f" (delta {release.delta:.2g}: truncation of the in-MPC sampler)"
    return f" (delta {release.delta:g})" if release.delta else ""


async def _release(options: Options) -> Callable[[], None] | None:
    """Every party: load its rows, share its verdict, run Pi_U-MPC.

    :return: the delivery (print; party 0 writes JSON), which :func:`scenarios.kit.cli.run_scenario` runs
        only after the orderly shutdown, so that a party lost in the shutdown phase releases nothing.
    """
    from mpyc.runtime import mpc

    from dataclasses import replace

    from dp.umpc.protocol import prepare_rows, run_secure
    from secure.public_randomness import joint_seed
    from secure.session import InputError, agree_verdict

    seed = options.seed if options.seed is not None else await joint_seed()
    error, detail, fixed, filled = None, None, None, 0
    try:
        rows = load_rows(options, seed, mpc.pid, len(mpc.parties))
        fixed, filled = prepare_rows(options.query, rows.values), rows.filled
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    assert fixed is not None
    from secure.intake import exchange_counts  # no row at any party: one line naming the parties

    rows_total = sum(await exchange_counts(int(fixed.integers.shape[0])))
    delegates = None  # |Z|; Z itself is drawn in run_secure from fresh joint randomness, never from --seed
    if options.delegation is not None:
        from dp.umpc.delegation import delegate_size

        delegates = delegate_size(*options.delegation, parties=len(mpc.parties))
    query = _with_tuples(options, rows_total)
    plan = _plan(options, query, rows_total, len(mpc.parties))
    if plan.path == "tuples":
        release = await run_secure(replace(query, tuples=plan.tuples), fixed, seed=seed, missing=options.missing.mode,
                                   noise_delegates=delegates,
                                   delegation_failure=options.delegation[0] if options.delegation else 0.0)
        if release is not None:
            release.plan = plan.describe()
    else:
        from dp.umpc.complete import run_complete

        release = await run_complete(query, fixed, plan, missing=options.missing.mode)
    local = local_note(filled=filled, clipped=sum(fixed.clipped.values()))
    if release is None:
        return None
    from scenarios.kit.budget_run import settle_spend

    settled = settle_spend(release.delta)  # the ledger entry: from the reserved bound to the release's delta
    writes_json = bool(options.json) and mpc.pid == 0

    def deliver() -> None:
        _print_release(release, options, local)
        if writes_json and options.json:
            record = release.record()
            record.update(settled)
            record["fill"] = dict(options.missing.fills)
            record["categories"] = options.raw["categories"]
            write_record(options.json, record)

    return deliver


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the main job; returns the exit code."""
    return run_scenario(parse_options, _release, lambda options: options.raw, argv, spend=spend_of)


def spend_of(options: Options) -> Any:
    """What one run spends (:mod:`scenarios.kit.budget_run`): the query's epsilon; its delta, or with noise
    sampled inside MPC and no ``--delta`` the sampler's truncation bound ``2^-40`` per released sum; plus the
    delegation's failure probability with ``--delegate-noise``; plus ``2^-40`` for MPyC's comparisons unless the
    path is the histogram path (:func:`dp.comparison_leakage.comparison_allowance`).  An upper bound: after the
    reveal the entry is settled to the release's delta (:func:`scenarios.kit.budget_run.settle_spend`).  Embedded
    data are exempt unless ``--ledger``/``--budget`` is given."""
    from dp.budget.accountants import Spend
    from dp.comparison_leakage import comparison_allowance
    from scenarios.kit.budget_run import MPC_TRUNCATION_DELTA, spend_request

    query = options.query
    sums = len(query.outputs)
    delta = float(query.delta)
    if query.noise == "mpc" and delta == 0:
        delta = sums * MPC_TRUNCATION_DELTA
    if options.delegation is not None:
        delta += options.delegation[0]
    delta += comparison_allowance(options.query.path)  # a pure account runs the histogram path only (parse_options)
    mechanism = ("discrete Laplace sampled in MPC" if query.noise == "mpc"
                 else "distributed discrete Laplace" if query.delta == 0 else "distributed binomial")
    if options.delegation is not None:
        from dp.noise_defaults import DELEGATED_NOISE

        mechanism += f" {DELEGATED_NOISE}"  # the refusal of a pure-only account then names what helps
    spend = Spend(epsilon=float(query.epsilon), delta=delta, mechanism=mechanism,
                  what=f"{query.kernel.description} of {', '.join(options.columns)}, {sums} noisy sum(s)")
    return spend_request(options.budget, spend, scenario="scenarios.ustat", data=options.data,
                         embedded=options.dataset)


if __name__ == "__main__":
    sys.exit(main())
