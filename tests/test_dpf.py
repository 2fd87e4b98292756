"""secure.fss.dpf: shares add up to beta [x == alpha] mod q, key files refuse malformed input, and the one-hot
check accepts honest keys and rejects beta = 2, two-hot and random keys (pure functions and one -M3 run)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, free_base_port, run_command
from secure.fss import dpf
from secure.fss.dpf import MODULUS, DpfKeys, Sketch, header

Q = np.uint64(MODULUS)
SEED = bytes(range(32))


def _both_sums(keys: tuple[DpfKeys, DpfKeys]) -> np.ndarray:
    return (dpf.full_domain_sum(keys[0]) + dpf.full_domain_sum(keys[1])) % Q


@pytest.mark.parametrize("bits", range(1, 17))
def test_one_key_is_beta_at_alpha_and_zero_elsewhere(bits: int) -> None:
    generator = np.random.default_rng(bits)
    alpha, beta = int(generator.integers(0, 1 << bits)), int(generator.integers(1, MODULUS))
    expected = np.zeros(1 << bits, dtype=np.uint64)
    expected[alpha] = beta
    assert np.array_equal(_both_sums(dpf.gen([alpha], bits=bits, betas=[beta])), expected)


@pytest.mark.parametrize("bits", [1, 3, 4, 9, 14])
def test_a_thousand_keys_sum_to_the_weighted_histogram(bits: int) -> None:
    generator = np.random.default_rng(100 + bits)
    alphas = generator.integers(0, 1 << bits, 1000)
    betas = generator.integers(-5, 6, 1000)  # negative betas are q - |beta|
    expected = np.bincount(alphas, weights=betas, minlength=1 << bits).astype(np.int64) % MODULUS
    keys = dpf.gen(alphas, bits=bits, betas=betas)
    assert np.array_equal(_both_sums(keys), expected.astype(np.uint64))
    sums = [dpf.evaluate(k, seed=SEED)[0] for k in keys]
    assert np.array_equal((sums[0] + sums[1]) % Q, expected.astype(np.uint64))
    assert all(int(s.max()) < MODULUS for s in sums)


def test_each_key_of_a_batch_is_its_own_point() -> None:
    alphas = np.array([0, 5, 5, 63, 17])
    keys = dpf.gen(alphas, bits=6)
    for i, alpha in enumerate(alphas):
        expected = np.zeros(64, dtype=np.uint64)
        expected[alpha] = 1
        assert np.array_equal(_both_sums((keys[0][i], keys[1][i])), expected)
    joined = [_join(k[3:], k[1], k[np.array([2, 0])]) for k in keys]
    assert np.array_equal(_both_sums((joined[0], joined[1])), np.bincount(alphas, minlength=64).astype(np.uint64))
    assert joined[0][np.array([3, 0])].to_bytes() == _join(keys[0][2], keys[0][3]).to_bytes()  # picked in order


def test_well_formed_judges_each_key_alone() -> None:
    data = bytearray(dpf.gen([3, 4, 5], bits=8)[0].to_bytes())
    data[16 + 16 + 16 * 5 + 1] |= 0x80                 # key 0: a padding bit (5 levels: 10 control bits, 6 padding)
    data[16 + 2 * dpf.key_bytes(8) - 1] = 0xFF         # key 1: its last leaf word's top byte, the word >= 2^63 > q
    records = np.frombuffer(bytes(data), dtype=np.uint8, offset=16).reshape(3, -1)
    assert dpf.well_formed(8, records).tolist() == [False, False, True]


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 10, 14, 21])
def test_serialized_size_and_round_trip(bits: int) -> None:
    keys = dpf.gen([0, (1 << bits) - 1, 1], bits=bits)
    for key in keys:
        data = key.to_bytes()
        assert len(data) == 16 + 3 * dpf.key_bytes(bits)
        again = DpfKeys.from_bytes(data)
        assert again.to_bytes() == data and again.server == key.server and len(again) == 3
    depth = bits - min(bits, 3)
    assert dpf.key_bytes(bits) == 16 + 16 * depth + (2 * depth + 7) // 8 + 8 * 2 ** min(bits, 3)


def _refusals() -> list[tuple[str, object]]:
    data = bytearray(dpf.gen([3, 4], bits=8)[1].to_bytes())
    wrong = {"truncated": bytes(data[:-1]), "header only, short": bytes(data[:10]),
             "trailing bytes": bytes(data) + b"\0", "wrong magic": b"DCFK" + bytes(data[4:]),
             "wrong version": bytes(data[:4]) + b"\x09" + bytes(data[5:]),
             "wrong server": bytes(data[:5]) + b"\x02" + bytes(data[6:]),
             "bits 0": bytes(data[:6]) + b"\x00" + bytes(data[7:]),
             "bits 22": bytes(data[:6]) + b"\x16" + bytes(data[7:]),
             "count too large": bytes(data[:8]) + (3).to_bytes(8, "little") + bytes(data[16:])}
    leaf = bytearray(data)
    leaf[-8:] = (2**64 - 1).to_bytes(8, "little")      # a leaf correction outside Z_q
    padding = bytearray(data)
    padding[16 + 16 + 16 * 5 + 1] |= 0x80               # bits 8 = 5 levels: 10 control bits, 6 padding
    return [*wrong.items(), ("leaf word >= q", bytes(leaf)), ("padding bit", bytes(padding)), ("not bytes", "x")]


@pytest.mark.parametrize("case, data", _refusals())
def test_from_bytes_refuses_malformed_input_with_value_error(case: str, data: object) -> None:
    with pytest.raises(ValueError, match="DPF keys"):
        DpfKeys.from_bytes(data)  # type: ignore[arg-type]


def test_gen_refuses_bad_arguments() -> None:
    for alphas, bits in (([4], 2), ([-1], 4), ([1.5], 4), ([1], 0), ([1], 22)):
        with pytest.raises(ValueError):
            dpf.gen(alphas, bits=bits)
    with pytest.raises(ValueError, match="betas"):
        dpf.gen([1, 2], bits=4, betas=[1])


def _add(*sketches: Sketch, minus: Sketch | None = None) -> Sketch:
    """The sketch of the sum of the keys' outputs (the sketch is linear in y)."""
    def total(name: str) -> np.ndarray:
        value = sum(getattr(s, name).astype(object) for s in sketches)
        if minus is not None:
            value = value - getattr(minus, name).astype(object)
        return (value % MODULUS).astype(np.uint64)
    return Sketch(total("sigma"), total("z"), total("w"))


