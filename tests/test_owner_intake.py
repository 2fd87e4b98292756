"""Servers' intake of owners' uploads (issue 24, parts 2 and 3): the histogram from DPF keys after the one-hot
check, the value columns after the degree and grid checks, malicious uploads rejected and counted.
One -M3 run; the pure checks in this process."""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from secure import categorical, numeric
from secure.fss.dpf import MODULUS, DpfKeys, gen, header
from secure.owners import Campaign, FolderTransport, generate_server_key, pack, seal, simulate_owners, split, submit
from secure.owners.intake import _grid, on_degree

ROOT = Path(__file__).resolve().parents[1]


def _join(*batches: DpfKeys) -> DpfKeys:
    """One batch of the keys of ``batches`` (one server and width), in order, through their serialized records."""
    count = sum(len(batch) for batch in batches)
    return DpfKeys.from_bytes(header(batches[0].server, batches[0].bits, count)
                              + b"".join(batch.to_bytes()[16:] for batch in batches))


def _with_leaf(keys: DpfKeys, changes: dict[int, int]) -> DpfKeys:
    """``keys`` (one key) with ``delta`` added mod q to leaf correction word ``j`` for each ``j: delta``."""
    leaf = keys.leaf_cw.copy()
    for j, delta in changes.items():
        leaf[0, j] = (int(leaf[0, j]) + delta) % MODULUS
    return DpfKeys(keys.server, keys.bits, keys.seeds, keys.seed_cw, keys.control_cw, leaf)


def _post(campaign: Campaign, transport: FolderTransport, values: list[list[int]], *,
          keys: tuple[DpfKeys, DpfKeys] | None = None, cells: list[int] | None = None, skew: bool = False) -> str:
    """One owner's records from grid integers ``values`` (rows, columns), honestly shared unless ``skew`` (server
    2's first share minus 4: degree 2, yet every two servers' shares give a grid value, ``v + 2`` or ``v + 8`` for
    step 2); its DPF keys ``keys``, else honest keys at ``cells``."""
    token = secrets.token_hex(16)
    shares = split(campaign, np.array([values], dtype=object))
    if skew:
        shares[2, 0, 0, 0] = (shares[2, 0, 0, 0] - 4) % campaign.prime
    assert campaign.dpf_bits is not None
    pair = keys or gen(np.array(cells or campaign.cells(np.array(values)), dtype=np.int64), bits=campaign.dpf_bits)
    for server in range(campaign.servers):
        extra = [pair[server].to_bytes()] if server < 2 else None
        transport.post(server, seal(campaign, server, token, pack(campaign, shares[server], extra)[0]))
    return token


def test_degree_check_at_consecutive_points() -> None:
    prime = 2 ** 61 - 1
    for servers, threshold in ((3, 1), (5, 2), (7, 2)):
        campaign_points = np.array([[sum(c * x ** d for d, c in enumerate(coefficients)) % prime
                                     for coefficients in ([5, 7, 9][:threshold + 1], [prime - 1, 3, 1][:threshold + 1])]
                                    for x in range(1, servers + 1)], dtype=object)
        assert on_degree(campaign_points, threshold, prime).all()
        for server in range(servers):  # one server's share off: never on the polynomial
            bad = campaign_points.copy()
            bad[server, 1] += 1
            assert on_degree(bad, threshold, prime).tolist() == [True, False]


def test_grid_of_each_column_kind() -> None:
    assert _grid(numeric("x", lower=0, upper=14, step=2)) == (2, 7)   # v = 2k, k in [0, 7]
    assert _grid(numeric("x", lower=0, upper=3, bits=2)) == (1, 12)    # quarters: [0, 12]
    assert _grid(categorical("y", categories=["a", "b", "c"])) == (1, 2)
    assert _grid(numeric("x", lower=0, upper=3, step=1.5)) == (1, 3)   # rint(1.5 k): not evenly spaced, range only


