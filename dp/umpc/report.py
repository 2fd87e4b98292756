"""What a release of Pi_U-MPC is and says: :class:`UStatRelease`, its printed table and the public category lists of its record.

Sinh & Ramon, Protocol 3.1 (:mod:`dp.umpc.protocol`); the record keys are described in docs/design.md.
Everything printed here is the release itself or public by declaration, except the ``local`` line,
this party's own counts of filled and clipped cells, which is said to be local and never recorded."""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dp.report_text import format_bytes, owner_rows, phases_text, policy_text, text_table
from secure.columns import ColumnSpec
from secure.intake import MissingPolicy

__all__ = ["UStatRelease", "public_categories", "local_note"]

#: a category list longer than this is agreed and recorded by its digest (the parameters travel to every party)
LISTED_IN_FULL = 256


def public_categories(specs: Sequence[ColumnSpec]) -> list[Any]:
    """Per column, its declared list and ``other`` as agreed and recorded (``None`` for a numeric column), a list
    longer than :data:`LISTED_IN_FULL` by its SHA-256 digest (exact for the agreement, short to send)."""
    def listed(spec: ColumnSpec) -> Any:
        items = list(spec.categories or ())
        if len(items) <= LISTED_IN_FULL:
            return items
        digest = hashlib.sha256(json.dumps(items).encode()).hexdigest()
        return f"{len(items)} categories {spec.describe_categories()} sha256:{digest[:16]}"

    return [None if spec.categories is None else {"categories": listed(spec), "other": spec.other} for spec in specs]


def local_note(*, filled: int, clipped: int | None = None) -> str:
    """This party's own counts, said to be local (they are never shared nor written to the record)."""
    parts = [f"{filled} missing value(s) filled"]
    if clipped is not None:
        parts.append(f"{clipped} value(s) clipped to the domain")
    return "  at this party, not shared: " + ", ".join(parts)


def _small(value: float) -> str:
    """A standard deviation for print: ``< 1e-12`` below any statistic's fixed-point resolution, else 2 digits."""
    return "< 1e-12" if 0 < value < 1e-12 else f"{value:.2g}"


def _estimate(release: UStatRelease) -> str:
    """The estimate and its uncertainty, or why there is none: a ratio statistic (AUC, VUS, Rand) whose released
    denominator, a noisy count, is not positive has no estimate (post-processing; the record says ``null``)."""
    if not math.isfinite(release.estimate):
        return ("undefined: a released denominator (a noisy count) is not positive, so there is no estimate at this "
                "epsilon (post-processing; --json writes null)")
    if release.sampling == "all":
        return f"{release.estimate:.6g}  (noise std {_small(release.estimate_std)}; all tuples, no sampling error)"
    kind = "data-independent" if len(release.noisy_sums) == 1 else "plug-in of the released comparable share"
    return (f"{release.estimate:.6g}  (noise std {_small(release.estimate_std)}; tuple sampling <= "
            f"{_small(release.sampling_error_bound)}, {kind}; total <= {_small(release.error_bound)})")


def _delta_note(release: UStatRelease) -> str:
    """The delta part of the epsilon line (with MPC noise: where it comes from)."""
    if release.noise_source == "mpc":
        if release.sampler_delta < release.delta:
            return f" (delta {release.delta:g}; the in-MPC sampler's truncation uses {release.sampler_delta:.2g})"
        return f" (delta {release.delta:.2g}: truncation of the in-MPC sampler)"
    return f" (delta {release.delta:g})" if release.delta else ""


def _noise_line(release: UStatRelease) -> str:
    """Which noise ran, on how many sums, and how it was calibrated."""
    sums = len(release.noisy_sums)
    if release.noise_source == "mpc":
        listed = {key: "/".join(str(v) for v in release.sampler.get(key, [])) for key in ("digits", "bits")}
        return (f"  noise: discrete laplace sampled inside MPC on {sums} released sum(s), known to no party "
                f"(single-DLap variance); J = {listed['digits']} digits of b = {listed['bits']}-bit coins, "
                f"truncation delta_s {release.sampler_delta:.2g}; inputs clipped to the domain ({release.clipping})")
    if release.delegation is not None:
        calibration = (f", drawn only by the delegated parties (M_HF: failure probability {release.delegation[0]:g} "
                       f"at honest fraction {release.delegation[1]:g})")
    elif release.parties == 1:
        calibration = ""
    else:
        calibration = f", coalition-calibrated (x{release.parties}/{release.parties - release.threshold} variance)"
    return f"  noise: {release.mechanism} on {sums} released sum(s){calibration}; inputs clipped to the domain " \
           f"({release.clipping})"


