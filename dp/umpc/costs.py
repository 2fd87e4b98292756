"""Cost models: the paper's online communication / computation counts, and what MPyC actually sends.

Sinh & Ramon, Lemma C.3, App. B.1, D.2, E.1.2, Table 1; the curves of Fig. 1-3 and 5-6.  Asymptotic
expressions with constants 1 and ``log2``.  Details and the paper's kernel counts: docs/umpc_analysis.md."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from dp.umpc.delegation import delegate_size
from dp.validation import check_epsilon, check_int_at_least, check_nonnegative, check_positive_int

__all__ = ["FSS_LAMBDA", "KERNEL_OPERATIONS", "PAPER_KERNEL_OPERATIONS", "OPERATION_COUNTS", "UmpcCost",
           "kernel_cost_bits", "kernel_party_ops", "PROTOCOLS", "ProtocolCost", "protocol_costs", "umpc_online_bits",
           "umpc_dis_bits", "umpc_hf_bits", "bell_bits", "ghazi_bits", "ghazi_sm_bits",
           "umpc_party_ops", "MPYC_CALIBRATION",
           "MpycBytes", "mpyc_shamir_bytes_model"]

#: security parameter of the FSS comparison of App. E.1.2
FSS_LAMBDA = 128

#: secure (comparisons, products) per tuple of each kernel, as in :mod:`secure.kernels`
KERNEL_OPERATIONS: dict[str, tuple[int, int]] = {
    "kendall": (2, 1),    # sign(dx) * sign(dy)
    "gini": (1, 1),       # |d| = d * (1 - 2 [d < 0])
    "auc": (1, 2),        # sign of score difference, two products with the labels
    "duplicate": (1, 0),  # one equality test (costed as a comparison)
    "rand": (2, 1),       # two equality tests, one product
}

#: secure (comparisons, products) per tuple as the paper states them (App. A.5, §6.2.2); the duplicate
#: indicator is not costed there: one FSS equality test, as the Rand index's "one FSS instantiation"
PAPER_KERNEL_OPERATIONS: dict[str, tuple[int, int]] = {
    "kendall": (2, 1),    # App. A.5.1 and §6.2.2: two FSS instantiations and one Beaver triple
    "gini": (2, 1),       # App. A.5.2: "two FSS instantiations and one Beaver Triple"
    "auc": (4, 2),        # App. A.5.3: "four comparison and two multiplications"
    "duplicate": (1, 0),  # not stated; one FSS equality test
    "rand": (1, 0),       # App. A.5.4: "one FSS instantiation"
}

#: which operation counts a cost model uses
OPERATION_COUNTS: tuple[str, ...] = ("implementation", "paper")


def _log2(value: float) -> float:
    """``log2`` floored at 1, so that asymptotic ``log`` factors never vanish or turn negative."""
    return max(1.0, math.log2(value))


def _operations(kernel: str, counts: str, comparisons: int | None, products: int | None) -> tuple[int, int]:
    """(comparisons, products) of ``kernel`` from the chosen table, overridden by explicit counts."""
    if counts not in OPERATION_COUNTS:
        raise ValueError(f"unknown operation counts '{counts}'; choose one of: {', '.join(OPERATION_COUNTS)}")
    table = PAPER_KERNEL_OPERATIONS if counts == "paper" else KERNEL_OPERATIONS
    if comparisons is None or products is None:
        if kernel not in table:
            raise ValueError(f"no default cost for kernel '{kernel}'; choose one of: "
                             f"{', '.join(table)}, or give comparisons and products")
        comparisons = table[kernel][0] if comparisons is None else comparisons
        products = table[kernel][1] if products is None else products
    return check_int_at_least(comparisons, "comparisons", 0), check_int_at_least(products, "products", 0)


def kernel_cost_bits(kernel: str = "kendall", bits: int = 40, *, lam: int = FSS_LAMBDA,
                     comparisons: int | None = None, products: int | None = None,
                     counts: str = "implementation") -> int:
    r"""Per-tuple online cost ``C_f^C`` in bits under the protocol choices of App. E.1.2 (docs/umpc_analysis.md).
    :raise ValueError: for an unknown kernel or table, or a bad count."""
    bits = check_positive_int(bits, "bits (l)")
    lam = check_positive_int(lam, "lambda")
    comparisons, products = _operations(kernel, counts, comparisons, products)
    return comparisons * lam * bits + products * 4 * bits


def kernel_party_ops(kernel: str = "kendall", bits: int = 40, *, counts: str = "implementation",
                     comparisons: int | None = None, products: int | None = None) -> int:
    r"""``C_f^T``: one party's operations to evaluate ``f`` once (§6.2.2, App. D.2.2), constants 1
    (docs/umpc_analysis.md); ValueError for an unknown kernel or table, or a bad count."""
    bits = check_positive_int(bits, "bits (l)")
    comparisons, products = _operations(kernel, counts, comparisons, products)
    return comparisons * bits + products


@dataclass(frozen=True)
class UmpcCost:
    """Online bits of ``Pi_U-MPC`` by phase (Lemma C.3), and rounds."""

    sharing: int
    kernel: int
    noise: int
    aggregation: int
    rounds: int

    @property
    def total(self) -> int:
        """``|E| k (k-1) l + |E| C_f^C + C_eta^C + n l``."""
        return self.sharing + self.kernel + self.noise + self.aggregation


def umpc_online_bits(n: int, tuples: int, k: int = 2, bits: int = 40, *, kernel_bits: int | None = None,
                     noise_bits: int = 0, kernel: str = "kendall", kernel_rounds: int = 2,
                     noise_rounds: int = 1, counts: str = "implementation") -> UmpcCost:
    r"""Lemma C.3: ``|E| k (k-1) l + |E| C_f^C + C_eta^C + n l`` bits in the online phase (``n`` parties, one row each),
    in ``max(C_f^R, C_eta^R) + 2`` rounds (docs/umpc_analysis.md).  :raise ValueError: on a bad parameter."""
    n = check_positive_int(n, "n")
    tuples = check_positive_int(tuples, "number of tuples |E|")
    k = check_positive_int(k, "k")
    bits = check_positive_int(bits, "bits (l)")
    if k > n:
        raise ValueError(f"k must not exceed n ({n}), got {k}")
    per_tuple = (kernel_cost_bits(kernel, bits, counts=counts) if kernel_bits is None
                 else check_int_at_least(kernel_bits, "kernel_bits", 0))
    noise_bits = check_int_at_least(noise_bits, "noise_bits", 0)
    return UmpcCost(sharing=tuples * k * (k - 1) * bits, kernel=tuples * per_tuple, noise=noise_bits,
                    aggregation=n * bits, rounds=max(check_int_at_least(kernel_rounds, "kernel rounds", 0),
                                                     check_int_at_least(noise_rounds, "noise rounds", 0)) + 2)


def umpc_dis_bits(n: int, tuples: int, k: int = 2, bits: int = 40, *, kernel_bits: int | None = None,
                  kernel: str = "kendall", counts: str = "implementation") -> UmpcCost:
    r"""Lemma C.3 under ``M_Dis``: all ``n`` parties draw noise, ``C_eta^C = n^2 l`` (App. B.1, E.1.2).
    Details: docs/umpc_analysis.md."""
    n = check_positive_int(n, "n")
    bits = check_positive_int(bits, "bits (l)")
    return umpc_online_bits(n, tuples, k, bits, kernel_bits=kernel_bits, noise_bits=n * n * bits, kernel=kernel,
                            counts=counts)


def umpc_hf_bits(n: int, tuples: int, k: int = 2, bits: int = 40, *, epsilon_fail: float = 2.0 ** -40,
                 honest_fraction: float = 0.5, kernel_bits: int | None = None, kernel: str = "kendall",
                 counts: str = "implementation") -> UmpcCost:
    r"""Lemma C.3 under ``M_HF``: a subgroup ``Z`` draws, ``C_eta^C = |Z| n l = O(n l)`` (§4, App. D.2.1).
    Details: docs/umpc_analysis.md."""
    n = check_positive_int(n, "n")
    bits = check_positive_int(bits, "bits (l)")
    size = delegate_size(epsilon_fail, honest_fraction, parties=n)
    return umpc_online_bits(n, tuples, k, bits, kernel_bits=kernel_bits, noise_bits=size * n * bits, kernel=kernel,
                            counts=counts)


def bell_bits(n: int, bits: int = 40, t: int = 64) -> int:
    """Bell et al. (2020): ``n l t`` bits (Table 1; App. D.2.1), ``t`` bins one-hot encoded per party."""
    return check_positive_int(n, "n") * check_positive_int(bits, "bits (l)") * check_positive_int(t, "t")


def ghazi_bits(n: int, epsilon: float, bits: int = 40, t: int = 64) -> float:
    r"""Ghazi et al. (2024): ``n^2 eps^2 (log t) l`` bits (Table 1; sketch size ``d = eps^2 n log t``)."""
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    return n * n * epsilon ** 2 * _log2(check_positive_int(t, "t")) * check_positive_int(bits, "bits (l)")


def ghazi_sm_bits(n: int, epsilon: float, bits: int = 40, t: int = 64, kappa: int = 0) -> float:
    r"""GhaziSM: ``(log n + kappa) n^2 eps^2 (log t) l`` bits (App. D.2.1; Table 1 has ``kappa = 0``)."""
    kappa = check_int_at_least(kappa, "kappa", 0)
    return (_log2(check_positive_int(n, "n")) + kappa) * ghazi_bits(n, epsilon, bits, t)


def umpc_party_ops(n: int, tuples: int, k: int = 2, kernel_ops: float | None = None, *, kernel: str = "kendall",
                   bits: int = 40, counts: str = "implementation") -> float:
    r"""Per-party computation of ``Pi_U-MPC``: ``ceil(k |E| / n) C_f^T + n`` (App. D.2.2; docs/umpc_analysis.md)."""
    n = check_positive_int(n, "n")
    tuples = check_positive_int(tuples, "number of tuples |E|")
    k = check_positive_int(k, "k")
    per_tuple = (kernel_party_ops(kernel, bits, counts=counts) if kernel_ops is None
                 else check_nonnegative(kernel_ops, "kernel_ops"))
    return math.ceil(k * tuples / n) * per_tuple + n


#: the protocols of Table 1, in the order of the paper's figures
PROTOCOLS: tuple[str, ...] = ("U-MPC (M_HF)", "U-MPC (M_Dis)", "Bell", "Ghazi", "GhaziSM")


@dataclass(frozen=True)
class ProtocolCost:
    """Table 1 cost models of one protocol at one setting (constants 1, ``log = log2``)."""

    protocol: str
    comm_bits: float
    party_ops: float
    server_ops: float
    n: int

    @property
    def total_ops(self) -> float:
        """Fig. 3's total computation: the server's plus ``n`` times one party's."""
        return self.server_ops + self.n * self.party_ops


