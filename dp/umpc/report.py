"""What a release of Pi_U-MPC says: the printed table and the public category lists of its record.

Sinh & Ramon, Protocol 3.1 (:mod:`dp.umpc.protocol`); the record keys are described in docs/design.md.
Everything printed here is the release itself or public by declaration, except the ``local`` line,
this party's own counts of filled and clipped cells, which is said to be local and never recorded.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from secure.columns import ColumnSpec

if TYPE_CHECKING:
    from dp.umpc.protocol import UStatRelease

__all__ = ["table", "public_categories", "local_note", "format_bytes"]

#: a category list longer than this is agreed and recorded by its digest (the parameters travel to every party)
LISTED_IN_FULL = 256


def public_categories(specs: Sequence[ColumnSpec]) -> list[Any]:
    """Per column, its declared list and ``other`` as agreed and recorded: ``None`` for a numeric
    column; a list longer than :data:`LISTED_IN_FULL` by its SHA-256 digest (still exact for the
    agreement, short for the parameters every party sends)."""
    public: list[Any] = []
    for spec in specs:
        if spec.categories is None:
            public.append(None)
            continue
        listed: Any = list(spec.categories)
        if len(listed) > LISTED_IN_FULL:
            digest = hashlib.sha256(json.dumps(listed).encode()).hexdigest()
            listed = f"{len(listed)} categories {spec.describe_categories()} sha256:{digest[:16]}"
        public.append({"categories": listed, "other": spec.other})
    return public


def local_note(*, filled: int, clipped: int | None = None) -> str:
    """This party's own counts, said to be local (they are never shared nor written to the record)."""
    parts = [f"{filled} missing value(s) filled"]
    if clipped is not None:
        parts.append(f"{clipped} value(s) clipped to the domain")
    return "  at this party, not shared: " + ", ".join(parts)


def format_bytes(count: float) -> str:
    """``12345678`` -> ``12.3 MB``."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"


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


def table(release: UStatRelease) -> str:
    """The printed release: its notes, the table, this party's local note, the plan, the guarantee, the noise,
    the phases and the privacy-budget line (what ``python -m scenarios.ustat`` prints)."""
    from secure.kernels import KERNELS
    from secure.meter import seconds_label

    fills = ", ".join(f"{name}={value}" if isinstance(value, str) else f"{name}={value:g}"
                      for name, value in sorted((release.fill or {}).items()))
    rows = [
        ("statistic", f"{KERNELS[release.statistic].description} of {', '.join(release.columns)}"),
        ("private estimate", _estimate(release)),
        ("epsilon", f"{release.epsilon:g}" + _delta_note(release)),
        ("n", f"{release.n} rows"),
        ("missing values", "refuse: a missing cell stops the run (none found)" if release.missing == "refuse"
         else f"fill a missing cell with the declared value: {fills}"),
        ("|E|", f"{release.pairs} tuples ({release.sampling}, max degree {release.max_degree})"
                + (f", complete by the {release.path} path" if release.path != "tuples" else "")),
        ("parties", f"{release.parties} (threshold t = {release.threshold})"),
        *([("noise delegates", f"Z = ({', '.join(str(p) for p in release.delegates)}), drawn from "
                               f"{release.delegates_drawn_from}")] if release.delegates else []),
        (seconds_label(), f"{release.seconds:.2f}"),
        ("bytes", f"{format_bytes(release.bytes_sent)} sent by all parties"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [*release.notes, "Private U-statistic (Pi_U-MPC, Sinh & Ramon)",
             *(f"  {name:<{width}}  {value}" for name, value in rows)]
    lines += [release.local] if release.local else []
    lines += [f"  {release.plan}"] if release.plan else []
    lines += [f"  guarantee: {release.guarantee}", _noise_line(release),
              "  phases: " + ", ".join(f"{name} {cost['seconds']:.2f} s / {format_bytes(cost['bytes_sent'])}"
                                       for name, cost in release.phases.items())]
    lines += [f"  {release.budget}"] if release.budget else []
    return "\n".join(lines)
