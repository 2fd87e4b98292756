"""Coalition drills: what t colluding parties see, and that t + 1 would see everything, with real MPyC parties:
(i) their shares of the honest inputs do not depend on them, (ii) the exact epsilon left against them, (iii)
``t + 1`` parties reconstruct every honest input, ``t`` only at the chance rate ``1/p`` (docs/drills.md).  Run it
with three local parties (the default when no ``-M`` is given), or five with threshold 2::

    python -m scenarios.drills.coalition -M3
    python -m scenarios.drills.coalition -M5 -T2 --coalition 1,3 --copies 10000 --json drills.json
    python -m scenarios.drills.coalition -M3 --quick                       # small sizes, for CI

Threat model: passive, static, ``t < m/2``; the drills act out that adversary (members hand their shares and
noise draws to one of them).  Only for the exactness checks do the honest parties disclose their inputs and
draws to that party, after the attack."""
from __future__ import annotations

import functools
import math
import sys
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

import numpy as np

from scenarios.kit.records import write_record
from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table, run_scenario, usage_errors
from scenarios.kit.datasets import load_embedded
from scenarios.kit.outputs import check_output_path
from secure.intake import rows_from_table, share_rows
from secure.public_randomness import joint_seed
from secure.views import field_modulus, local_share_integers, recombine, share_point

__all__ = ["main", "parse_options", "Options", "chi_square_bins", "independence_tests", "count_reconstructed",
           "bonferroni", "known_draw", "FAMILY_LEVEL"]

#: Family-wise level of the independence drill: it rejects when ``min p * (number of tests) < 1e-3``.
FAMILY_LEVEL = 1e-3
#: Defaults (full run / ``--quick``).
COPIES = (4000, 400)
ROWS = (60, 30)
MIN_COPIES = 50
#: The exact epsilon "meets" the target when within this distance (numerical error of the pmf).
EPSILON_TOLERANCE = 1e-6


def known_draw(party: int, index: int) -> int:
    """The fixed, public noise draw ``3 (i + 1) - 5 + 7 j`` of party ``i`` for released sum ``j`` (exactness check)."""
    return 3 * (party + 1) - 5 + 7 * index


@dataclass
class Options:
    """Parsed drill options (the coalition is validated against ``m`` and ``t``)."""

    coalition: list[int]
    copies: int
    rows: int
    epsilon: float
    seed: int | None
    quick: bool
    json: str | None
    parties: int
    threshold: int

    def public(self) -> dict[str, Any]:
        """The parameters every party must share (all but ``json``, ``parties`` and ``threshold``)."""
        return {key: value for key, value in asdict(self).items() if key not in ("json", "parties", "threshold")}

    @property
    def honest(self) -> list[int]:
        return [party for party in range(self.parties) if party not in self.coalition]

    @property
    def analyst(self) -> int:
        """The coalition member who pools the coalition's view (its first member)."""
        return self.coalition[0]

    @property
    def extended(self) -> list[int]:
        """The coalition of ``t + 1``: the coalition plus the lowest honest party."""
        return sorted(self.coalition + [self.honest[0]])


def _parse_coalition(text: str | None, parties: int, threshold: int) -> list[int]:
    """``"3,4"`` -> ``[3, 4]``, checked: ``t`` distinct ids in ``0..m-1`` (default: the last ``t``); :raise UsageError:."""
    if text is None:
        return list(range(parties - threshold, parties))
    try:
        members = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise UsageError(f"--coalition expects party ids like 1,2, got '{text}'") from None
    if len(members) != threshold:
        raise UsageError(f"--coalition must name exactly t = {threshold} parties (MPyC's -T), "
                         f"got {len(members)}: '{text}'")
    if outside := [member for member in members if not 0 <= member < parties]:
        raise UsageError(f"--coalition: party id {outside[0]} is out of range 0..{parties - 1}")
    if len(set(members)) != len(members):
        raise UsageError(f"--coalition: party ids must be distinct, got '{text}'")
    return sorted(members)