def _join(*batches: DpfKeys) -> DpfKeys:
    """One batch of the keys of ``batches`` (one server and width), in order, through their serialized records."""
    count = sum(len(batch) for batch in batches)
    return DpfKeys.from_bytes(header(batches[0].server, batches[0].bits, count)
                              + b"".join(batch.to_bytes()[16:] for batch in batches))


def _random_keys(count: int, bits: int, server: int, generator: np.random.Generator) -> DpfKeys:
    depth = bits - min(bits, 3)
    def words(*shape: int) -> np.ndarray:
        return generator.integers(0, 2**63, shape, dtype=np.uint64)
    return DpfKeys(server, bits, words(count, 2), words(count, depth, 2),
                   generator.integers(0, 2, (count, depth, 2), dtype=np.uint8), words(count, 8) % Q)


def _verdicts(sketches: tuple[Sketch, Sketch], betas: int = 1) -> np.ndarray:
    squares = dpf.deal_squares(len(sketches[0].z))
    e = (dpf.masked_z(sketches[0], squares[0]), dpf.masked_z(sketches[1], squares[1]))
    d = [dpf.check_share(sketches[s], squares[s], e, server=s, betas=betas) for s in (0, 1)]
    return dpf.one_hot_ok((sketches[0].sigma, sketches[1].sigma), (d[0], d[1]), betas=betas)


