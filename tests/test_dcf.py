"""The distributed comparison function of :mod:`secure.fss.dcf` (issue 14, item 1).

Correctness is checked exhaustively on small domains (every alpha in ``[0, 2^bits]`` and every x, widths
1 to 8, through both the full-domain expansion and :func:`evaluate`) and on random points at 32 bits; the
two servers' shares must add up modulo 2^64 to ``beta [x < alpha]``.  The alphas and points of the tests
come from fixed seeds; the keys always come from OS randomness, so the statistical test below is written
to hold for *every* draw of keys with probability at least ``1 - 1e-6``.

One key alone does not depend on alpha (a statistical test).  For a width of 3 bits we draw ``n`` keys
for each of two alphas (and betas) and compare, for each server on its own, the two samples of
serialized key records:

- every bit position's frequency of ones, and every pair of positions' frequency of ``bit_i xor bit_j``
  (this sees linear leaks that leave each bit uniform, e.g. a control bit doubling as a seed bit):
  under the null hypothesis (the key's distribution does not depend on alpha) the difference ``D`` of the
  two counts is a sum of ``2n`` independent terms in ``[0, 1]`` or ``[-1, 0]`` with mean 0, so by Hoeffding
  ``P(|D| >= u) <= 2 exp(-u^2 / n)``;
- every byte position's distribution over the 256 values, by the L1 distance ``T`` of the two empirical
  distributions: changing one record moves ``T`` by at most ``2/n``, so by McDiarmid
  ``P(T >= E T + u) <= exp(-n u^2 / 4)``, and ``E T <= sum_k sqrt(2 p_k (1 - p_k) / n) <= sqrt(2 * 256 / n)``
  (Cauchy-Schwarz).

Each threshold is set at the level ``1e-6 / (number of statistics)`` (Bonferroni over positions, pairs,
bytes, servers and the two comparisons), so a correct DCF fails this test with probability below 1e-6
whatever the keys drawn; a key that leaks an alpha bit (difference of frequency 1) is far above every
threshold (``test_leak_detector_sees_a_leak`` checks that the detector is not blind).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import run_command, scenario_command
from secure.fss import dcf
from secure.fss.dcf import DcfKeys, evaluate, full_domain_sum, gen

MASK64 = (1 << 64) - 1


def _expected(alphas: np.ndarray, xs: np.ndarray, beta: int | np.ndarray) -> np.ndarray:
    """``beta [x < alpha]`` modulo 2^64 as a (len(alphas), len(xs)) uint64 table."""
    betas = np.broadcast_to(np.asarray(beta, dtype=object) % (1 << 64), alphas.shape).astype(np.uint64)
    return np.where(xs[None, :] < alphas[:, None], betas[:, None], np.uint64(0))


@pytest.mark.parametrize("bits", range(1, 9))
def test_every_alpha_and_every_x_on_small_domains(bits: int) -> None:
    size = 1 << bits
    alphas, xs = np.arange(size + 1), np.arange(size)
    keys = gen(alphas, bits)
    expected = _expected(alphas, xs, 1)
    assert keys[0].server == 0 and keys[1].server == 1 and keys[0].count == size + 1 and keys[0].bits == bits
    assert np.array_equal(evaluate(keys[0], xs) + evaluate(keys[1], xs), expected)
    assert np.array_equal(full_domain_sum(keys[0]) + full_domain_sum(keys[1]), expected.sum(axis=0, dtype=np.uint64))


def test_random_points_at_32_bits() -> None:
    bits, top = 32, 1 << 32
    generator = np.random.default_rng(1401)
    alphas = np.concatenate([[0, 1, 2, top - 2, top - 1, top], generator.integers(0, top + 1, size=58)])
    near = np.concatenate([alphas - 1, alphas, alphas + 1])
    xs = np.unique(np.concatenate([near[(near >= 0) & (near < top)], [0, top - 1],
                                   generator.integers(0, top, size=40)]))
    beta = 0x9E3779B97F4A7C15
    k0, k1 = gen(alphas, bits, beta=beta)
    assert np.array_equal(evaluate(k0, xs) + evaluate(k1, xs), _expected(alphas, xs, beta))


@pytest.mark.parametrize("beta", [MASK64, -1, (1 << 63) + 12345, 0, 7])
def test_other_betas(beta: int) -> None:
    bits = 6
    alphas, xs = np.arange((1 << bits) + 1), np.arange(1 << bits)
    k0, k1 = gen(alphas, bits, beta=beta)
    assert np.array_equal(evaluate(k0, xs) + evaluate(k1, xs), _expected(alphas, xs, beta))


def test_one_beta_per_key() -> None:
    bits = 5
    generator = np.random.default_rng(1402)
    alphas = generator.integers(0, (1 << bits) + 1, size=40)
    betas = generator.integers(-(1 << 62), 1 << 62, size=40)
    k0, k1 = gen(alphas, bits, beta=betas)
    xs = np.arange(1 << bits)
    expected = np.where(xs[None, :] < alphas[:, None], betas.astype(np.uint64)[:, None], np.uint64(0))
    assert np.array_equal(evaluate(k0, xs) + evaluate(k1, xs), expected)


def test_full_domain_sum_is_the_summed_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Across chunk boundaries too (tiny chunks: 4 keys per full-domain chunk, 2 per evaluate chunk)."""
    bits = 7
    generator = np.random.default_rng(1403)
    alphas = generator.integers(0, (1 << bits) + 1, size=301)
    keys = gen(alphas, bits, beta=-1)
    xs = np.arange(1 << bits)
    whole = [full_domain_sum(k) for k in keys]
    monkeypatch.setattr(dcf, "FULL_DOMAIN_CHUNK_LEAVES", 4 << bits)
    monkeypatch.setattr(dcf, "EVALUATE_CHUNK_PAIRS", 2 << bits)
    for key, total in zip(keys, whole):
        evaluated = evaluate(key, xs)
        assert np.array_equal(full_domain_sum(key), total)
        assert np.array_equal(evaluated.sum(axis=0, dtype=np.uint64), total)
    counts = np.array([(alphas > x).sum() for x in xs], dtype=np.uint64)
    assert np.array_equal(whole[0] + whole[1], np.uint64(0) - counts)  # beta = -1