@dataclass
class UStatRelease:
    """A released private U-statistic and everything a user needs to read it (the fields that :func:`dp.umpc.release`
    sets after the run, and the record's keys: docs/umpc_analysis.md, "The release record")."""

    statistic: str
    estimate: float
    epsilon: float
    delta: float
    n: int
    pairs: int
    parties: int
    threshold: int
    degree: int
    sampling: str
    max_degree: int
    mechanism: str
    noise_std: list[float]
    estimate_std: float
    noisy_sums: list[int]
    seconds: float = 0.0
    bytes_sent: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: str = "refuse"
    clipping: str = "local"
    noise_source: str = "parties"
    sampler_delta: float = 0.0
    sampler: dict[str, list[Any]] = field(default_factory=dict)
    delegation_failure: float = 0.0
    guarantee: str = ""
    seed: int | None = None
    delegates: list[int] | None = None
    delegates_drawn_from: str = ""
    sampling_error_bound: float = 0.0
    uncertainty_covers: str = ""
    path: str = "tuples"
    plan: str = ""
    comparison_leak: dict[str, Any] = field(default_factory=dict)
    budget: str = ""
    budget_record: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    fill: dict[str, Any] | None = None
    categories: list[Any] | None = None
    delegation: tuple[float, float] | None = None
    local: str = ""
    owners: dict[str, Any] | None = None

    def table(self) -> str:
        """The printed release: its notes, the table, this party's local note, the plan, the guarantee, the noise,
        the phases and the privacy-budget line (what ``python -m scenarios.ustat`` prints)."""
        from secure.kernels import KERNELS
        from secure.meter import seconds_label

        rows = [
            ("statistic", f"{KERNELS[self.statistic].description} of {', '.join(self.columns)}"),
            ("private estimate", _estimate(self)),
            ("epsilon", f"{self.epsilon:g}" + _delta_note(self)),
            ("n", f"{self.n} rows"),
            *([] if self.owners else [("missing values", policy_text(MissingPolicy(
                self.missing, tuple(sorted((self.fill or {}).items())))))]),  # owners' rows have no missing cell
            ("|E|", f"{self.pairs} tuples ({self.sampling}, max degree {self.max_degree})"
                    + (f", complete by the {self.path} path" if self.path != "tuples" else "")),
            ("parties", f"{self.parties} (threshold t = {self.threshold})"),
            *owner_rows(self.owners),
            *([("noise delegates", f"Z = ({', '.join(str(p) for p in self.delegates)}), drawn from "
                                   f"{self.delegates_drawn_from}")] if self.delegates else []),
            (seconds_label(), f"{self.seconds:.2f}"),
            ("bytes", f"{format_bytes(self.bytes_sent)} sent by all parties"),
        ]
        lines = [*self.notes, text_table(rows, "Private U-statistic (Pi_U-MPC, Sinh & Ramon)")]
        lines += [self.local] if self.local else []
        lines += [f"  {self.plan}"] if self.plan else []
        lines += [f"  guarantee: {self.guarantee}", _noise_line(self), phases_text(self.phases)]
        lines += [f"  {self.budget}"] if self.budget else []
        return "\n".join(lines)

    @property
    def error_bound(self) -> float:
        """``sqrt(estimate_std^2 + sampling_error_bound^2)``: one sd of the noise and of the tuple sampling."""
        return math.sqrt(self.estimate_std ** 2 + self.sampling_error_bound ** 2)

    def record(self) -> dict[str, Any]:
        """The JSON result record (the record keys of docs/design.md first; each key: docs/umpc_analysis.md)."""
        head = ("statistic", "estimate", "epsilon", "delta", "n", "pairs", "parties", "seconds", "bytes_sent",
                "threshold", "degree", "sampling", "max_degree", "mechanism")
        tail = ("sampling_error_bound", "error_bound", "seed", "uncertainty_covers", "estimate_std", "noisy_sums",
                "phases", "missing", "clipping", "noise_source", "sampler_delta", "sampler", "delegation_failure",
                "guarantee", "delegates", "delegates_drawn_from", "path", "plan")
        return {**{key: getattr(self, key) for key in head}, "noise_std": self.estimate_std,
                "noise_std_per_sum": self.noise_std, **{key: getattr(self, key) for key in tail},
                **self.comparison_leak, **self.budget_record,
                **({} if self.categories is None else {"fill": self.fill, "categories": self.categories}),
                **({} if self.owners is None else {"owners": self.owners})}
