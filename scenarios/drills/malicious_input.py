"""Malicious-input drill: party 2 supplies rows far outside the declared domain (part 1), party 1 a count vector
of more, shifted or negative rows (part 2); how far each moves the release, or whether it is refused.

Run it (it starts its own three local parties; this process runs no MPyC itself)::

    python -m scenarios.drills.malicious_input                     # r = 1, 2, 5, 10 rows, 240 rows in all
    python -m scenarios.drills.malicious_input --quick --json malicious.json   # r = 1, 3, 90 rows (the tests)

Part 1 bounds the movement of ``r`` rows by ``r max_degree Delta_f`` (Sinh & Ramon, App. C.2.3); the cases,
the derivations, the options and the exit codes (0 / 1 / 2): docs/drills.md.

Threat model: passive, ``t < m/2``, where local clipping suffices; skipping it, or a false count vector, is an
active deviation.  The drill shows that ``--clip secure`` still bounds such a party's influence by the
sensitivity and that a count vector of more rows than declared is refused on every job."""
from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from scenarios.drills.harness import (PARTIES, RESULT_NAME, CheckedOutcome, DrillOptions, PartySpec, drill_main, exits,
                                      format_table, framingham_columns, party_directory, parse_drill_argv, print_notes,
                                      number, read_result, run_three)

__all__ = ["main", "Setting", "CaseResult", "run_cases", "CountCase", "run_count_cases", "COUNT_JOBS", "fixed_point",
           "sort_bits", "ordered_value", "all_pairs_sum"]

COLUMN = "sysBP"
LOWER, UPPER, PRECISION = 0.0, 300.0, 8
FAR_VALUE = 1e6          # 256,000,000 in fixed point: fits -L 32, far outside the domain
NEAR_VALUE = 1500.0      # 384,000 in fixed point: fits -L 32, beyond the kernel's 18-bit comparisons
BEYOND_L_VALUE = 1e8     # 2.56e10 in fixed point: does not fit -L 32 (full run only)
PATH = "sort"            # the complete path --pairs auto picks for this job: exact all-pairs sums
EPSILON = 1e9
SEED = 4
QUICK_ROWS, FULL_ROWS = 90, 240
QUICK_REPLACED, FULL_REPLACED = (1, 3), (1, 2, 5, 10)
DEFAULT_BIT_LENGTH = 32
MALICIOUS_PARTY = 2
_GUARD = "shared values outside the declared domains"  # secure.aggregation's guarded reveal, inputs out of domain


def fixed_point(value: float) -> int:
    """``round((value - lower) * 2^precision)``, as :meth:`secure.intake.ColumnSpec.encode` computes it."""
    return int(round((value - LOWER) * 2 ** PRECISION))


def sort_bits() -> int:
    """Signed bit length of the sort's comparisons for the declared domain (:func:`dp.umpc.planner.sort_bits`)."""
    from dp.umpc.planner import sort_bits as planned_bits  # no MPyC runtime at import
    from secure.columns import ColumnSpec
    from secure.kernels import get_kernel

    return planned_bits(get_kernel("gini", precision=PRECISION), [ColumnSpec(COLUMN, LOWER, UPPER, PRECISION)])


def ordered_value() -> float:
    """The largest value whose fixed point the sort still orders exactly: ``(2^(bits-1) - 1) / 2^precision``
    (511.99609375 here: outside the domain, inside the comparisons; exact in binary)."""
    return LOWER + ((1 << (sort_bits() - 1)) - 1) / 2 ** PRECISION


def all_pairs_sum(directory: str, *, clip: bool) -> int | None:
    """``sum_{i<j} |x_i - x_j|`` over every party's fixed-point values in ``directory`` (the files the case
    wrote), clipped to ``[0, width]`` or raw: what the sort path releases with no noise
    (:func:`secure.ranking.sorted_gini_sum_plain`). ``None`` if a cell is not a number."""
    from secure.ranking import sorted_gini_sum_plain

    width = fixed_point(UPPER)
    values: list[int] = []
    for party in range(3):
        with open(os.path.join(directory, f"p{party}.csv"), encoding="utf-8") as handle:
            for line in handle.read().splitlines()[1:]:
                try:
                    encoded = fixed_point(float(line))
                except ValueError:
                    return None
                values.append(min(max(encoded, 0), width) if clip else encoded)
    return sorted_gini_sum_plain(values)