def test_keys_are_fresh_and_one_share_looks_random() -> None:
    """Two draws for the same alpha share no root seed; one server's share alone is not the function."""
    a0, a1 = gen(np.zeros(64, dtype=np.int64), 8)
    b0, _ = gen(np.zeros(64, dtype=np.int64), 8)
    assert not np.any(np.all(a0.seeds == b0.seeds, axis=1))
    xs = np.arange(1 << 8)
    shares = evaluate(a0, xs)  # the function is 0 everywhere; a share is pseudorandom
    assert np.count_nonzero(shares) >= shares.size - 4  # P(a given uint64 share is 0) = 2^-64
    assert np.array_equal(shares + evaluate(a1, xs), np.zeros_like(shares))


def test_serialization_round_trip_and_size() -> None:
    for bits in (1, 3, 10, 32):
        alphas = np.random.default_rng(bits).integers(0, (1 << bits) + 1, size=9)
        for key in gen(alphas, bits, beta=-5):
            data = key.to_bytes()
            assert len(data) == 16 + key.count * key.nbytes_per_key
            assert key.nbytes_per_key == 16 + 24 * bits + math.ceil(2 * bits / 8) + 8
            assert 8 * key.nbytes_per_key - dcf.key_bits(bits) == 8 * math.ceil(2 * bits / 8) - 2 * bits
            back = DcfKeys.from_bytes(data, server=key.server, bits=bits)
            for name in ("seeds", "seed_cw", "value_cw", "control_cw", "leaf_cw"):
                assert np.array_equal(getattr(back, name), getattr(key, name)), name
            assert back.server == key.server and back.bits == bits
            xs = np.array([0, alphas[0] % (1 << bits), (1 << bits) - 1])
            assert np.array_equal(evaluate(back, xs), evaluate(key, xs))
    empty = gen(np.array([], dtype=np.int64), 4)[1]
    assert DcfKeys.from_bytes(empty.to_bytes()).count == 0


def test_from_bytes_refusals() -> None:
    key = gen(np.array([3, 1]), 3)[1]
    data = key.to_bytes()
    DcfKeys.from_bytes(data)

    def refused(blob: bytes, match: str, **expect: int) -> None:
        with pytest.raises(ValueError, match=match):
            DcfKeys.from_bytes(blob, **expect)

    refused(data[:-1], "bytes, but 2 keys")
    refused(data + b"\0", "bytes, but 2 keys")
    refused(data[:10], "shorter than the 16-byte header")
    refused(b"XXXX" + data[4:], "wrong magic")
    refused(data[:4] + bytes([2]) + data[5:], "format version 2")
    refused(data[:5] + bytes([7]) + data[6:], "server 7")
    refused(data, "server 1's keys, expected server 0's", server=0)
    refused(data, "width 3 bits, expected 4", bits=4)
    refused(data[:6] + bytes([0]) + data[7:], "outside")
    padding = bytearray(data)
    padding[16 + key.nbytes_per_key - 9] |= 0x80  # the control byte's unused top bit (3 levels use 6 bits)
    refused(bytes(padding), "padding")


