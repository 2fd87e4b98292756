"""Kernels of U-statistics as objects, each with a plaintext and a vectorized secure function.
Sinh & Ramon, Def. 2.1, eq. 1, App. A.5; fixed-point integer outputs, optional numerator/denominator.
Threat model: passive, static coalition of ``t < m/2`` parties.  Details: docs/secure_layer.md."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["KernelOutput", "Kernel", "KendallTau", "GiniMeanDifference", "AreaUnderCurve",
           "DuplicatePair", "RandIndex", "VolumeUnderSurface", "KERNELS", "get_kernel"]

SecureArray = Any  # an MPyC secure NumPy array (e.g. ArraySecInt32)


def _mpc() -> Any:
    from mpyc.runtime import mpc

    return mpc


@dataclass(frozen=True)
class KernelOutput:
    """One integer output of a kernel: value ``v`` stands for ``v / scale``; ``low <= v <= high``."""

    name: str
    scale: int
    low: int
    high: int

    @property
    def sensitivity(self) -> int:
        """Largest change of this output when one row of the tuple is replaced (``high - low``)."""
        return self.high - self.low


class Kernel:
    """Base class: a symmetric kernel of degree ``k`` on fixed-point integer rows."""

    name: str = ""
    description: str = ""
    degree: int = 2
    columns: tuple[str, ...] = ()
    #: allowed values of label columns, by position in ``columns`` (the codes ``0..k-1`` of the roles:
    #: AUC negative/positive, VUS classes 0 < 1 < 2); a column declared with its own category list
    #: (:class:`secure.intake.ColumnSpec`, e.g. ``no/yes``) maps its categories to them by order
    categories: dict[int, tuple[int, ...]] = {}
    #: positions of columns compared only for equality (duplicate, Rand): their values are categories,
    #: shared as codes of a declared category list, never clipped (clipping would merge categories)
    categorical: tuple[int, ...] = ()
    #: the kernel's outputs, when they do not depend on the columns' widths (else :meth:`outputs` is overridden)
    fixed_outputs: tuple[KernelOutput, ...] = ()

    def outputs(self, widths: Sequence[int]) -> tuple[KernelOutput, ...]:
        """The kernel's outputs given the fixed-point widths of its columns."""
        return self.fixed_outputs

    def comparison_bits(self, widths: Sequence[int]) -> int:
        """Signed bit length that the secure comparisons of this kernel need."""
        return max(int(w) for w in widths).bit_length() + 1

    def encode(self, integers: np.ndarray) -> np.ndarray:
        """Local re-encoding of a party's fixed-point columns into the shared columns."""
        return np.asarray(integers, dtype=np.int64)

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """Kernel outputs for tuples given as ``k`` integer arrays of shape ``(tuples, shared columns)``."""
        raise NotImplementedError

    def secure(self, parts: Sequence[SecureArray], bits: int) -> tuple[SecureArray, ...]:
        """Same as :meth:`plaintext` on MPyC secure arrays; ``bits`` from :meth:`comparison_bits`."""
        raise NotImplementedError

    def check_precisions(self, precisions: Sequence[int]) -> None:
        """Refuse (ValueError) column precisions this kernel object was not built for (default: any is fine)."""

    def estimate(self, sums: Sequence[float], tuples: int, widths: Sequence[int]) -> float:
        """The statistic from the (noisy) sums of the outputs over ``tuples`` tuples."""
        outs = self.outputs(widths)
        if len(outs) == 1:
            return float(sums[0]) / (tuples * outs[0].scale)
        numerator = float(sums[0]) / outs[0].scale
        denominator = float(sums[1]) / outs[1].scale
        return numerator / denominator if denominator > 0 else float("nan")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _concat(*arrays: SecureArray) -> SecureArray:
    return _mpc().np_concatenate(arrays)


class KendallTau(Kernel):
    """Kendall's tau-a: ``sign(x_i - x_j) * sign(y_i - y_j)``; ties give 0 (App. A.5.1, eq. 8)."""

    name = "kendall"
    description = "Kendall's tau-a"
    columns = ("x", "y")
    fixed_outputs = (KernelOutput("concordance", 1, -1, 1),)

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        a, b = parts
        return (np.sign(a[:, 0] - b[:, 0]) * np.sign(a[:, 1] - b[:, 1]),)

    def secure(self, parts: Sequence[SecureArray], bits: int) -> tuple[SecureArray, ...]:
        mpc = _mpc()
        a, b = parts
        signs = mpc.np_sgn(_concat(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1]), l=bits)
        half = a.shape[0]
        return (signs[:half] * signs[half:],)