@dataclass(frozen=True)
class Setting:
    """The public setting every case shares (``n``, ``|E|``, max degree, ``Delta_f``, ``2^precision``, the domain
    width in fixed point, ``-L``, the sort's comparison bits) and the sensitivity bound derived from it."""

    rows: int
    pairs: int
    max_degree: int
    delta_f: int
    scale: int
    width: int
    bit_length: int
    comparison_bits: int

    @property
    def row_sensitivity_units(self) -> int:
        """Largest change of the released sum when one row is replaced: ``max_degree * Delta_f``."""
        return self.max_degree * self.delta_f

    @property
    def nonzero_noise(self) -> float:
        """Probability that a release's discrete Laplace noise is not 0: ``2 alpha / (1 + alpha)``,
        ``alpha = exp(-epsilon / (max_degree * Delta_f))`` (1 before a baseline released)."""
        from dp.calibration import discrete_laplace_alpha

        if not self.row_sensitivity_units:
            return 1.0
        alpha = discrete_laplace_alpha(EPSILON, self.row_sensitivity_units)
        return 2 * alpha / (1 + alpha)

    @property
    def row_sensitivity(self) -> float:
        """The same on the statistic: ``max_degree * Delta_f / (|E| * scale)`` (0 before a baseline released)."""
        return self.row_sensitivity_units / (self.pairs * self.scale) if self.pairs and self.scale else 0.0


@dataclass
class CaseResult(CheckedOutcome):
    """One run (party 2 ``honest`` or ``skips clipping``, ``r`` = ``replaced`` rows set to ``value``) against its
    baseline: the released sum, its movement and bound in fixed-point units and on the statistic, and what was
    expected (``release``, ``within bound``, ``contrast``, ``raw sum`` or ``report``)."""

    name: str
    clip: str
    party2: str
    replaced: int
    value: float | None
    codes: list[int | None]
    noisy_sum: int | None
    estimate: float | None
    pairs: int | None
    max_degree: int | None
    clipped_reported: int | None
    message: str
    expectation: str
    expected_units: int | None = None
    moved_units: int | None = None
    bound_units: int | None = None
    moved: float | None = None
    bound: float | None = None
    outcome: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``name (--clip C, r = R)``."""
        return f"{self.name} (--clip {self.clip}, r = {self.replaced})"


def _run_case(root: str, rows: Sequence[Sequence[str]], party_args: Sequence[str], name: str, clip: str, party2: str,
              replaced: int, value: float | None, expectation: str) -> CaseResult:
    """Party 2's first ``replaced`` rows become ``value`` (its file holds 30 rows or more), then the three run."""
    if value is not None:  # party 2 holds rows 2, 5, 8, ... (party_directory)
        rows = [[repr(float(value))] if i % PARTIES == MALICIOUS_PARTY and i // PARTIES < replaced else row
                for i, row in enumerate(rows)]
    directory = party_directory(root, f"{name} {clip} {replaced} {value}", [COLUMN], rows)
    args = ("--data", "p{pid}.csv", "--stat", "gini", "--columns", COLUMN, "--domain",  # --ledger off: a drill
            f"{COLUMN}={LOWER:g}:{UPPER:g}:{PRECISION}", "--seed", str(SEED), "--epsilon", f"{EPSILON:g}", "--clip",
            clip, "--path", PATH, "--json", RESULT_NAME, "--ledger", "off")
    malicious = PartySpec("drills.party", ("--skip-local-clipping", *args)) if party2 == "skips clipping" \
        else PartySpec("ustat", args)
    results, _ = run_three([PartySpec("ustat", args), PartySpec("ustat", args), malicious], directory,
                           party_args=party_args)
    record = read_result(directory)
    lines = results[0].error_lines
    # the clip count party 2 printed about its own rows (local: no party shares such a count)
    clipped = re.search(r"at this party, not shared: .*?(\d+) value\(s\) clipped", results[MALICIOUS_PARTY].stdout)
    checked = expectation in ("release", "within bound", "raw sum")
    expected = all_pairs_sum(directory, clip=expectation != "raw sum") if checked else None
    return CaseResult(name, clip, party2, replaced, value, [r.code for r in results],
                      int(record["noisy_sums"][0]) if record else None,
                      float(record["estimate"]) if record else None,
                      int(record["pairs"]) if record else None, int(record["max_degree"]) if record else None,
                      int(clipped.group(1)) if clipped else None,
                      lines[0] if lines else "", expectation, expected)