def parse_options(argv: Sequence[str], parties: int | None = None, threshold: int | None = None) -> Options:
    """Parse and validate the drill options (``m`` and ``t`` default to the MPyC runtime's); :raise UsageError:."""
    from dp.validation import check_epsilon

    parser = ScenarioParser(prog="python -m scenarios.drills.coalition", description=__doc__)  # MPyC's options gone
    for option, kind, default, text in (
            ("--coalition", str, None, "the t colluding ids I,J,... (default: the last t)"),
            ("--copies", int, None, "inputs per honest party and round (default: 4000; quick 400)"),
            ("--rows", int, None, "Framingham rows of the release (default: 60; quick 30)"),
            ("--epsilon", float, 1.0, "of the release"), ("--seed", int, None, "public tuple seed (default: joint)"),
            ("--json", str, None, "party 0 writes the record")):
        parser.add_argument(option, type=kind, default=default, help=text)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    args = parser.parse_args(list(argv))  # first: -h exits here, before MPyC is started
    if parties is None or threshold is None:
        from mpyc.runtime import mpc

        parties, threshold = len(mpc.parties), int(mpc.threshold)
    check_output_path(args.json, "--json")
    if threshold < 1:
        raise UsageError(f"the coalition drills need a threshold t >= 1, i.e. at least 3 parties (-M3, or "
                         f"-M5 -T2); got m = {parties}, t = {threshold}")
    coalition = _parse_coalition(args.coalition, parties, threshold)
    copies = args.copies if args.copies is not None else COPIES[args.quick]
    rows = args.rows if args.rows is not None else ROWS[args.quick]
    if copies < MIN_COPIES:
        raise UsageError(f"--copies must be at least {MIN_COPIES}, got {copies}")
    if rows < 2 * parties:
        raise UsageError(f"--rows must be at least 2m = {2 * parties} (every party holds rows), got {rows}")
    with usage_errors():
        check_epsilon(args.epsilon)
    return Options(coalition, copies, rows, args.epsilon, args.seed, args.quick, args.json, parties, threshold)


# analysis (plaintext)