def test_selection_and_concatenation() -> None:
    alphas = np.arange(10)
    k0, k1 = gen(alphas, 4)
    xs = np.arange(16)
    full = evaluate(k0, xs)
    assert np.array_equal(evaluate(k0[2:5], xs), full[2:5])
    assert np.array_equal(evaluate(k0[-1], xs), full[-1:])
    assert np.array_equal(evaluate(k0[np.array([7, 1])], xs), full[[7, 1]])
    joined = DcfKeys.concatenate([k0[:3], k0[3:]])
    assert len(joined) == 10 and joined.to_bytes() == k0.to_bytes()
    with pytest.raises(ValueError, match="server"):
        DcfKeys.concatenate([k0, k1])
    with pytest.raises(ValueError, match="bits"):
        DcfKeys.concatenate([k0, gen(alphas, 5)[0]])
    with pytest.raises(ValueError, match="no DCF key"):
        DcfKeys.concatenate([])
    with pytest.raises(IndexError):
        k0[10]
    assert not k0.seeds.flags.writeable
    with pytest.raises(ValueError, match="shape"):
        DcfKeys(0, 4, k0.seeds, k0.seed_cw[:, :3], k0.value_cw, k0.control_cw, k0.leaf_cw)


def test_bad_arguments_are_refused() -> None:
    for bits in (0, 33, -1):
        with pytest.raises(ValueError, match=r"between 1 and 32 bits"):
            gen([0], bits)
    for bits_value in (True, 3.0, "8"):
        with pytest.raises(ValueError, match="integer number of bits"):
            gen([0], bits_value)  # type: ignore[arg-type]
    for alphas in ([-1], [17], [0.5], [[1, 2]]):
        with pytest.raises(ValueError, match="alphas"):
            gen(alphas, 4)
    with pytest.raises(ValueError, match="beta"):
        gen([1, 2], 4, beta=[1, 2, 3])
    k0, _ = gen([1, 2], 4)
    for xs in ([16], [-1], [1.0]):
        with pytest.raises(ValueError, match="xs"):
            evaluate(k0, xs)
    wide, _ = gen([5], dcf.MAX_FULL_DOMAIN_BITS + 1)
    with pytest.raises(ValueError, match="full-domain evaluation holds"):
        full_domain_sum(wide)


# ---------------------------------------------------------------------------- one key does not show alpha

FALSE_ALARM = 1e-6


def _records(keys: DcfKeys) -> np.ndarray:
    """The serialized key records, one row of bytes per key (header dropped)."""
    return np.frombuffer(keys.to_bytes()[16:], dtype=np.uint8).reshape(keys.count, keys.nbytes_per_key)