def _judge_baseline(case: CaseResult) -> None:
    """An honest run must release exactly the all-pairs sum of its values."""
    released = all(code == 0 for code in case.codes) and case.noisy_sum is not None
    case.outcome = "released" if released else "not released"
    if not released:
        case.problems.append(f"the honest run did not release (exits {case.codes}): {case.message}")
    elif case.noisy_sum != case.expected_units:
        case.problems.append(f"released sum {case.noisy_sum}, but the all-pairs sum of the data is {case.expected_units}")


def _judge(case: CaseResult, baseline: CaseResult, setting: Setting) -> None:
    """Fill in movement, bound, outcome and problems of ``case`` against its ``baseline``."""
    released = all(code == 0 for code in case.codes) and case.noisy_sum is not None
    case.bound_units = case.replaced * setting.row_sensitivity_units
    case.bound = case.bound_units / (setting.pairs * setting.scale)
    if released and baseline.noisy_sum is not None:
        if (case.pairs, case.max_degree) != (setting.pairs, setting.max_degree):
            case.problems.append(f"different tuples: |E| {case.pairs}, max degree {case.max_degree}")
        case.moved_units = abs(case.noisy_sum - baseline.noisy_sum)  # type: ignore[operator]
        case.moved = case.moved_units / (setting.pairs * setting.scale)
        if case.moved_units <= case.bound_units:
            case.outcome = "within bound"
        else:
            case.outcome = f"BEYOND bound (x{case.moved_units / case.bound_units:.1f}), released"
    elif all(code == 1 for code in case.codes) and _GUARD in case.message:
        case.outcome = "stopped by the guarded reveal (exit 1), nothing released"
    else:
        case.outcome = f"exits {case.codes}: {case.message}"
    if case.expectation == "within bound" and case.outcome != "within bound":
        case.problems.append(f"expected a release within the bound, got: {case.outcome}")
    if case.expectation in ("contrast", "raw sum") and case.outcome == "within bound":
        case.problems.append("no contrast: the release stayed within the bound without any clipping")
    if case.expectation == "raw sum" and not released:
        case.problems.append(f"expected the raw values' release (the sort orders them), got: {case.outcome}")
    if (case.expectation in ("within bound", "raw sum") and released and case.expected_units is not None
            and case.noisy_sum != case.expected_units):
        what = "raw" if case.expectation == "raw sum" else "clipped"
        case.problems.append(f"released sum {case.noisy_sum}, but the all-pairs sum of the {what} values is "
                             f"{case.expected_units}")


def run_cases(options: DrillOptions, root: str) -> tuple[Setting, list[CaseResult]]:
    """Run every case in fresh subdirectories of ``root``; judge each against its baseline."""
    count = QUICK_ROWS if options.quick else FULL_ROWS
    rows = framingham_columns([COLUMN], count)
    replaced_counts = QUICK_REPLACED if options.quick else FULL_REPLACED
    party_args = options.party_args
    bit_length = int(party_args[1]) if party_args[:1] == ("-L",) else DEFAULT_BIT_LENGTH
    run = functools.partial(_run_case, root, rows, party_args)
    baselines = {clip: run("baseline", clip, "honest", 0, None, "release") for clip in ("local", "secure")}
    for case in baselines.values():
        _judge_baseline(case)
    cases = list(baselines.values())
    if not all(case.ok for case in cases):
        return Setting(len(rows), 0, 0, 0, 0, fixed_point(UPPER), bit_length, 0), cases
    from secure.kernels import get_kernel  # numpy only at import; no MPyC runtime

    output = get_kernel("gini", precision=PRECISION).outputs([fixed_point(UPPER)])[0]
    local = baselines["local"]
    assert local.pairs is not None and local.max_degree is not None
    setting = Setting(rows=len(rows), pairs=local.pairs, max_degree=local.max_degree, delta_f=output.sensitivity,
                      scale=output.scale, width=fixed_point(UPPER), bit_length=bit_length, comparison_bits=sort_bits())
    if baselines["secure"].noisy_sum != baselines["local"].noisy_sum:
        baselines["secure"].problems.append("honest data gave different sums with local and secure clipping")

    plan: list[tuple[str, str, str, float, str]] = [
        ("local clipping", "local", "honest", FAR_VALUE, "within bound"),
        ("secure clipping, party 2 skips its own", "secure", "skips clipping", FAR_VALUE, "within bound"),
        ("no clipping at all", "local", "skips clipping", FAR_VALUE, "contrast"),
        ("no clipping at all", "local", "skips clipping", NEAR_VALUE, "contrast"),
        ("no clipping at all", "local", "skips clipping", ordered_value(), "raw sum"),
    ]
    if not options.quick:
        plan.insert(2, ("secure clipping, party 2 skips its own", "secure", "skips clipping", NEAR_VALUE,
                        "within bound"))
    for replaced in replaced_counts:
        honest_local: CaseResult | None = None
        for name, clip, party2, value, expectation in plan:
            case = run(name, clip, party2, replaced, value, expectation)
            _judge(case, baselines[clip], setting)
            if name == "local clipping":
                honest_local = case
            elif (clip == "secure" and value == FAR_VALUE and honest_local is not None
                  and honest_local.noisy_sum is not None and case.noisy_sum != honest_local.noisy_sum):
                case.problems.append(f"secure clipping gave sum {case.noisy_sum}, local clipping "
                                     f"{honest_local.noisy_sum}: they should clip to the same values")
            cases.append(case)
    if not options.quick:
        case = run("beyond -L: secure clipping, party 2 skips its own", "secure", "skips clipping", 1,
                   BEYOND_L_VALUE, "report")
        _judge(case, baselines["secure"], setting)
        cases.append(case)
    return setting, cases