def chi_square_bins(samples: int) -> int:
    """Number of equal bins of ``[0, p)`` for the uniformity test: about 50 samples per bin, 4..50 bins."""
    return max(4, min(50, samples // 50))


def independence_tests(round_a: Sequence[Sequence[int]], round_b: Sequence[Sequence[int]], *,
                       members: Sequence[int], modulus: int) -> list[dict[str, Any]]:
    """Do the coalition's shares depend on the honest inputs?  KS of ``share / p`` between rounds, chi-square over
    equal bins of ``[0, p)`` per round, for each member (in ``members`` order) and, for ``t >= 2``, their Lagrange
    combination at 0 (docs/drills.md); one entry per test: ``name``, ``test`` (``ks`` or ``chi2``), ``p_value``.
    :raise ValueError: if the rounds have different numbers of members or no samples."""
    from scipy import stats

    if len(round_a) != len(members) or len(round_b) != len(members):
        raise ValueError(f"need one share vector per coalition member ({len(members)}), "
                         f"got {len(round_a)} and {len(round_b)}")
    points = [share_point(member) for member in members]
    coordinates: list[tuple[str, Sequence[int], Sequence[int]]] = [
        (f"party {member}", a, b) for member, a, b in zip(members, round_a, round_b)]
    if len(members) > 1:  # for t = 1 the combination is the single coordinate itself
        coordinates.append(("Lagrange combination at 0", recombine(points, round_a, modulus),
                            recombine(points, round_b, modulus)))
    samples = len(coordinates[0][1])
    if samples == 0:
        raise ValueError("no shares to test")
    bins = chi_square_bins(samples)
    results: list[dict[str, Any]] = []
    for name, a, b in coordinates:
        ks = stats.ks_2samp(*(np.array([int(v) / modulus for v in values], dtype=float) for values in (a, b)))
        results.append({"name": f"KS share/p, {name}, round a vs b", "test": "ks", "p_value": float(ks.pvalue)})
        for label, values in (("a", a), ("b", b)):
            counts = np.bincount(np.array([int(v) * bins // modulus for v in values], dtype=np.int64), minlength=bins)
            results.append({"name": f"chi2 uniform ({bins} bins), {name}, round {label}", "test": "chi2",
                            "p_value": float(stats.chisquare(counts).pvalue)})
    return results


def bonferroni(p_values: Sequence[float]) -> float:
    """Family p-value ``min(1, K * min p)`` of ``K`` tests (Bonferroni: valid under any dependence; none: 1)."""
    return min(1.0, len(p_values) * min(p_values)) if p_values else 1.0


def count_reconstructed(members: Sequence[int], shares: Sequence[Sequence[int]], truth: Sequence[int],
                        modulus: int) -> int:
    """How many inputs ``truth`` the ``members`` recover by Lagrange interpolation at 0 of their ``shares``."""
    guesses = recombine([share_point(member) for member in members], shares, modulus)
    return sum(1 for guess, value in zip(guesses, truth) if guess == int(value) % modulus)


# the parties


def _query(options: Options) -> Any:
    """The main job's default query (Kendall's tau of sysBP, diaBP, |E| = 2n) at ``--epsilon``, with
    party-drawn noise: the drill is about what a coalition knows of its own members' draws."""
    from scenarios.ustat import parse_options as ustat_options

    return ustat_options(["--epsilon", repr(options.epsilon), "--noise", "parties"]).query


@functools.lru_cache(maxsize=1)
def _framingham() -> Any:
    return load_embedded("framingham")


def _rows_of(party: int | None, options: Options) -> np.ndarray:
    """Party ``party``'s rows of the first ``--rows`` embedded Framingham rows (rows i, i+m, ...); ``None``: all the
    embedded rows, of every party."""
    table = _framingham()
    columns = [spec.name for spec in _query(options).specs]
    if party is None:
        return rows_from_table(table.header, table.rows, columns, source="embedded framingham").values
    return rows_from_table(table.header, table.rows[:options.rows], columns, source="embedded framingham",
                           party=party, parties=options.parties).values


def _main_job_plan(options: Options, seed: int) -> tuple[Any, int, int]:
    """The noise plan of the main job (``python -m scenarios.ustat``, all Framingham rows), ``n`` and ``|E| = 2n``."""
    from dp.umpc.protocol import plans_for, sample_for

    rows = _rows_of(None, options).shape[0]
    query = replace(_query(options), tuples=2 * rows)
    tuples = sample_for(query, rows, seed)
    return plans_for(query, tuples, rows, options.parties, options.threshold)[0], rows, len(tuples)


async def _share_round(sectype: type, inputs: np.ndarray | None, options: Options) -> tuple[list[Any], list[Any]]:
    """One round of drill (i): honest parties share ``inputs``; the t + 1 parties pool their shares at the analyst
    (in :attr:`Options.extended` order), with the honest inputs disclosed for the check only."""
    from mpyc.runtime import mpc

    counts = [options.copies if party in options.honest else 0 for party in range(options.parties)]
    local = (np.asarray(inputs, dtype=np.int64).reshape(-1, 1) if inputs is not None
             else np.zeros((0, 1), dtype=np.int64))
    shared = share_rows(sectype, local, counts)
    mine = await local_share_integers(shared)
    pooled = await mpc.transfer(mine if mpc.pid in options.extended else None,
                                senders=options.extended, receivers=options.analyst)
    disclosed = await mpc.transfer([int(v) for v in local.ravel()] if mpc.pid in options.honest else None,
                                   senders=options.honest, receivers=options.analyst)
    return list(pooled), list(disclosed)


def _analyse_shares(options: Options, modulus: int, pooled: dict[str, list[Any]],
                    truth: dict[str, list[int]]) -> dict[str, Any]:
    """Drills (i) and (iii) at the analyst, from the pooled shares of both rounds."""
    position = {party: index for index, party in enumerate(options.extended)}
    coalition = options.coalition
    view = {name: [pooled[name][position[member]] for member in coalition] for name in pooled}
    tests = independence_tests(view["a"], view["b"], members=coalition, modulus=modulus)
    p_values = [test["p_value"] for test in tests]
    family = bonferroni(p_values)
    total = sum(len(truth[name]) for name in truth)
    exact = sum(count_reconstructed(options.extended, pooled[name], truth[name], modulus) for name in pooled)
    chance = sum(count_reconstructed(coalition, view[name], truth[name], modulus) for name in pooled)
    return {
        "independence": {"tests": tests, "min_p": min(p_values), "count": len(tests), "bonferroni_p": family,
                         "level": FAMILY_LEVEL, "rejected": family < FAMILY_LEVEL,
                         "samples_per_round": len(truth["a"]), "bins": chi_square_bins(len(truth["a"]))},
        "threshold_drill": {"reconstructed_by": options.extended, "reconstructed": exact, "inputs": total,
                            "t_coalition": coalition, "t_matches": chance, "chance_rate": 1.0 / modulus},
    }


def _noise_check(released: int, coalition_draws: int, true_sum: int, honest_draws: int) -> dict[str, Any]:
    """What the coalition computes (released minus its own draws) against the truth (sum plus honest draws)."""
    residual = released - coalition_draws
    return {"released": released, "coalition_draws": coalition_draws, "released_minus_coalition": residual,
            "true_sum": true_sum, "honest_noise": residual - true_sum, "honest_draws": honest_draws,
            "exact": residual - true_sum == honest_draws}


async def _release_drill(options: Options, seed: int) -> dict[str, Any]:
    """Drill (ii): two real releases (OS draws, then fixed known draws); the coalition subtracts its draws."""
    from mpyc.runtime import mpc

    from dp.audit.engine import coalition_epsilon
    from dp.noise_plans import NoisePlan
    from dp.umpc.protocol import prepare_rows, run_secure, simulate

    query = _query(options)
    own = _rows_of(mpc.pid, options)
    fixed = prepare_rows(query, own)
    rows_total = sum(await mpc.transfer(int(fixed.integers.shape[0])))
    query = replace(query, tuples=2 * rows_total)
    plans: list[NoisePlan] = []
    draws: list[int] = []

    def recorded(plan: NoisePlan, index: int) -> int:
        draw = plan.draw()
        plans.append(plan)
        draws.append(int(draw))
        return int(draw)

    release = await run_secure(query, fixed, seed=seed, noise_source=recorded)
    coalition_view = await mpc.transfer(draws if mpc.pid in options.coalition else None,
                                        senders=options.coalition, receivers=options.analyst)
    honest_view = await mpc.transfer(draws if mpc.pid in options.honest else None,
                                     senders=options.honest, receivers=options.analyst)
    known = await run_secure(query, fixed, seed=seed, noise_source=lambda plan, index: known_draw(mpc.pid, index))
    if mpc.pid != options.analyst:
        return {}
    assert release is not None and known is not None
    everyone = [_rows_of(party, options) for party in range(options.parties)]
    truth = simulate(query, everyone, threshold=options.threshold, seed=seed,
                     noise=np.zeros((1, len(plans), options.parties), dtype=np.int64))
    true_sum = int(truth.sums[0])
    plan = plans[0]
    if plan.mechanism != "discrete laplace":  # _query is pure DP with party noise: Polya shares, DLap(alpha)
        raise TypeError(f"the coalition drill needs discrete Laplace party noise, got {plan.mechanism}")
    main_plan, main_rows, main_pairs = _main_job_plan(options, seed)
    m_minus_t = options.parties - options.threshold
    epsilons = [{"query": label, "n": n, "pairs": pairs, "sensitivity": target.sensitivity, "target": target.epsilon,
                 "calibration_m_minus_t": m_minus_t,
                 **{key: coalition_epsilon(epsilon=target.epsilon, sensitivity=target.sensitivity,
                                           parties=options.parties, threshold=options.threshold, calibration_parties=c)
                    for key, c in (("coalition_calibrated", m_minus_t), ("naive", options.parties))}}
                for label, target, n, pairs in (("main job (scenarios.ustat)", main_plan, main_rows, main_pairs),
                                                ("this release", plan, rows_total, release.pairs))]
    known_coalition = sum(known_draw(party, 0) for party in options.coalition)
    known_honest = sum(known_draw(party, 0) for party in options.honest)
    honest_std = math.sqrt(2 * plan.alpha / (1 - plan.alpha) ** 2)
    return {
        "statistic": "coalition drills", "estimate": release.estimate, "epsilon": release.epsilon,
        "delta": release.delta, "n": release.n, "pairs": release.pairs, "alpha": plan.alpha,
        "exact_epsilon": epsilons,
        "noise": {**_noise_check(int(release.noisy_sums[0]), sum(d[0] for d in coalition_view), true_sum,
                                 sum(d[0] for d in honest_view)),
                  "coalition_draws_by_party": dict(zip(map(str, options.coalition), (d[0] for d in coalition_view))),
                  "honest_noise_std": honest_std},
        "known_draws": _noise_check(int(known.noisy_sums[0]), known_coalition, true_sum, known_honest),
    }


async def _drills(options: Options) -> None:
    """Every party: run the three drills; the analyst analyses and tells everyone; party 0 writes JSON."""
    from mpyc.runtime import mpc

    from dp.umpc.protocol import prepare_rows, secure_integer_type
    from secure.meter import CostMeter

    meter = CostMeter()
    query = _query(options)
    sectype, _ = secure_integer_type(query)
    modulus = field_modulus(sectype(0))
    with meter.phase("seed"):
        seed = options.seed if options.seed is not None else await joint_seed()
    real = np.resize(prepare_rows(query, _rows_of(mpc.pid, options)).integers[:, 0], options.copies)
    pooled: dict[str, list[Any]] = {}
    truth: dict[str, list[int]] = {}
    for name, values in (("a", real), ("b", np.zeros(options.copies, dtype=np.int64))):
        with meter.phase(f"shares {name}"):
            shares, disclosed = await _share_round(sectype, values if mpc.pid in options.honest else None, options)
        pooled[name] = shares
        truth[name] = [value for vector in disclosed for value in vector]
    with meter.phase("releases"):
        record = await _release_drill(options, seed)
    phases = await meter.totals_over_parties()
    if mpc.pid == options.analyst:
        record.update(_analyse_shares(options, modulus, pooled, truth))
        record.update({"parties": options.parties, "threshold": options.threshold, "coalition": options.coalition,
                       "honest": options.honest, "analyst": options.analyst, "copies": options.copies,
                       "modulus": modulus, "seed": seed,
                       "seconds": sum(cost.seconds for cost in phases.values()),
                       "bytes_sent": sum(cost.bytes_sent for cost in phases.values())})
    record = await mpc.transfer(record if mpc.pid == options.analyst else None, senders=options.analyst)
    _print(record)
    if options.json and mpc.pid == 0:
        write_record(options.json, record)


def _ids(parties: Sequence[int]) -> str:
    return "{" + ", ".join(map(str, parties)) + "}"


def _print(record: dict[str, Any]) -> None:
    """The drill table (every party prints the same)."""
    independence, threshold_drill, noise, known = (record["independence"], record["threshold_drill"],
                                                   record["noise"], record["known_draws"])
    m, t = record["parties"], record["threshold"]
    print(f"Coalition drills: m = {m} parties, threshold t = {t}, coalition {_ids(record['coalition'])} "
          f"(pooled at party {record['analyst']}), honest {_ids(record['honest'])}")
    print(f"(i) share independence: {record['copies']} inputs per honest party and round "
          f"(a: real sysBP values, b: 0); {independence['samples_per_round']} shares per member and round, "
          f"p = {record['modulus']}")
    print_table([(test["name"], f"p = {test['p_value']:.4f}") for test in independence["tests"]])
    verdict = "REJECTED: shares depend on the inputs" if independence["rejected"] else "not rejected"
    print(f"  Bonferroni over {independence['count']} tests: min p x {independence['count']} = "
          f"{independence['bonferroni_p']:.4f}; {verdict} at family level {independence['level']:g}")
    print(f"(ii) epsilon left against the coalition (honest noise only; Kendall tau, target epsilon "
          f"{record['epsilon']:g})")
    rows = []
    for entry in record["exact_epsilon"]:
        meets = abs(entry["coalition_calibrated"] - entry["target"]) <= EPSILON_TOLERANCE
        misses = entry["naive"] > entry["target"] + EPSILON_TOLERANCE
        rows.append((f"{entry['query']}: n {entry['n']}, |E| {entry['pairs']}, sensitivity {entry['sensitivity']}",
                     f"{entry['coalition_calibrated']:.6f} (noise for m - t = {entry['calibration_m_minus_t']}, "
                     f"{'meets the target' if meets else 'MISSES the target'}); {entry['naive']:.6f} = {entry['naive'] / entry['target']:.3f} x target "
                     f"(noise for m = {m}, {'misses it' if misses else 'meets it'})"))
    rows += [
        ("released noisy sum (this release)", f"{noise['released']}  (estimate {record['estimate']:.6g})"),
        ("minus the coalition's own draws", f"{noise['released_minus_coalition']}  (draws "
         + ", ".join(f"party {p}: {d}" for p, d in noise["coalition_draws_by_party"].items()) + ")"),
        ("true sum (plaintext)", f"{noise['true_sum']}"),
        ("honest noise left", f"{noise['honest_noise']}  (DLap(alpha = {record['alpha']:.4f}), std "
         f"{noise['honest_noise_std']:.2f}); equals the honest draws' sum {noise['honest_draws']}: "
         f"{'exact' if noise['exact'] else 'MISMATCH'}"),
        ("fixed known draws", f"released {known['released']} - coalition {known['coalition_draws']} - true "
         f"{known['true_sum']} = {known['honest_noise']}, honest draws {known['honest_draws']}: "
         f"{'exact' if known['exact'] else 'MISMATCH'}"),
    ]
    print_table(rows)
    print("(iii) the threshold is real")
    print_table([
        (f"t + 1 = {t + 1} parties {_ids(threshold_drill['reconstructed_by'])}",
         f"reconstruct {threshold_drill['reconstructed']} of {threshold_drill['inputs']} honest inputs exactly"),
        (f"t = {t} parties {_ids(threshold_drill['t_coalition'])}",
         f"hit {threshold_drill['t_matches']} of {threshold_drill['inputs']} (chance rate 1/p = "
         f"{threshold_drill['chance_rate']:.2g})"),
    ])
    print(f"  seconds {record['seconds']:.2f}, bytes {format_bytes(record['bytes_sent'])} sent by all parties")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the drills (three local parties when no ``-M``, ``-P`` or ``-I`` is given); the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if not any(word.startswith(("-M", "-P", "-I")) for word in words):
        words.append("-M3")
    if argv is None:
        sys.argv[1:] = words
    return run_scenario(parse_options, _drills, lambda options: options.public(), None if argv is None else words)


if __name__ == "__main__":
    sys.exit(main())
