"""Noise delegates Z drawn from fresh joint randomness of the run, never from --seed (issue 21, item 1).

Threat model M_HF (Sinh & Ramon §4): the bound "every delegate corrupt with probability <= epsilon_fail" needs
Z independent of the corruption.  Before, Z was ``choose_delegates(seed, m, |Z|)`` with the user's ``--seed``:
``-M5 -T2 --delegate-noise 0.2:0.6 --seed 5`` used Z = (2, 4) in every run, so an adversary who knew the seed
corrupted exactly Z.  Now Z comes from :func:`dp.umpc.delegation.draw_delegates` (every party secret-shares a
uniform field element, the sum is opened after all are shared), and the record and the table name it.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpyc.runtime import mpc

from conftest import ROOT, free_base_port, read_record, run_command, scenario_command

#: The issue's reproducer (embedded data, so no --data; no ledger: these runs are not about budgets).
REPRODUCER = ["-M5", "-T2", "--stat", "duplicate", "--columns", "education", "--delegate-noise", "0.2:0.6",
              "--seed", "5", "--ledger", "off", "--no-log"]
DRAWN_FROM = "fresh joint randomness of this run, every party contributes; not from --seed"


# ------------------------------------------------------------------------------------------ library


def test_choose_delegates_refuses_a_seed() -> None:
    """The user-seed path is gone: an integer seed (the old first argument) is a TypeError naming the way."""
    from dp.umpc.delegation import choose_delegates

    with pytest.raises(TypeError, match=r"^choose_delegates takes a numpy.random.Generator, not a seed \(got 5\): "
                                        r"in a run the delegates come from draw_delegates"):
        choose_delegates(5, 5, 2)  # type: ignore[arg-type]
    assert choose_delegates(np.random.default_rng(1), 5, 2) == choose_delegates(np.random.default_rng(1), 5, 2)


def test_run_secure_takes_the_number_of_delegates_not_a_chosen_z() -> None:
    """``noise_delegates`` is |Z|; a sequence (a Z chosen by the caller) is refused before anything is shared."""
    from dp.umpc.protocol import UStatQuery, prepare_rows, run_secure
    from secure.intake import ColumnSpec
    from secure.kernels import get_kernel

    query = UStatQuery(kernel=get_kernel("gini", precision=0), specs=(ColumnSpec("a", 0, 10, 0),), epsilon=1.0, tuples=4,
                       noise="parties")
    fixed = prepare_rows(query, np.arange(6, dtype=float).reshape(-1, 1))
    with pytest.raises(TypeError, match=r"noise_delegates is the number \|Z\| of noise delegates, got \(2, 4\)"):
        mpc.run(run_secure(query, fixed, seed=5, noise_delegates=(2, 4)))  # type: ignore[arg-type]


def test_the_refusal_of_a_pure_account_names_what_helps_with_delegated_noise() -> None:
    """Issue 26 item 6: --delegate-noise is party noise already; its failure probability is what needs a delta."""
    from dp.budget.accountants import PURE_ONLY, Budget, Spend
    from dp.budget.ledger import refusal_lines
    from dp.noise_defaults import DELEGATED_NOISE

    reason = f"{PURE_ONLY}: this run needs delta 0.2"
    delegated = Spend(epsilon=1.0, delta=0.2, mechanism=f"distributed discrete Laplace {DELEGATED_NOISE}")
    shared, local = refusal_lines(reason, delegated, Budget(5.0, 0.0), "name-x", "/ledger/x.p0.json")
    for line in (shared, local):
        assert "--noise parties" not in line
        assert "leave --delegate-noise out" in line and "raise the account's delta" in line
    assert "/ledger" not in shared
    in_mpc = Spend(epsilon=1.0, delta=1e-12, mechanism="discrete Laplace sampled in MPC")
    assert "--noise parties" in refusal_lines(reason, in_mpc, Budget(5.0, 0.0), "name-x", "/ledger/x.p0.json")[0]


def test_a_pure_account_refuses_delegated_noise_with_the_advice_that_helps(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """One process (m = 1 keeps its single delegate): the account of --budget 5 is pure; the run needs delta 0.2."""
    from scenarios.ustat import main

    code = main(["--delegate-noise", "0.2:0.6", "--pairs", "200", "--seed", "1", "--ledger", str(tmp_path),
                 "--budget", "5"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1, err
    assert "leave --delegate-noise out" in lines[0] and "--noise parties" not in lines[0]


# ------------------------------------------------------------------------------------------ runs


def _z(record: dict) -> tuple[int, ...]:
    return tuple(record["delegates"])


@pytest.mark.multiparty
def test_the_reproducer_names_a_fresh_z_in_each_of_four_runs(tmp_path: Path) -> None:
    """The issue's command four times, --seed 5 each time: the record names Z, the table says how it was drawn.

    |Z| = ceil(log 0.2 / log 0.4) = 2 of m = 5: C(5, 2) = 10 equally likely groups per run.  Were Z a function
    of --seed (the old code: Z = (2, 4) every time) all four would coincide; drawn afresh, all four coincide
    with probability 10 * (1/10)^4 = 1/1000, which is this test's false-failure rate.
    """
    groups = []
    for run_number in range(4):
        out = tmp_path / f"run{run_number}.json"
        run = run_command(scenario_command("ustat", *REPRODUCER, "-B", str(free_base_port()), "--json", str(out)))
        assert run.code == 0, run.stderr
        record = read_record(out)
        z = _z(record)
        assert len(z) == 2 and len(set(z)) == 2 and all(0 <= p < 5 for p in z) and list(z) == sorted(z)
        assert record["delegates_drawn_from"] == DRAWN_FROM and record["seed"] == 5  # --seed keeps the tuples
        row = [line for line in run.stdout.splitlines() if line.strip().startswith("noise delegates")]
        assert row == [f"  noise delegates     Z = ({z[0]}, {z[1]}), drawn from {DRAWN_FROM}"], run.stdout
        groups.append(z)
    print("delegates over four runs:", groups)
    assert len(set(groups)) >= 2, groups


def _run_with_contributions(contributions: tuple[int, ...], seed: int, out: Path) -> dict:
    """Three parties of the job whose joint draws use the fixed ``contributions`` (one per party)."""
    program = ROOT / "tests" / "programs" / "delegates_fixed_contribution.py"
    port, parties = free_base_port(), len(contributions)
    processes = [subprocess.Popen([sys.executable, str(program), str(value), "-T1", "--stat", "duplicate",
                                   "--columns", "education", "--delegate-noise", "0.2:0.6", "--pairs", "200",
                                   "--seed", str(seed), "--ledger", "off", "--json", str(out),
                                   "-M", str(parties), "-I", str(index), "-B", str(port), "--no-log"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
                 for index, value in enumerate(contributions)]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    return json.loads(out.read_text())


@pytest.mark.multiparty
def test_z_follows_the_parties_contributions_not_the_seed(tmp_path: Path) -> None:
    """Deterministic: with every party's contribution fixed, Z is the choice seeded by their sum, whatever --seed.

    m = 3, |Z| = 2.  Contributions summing to 66 give Z = (1, 2) and summing to 68 give (0, 1)
    (:func:`secure.public_randomness.choose_subset` of the generator of the sum).  The old code took Z from
    --seed: (1, 2) for --seed 5 and (0, 1) for --seed 6, so runs B and C below fail on it.
    """
    from secure.public_randomness import FIELD_PRIME, choose_subset, public_generator

    def expected(contributions: tuple[int, ...]) -> tuple[int, ...]:
        return choose_subset(public_generator(sum(contributions) % FIELD_PRIME), len(contributions), 2)

    first, second = (11, 22, 33), (11, 22, 35)
    assert expected(first) == (1, 2) and expected(second) == (0, 1)
    a = _run_with_contributions(first, 5, tmp_path / "a.json")
    b = _run_with_contributions(first, 6, tmp_path / "b.json")
    c = _run_with_contributions(second, 5, tmp_path / "c.json")
    assert _z(a) == _z(b) == expected(first)  # --seed changed, contributions not: the same Z
    assert _z(c) == expected(second)  # --seed kept, contributions changed: Z follows them
    assert (a["seed"], b["seed"], c["seed"]) == (5, 6, 5)
    assert all(r["delegates_drawn_from"] == DRAWN_FROM for r in (a, b, c))
