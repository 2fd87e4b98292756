"""Empirical DP audit of every mechanism in the suite, with negative controls that must be caught
(:func:`dp.audit.engine.audit` bounds the privacy loss from below; docs/drills.md).  Party 0 audits; with
``-M3`` the others agree on the parameters and the seed::

    python -m scenarios.drills.audit                      # every case, its recommended sample size x 5
    python -m scenarios.drills.audit --quick              # every case at its minimal sample size (CI)
    python -m scenarios.drills.audit --list               # the cases, with what each audits
    python -m scenarios.drills.audit -M3 --case umpc-kendall-dlap-m3-t1 --samples 400000 --seed 7 --json audit.json

Exit 0 when every mechanism passes and every control fails, 1 otherwise (one ``error:`` line), 2 on a usage error.

Threat model: the adversary knows everything but one row (one user's value for local DP); for distributed
noise, the coalition's view.  The audit can prove a violation; passing is evidence, not proof."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario
from scenarios.kit.experiments import agree_seed, check_results_dir, progress, write_csv
from scenarios.kit.outputs import check_output_path

__all__ = ["main", "all_cases", "parse_options"]

#: Without ``--quick`` each case runs with this multiple of its recommended sample size.
FULL_FACTOR = 5


def all_cases() -> list[Any]:
    """Every audit case of the suite: central and distributed mechanisms (simulated, then the secure
    MPyC path of :mod:`dp.audit.secure_cases`), then local randomizers."""
    from dp.audit.central_cases import central_cases
    from dp.audit.local_cases import local_cases
    from dp.audit.secure_cases import secure_cases

    return [*central_cases(), *secure_cases(), *local_cases()]


@dataclass(frozen=True)
class AuditOptions:
    cases: tuple[str, ...] | None
    list_only: bool
    samples: int | None
    quick: bool
    confidence: float
    seed: int | None
    json_path: str | None
    results_dir: str | None


def parse_options(argv: Sequence[str]) -> AuditOptions:
    """Parse and check the command line; :raise UsageError: on a bad value or an unknown case name."""
    parser = ScenarioParser(prog="python -m scenarios.drills.audit", description=__doc__)
    for option, kind, default, text in (
            ("--case", str, None, "the cases to run, NAME[,NAME...] (default: all)"), ("--samples", int, None,
             "samples per case (default: 5 x its recommended size)"), ("--confidence", float, 0.95, "family-wise"),
            ("--seed", int, None, "audit seed (default: a joint seed, printed)"),
            ("--json", str, None, "party 0 writes the record"), ("--results-dir", str, None, "writes audit.csv there")):
        parser.add_argument(option, type=kind, default=default, help=text)
    parser.add_argument("--list", action="store_true", help="the cases, with what each audits")
    parser.add_argument("--quick", action="store_true", help="every case at its minimal sample size (CI)")
    args = parser.parse_args(list(argv))
    check_output_path(args.json, "--json")
    if args.samples is not None and args.samples < 2:
        raise UsageError(f"--samples must be at least 2, got {args.samples}")
    if not 0.0 < args.confidence < 1.0:
        raise UsageError(f"--confidence must be in (0, 1), got {args.confidence}")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must be non-negative, got {args.seed}")
    names = None
    if args.case is not None:
        names = tuple(n.strip() for n in args.case.split(",") if n.strip())
        if not names:
            raise UsageError("--case needs at least one case name")
        known = {case.name for case in all_cases()}
        if unknown := [n for n in names if n not in known]:
            raise UsageError(f"unknown case {unknown[0]!r}; see --list")
    return AuditOptions(names, args.list, args.samples, args.quick, args.confidence, args.seed, args.json,
                        args.results_dir)


def _record(result: Any) -> dict[str, Any]:
    case = result.case
    return {"case": case.name, **{key: getattr(case, key) for key in
                                  ("control", "mechanism", "statistic", "neighbours", "epsilon", "delta")},
            **{key: getattr(result, key) for key in
               ("samples", "epsilon_lower", "event", "p_lower", "q_upper", "confidence", "verdict")},
            "as_expected": result.violation if case.control else not result.violation}


def run(options: AuditOptions, seed: int) -> list[str]:
    """Run the chosen audits with the audit seed, print the table; return the cases with an unexpected verdict."""
    from dp.audit.engine import audit

    cases = all_cases()
    if options.cases is not None:
        cases = [case for case in cases if case.name in options.cases]
    if options.list_only:
        for case in cases:
            kind = "control" if case.control else "mechanism"
            claim = f"eps={case.epsilon:g}" + (f", delta={case.delta:g}" if case.delta else "")
            print(f"{case.name}  [{kind}; {claim}; {case.samples} samples]")
            print(f"    {case.mechanism}")
            print(f"    statistic: {case.statistic}; neighbours: {case.neighbours}")
        return []
    streams = np.random.SeedSequence(seed).spawn(len(cases))
    per_case = 1.0 - (1.0 - options.confidence) / len(cases)  # Bonferroni over the cases run
    start = time.perf_counter()
    records = []
    with progress(len(cases), "audit") as bar:
        for case, stream in zip(cases, streams):
            samples = options.samples or case.samples * (1 if options.quick else FULL_FACTOR)  # given: at least 2
            result = audit(case, samples=samples, rng=np.random.default_rng(stream), confidence=per_case)
            records.append(_record(result))
            bar.update(1)
    print(f"DP audit: lower bounds at {records[0]['confidence']:.4%} confidence each, {options.confidence:.0%} "
          f"family-wise over {len(records)} cases; audit seed {seed} ({time.perf_counter() - start:.1f} s)")
    width = max(len(r["case"]) for r in records)
    print(f"  {'case':<{width}}  {'kind':<9}  {'claimed':>15}  {'samples':>8}  {'eps lower':>9}  verdict  expected")
    for r in records:
        claim = f"{r['epsilon']:g}" + (f" (d={r['delta']:.0e})" if r["delta"] else "")
        kind = "control" if r["control"] else "mechanism"
        expected = ("FAIL" if r["control"] else "pass") + ("" if r["as_expected"] else "  <-- UNEXPECTED")
        print(f"  {r['case']:<{width}}  {kind:<9}  {claim:>15}  {r['samples']:>8}  {r['epsilon_lower']:>9.3f}  "
              f"{r['verdict']:<7}  {expected}")
    if options.json_path:
        Path(options.json_path).write_text(json.dumps({"seed": seed, "results": records}, indent=2))
    if options.results_dir:
        target = Path(options.results_dir, "audit.csv")  # the directory made by check_results_dir
        write_csv(str(target), list(records[0]), records)
        print(f"wrote {target}")
    surprises = [r["case"] for r in records if not r["as_expected"]]
    if not surprises:
        mechanisms = sum(not r["control"] for r in records)
        print(f"all {mechanisms} mechanisms pass at their claimed epsilon; all {len(records) - mechanisms} "
              f"controls are caught")
    return surprises


async def _audit(options: AuditOptions) -> Callable[[], None] | None:
    """Every party: agree on the audit seed (and the results directory); party 0 audits."""
    from mpyc.runtime import mpc

    from secure.session import ProtocolFailure

    seed = await agree_seed(options.seed)
    if options.results_dir:
        await check_results_dir(options.results_dir)
    if mpc.pid != 0:
        return None

    def deliver() -> None:  # after the orderly shutdown: the peers do not wait, silent, for party 0
        if surprises := run(options, seed):
            raise ProtocolFailure(f"audit: unexpected verdict for {', '.join(surprises)}")

    return deliver


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the audit; returns the exit code."""
    return run_scenario(parse_options, _audit, lambda options: {
        "cases": options.cases, "samples": options.samples, "quick": options.quick, "confidence": options.confidence,
        "seed": options.seed}, argv)


if __name__ == "__main__":
    sys.exit(main())