def _statistics(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """|count differences| of every bit and every pair's xor, and every byte's L1 distance (module docstring)."""
    bits_a = np.unpackbits(first, axis=1).astype(np.float32)
    bits_b = np.unpackbits(second, axis=1).astype(np.float32)
    ones_a, ones_b = bits_a.sum(axis=0), bits_b.sum(axis=0)
    both_a, both_b = bits_a.T @ bits_a, bits_b.T @ bits_b  # exact: integer counts below 2^24
    xor_a = ones_a[:, None] + ones_a[None, :] - 2 * both_a
    xor_b = ones_b[:, None] + ones_b[None, :] - 2 * both_b
    upper = np.triu_indices(bits_a.shape[1], k=1)
    n = first.shape[0]
    distances = np.array([np.abs(np.bincount(first[:, j], minlength=256) - np.bincount(second[:, j], minlength=256)
                                 ).sum() / n for j in range(first.shape[1])])
    return np.abs(ones_a - ones_b), np.abs(xor_a - xor_b)[upper], distances


def _thresholds(n: int, level: float) -> tuple[float, float]:
    """Hoeffding threshold of a count difference and McDiarmid threshold of a byte's L1 distance at ``level``."""
    count = math.sqrt(n * math.log(2 / level))
    distance = math.sqrt(2 * 256 / n) + math.sqrt(4 * math.log(1 / level) / n)
    return count, distance


def _leaks(first: np.ndarray, second: np.ndarray, tests: int) -> list[str]:
    """The statistics over their thresholds, at ``FALSE_ALARM / tests`` each."""
    count_limit, distance_limit = _thresholds(first.shape[0], FALSE_ALARM / tests)
    ones, xors, distances = _statistics(first, second)
    found = [f"bit {i}: {d:.0f} > {count_limit:.0f}" for i, d in enumerate(ones) if d >= count_limit]
    found += [f"{np.count_nonzero(xors >= count_limit)} pairs' xor over {count_limit:.0f} (max {xors.max():.0f})"] \
        if np.any(xors >= count_limit) else []
    found += [f"byte {j}: L1 {d:.3f} > {distance_limit:.3f}" for j, d in enumerate(distances) if d >= distance_limit]
    return found


def _number_of_statistics(record_bytes: int) -> int:
    positions = 8 * record_bytes
    return positions + positions * (positions - 1) // 2 + record_bytes


def test_one_key_alone_does_not_depend_on_alpha() -> None:
    bits, n = 3, 8000
    top = 1 << bits
    comparisons = [((0, 1), (top - 1, 1)), ((2, 1), (top, (1 << 63) + 12345))]
    record_bytes = gen([0], bits)[0].nbytes_per_key
    tests = 2 * len(comparisons) * _number_of_statistics(record_bytes)
    for (alpha_a, beta_a), (alpha_b, beta_b) in comparisons:
        keys_a = gen(np.full(n, alpha_a), bits, beta=beta_a)
        keys_b = gen(np.full(n, alpha_b), bits, beta=beta_b)
        for server in (0, 1):
            leaks = _leaks(_records(keys_a[server]), _records(keys_b[server]), tests)
            assert not leaks, f"server {server}, alpha {alpha_a} vs {alpha_b}: {leaks}"


def test_leak_detector_sees_a_leak() -> None:
    """The same detector flags records that carry an alpha bit, plainly or only in a xor of two bits."""
    bits, n = 3, 8000
    top = 1 << bits
    record_bytes = gen([0], bits)[0].nbytes_per_key
    tests = 4 * _number_of_statistics(record_bytes)
    first = _records(gen(np.zeros(n, dtype=np.int64), bits)[0]).copy()
    second = _records(gen(np.full(n, top - 1), bits)[0]).copy()
    plain = second.copy()
    plain[:, 5] |= 1  # a bit that is 1 for alpha = top - 1 only
    assert any(line.startswith("bit ") for line in _leaks(first, plain, tests))
    hidden_first, hidden_second = first.copy(), second.copy()  # bit 7 of byte 0 = bit 6 (xor alpha's top bit)
    hidden_first[:, 0] = (hidden_first[:, 0] & 0xFE) | ((hidden_first[:, 0] >> 1) & 1)
    hidden_second[:, 0] = (hidden_second[:, 0] & 0xFE) | (((hidden_second[:, 0] >> 1) & 1) ^ 1)
    found = _leaks(hidden_first, hidden_second, tests)
    assert any("pairs' xor" in line for line in found) and not any(line.startswith("bit ") for line in found), found


# ------------------------------------------------------------------------------------------- benchmark

def test_bench_dcf_quick(tmp_path: Path) -> None:
    from scenarios.bench_dcf import QUICK_BITS, QUICK_ROWS

    out = tmp_path / "dcf.json"
    done = run_command(scenario_command("bench_dcf", "--no-log", "--quick", "--json", str(out)), timeout=120)
    assert done.code == 0, done.stderr[-2000:]
    assert "full domain" in done.stdout and "DCF at bits = 4" in done.stdout
    numbers = json.loads(out.read_text(encoding="utf-8"))
    assert numbers["rows"] == QUICK_ROWS and numbers["lambda"] == 128
    assert [width["bits"] for width in numbers["widths"]] == list(QUICK_BITS)
    for width in numbers["widths"]:
        bits = width["bits"]
        assert width["key_bytes"] == 16 + 24 * bits + math.ceil(2 * bits / 8) + 8
        assert width["key_bits"] == 194 * bits + 192
        assert width["paper_key_bits"] == bits * (128 + math.ceil(math.log2(QUICK_ROWS + 1)))
        assert width["full_domain_keys_expanded"] == QUICK_ROWS
        for name in ("gen_seconds_per_row", "evaluate_seconds_per_point", "full_domain_seconds"):
            assert width[name] > 0
        assert width["peak_rss_bytes"] > 0