def _sketches(keys: tuple[DpfKeys, DpfKeys]) -> tuple[Sketch, Sketch]:
    return dpf.evaluate(keys[0], seed=SEED)[1], dpf.evaluate(keys[1], seed=SEED)[1]


def test_honest_keys_pass_and_malicious_ones_fail_the_one_hot_check() -> None:
    generator = np.random.default_rng(5)
    bits = 10
    honest = _sketches(dpf.gen(generator.integers(0, 1 << bits, 200), bits=bits))
    assert _verdicts(honest).all()
    weighted = _sketches(dpf.gen(generator.integers(0, 1 << bits, 50), bits=bits, betas=np.full(50, 7)))
    assert _verdicts(weighted, betas=7).all()
    assert not _verdicts(weighted).any()                     # declared 1, holds 7
    doubled = _sketches(dpf.gen(generator.integers(0, 1 << bits, 50), bits=bits, betas=np.full(50, 2)))
    assert not _verdicts(doubled).any()
    first = generator.integers(0, 1 << bits, 50)                  # three distinct cells per key
    a, b, c = (_sketches(dpf.gen((first + shift) % (1 << bits), bits=bits)) for shift in range(3))
    two_hot = (_add(a[0], b[0]), _add(a[1], b[1]))
    assert not _verdicts(two_hot).any()
    assert not _verdicts(two_hot, betas=2).any()             # sum right, but not 2 e_alpha
    # sum 1 but three cells: only the quadratic test can catch it
    three = (_add(a[0], b[0], minus=c[0]), _add(a[1], b[1], minus=c[1]))
    sigma = (three[0].sigma.astype(object) + three[1].sigma.astype(object)) % MODULUS
    assert (sigma == 1).all()
    assert not _verdicts(three).any()
    garbage = _sketches((_random_keys(50, bits, 0, generator), _random_keys(50, bits, 1, generator)))
    assert not _verdicts(garbage).any()


def test_masked_z_is_z_minus_the_dealt_a() -> None:
    sketches = _sketches(dpf.gen([1, 2, 3], bits=4))
    squares = dpf.deal_squares(3)
    z = (sketches[0].z.astype(object) + sketches[1].z.astype(object)) % MODULUS
    a = (squares[0].a.astype(object) + squares[1].a.astype(object)) % MODULUS
    c = (squares[0].c.astype(object) + squares[1].c.astype(object)) % MODULUS
    assert list(c) == [x * x % MODULUS for x in a]
    e = [dpf.masked_z(sketches[s], squares[s]).astype(object) for s in (0, 1)]
    assert list((e[0] + e[1]) % MODULUS) == list((z - a) % MODULUS)


@pytest.mark.multiparty
def test_three_parties_check_one_hot(tmp_path: Path) -> None:
    generator = np.random.default_rng(11)
    bits, pairs = 9, 2
    honest = dpf.gen(generator.integers(0, 1 << bits, 4), bits=bits)
    doubled = dpf.gen(generator.integers(0, 1 << bits, 3), bits=bits, betas=[2, 2, 2])
    halves = dpf.gen([3, 4, 100, 200], bits=bits)                  # two two-hot keys: 3+4 and 100+200
    for server in (0, 1):
        batch = _join(honest[server], doubled[server], _random_keys(3, bits, server, generator), halves[server])
        (tmp_path / f"server{server}.bin").write_bytes(batch.to_bytes())
    program = ROOT / "tests" / "programs" / "dpf_one_hot.py"
    run = run_command([sys.executable, str(program), "-M3", "-B", str(free_base_port()), "--no-log", str(tmp_path),
                       "12", str(pairs)])
    assert run.code == 0, run.stderr
    verdicts = json.loads(run.stdout.strip().splitlines()[-1])
    assert verdicts == [[True] * 4 + [False] * 8] * 3
