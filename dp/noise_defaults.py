"""Which noise each secure protocol uses by default, and the one-line guarantee every release states.

``parties`` (coalition-calibrated Pólya shares) or ``mpc`` (one discrete Laplace sampled inside MPC),
chosen per protocol from measured cost (docs/design.md, "Noise"; table of measurements: docs/noise.md).
Threat model: passive, static coalition of ``t < m/2`` parties (MPyC's Shamir scheme)."""
from __future__ import annotations

from typing import Literal

__all__ = ["NOISE_CHOICES", "DEFAULT_NOISE", "MEASURED", "default_noise", "mpc_guarantee", "party_guarantee",
           "delegated_guarantee", "switched_by_pure_budget", "pure_budget_line", "PureBudgetSource", "DELEGATED_NOISE"]

#: where a pure budget comes from: ``--budget EPS`` (a new account), or the dataset's existing account
PureBudgetSource = Literal["budget", "account"]

#: Part of a budget spend's mechanism when only noise delegates draw (threat model M_HF, ``--delegate-noise``):
#: its failure probability is charged to delta, so an account of delta 0 refuses it, and the refusal
#: (:func:`dp.budget.ledger.refusal_lines`) names what helps -- leave ``--delegate-noise`` out -- not ``--noise parties``.
DELEGATED_NOISE = "drawn by noise delegates (M_HF)"

#: The values of every scenario's ``--noise`` option (same name and meaning everywhere).
NOISE_CHOICES: tuple[str, ...] = ("mpc", "parties")

#: The default noise of each protocol with a secure path (decided from :data:`MEASURED`).
DEFAULT_NOISE: dict[str, str] = {"ustat": "mpc", "rank_auc": "mpc", "ecdf": "parties",
                                 "subsampled_pairs": "parties"}

#: Measured with ``-M3`` (seconds of the slowest party, bytes sent by all parties): the whole run with
#: party noise, and the noise phase with noise sampled inside MPC.
MEASURED: dict[str, dict[str, float]] = {
    "ustat": {"protocol_seconds": 12.56, "protocol_bytes": 57.9e6, "mpc_noise_seconds": 0.10,
              "mpc_noise_bytes": 394.7e3, "noise_values": 1},
    "rank_auc": {"protocol_seconds": 14.06, "protocol_bytes": 32.8e6, "mpc_noise_seconds": 0.57,
                      "mpc_noise_bytes": 1.03e6, "noise_values": 2},
    "ecdf": {"protocol_seconds": 0.044, "protocol_bytes": 228.3e3, "mpc_noise_seconds": 77.7,
             "mpc_noise_bytes": 893.8e6, "noise_values": 2047},
    "subsampled_pairs": {"protocol_seconds": 1.38, "protocol_bytes": 14.8e6, "mpc_noise_seconds": 88.4,
                         "mpc_noise_bytes": 719.7e6, "noise_values": 2119},
}


def default_noise(protocol: str, epsilon_per_sum: float, delta_per_sum: float = 0.0, *,
                  pure_budget: bool = False) -> str:
    """The default noise of ``protocol`` for this budget: :data:`DEFAULT_NOISE`, but ``parties`` where the in-MPC
    sampler cannot reach its delta (``delta_per_sum`` 0: ``2^-40``) at ``epsilon_per_sum``, or cannot be paid by a
    ``pure_budget`` (a ledger account of delta 0; party-drawn discrete Laplace is pure).  Details: docs/noise.md."""
    from dp.secret_noise import DEFAULT_SAMPLER_DELTA, plan_secret_laplace

    chosen = DEFAULT_NOISE[protocol]
    if chosen != "mpc":
        return chosen
    if pure_budget and delta_per_sum == 0:
        return "parties"
    try:
        plan_secret_laplace(epsilon=epsilon_per_sum, sensitivity=1,
                            delta_budget=delta_per_sum if delta_per_sum > 0 else DEFAULT_SAMPLER_DELTA)
    except (TypeError, ValueError):  # also an invalid epsilon or delta, which the query's validation names
        return "parties"
    return chosen