def protocol_costs(n: int, tuples: int, *, epsilon: float, t: int, bits: int = 40, kernel: str = "kendall",
                   counts: str = "implementation", k: int = 2) -> dict[str, ProtocolCost]:
    r"""Online communication, per-party and server computation (App. D.2.2, D.2.3) of every protocol of Table 1,
    keyed as :data:`PROTOCOLS` (each protocol's counts: docs/umpc_analysis.md)."""
    n = check_positive_int(n, "n")
    party = float(umpc_party_ops(n, tuples, k, kernel=kernel, bits=bits, counts=counts))
    ghazi = float(ghazi_bits(n, epsilon, bits, t))  # epsilon and t checked here, before the counts below
    ghazi_party, ghazi_server = epsilon ** 2 * n * t * _log2(t), epsilon ** 2 * n * n * _log2(t)
    rows = [
        ProtocolCost("U-MPC (M_HF)", float(umpc_hf_bits(n, tuples, k, bits, kernel=kernel, counts=counts).total),
                     party, float(n), n),
        ProtocolCost("U-MPC (M_Dis)", float(umpc_dis_bits(n, tuples, k, bits, kernel=kernel, counts=counts).total),
                     party, float(n), n),
        ProtocolCost("Bell", float(bell_bits(n, bits, t)), float(t), float(math.comb(n, 2) * t ** 2), n),
        ProtocolCost("Ghazi", ghazi, ghazi_party, ghazi_server, n),
        ProtocolCost("GhaziSM", float(ghazi_sm_bits(n, epsilon, bits, t)), ghazi_party + t * _log2(n),
                     _log2(n) * ghazi_server, n),
    ]
    return {row.protocol: row for row in rows}


