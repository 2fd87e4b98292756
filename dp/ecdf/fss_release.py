r"""A private ECDF answered by two servers from function-secret-shared keys: the owners upload once.

Barczewski, Mawass & Ramon §4.2 with the tree mechanism of §3.1 eq. (2), on the DCF of Boyle, Gilboa &
Ishai (2015) / Boyle et al. (2021) (:mod:`secure.fss.dcf`); parties 0 and 1 are also the two servers.
Threat model: passive servers that do not collude; epsilon-DP against either server with up to ``c - 1``
other owners.  Details: docs/ecdf.md ("The FSS release")."""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from dp.calibration import discrete_laplace_variance
from dp.ecdf.grid import node_count, prefix_positions
from dp.ecdf.secure_release import (MAX_DCF_BITS, EcdfParameters, EcdfRelease, NodeNoiseSource, check_bits,
                                    count_slack)
from dp.ecdf.tree import TreeNoisePlan, plan_tree_noise
from dp.report_text import format_bytes, policy_text, run_costs
from secure.errors import InputError, ProtocolFailure


__all__ = ["MAX_DCF_BITS", "STATE_VERSION", "FssNoisePlan", "FssEcdfRelease", "ServerState", "check_bits",
           "grid_indices", "fss_noise_plan", "split_noise", "server_party", "upload", "server_shares",
           "open_counts", "answer", "store_state", "load_state", "state_digest", "check_same_run", "key_sums",
           "decode", "store_key_path", "KEY_DIR_VARIABLE", "AUTHENTICATION_FAILED", "run_fss_ecdf",
           "resolve_queries", "query_notes"]

#: format version of a stored server directory (2: the tag is keyed by the server's own key outside the store)
STATE_VERSION = 2

#: environment variable naming the directory of the servers' store-authentication keys
KEY_DIR_VARIABLE = "PRIVATE_USTATS_FSS_KEYS"

#: the line shared with the other parties when a stored state fails its check (no path, no value)
AUTHENTICATION_FAILED = "its stored FSS keys failed authentication (modified, or not stored by this server)"

_MASK64 = (1 << 64) - 1


def grid_indices(values: npt.ArrayLike, grid: npt.ArrayLike) -> tuple[np.ndarray, int]:
    """Clip values to ``[tau_1, tau_N]`` and map each to ``k = min{j : tau_j >= x}`` (0-based; docs/ecdf.md);
    returns the int64 indices and the number of values clipped (it stays at the owner)."""
    taus = np.asarray(grid, dtype=np.float64)
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(data)):
        raise ValueError("values must be finite")
    outside = int(np.count_nonzero((data < taus[0]) | (data > taus[-1])))
    clipped = np.clip(data, taus[0], taus[-1])
    return np.searchsorted(taus, clipped, side="left").astype(np.int64), outside


@dataclass(frozen=True)
class FssNoisePlan:
    """The node noise of the FSS release: ``owners`` draw from ``draw`` (shape ``1/(owners - coalition)``),
    calibrated for ``coalition`` of them (docs/ecdf.md)."""

    draw: TreeNoisePlan
    owners: int
    coalition: int

    @property
    def levels(self) -> int:  # L + 1 nodes per count (read by secure_release.count_slack, as alpha)
        return self.draw.levels

    @property
    def variance_factor(self) -> float:
        """``m / (m - c)``: total node variance over one ``DLap(alpha)``; the variance of one released count is
        ``(L + 1) m/(m - c) 2 alpha/(1 - alpha)^2`` (:attr:`point_variance`)."""
        return self.owners / (self.owners - self.coalition)

    @property
    def point_variance(self) -> float:
        return self.levels * self.variance_factor * discrete_laplace_variance(self.alpha)

    @property
    def alpha(self) -> float:  # the per-node DLap(alpha) parameter
        return self.draw.alpha