@dataclass(eq=False)
class GiniMeanDifference(Kernel):
    """Gini mean difference: ``|x_i - x_j|`` in the column's units (App. A.5.2, eq. 9)."""

    name = "gini"
    description = "Gini mean difference"
    columns = ("x",)
    precision: int = 0

    def outputs(self, widths: Sequence[int]) -> tuple[KernelOutput, ...]:
        return (KernelOutput("absolute difference", 2 ** self.precision, 0, int(widths[0])),)

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        a, b = parts
        return (np.abs(a[:, 0] - b[:, 0]),)

    def secure(self, parts: Sequence[SecureArray], bits: int) -> tuple[SecureArray, ...]:
        mpc = _mpc()
        a, b = parts
        difference = a[:, 0] - b[:, 0]
        negative = mpc.np_sgn(difference, l=bits, LT=True)
        return (difference * (1 - 2 * negative),)

    def check_precisions(self, precisions: Sequence[int]) -> None:
        """The value is reported in the column's units: its precision must be the column's."""
        if list(precisions) != [self.precision]:
            raise ValueError(f"statistic 'gini' was built for {self.precision} fractional bits but its column is "
                             f"declared with {list(precisions)[0] if precisions else '?'}: use "
                             f"get_kernel('gini', precision=<the column's bits>)")


class AreaUnderCurve(Kernel):
    """AUC with ties counted 1/2, as ``sklearn.metrics.roc_auc_score`` (App. A.5.3, eq. 10; docs/secure_layer.md)."""

    name = "auc"
    description = "area under the ROC curve"
    columns = ("score", "label")
    categories = {1: (0, 1)}
    fixed_outputs = (KernelOutput("ranked pairs (x2)", 2, 0, 2), KernelOutput("comparable pairs", 1, 0, 1))

    def comparison_bits(self, widths: Sequence[int]) -> int:
        return int(widths[0]).bit_length() + 1

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        a, b = parts
        comparable = a[:, 1] != b[:, 1]
        positive_first = a[:, 1] > b[:, 1]
        s_pos = np.where(positive_first, a[:, 0], b[:, 0])
        s_neg = np.where(positive_first, b[:, 0], a[:, 0])
        ranked = np.where(comparable, 1 + np.sign(s_pos - s_neg), 0)
        return ranked.astype(np.int64), comparable.astype(np.int64)

    def secure(self, parts: Sequence[SecureArray], bits: int) -> tuple[SecureArray, ...]:
        mpc = _mpc()
        a, b = parts
        half = a.shape[0]
        sigma = mpc.np_sgn(a[:, 0] - b[:, 0], l=bits)
        products = _concat(sigma, a[:, 1]) * _concat(a[:, 1] - b[:, 1], b[:, 1])
        comparable = a[:, 1] + b[:, 1] - 2 * products[half:]
        return comparable + products[:half], comparable


class DuplicatePair(Kernel):
    """Duplicate pair ratio (collision probability): ``I[x_i = x_j]`` (Sinh & Ramon §6.2.3)."""

    name = "duplicate"
    description = "duplicate-pair ratio"
    columns = ("x",)
    categorical = (0,)
    fixed_outputs = (KernelOutput("equal pairs", 1, 0, 1),)

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        a, b = parts
        return ((a[:, 0] == b[:, 0]).astype(np.int64),)

    def secure(self, parts: Sequence[SecureArray], bits: int) -> tuple[SecureArray, ...]:
        mpc = _mpc()
        a, b = parts
        return (mpc.np_sgn(a[:, 0] - b[:, 0], l=bits, EQ=True),)


class RandIndex(Kernel):
    """Rand index of two clusterings: 1 iff they agree on whether the pair is together (App. A.5.4).
    Details: docs/secure_layer.md."""

    name = "rand"
    description = "Rand index"
    columns = ("clustering1", "clustering2")
    categorical = (0, 1)
    fixed_outputs = (KernelOutput("agreeing pairs", 1, 0, 1),)

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        a, b = parts
        return (((a[:, 0] == b[:, 0]) == (a[:, 1] == b[:, 1])).astype(np.int64),)

    def secure(self, parts: Sequence[SecureArray], bits: int) -> tuple[SecureArray, ...]:
        mpc = _mpc()
        a, b = parts
        half = a.shape[0]
        equal = mpc.np_sgn(_concat(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1]), l=bits, EQ=True)
        first, second = equal[:half], equal[half:]
        return (1 - first - second + 2 * first * second,)