@pytest.mark.multiparty
def test_servers_count_honest_owners_and_reject_malicious_uploads(tmp_path: Path) -> None:
    public = [generate_server_key(server, tmp_path / "keys")[1].read_text().strip() for server in range(3)]
    campaign = Campaign.create(public_keys=public, threshold=1, deadline="2100-01-01T00:00:00Z", rows_per_owner=2,
                               columns=[numeric("x", lower=0, upper=14, step=2),
                                        categorical("y", categories=["a", "b", "c"])], dpf=True)
    campaign.save(tmp_path / "campaign.json")
    assert campaign.dpf_bits == 5  # 8 x 3 = 24 cells of 32: a key may point past the grid
    transport = FolderTransport(str(tmp_path / "inbox/server{pid}"))
    generator = np.random.default_rng(5)
    x, y = generator.choice(np.arange(0, 15, 2), (12, 2)), generator.choice(["a", "b", "c"], (12, 2))
    tokens, _ = simulate_owners(campaign, {"x": x, "y": y}, transport)
    grid = campaign.grid_values({"x": x.reshape(-1), "y": y.reshape(-1)}).reshape(12, 2, 2)
    rows = {token: grid[o].tolist() for o, token in enumerate(tokens)}
    for row in ({"x": 4, "y": "b"}, {"x": 14, "y": "c"}):
        rows[submit(campaign, [row], transport)[0]] = campaign.grid_values({k: [v] for k, v in row.items()}).tolist()
    cells = {token: campaign.cells(np.array(values)).tolist() for token, values in rows.items()}
    past = _post(campaign, transport, [[14, 2]], cells=[30])  # an honest row, its key past the grid: last cell
    rows[past], cells[past] = [[14, 2]], [23]
    bits, one = campaign.dpf_bits, gen(np.array([9]), bits=5)
    two_rows = gen(np.array([3, 4]), bits=bits)
    noise = np.frombuffer(secrets.token_bytes(8 * 8), dtype=np.uint64)
    random_key = DpfKeys(1, bits, noise[:2].reshape(1, 2).copy(), noise[2:6].reshape(1, 2, 2).copy(),
                         np.ones((1, 2, 2), dtype=np.uint8), noise[6:7].reshape(1, 1).repeat(8, 1) % np.uint64(MODULUS))
    bad_keys = [gen(np.array([9]), bits=bits, betas=[2]),                            # value 2
                (_with_leaf(one[0], {0: 1}), _with_leaf(one[1], {0: 1})),          # two-hot (sum 0 or 2)
                (_with_leaf(one[0], {2: 1, 3: -1}), _with_leaf(one[1], {2: 1, 3: -1})),  # sum 1, not one-hot
                (two_rows[0], _join(two_rows[1][0], random_key))]   # second row's key random
    refused_keys = [_post(campaign, transport, [[2, 0]] * len(pair[0]), keys=pair) for pair in bad_keys]
    bad_values = {_post(campaign, transport, [[2, 0]], skew=True): [3],              # degree above t
                  _post(campaign, transport, [[16, 1]], cells=[5]): [5],            # above the grid
                  _post(campaign, transport, [[3, 1]], cells=[5]): [5],             # off the step
                  _post(campaign, transport, [[-2, 1]], cells=[5]): [5],            # below the grid
                  _post(campaign, transport, [[6, 3]], cells=[5]): [5]}             # no such category
    run = subprocess.run([sys.executable, str(ROOT / "tests/programs/owner_intake.py"), "--dir", str(tmp_path),
                          "-M3", "--no-log"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert len(result["closed"]) == len(rows) + len(refused_keys) + len(bad_values)
    assert result["histogram_rejected"] == dict.fromkeys(refused_keys, "one-hot")  # token -> the check failed
    assert not set(refused_keys) & set(result["histogram_tokens"])
    assert sorted([*rows, *bad_values]) == result["histogram_tokens"]
    counted = [cell for token in result["histogram_tokens"] for cell in {**cells, **bad_values}[token]]
    assert result["histogram"] == np.bincount(counted, minlength=24).reshape(8, 3).tolist()
    skewed = next(iter(bad_values))
    assert result["columns_rejected"] == {token: "degree" if token == skewed else "grid" for token in bad_values}
    assert result["every_server_rejected"] == [[result["histogram_rejected"], result["columns_rejected"]]] * 3
    accepted = [row for token in sorted(rows) for row in rows[token]]
    assert result["columns"] == {"x": [row[0] for row in accepted], "y": [row[1] for row in accepted]}