def fss_noise_plan(*, epsilon: float, points: int, owners: int, threshold: int) -> FssNoisePlan:
    """The calibration of the FSS release for ``owners`` owners and MPyC threshold ``threshold`` (coalition rule:
    docs/ecdf.md); raises ValueError on an invalid parameter (``epsilon must be positive, got 0``)."""
    if owners < 1:
        raise ValueError(f"owners must be at least 1, got {owners}")
    coalition = threshold if threshold >= 1 else min(1, owners - 1)
    if coalition >= owners:
        raise ValueError(f"the coalition covered ({coalition}) must be smaller than the number of owners ({owners})")
    if 2 * coalition < owners:
        draw = plan_tree_noise(epsilon=epsilon, points=points, parties=owners, threshold=coalition)
    else:  # same shape 1/(m - c) without Shamir's honest-majority condition (FSS does not need it)
        draw = plan_tree_noise(epsilon=epsilon, points=points, parties=owners - coalition, threshold=0)
    return FssNoisePlan(draw=draw, owners=owners, coalition=coalition)


def split_noise(draws: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Additive shares mod 2^64 of an int64 noise vector: uint64 ``(r, draws - r)`` with ``r`` uniform (OS)."""
    values = np.asarray(draws, dtype=np.int64)
    mask = np.frombuffer(secrets.token_bytes(8 * values.size), dtype=np.uint64).copy()
    return mask, values.view(np.uint64) - mask


def server_party(server: int, parties: int) -> int:
    """The party that plays server ``server`` (0 or 1): party ``server``, or party 0 when alone."""
    return server if parties > 1 else 0


def _servers(parties: int) -> list[int]:  # the parties playing server 0 and server 1
    return [server_party(0, parties), server_party(1, parties)]


@dataclass
class ServerState:
    """What server ``server`` holds after the upload: public parameters (the same at both servers; docs/ecdf.md),
    its key batches, its node shares."""

    server: int
    public: dict[str, Any]
    keys: list[bytes]
    node_shares: np.ndarray

    @property
    def run_id(self) -> str:  # agreed at upload
        return str(self.public["run_id"])


@dataclass
class FssEcdfRelease(EcdfRelease):
    """The released noisy counts at the queried points (same fields as :class:`EcdfRelease`)."""

    coalition: int = 0
    run_id: str = ""
    bits: int = 0
    key_bytes: int = 0
    mode: str = "upload"
    public: dict[str, Any] = field(default_factory=dict)

    noise_source: ClassVar[str] = "owners"  # each owner's node draws, shared between the two servers at upload
    COVERS: ClassVar[str] = ("DP noise only (noise_std per released point); exact counts of the clipped values, no "
                             "sampling error")
    TITLE = "Private ECDF by function secret sharing (two servers; Barczewski, Mawass & Ramon §4.2)"

    def _rows(self) -> list[tuple[str, str]]:
        from secure.meter import seconds_label

        query, public, (lower, upper) = self.asked, self.public, self.domain()
        upload, asked = (self.phases.get(k, {"seconds": 0.0, "bytes_sent": 0}) for k in ("upload", "answer"))
        if query.answer:
            keys = f"keys of run {self.run_id} loaded from {query.answer}: no owner online, no new noise"
        else:
            keys = "uploaded by every owner once" + (f"; stored by the servers in {query.store}/server0 and /server1"
                                                     if query.store else "")
        return [("column", f"{public['column']}, grid of {len(self.grid)} points on [{lower:g}, {upper:g}] "
                           f"({public['grid_kind']}), {len(self.subset)} queried"),
                ("epsilon", f"{self.epsilon:g} for the whole curve, spent once at upload (tree of {self.levels} levels, "
                            f"noise std {self.point_std:.3g} per point; exact counts, no sampling error)"),
                ("n", f"{self.n} rows"),
                ("missing values", f"as at upload: {public.get('missing')}" if query.answer else policy_text(query.missing)),
                ("owners", f"{self.parties} (servers: parties 0 and 1; noise calibrated for coalitions of "
                           f"{self.coalition} owner(s), a server's own role included)"),
                ("keys", f"DCF of {self.bits} bits, {self.key_bytes} bytes per row; {keys}"), ("run", self.run_id),
                ("upload", "earlier run" if query.answer else
                 f"{upload['seconds']:.2f} {seconds_label()}, {format_bytes(upload['bytes_sent'])} sent"),
                ("query round", f"{asked['seconds']:.2f} {seconds_label()}, {format_bytes(asked['bytes_sent'])} sent by "
                                "the servers"), self._smoothing_row()]

    def table(self) -> str:
        """The text the job prints: the table, the noise line, the quantiles, the answers, the query notes."""
        curve = self.curve
        if self.asked.queries is None and not self.asked.at:
            answers = [f"  answers: all {len(curve.points)} grid points (--curve PATH or --json PATH writes them)"]
        else:
            answers = ["  answers (private ECDF at the queried grid points"
                       + (", smoothed" if curve.smoothed is not None else "") + "):"]
            answers += [f"    F({point:.10g}) = {curve.raw[i]:.4f}"
                        + ("" if curve.smoothed is None else f"  (smoothed {curve.smoothed[i]:.4f})")
                        for i, point in enumerate(curve.points)]
        notes = [f"  {note}" for note in query_notes(self.asked, self.grid)]
        return "\n".join([super().table(), *answers, *notes])

    def record(self) -> dict[str, Any]:
        """The JSON record the job writes (``--json``)."""
        public = self.public
        return {**super().record(), "protocol": "fss", "mode": self.mode, "run_id": self.run_id,
                "column": public["column"], "queries": self.subset.tolist(), "missing": public.get("missing"),
                "fill": public.get("fill", {}), "coalition": self.coalition, "bits": self.bits,
                "key_bytes_per_row": self.key_bytes}

    @property
    def guarantee(self) -> str:
        """Which noise ran and what it guarantees, in one line."""
        spent = (f"epsilon = {self.epsilon:g} for the whole curve, spent once at upload (node noise fixed: later "
                 f"queries spend nothing; {self.levels} nodes per count)")
        if self.parties == 1:
            return spent + "; one party plays both servers: the release is DP, nothing is hidden from that party"
        return (spent + f"; DP against either server together with up to {self.coalition - 1} other owner(s) (each of "
                f"the {self.parties} owners drew node noise of Polya shape 1/{self.parties - self.coalition}); "
                "inputs hidden from one server by FSS (pseudorandom keys, masked noise), not by Shamir")


async def upload(values: npt.ArrayLike, grid: npt.ArrayLike, plan: FssNoisePlan, *, bits: int,
                 extra: dict[str, Any] | None = None, noise_source: NodeNoiseSource | None = None,
                 meter: Any = None) -> tuple[list[ServerState], int]:
    """Every owner uploads its DCF keys and noise shares once: the server states this party holds and the values
    clipped here; InputError when no owner has a row, the same verdict everywhere (docs/ecdf.md)."""
    from mpyc.runtime import mpc

    from secure.intake import exchange_counts
    from secure.fss import dcf
    from secure.meter import CostMeter

    meter = meter if meter is not None else CostMeter()
    taus = np.asarray(grid, dtype=np.float64)
    parties = len(mpc.parties)
    servers = _servers(parties)
    with meter.phase("upload"):
        rows = [int(r) for r in await exchange_counts(int(np.asarray(values).shape[0]))]
        n = sum(rows)
        if n == 0:
            raise InputError("all parties: need at least 1 row over all parties for an ECDF, got 0")
        indices, outside = grid_indices(values, taus)
        draws = np.asarray(noise_source(plan.draw) if noise_source is not None else plan.draw.draw_party(), np.int64)
        if draws.shape != (plan.draw.node_count,):
            raise ValueError(f"node draws must have length {plan.draw.node_count}, got shape {draws.shape}")
        mask, rest = split_noise(draws)
        pair = dcf.gen(indices, bits) if indices.size else None
        key_bytes = 0 if pair is None else int(pair[0].nbytes_per_key)
        payloads = [(None if pair is None else pair[server].to_bytes(), share.tobytes())
                    for server, share in enumerate((mask, rest))]
        received: list[list[Any]] = [list(await mpc.transfer(payloads[server], senders=list(range(parties)),
                                                             receivers=[servers[server]])) for server in (0, 1)]
        key_sizes = [int(size) for size in await mpc.transfer(key_bytes)]
        await _check_uploads(received, rows, servers, bits=bits, nodes=plan.draw.node_count)
        run_id = await mpc.transfer(secrets.token_hex(16) if mpc.pid == servers[0] else None, senders=servers[0])
    public = {"version": STATE_VERSION, "statistic": "ecdf_fss", "grid": [float(t) for t in taus],
              "points": int(taus.shape[0]), "bits": int(bits), "epsilon": float(plan.draw.epsilon), "n": n,
              "rows": rows, "owners": plan.owners, "coalition": plan.coalition, "threshold": int(mpc.threshold),
              "levels": plan.levels, "point_std": math.sqrt(plan.point_variance) / n,
              "key_bytes": max(key_sizes), "run_id": str(run_id), **(extra or {})}
    states = [ServerState(server=server, public=dict(public),
                          keys=[batch for batch, _ in received[server] if batch is not None],
                          node_shares=sum((np.frombuffer(noise, dtype=np.uint64) for _, noise in received[server]),
                                          np.zeros(plan.draw.node_count, dtype=np.uint64)))
              for server in (0, 1) if mpc.pid == servers[server]]
    return states, outside


def _upload_problem(received: Sequence[Any], rows: Sequence[int], server: int, *, bits: int, nodes: int) -> str | None:
    """The first owner whose key batch is not one DCF key per public row, or whose noise shares are not one per
    node, as the line to stop with; or ``None``."""
    from secure.fss import dcf

    for owner, (key_batch, noise) in enumerate(received):
        try:
            count = 0 if key_batch is None else dcf.DcfKeys.from_bytes(key_batch, server=server, bits=bits).count
            shares = len(noise) // 8 if isinstance(noise, bytes) and len(noise) % 8 == 0 else -1
        except (ValueError, TypeError):
            count, shares = -1, -1
        if count != int(rows[owner]):
            return (f"party {owner}: its DCF keys are not one per public row (deviating party); "
                    "nothing is stored or released")
        if shares != nodes:
            return f"party {owner}: its node-noise shares are not one per tree node (deviating party)"
    return None


async def _check_uploads(received: Sequence[Sequence[Any]], rows: Sequence[int], servers: Sequence[int], *,
                         bits: int, nodes: int) -> None:
    """Both servers check every owner's upload against its public row count (opens nothing; docs/ecdf.md);
    raises InputError at every party alike, naming the first deviating owner."""
    from mpyc.runtime import mpc

    from secure.session import mark_stopping

    problems = [_upload_problem(received[index], rows, server, bits=bits, nodes=nodes)
                for index, server in enumerate((0, 1)) if mpc.pid == servers[server]]
    mine = next((problem for problem in problems if problem), None)
    verdicts = [mine] if len(mpc.parties) == 1 else list(await mpc.transfer(mine, senders=sorted(set(servers))))
    failing = next((verdict for verdict in verdicts if verdict), None)
    if failing:
        mark_stopping()
        raise InputError(failing)


def _check_queries(queries: npt.ArrayLike, points: int) -> np.ndarray:
    chosen = np.asarray(queries)
    if chosen.ndim != 1 or chosen.size == 0 or not np.issubdtype(chosen.dtype, np.integer):
        raise ValueError("queries must be a non-empty one-dimensional array of grid indices")
    if chosen.min() < 0 or chosen.max() >= points:
        bad = int(chosen[(chosen < 0) | (chosen >= points)][0])
        raise ValueError(f"query index {bad} is outside the grid (indices 0..{points - 1})")
    return chosen.astype(np.int64)


def key_sums(state: ServerState) -> np.ndarray:
    """``S_b(j)`` for every grid index: the sum over all key batches of this server's DCF shares."""
    from secure.fss import dcf

    points = int(state.public["points"])
    batches = [dcf.DcfKeys.from_bytes(blob, server=state.server, bits=int(state.public["bits"]))
               for blob in state.keys]
    if not batches:
        return np.zeros(points, dtype=np.uint64)
    joined = dcf.DcfKeys.concatenate(batches)
    return np.asarray(dcf.full_domain_sum(joined), dtype=np.uint64)[:points].copy()


def server_shares(state: ServerState, queries: npt.ArrayLike, sums: np.ndarray | None = None) -> np.ndarray:
    """Server ``b``'s additive uint64 shares of the noisy counts at the queried grid indices (docs/ecdf.md);
    ``sums`` is :func:`key_sums` of this state if already computed."""
    points = int(state.public["points"])
    chosen = _check_queries(queries, points)
    totals = key_sums(state) if sums is None else sums
    noise = state.node_shares[prefix_positions(points)[chosen]].sum(axis=1, dtype=np.uint64)
    base = np.uint64(int(state.public["n"]) & _MASK64) if state.server == 0 else np.uint64(0)
    return base - totals[chosen] + noise


def decode(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Add two uint64 share vectors (wrapping) and read the sum as signed 64-bit integers."""
    return (np.asarray(first, dtype=np.uint64) + np.asarray(second, dtype=np.uint64)).view(np.int64)


async def open_counts(states: Sequence[ServerState], queries: npt.ArrayLike, *, slack: int,
                      receivers: Sequence[int] | None = None) -> np.ndarray | None:
    """Both servers open the noisy counts at ``queries``: int64 at the receivers, ``None`` elsewhere;
    ProtocolFailure when a count lies outside ``[-slack, n + slack]``, a share corrupted (docs/ecdf.md)."""
    from mpyc.runtime import mpc

    parties = len(mpc.parties)
    servers = _servers(parties)
    wanted = sorted(set(servers) | set(receivers if receivers is not None else servers))
    mine = {state.server: server_shares(state, queries) for state in states}
    if parties == 1:
        vectors = [mine[0], mine[1]]
    else:
        own = mine.get(mpc.pid)
        sent = await mpc.transfer(None if own is None else own.tobytes(), senders=servers, receivers=wanted)
        if mpc.pid not in wanted:
            return None
        vectors = [np.frombuffer(blob, dtype=np.uint64) for blob in sent]
    counts = decode(vectors[0], vectors[1])
    n = int(states[0].public["n"]) if states else None
    if n is not None and (counts.min() < -slack or counts.max() > n + slack):
        raise ProtocolFailure("an opened count lies outside its possible range: a server's shares are corrupted")
    return counts


async def answer(states: Sequence[ServerState], queries: npt.ArrayLike, *, receivers: Sequence[int] | None = None,
                 meter: Any = None, mode: str = "upload") -> FssEcdfRelease | None:
    """One query round at 0-based grid indices (the servers'); the release (``mode`` recorded) at the receivers
    (default: the two servers), ``None`` elsewhere; ProtocolFailure on an opened count out of range (docs/ecdf.md)."""
    from mpyc.runtime import mpc

    from secure.meter import CostMeter

    meter = meter if meter is not None else CostMeter()
    parties = len(mpc.parties)
    public = await mpc.transfer(states[0].public if states and states[0].server == 0 else None,
                                senders=server_party(0, parties))
    chosen = _check_queries(queries, int(public["points"]))
    plan = fss_noise_plan(epsilon=float(public["epsilon"]), points=int(public["points"]),
                          owners=int(public["owners"]), threshold=int(public["coalition"]))
    with meter.phase("answer"):
        counts = await open_counts(states, chosen, slack=count_slack(plan, len(chosen)), receivers=receivers)
    phases = await meter.totals_over_parties()
    if counts is None:
        return None
    return FssEcdfRelease(grid=np.asarray(public["grid"], dtype=np.float64), subset=chosen, counts=counts,
                          n=int(public["n"]), epsilon=float(public["epsilon"]), parties=int(public["owners"]),
                          threshold=int(public["threshold"]), levels=int(public["levels"]),
                          point_std=float(public["point_std"]), **run_costs(phases),
                          coalition=int(public["coalition"]), run_id=str(public["run_id"]), bits=int(public["bits"]),
                          key_bytes=int(public.get("key_bytes", 0)), mode=mode, public=public)


def state_digest(public: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the public parameters (run identifier included)."""
    return hashlib.sha256(json.dumps(public, sort_keys=True).encode()).hexdigest()


def _tag(mac_key: bytes, server: int, public: dict[str, Any], keys_blob: bytes, noise_blob: bytes) -> str:
    message = json.dumps({"server": server, "public": state_digest(public),
                          "keys": hashlib.sha256(keys_blob).hexdigest(),
                          "noise": hashlib.sha256(noise_blob).hexdigest()}, sort_keys=True).encode()
    return hmac.new(mac_key, message, hashlib.sha256).hexdigest()


def store_key_path(server: int) -> Path:
    """Where server ``server`` keeps the key of its stored states' tags, outside every store
    (``$PRIVATE_USTATS_FSS_KEYS/server{b}.key``, else under ``$XDG_CONFIG_HOME``; docs/ecdf.md)."""
    configured = os.environ.get(KEY_DIR_VARIABLE)
    if configured:
        folder = Path(configured)
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        folder = Path(base) / "private-ustats" / "fss-store-keys"
    return folder / f"server{server}.key"


def _private(path: str, flags: int) -> int:  # the opener of a file only its owner reads (0600 when created)
    return os.open(path, flags, 0o600)


def _server_key(server: int, *, create: bool) -> bytes:
    """Server ``server``'s 32-byte tag key; with ``create`` it is made (0600, OS randomness) if missing.  Raises
    FileNotFoundError (no key, no ``create``), PermissionError (open to others), ValueError (not 32 bytes)."""
    path = store_key_path(server)
    if create:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError), open(path, "xb", opener=_private) as handle:
            handle.write(secrets.token_bytes(32))
    if path.stat().st_mode & 0o077:
        raise PermissionError(f"{path} is accessible to other users (chmod 600 it)")
    key = path.read_bytes()
    if len(key) != 32:
        raise ValueError(f"{path} does not hold a 32-byte key")
    return key


def _write_private(path: Path, data: bytes) -> None:
    with open(path, "wb", opener=_private) as handle:
        handle.write(data)
    os.chmod(path, 0o600)


def _unpack_keys(blob: bytes) -> list[bytes]:
    keys, offset = [], 0
    while offset < len(blob):
        size = int.from_bytes(blob[offset:offset + 8], "big")
        if offset + 8 + size > len(blob):  # a cut length prefix included: it reads as fewer than 8 bytes
            raise ValueError("truncated key file")
        keys.append(blob[offset + 8:offset + 8 + size])
        offset += 8 + size
    return keys


def store_state(state: ServerState, directory: str | Path) -> Path:
    """Write server ``state.server``'s state to ``DIR/server{b}`` (0700; files 0600), tagged with its own key
    (:func:`store_key_path`, never in the store); OSError when the directory or the key cannot be written."""
    folder = Path(directory) / f"server{state.server}"
    try:
        mac_key = _server_key(state.server, create=True)
    except ValueError as exc:
        raise OSError(str(exc)) from None
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    keys_blob = b"".join(len(blob).to_bytes(8, "big") + blob for blob in state.keys)  # read by _unpack_keys
    noise_blob = np.asarray(state.node_shares, dtype=np.uint64).tobytes()
    record = {"public": state.public, "server": state.server,
              "mac": _tag(mac_key, state.server, state.public, keys_blob, noise_blob)}
    (folder / "mac.key").unlink(missing_ok=True)  # a version-1 store kept its tag key inside the store: never again
    _write_private(folder / "keys.bin", keys_blob)
    _write_private(folder / "noise.bin", noise_blob)
    _write_private(folder / "public.json", json.dumps(record, sort_keys=True).encode())
    return folder


def load_state(directory: str | Path, server: int) -> ServerState:
    """Read and authenticate server ``server``'s stored state with the server's own key; InputError, its message
    without a path and the path in ``detail``, on any refusal (docs/ecdf.md)."""
    from secure.fss import dcf

    folder = Path(directory) / f"server{server}"
    try:
        record = json.loads((folder / "public.json").read_text(encoding="utf-8"))
        keys_blob = (folder / "keys.bin").read_bytes()
        noise_blob = (folder / "noise.bin").read_bytes()
    except FileNotFoundError as exc:
        raise InputError(f"no stored FSS keys of server {server} ({Path(exc.filename).name} missing): "
                         "run the upload with --store first", detail=f"looked in {folder}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read its stored FSS keys ({type(exc).__name__})",
                         detail=f"reading {folder}") from None

    def refused(reason: str) -> InputError:
        return InputError(AUTHENTICATION_FAILED, detail=f"the stored keys in {folder}: {reason}")

    try:
        mac_key = _server_key(server, create=False)
    except FileNotFoundError:
        raise refused(f"this server has no tag key ({store_key_path(server)} missing): "
                      "they were not stored by this server") from None
    except (OSError, ValueError) as exc:
        raise refused(str(exc)) from None
    if not isinstance(record, dict) or not isinstance(record.get("public"), dict) or record.get("server") != server:
        raise refused("public.json is not a state of this server")
    public = record["public"]
    expected = _tag(mac_key, server, public, keys_blob, noise_blob)
    if not hmac.compare_digest(expected, str(record.get("mac", ""))):
        old = " (a version-1 store: upload again)" if public.get("version") == 1 else ""
        raise refused(f"the tag does not match this server's key{old}")
    if public.get("version") != STATE_VERSION:
        raise InputError(f"its stored FSS keys have format version {public.get('version')!r}, "
                         f"this program reads {STATE_VERSION}", detail=f"in {folder}")
    try:
        keys = _unpack_keys(keys_blob)
        for blob in keys:
            dcf.DcfKeys.from_bytes(blob, server=server, bits=int(public["bits"]))
        shares = np.frombuffer(noise_blob, dtype=np.uint64).copy()
        if shares.shape[0] != node_count(int(public["points"])):
            raise ValueError("noise shares of another grid")
    except (ValueError, KeyError, TypeError) as exc:
        raise refused(f"authentic but inconsistent content ({exc})") from None
    return ServerState(server=server, public=public, keys=keys, node_shares=shares)


async def check_same_run(states: Sequence[ServerState]) -> None:
    """The two servers compare their run identifiers and parameter digests; every party calls it.  Raises
    InputError at both servers alike when the states come from different runs or disagree on a parameter."""
    from mpyc.runtime import mpc

    parties = len(mpc.parties)
    servers = _servers(parties)
    mine = {state.server: (state.run_id, state_digest(state.public)) for state in states}
    if parties == 1:
        views = [mine.get(0), mine.get(1)]
    else:
        views = list(await mpc.transfer(mine.get(mpc.pid), senders=servers, receivers=servers))
        if mpc.pid not in servers:
            return
    if views[0] is None or views[1] is None:
        raise InputError("both servers need their stored keys")
    if views[0][0] != views[1][0]:
        raise InputError(f"the two servers' stored keys come from different runs (run {views[0][0]} at server 0, "
                         f"run {views[1][0]} at server 1): a key file of another run is refused")
    if views[0][1] != views[1][1]:
        raise InputError(f"the two servers' stored public parameters differ for run {views[0][0]}: "
                         "a key file tampered with is refused")


def _value_positions(values: Sequence[float], grid: np.ndarray) -> list[int]:
    """The 0-based index of the largest grid point ``<= v`` for each value (within ``1e-9`` of the grid's scale);
    ValueError for a value outside ``[tau_1, tau_N]``."""
    tolerance = 1e-9 * max(1.0, float(np.max(np.abs(grid))))
    found = []
    for value in values:
        if not grid[0] - tolerance <= value <= grid[-1] + tolerance:
            raise ValueError(f"query at:{value:g} is outside the grid's domain [{grid[0]:g}, {grid[-1]:g}]")
        found.append(min(max(int(np.searchsorted(grid, value + tolerance, side="right")) - 1, 0), len(grid) - 1))
    return found


def resolve_queries(query: EcdfParameters, grid: np.ndarray) -> np.ndarray:
    """The sorted distinct 0-based grid indices the query asks for: all, ``queries``, or for each value of ``at``
    the largest grid point ``tau_i <= V`` (the ECDF is released on the grid as a step function)."""
    if query.at:
        return np.unique(np.asarray(_value_positions(query.at, grid), dtype=np.int64))
    if query.queries is None:
        return np.arange(len(grid), dtype=np.int64)
    for item in query.queries:
        if not 0 <= item < len(grid):
            raise ValueError(f"query {item} is outside the grid: indices run from 0 to {len(grid) - 1}")
    return np.unique(np.asarray(query.queries, dtype=np.int64))


def query_notes(query: EcdfParameters, grid: np.ndarray) -> list[str]:
    """One line per ``at`` value that is no grid point, naming the grid point that answers it (public)."""
    scale = max(1.0, float(np.max(np.abs(grid))))
    return [f"at:{value:g} answered at the grid point {grid[position]:.10g} (the ECDF is released on the grid: "
            f"F({value:g}) = F({grid[position]:.10g}), its step value there)"
            for value, position in zip(query.at, _value_positions(query.at, grid))
            if abs(grid[position] - value) > 1e-9 * scale]


async def run_fss_ecdf(query: EcdfParameters, values: npt.ArrayLike, *, receivers: Sequence[int] | None = None,
                       noise_source: NodeNoiseSource | None = None) -> FssEcdfRelease | None:
    """Every party: upload (and store) or load the stored keys, then one query round; the release at the receivers
    (default: the two servers), ``None`` elsewhere; InputError as docs/ecdf.md says."""
    from mpyc.runtime import mpc

    from secure.meter import CostMeter
    from secure.session import agree_verdict

    meter = CostMeter()
    parties = len(mpc.parties)
    servers = sorted(set(_servers(parties)))
    if query.answer is not None:
        await agree_verdict(f"--answer runs with the two servers only (-M2), got {parties} parties"
                            if parties > 2 else None)
        error, detail, states = None, None, []
        try:
            states = [load_state(query.answer, server) for server in (0, 1) if server_party(server, parties) == mpc.pid]
        except InputError as exc:  # shared without the store's path; the path is in the local detail
            error, detail = str(exc), exc.detail
        await agree_verdict(error, detail=detail)
        await check_same_run(states)
        grid, mode = np.asarray(states[0].public["grid"], dtype=np.float64), "answer"
    else:
        assert query.lower is not None and query.upper is not None
        grid, mode = query.grid_points(), "upload"
        plan = fss_noise_plan(epsilon=query.epsilon, points=len(grid), owners=parties, threshold=int(mpc.threshold))
        missing = query.missing
        states, _ = await upload(np.clip(np.asarray(values, dtype=float), query.lower, query.upper), grid, plan,
                                 bits=check_bits(len(grid), query.bits), meter=meter, noise_source=noise_source,
                                 extra={"column": query.column, "domain": [query.lower, query.upper],
                                        "grid_kind": query.grid, "missing": missing.mode, "fill": dict(missing.fills)})
        if query.store is not None:
            error = detail = None
            try:
                for state in states:
                    store_state(state, query.store)
            except OSError as exc:  # the path stays at this party (printed locally by agree_verdict)
                error = f"cannot store its FSS keys: {exc.strerror or type(exc).__name__}"
                detail = f"storing in {query.store}: {exc}"
            await agree_verdict(error, detail=detail)
    error, chosen = None, np.zeros(1, dtype=np.int64)
    if mpc.pid in servers:
        try:
            chosen = resolve_queries(query, grid)
        except ValueError as exc:
            error = f"--queries: {exc}"
    await agree_verdict(error)
    result = await answer(states, chosen, receivers=servers if receivers is None else receivers, meter=meter, mode=mode)
    if result is not None:
        result.query = query
    return result