#: bytes MPyC sends per operation, measured once at ``m = 3`` in a 64-bit field (docs/umpc_analysis.md)
MPYC_CALIBRATION: dict[str, float] = {
    "field_bits": 64.0,
    "input_bytes_per_receiver": 21812 / 1000 / 2,
    "product_bytes_per_pair": 64439 / 1000 / 6,
    "sign_bytes_per_pair_base": 166.3 / 6,
    "sign_bytes_per_pair_per_bit": 189.26 / 6,
}


@dataclass(frozen=True)
class MpycBytes:
    """Modelled bytes (all parties together) by phase of :func:`dp.umpc.protocol.run_secure`."""

    intake: float
    kernel: float
    noise: float
    reveal: float

    @property
    def total(self) -> float:
        return self.intake + self.kernel + self.noise + self.reveal

    def phases(self) -> dict[str, float]:
        """``{intake, kernel, noise, reveal}`` (the ``seed`` phase is not modelled)."""
        return asdict(self)


def mpyc_shamir_bytes_model(n: int, tuples: int, *, parties: int = 3, columns: int = 2, comparison_bits: int = 17,
                            comparisons: int = 2, products: int = 1, outputs: int = 1,
                            field_bits: int = 64) -> MpycBytes:
    r"""What our implementation sends on MPyC for ``Pi_U-MPC``, bytes summed over the ``m`` parties
    (docs/umpc_analysis.md); ValueError on a bad parameter."""
    n = check_positive_int(n, "n")
    tuples = check_positive_int(tuples, "number of tuples |E|")
    parties = check_positive_int(parties, "parties")
    columns = check_positive_int(columns, "columns")
    comparison_bits = check_positive_int(comparison_bits, "comparison_bits")
    comparisons = check_int_at_least(comparisons, "comparisons", 0)
    products = check_int_at_least(products, "products", 0)
    outputs = check_positive_int(outputs, "outputs")
    field_bits = check_positive_int(field_bits, "field_bits")
    cal = MPYC_CALIBRATION
    scale = field_bits / cal["field_bits"]
    pairs = parties * (parties - 1)
    element = cal["input_bytes_per_receiver"] * scale
    sign = (cal["sign_bytes_per_pair_base"] + cal["sign_bytes_per_pair_per_bit"] * comparison_bits) * scale
    product = cal["product_bytes_per_pair"] * scale
    return MpycBytes(intake=n * columns * (parties - 1) * element,
                     kernel=tuples * pairs * (comparisons * sign + products * product),
                     noise=outputs * pairs * element,
                     reveal=outputs * pairs * element)