def switched_by_pure_budget(protocol: str, epsilon_per_sum: float, delta_per_sum: float = 0.0, *,
                            pure_budget: bool) -> bool:
    """Whether the default noise of ``protocol`` is party-drawn only because the budget is pure: it would
    be the in-MPC sampler without ``pure_budget`` (:func:`default_noise`)."""
    return (pure_budget and default_noise(protocol, epsilon_per_sum, delta_per_sum) == "mpc"
            and default_noise(protocol, epsilon_per_sum, delta_per_sum, pure_budget=True) == "parties")


def pure_budget_line(*, source: PureBudgetSource, parties: int, threshold: int) -> str:
    """The line above a result whose noise a pure budget (``source``) switched from the in-MPC sampler to party
    shares (:func:`switched_by_pure_budget`): the change, why, its variance cost ``m/(m-t)``, the way back."""
    from dp.secret_noise import DEFAULT_SAMPLER_DELTA

    factor = parties / (parties - threshold) if parties > threshold else 1.0
    why = ("--budget has no delta" if source == "budget" else "this dataset's account has delta 0")
    remedy = ("give --budget EPS:DELTA (e.g. 5:1e-9)" if source == "budget"
              else "raise the account's delta (python -m scenarios.budget raise ... --budget EPS:DELTA)")
    return (f"noise: party-drawn shares, not the in-MPC sampler, because the budget is pure ({why}): the "
            f"sampler's truncation costs a delta (<= {DEFAULT_SAMPLER_DELTA:.2g} per sum) it cannot pay; "
            f"variance x{factor:.3g} (m = {parties}, t = {threshold}); {remedy} for in-MPC noise")


def mpc_guarantee(epsilon: float, delta: float, sampler_delta: float) -> str:
    """The guarantee of noise sampled inside MPC, in one line; ``sampler_delta`` (the summed ``delta_s`` of the
    sampler's truncation) is part of the release's ``delta``."""
    return (f"discrete Laplace sampled inside MPC, known to no party (single-DLap variance, no m/(m-t) "
            f"factor): ({epsilon:g}, {delta:.2g})-DP, delta_s <= {sampler_delta:.2g} from the sampler's "
            f"truncation")


def party_guarantee(epsilon: float, delta: float, parties: int, threshold: int, mechanism: str) -> str:
    """The guarantee of coalition-calibrated party-drawn noise (``discrete laplace`` or ``binomial``), in one line."""
    shares = "centred binomial" if mechanism == "binomial" else "Polya"
    dp = f"({epsilon:g}, {delta:g})-DP" if delta > 0 else f"{epsilon:g}-DP"
    if parties == 1:
        return f"party-drawn {shares} noise (one party): {dp}"
    return (f"party-drawn {shares} shares, coalition-calibrated for t = {threshold} of m = {parties} "
            f"(x {parties}/{parties - threshold} variance): {dp} against any {threshold} parties")


def delegated_guarantee(epsilon: float, delta: float, failure: float, delegates: int, mechanism: str) -> str:
    """The guarantee of noise drawn by randomly drawn delegates only (threat model M_HF), in one line; ``delta``
    includes ``failure``, the probability that every delegate is corrupt (:mod:`dp.umpc.delegation`)."""
    shares = "centred binomial" if mechanism == "binomial" else "Polya"
    base_delta = max(0.0, delta - failure)
    base = f"({epsilon:g}, {base_delta:g})-DP" if base_delta > 0 else f"{epsilon:g}-DP"
    return (f"{shares} shares drawn by {delegates} randomly drawn delegate(s) only (M_HF, Sinh & Ramon sec. 4): "
            f"{base} except with probability {failure:g} that every delegate is corrupt, i.e. "
            f"({epsilon:g}, {delta:g})-DP")