# part 2: count vectors

INFLATE_ROWS = 250
DEVIATING_PARTY = 1
ECDF_POINTS, ECDF_INDEX = 256, 64
_ECDF = ["--columns", "sysBP", "--domain", "sysBP=80:300", "--smooth", "none", "--epsilon", "1e9",
         "--points", str(ECDF_POINTS)]

#: per job: its arguments, and the per-row movement of the printed value (``None``: not simply bounded)
COUNT_JOBS: dict[str, tuple[list[str], str | None]] = {
    "ustat": (["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:0,diaBP=40:160:0",
               "--path", "histogram", "--pairs", "all", "--epsilon", "20"], "kendall"),
    "ecdf": (_ECDF, "ecdf"),
    "ecdf_fss": (_ECDF + ["--queries", str(ECDF_INDEX)], "ecdf"),
    "rank_auc": (["--path", "histogram", "--epsilon", "20"], None),
    "hosmer_lemeshow": (["--epsilon", "1e9"], None),
    "roc_private": (["--epsilon", "1e9"], None),
}
QUICK_COUNT_JOBS = ("ecdf",)
_DEVIATIONS: dict[str, tuple[str, ...]] = {"honest": (), "inflate": ("--inflate-counts", str(INFLATE_ROWS)),
                                           "shift": ("--shift-counts",),
                                           "negative": ("--negative-counts", str(INFLATE_ROWS))}