class VolumeUnderSurface(Kernel):
    """Volume under the ROC surface for three ordered classes 0 < 1 < 2 (degree 3; docs/secure_layer.md)."""

    name = "vus"
    description = "volume under the ROC surface (3 classes)"
    degree = 3
    columns = ("score", "class")
    categories = {1: (0, 1, 2)}
    fixed_outputs = (KernelOutput("ordered triples (x12)", 12, 0, 12), KernelOutput("comparable triples", 1, 0, 1))

    def comparison_bits(self, widths: Sequence[int]) -> int:
        return (3 * int(widths[0])).bit_length() + 1

    def encode(self, integers: np.ndarray) -> np.ndarray:
        integers = np.asarray(integers, dtype=np.int64)
        onehot = (integers[:, 1:2] == np.arange(3)).astype(np.int64)
        return np.hstack([integers[:, :1], onehot])

    @staticmethod
    def _ordered_weight(sign_01: Any, sign_12: Any, square: Any) -> tuple[Any, Any, Any, Any]:
        # L = 2 I[<] = sigma + sigma^2, E = I[=] = 1 - sigma^2, for each of the two consecutive pairs
        q01, q12 = square
        return sign_01 + q01, 1 - q01, sign_12 + q12, 1 - q12

    def plaintext(self, parts: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        stacked = np.stack(parts)  # (3, tuples, 4)
        counts = stacked[:, :, 1:].sum(axis=0)  # (tuples, 3)
        comparable = (counts == 1).all(axis=1).astype(np.int64)
        ordered = (stacked[:, :, :1] * stacked[:, :, 1:]).sum(axis=0)  # S_c, (tuples, 3)
        s01 = np.sign(ordered[:, 1] - ordered[:, 0])
        s12 = np.sign(ordered[:, 2] - ordered[:, 1])
        l01, e01, l12, e12 = self._ordered_weight(s01, s12, (s01 * s01, s12 * s12))
        weight = 3 * l01 * l12 + 3 * e01 * l12 + 3 * l01 * e12 + 2 * e01 * e12
        return comparable * weight, comparable

    def secure(self, parts: Sequence[SecureArray], bits: int) -> tuple[SecureArray, ...]:
        mpc = _mpc()
        a, b, c = parts
        m = a.shape[0]
        counts = [a[:, 1 + j] + b[:, 1 + j] + c[:, 1 + j] for j in range(3)]
        # one batch: the 9 products score_r * [class_r = j] and n0 * n1
        left = _concat(*[row[:, 0] for row in (a, b, c) for _ in range(3)], counts[0])
        right = _concat(*[row[:, 1 + j] for row in (a, b, c) for j in range(3)], counts[1])
        first = left * right
        ordered = [first[j * m:(j + 1) * m] + first[(3 + j) * m:(4 + j) * m] + first[(6 + j) * m:(7 + j) * m]
                   for j in range(3)]
        signs = mpc.np_sgn(_concat(ordered[1] - ordered[0], ordered[2] - ordered[1]), l=bits)
        # one batch: sigma^2 for both signs, and (n0 n1) n2
        second = _concat(signs, first[9 * m:]) * _concat(signs, counts[2])
        l01, e01, l12, e12 = self._ordered_weight(signs[:m], signs[m:], (second[:m], second[m:2 * m]))
        comparable = second[2 * m:]
        third = _concat(l01, e01, l01, e01) * _concat(l12, l12, e12, e12)
        weight = 3 * (third[:m] + third[m:2 * m] + third[2 * m:3 * m]) + 2 * third[3 * m:]
        return comparable * weight, comparable


KERNELS: dict[str, type[Kernel]] = {kernel.name: kernel for kernel in (KendallTau, GiniMeanDifference, AreaUnderCurve,
                                                                         DuplicatePair, RandIndex, VolumeUnderSurface)}


def get_kernel(name: str, *, precision: int | None = None) -> Kernel:
    """The kernel called ``name`` (``kendall``, ``gini``, ``auc``, ``duplicate``, ``rand``, ``vus``); ``gini``, reported
    in its column's units, needs the column's declared ``precision`` (no default: 0 would scale an 8-bit column's
    value by 256), the others ignore it."""
    if name not in KERNELS:
        raise ValueError(f"unknown statistic '{name}'; choose one of: {', '.join(KERNELS)}")
    if name == "gini":
        if precision is None:
            raise ValueError("statistic 'gini' is reported in its column's units: give precision= "
                             "(the column's declared fractional bits)")
        return GiniMeanDifference(precision)
    return KERNELS[name]()