@dataclass
class CountCase(CheckedOutcome):
    """One run of a job with party 1 honest or deviating in its count vector: the released value (or ``None``),
    ``n`` and party 1's rows, how far it moved and what party 1's own rows can move it by (``shift``)."""

    job: str
    deviation: str
    codes: list[int | None]
    lines: list[str]
    value: float | None
    rows: int | None = None
    party_rows: int | None = None
    moved: float | None = None
    bound: float | None = None
    outcome: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``job (deviation)``."""
        return f"{self.job} ({self.deviation})"


def _count_value(job: str, record: dict[str, Any]) -> float:
    if job in ("ecdf", "ecdf_fss"):
        queries = record.get("queries")
        index = queries.index(ECDF_INDEX) if isinstance(queries, list) else ECDF_INDEX
        return float(record["counts"][index]) / float(record["n"])
    return float(record["estimate"])


def _run_count_case(root: str, job: str, deviation: str, party_args: Sequence[str]) -> CountCase:
    directory = os.path.join(root, f"counts_{job}_{deviation}")
    os.makedirs(directory)
    args, _ = COUNT_JOBS[job]
    honest = PartySpec(job, (*args, "--json", RESULT_NAME))
    specs = [honest, honest, honest]
    if deviation != "honest":
        specs[DEVIATING_PARTY] = PartySpec("drills.deviating_party", ("--scenario", job, *_DEVIATIONS[deviation],
                                                                       *args, "--json", RESULT_NAME))
    results, _ = run_three(specs, directory, party_args=party_args)
    loaded = read_result(directory)
    record: dict[str, Any] = loaded[0] if isinstance(loaded, list) else loaded  # rank_auc: one record per run
    lines = [r.error_lines[0] if r.error_lines else "" for r in results]
    value = _count_value(job, record) if record and all(r.code == 0 for r in results) else None
    return CountCase(job, deviation, [r.code for r in results], lines, value, int(record["n"]) if record else None)


def _judge_count(case: CountCase, honest: CountCase, proves_cells: bool) -> None:
    refused = (all(code == 2 for code in case.codes) and len(set(case.lines)) == 1
               and case.lines[0].startswith(f"error: party {DEVIATING_PARTY}: ") and "deviating party" in case.lines[0])
    released = case.value is not None
    if case.deviation == "honest":
        case.outcome = "released" if released else f"NOT released (exits {case.codes}): {case.lines[0]}"
        if not released:
            case.problems.append("the honest run did not release")
        return
    if refused:
        case.outcome = "refused at every party: " + case.lines[0].removeprefix("error: ")
    elif released and honest.value is not None:
        case.moved = abs(case.value - honest.value)  # type: ignore[operator]
        case.outcome = f"released, moved {case.moved:.4f}" + ("" if case.bound is None else f" (bound {case.bound:.4f})")
    else:
        case.outcome = f"exits {case.codes}: {case.lines[0] or case.lines[1]}"
    if case.deviation == "inflate" and not refused:
        case.problems.append("a count vector of more rows than declared was not refused at every party")
    if case.deviation == "negative" and proves_cells and not refused:
        case.problems.append("a negative cell was not refused although the job proves its cells non-negative")
    if case.deviation == "shift" and case.moved is not None and case.bound is not None and case.moved > case.bound + 1e-9:
        case.problems.append(f"moved {case.moved:.4f}, beyond what the party's own rows can move ({case.bound:.4f})")


def run_count_cases(options: DrillOptions, root: str) -> list[CountCase]:
    """Part 2: per job, an honest run and party 1 inflating, shifting and negating its count vector."""
    cases: list[CountCase] = []
    jobs = QUICK_COUNT_JOBS if options.quick else tuple(COUNT_JOBS)
    for job in jobs:
        kind, proves_cells = COUNT_JOBS[job][1], job not in ("ecdf_fss", "rank_auc")  # non-negativity proof by default
        honest = _run_count_case(root, job, "honest", options.party_args)
        _judge_count(honest, honest, proves_cells)
        cases.append(honest)
        for deviation in ("inflate", "shift", "negative"):
            if job == "ecdf_fss" and deviation == "negative":
                continue  # a DCF key has no cell to make negative (see scenarios.drills.deviating_party)
            case = _run_count_case(root, job, deviation, options.party_args)
            case.rows = case.rows or honest.rows
            # party 1's public row count: every job splits the table by rows pid, pid + 3, ... and keeps every row
            case.party_rows = len(range(DEVIATING_PARTY, case.rows, 3)) if case.rows else None
            if case.rows and case.party_rows and deviation == "shift":  # what its n_1 rows can move (docs/drills.md)
                n_1, n = case.party_rows, case.rows
                case.bound = {"ecdf": n_1 / n, "kendall": min(2.0, 4.0 * n_1 / n)}.get(kind or "")
            _judge_count(case, honest, proves_cells)
            cases.append(case)
    return cases


def print_count_report(cases: Sequence[CountCase]) -> None:
    """Print part 2: per job and deviation, the exits and what was released or refused."""
    if not cases:
        return
    print(f"\nCount vectors: party {DEVIATING_PARTY} deviates in what it inputs (K = {INFLATE_ROWS} rows); "
          "3 parties, embedded data")
    table = [[case.job, case.deviation, exits(case.codes), number(case.value, 4),
              "-" if case.party_rows is None else f"{case.party_rows}/{case.rows}", number(case.moved, 4),
              number(case.bound, 4), case.outcome + ("" if case.ok else "  [FAILED]")] for case in cases]
    print(format_table(["job", "party 1", "exits", "value", "its rows", "moved", "bound", "outcome"], table))
    print("  inflate: its count vector sums to K more than its public rows (FSS: K more DCF keys); shift: all its "
          "rows in the first cell (right total, undetectable: the same as lying about its rows); negative: +K in "
          "the first cell, -K in the last (right total, a negative cell)")
    print_notes(cases)


def print_report(setting: Setting, cases: Sequence[CaseResult], count_cases: Sequence[CountCase] = ()) -> None:
    """Print the setting, the bound and the table of cases, then part 2 (:func:`print_count_report`)."""
    half = 1 << (setting.bit_length - 1)
    print(f"Malicious-input drill: Gini mean difference of {COLUMN}, declared domain {LOWER:g}:{UPPER:g} at "
          f"{PRECISION} fractional bits, 3 parties, party {MALICIOUS_PARTY} malicious")
    print(f"  n {setting.rows} rows, |E| {setting.pairs} tuples (all pairs, --path {PATH}), max degree "
          f"{setting.max_degree}, epsilon {EPSILON:g} (noise non-zero with probability "
          f"{setting.nonzero_noise:.2g} per release)")
    print(f"  per-row sensitivity = max degree x Delta_f / (|E| x 2^{PRECISION}) = {setting.max_degree} x "
          f"{setting.delta_f} / ({setting.pairs} x {setting.scale}) = {setting.row_sensitivity:.6g}; "
          f"bound for r rows = r x that")
    ordered = 1 << (setting.comparison_bits - 1)
    for value in sorted({case.value for case in cases if case.value is not None}):
        encoded = fixed_point(value)
        fits = -half <= encoded < half
        print(f"  value {value:.10g} -> fixed point {encoded}: outside [0, {setting.width}], "
              f"{'inside' if fits else 'OUTSIDE'} -L {setting.bit_length} (|x| < 2^{setting.bit_length - 1}), "
              f"{'inside' if 0 <= encoded < ordered else 'beyond'} the sort's {setting.comparison_bits}-bit "
              f"comparisons ([0, 2^{setting.comparison_bits - 1}))")
    table = [[case.name, case.clip, case.party2, str(case.replaced),
              "-" if case.value is None else f"{case.value:.10g}",
              exits(case.codes), number(case.estimate, 4),
              "-" if case.clipped_reported is None else str(case.clipped_reported),
              number(case.moved, 4), number(case.bound, 4), case.outcome + ("" if case.ok else "  [FAILED]")]
             for case in cases]
    print(format_table(["case", "clip", "party 2", "r", "value", "exits", "estimate", "clipped", "moved", "bound",
                        "outcome"], table))
    print("  moved = |estimate - baseline estimate of the same --clip|, computed from the released integer sums "
          "(exact: no noise, no rounding); clipped = values party 2 says it clipped, printed at party 2 only "
          "(clip counts are never shared)")
    print("  every release checked against the all-pairs sum the drill computes from its files: of the clipped "
          "values (baselines, local and secure clipping), of the raw values (no clipping, a value the sort orders)")
    guard = next((case.message for case in cases if _GUARD in case.message), None)
    if guard:
        print(f"  the guarded reveal said: {guard}")
    print_notes(cases)
    print_count_report(count_cases)


Outcome = tuple[Setting, list[CaseResult], list[CountCase]]


def _record(options: DrillOptions, outcome: Outcome) -> dict[str, Any]:
    setting, cases, count_cases = outcome
    return {"setting": {**asdict(setting), "row_sensitivity_units": setting.row_sensitivity_units,
                        "row_sensitivity": setting.row_sensitivity, "column": COLUMN,
                        "domain": [LOWER, UPPER, PRECISION], "epsilon": EPSILON, "seed": SEED,
                        "quick": options.quick},
            "cases": [case.record() for case in cases], "count_cases": [case.record() for case in count_cases],
            "ok": all(case.ok for case in [*cases, *count_cases])}


def _failures(outcome: Outcome) -> list[str]:
    return ([case.label for case in outcome[1] if not case.ok]
            + [f"count vector of {case.label}" for case in outcome[2] if not case.ok])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the malicious-input drill; returns the exit code (0 as expected, 1 not, 2 bad usage)."""
    return drill_main(
        argv, name="malicious-input",
        parse=lambda words: parse_drill_argv(words, "python -m scenarios.drills.malicious_input", __doc__ or ""),
        run=lambda options, root: (*run_cases(options, root), run_count_cases(options, root)),
        report=lambda outcome: print_report(*outcome), record=_record, failures=_failures)


if __name__ == "__main__":
    sys.exit(main())
