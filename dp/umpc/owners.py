"""Owners' uploads as the intake of :func:`dp.umpc.release`: the MPyC parties are a campaign's servers, and the
rows come from owners who uploaded once (:mod:`secure.owners`) instead of from each party's own file.

Threat model: :mod:`secure.owners`; an upload is rejected unless an honest owner could have sent it, so the unit
of privacy is one owner (sensitivity times ``rows_per_owner``).  Public by declaration: the owner tokens, the
number of rows and of rejected owners.  Details: docs/owners.md."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dp.report_text import run_costs
from secure.columns import ColumnSpec
from secure.errors import InputError
from secure.owners import Campaign, Intake, close, load_private_key, open_inbox, owner_columns, owner_histogram

__all__ = ["Owners", "DPF_LEAVES_PER_SECOND"]

#: full-domain DPF evaluation with the one-hot sketch, leaves per second per DPF server (docs/fss.md, measured
#: 68 M/s on one core; 2.4 s for 10^4 keys at G = 2^14), the planner's cost of the histogram path from DPF keys
DPF_LEAVES_PER_SECOND = 68e6


@dataclass(kw_only=True)
class Owners:
    """The uploads of ``campaign`` (a :class:`~secure.owners.Campaign` or its file) in this server's ``inbox``, opened
    with its private ``key`` (``{pid}``: this server's index), handed to ``release`` in place of the party's rows;
    ``say`` (jobs: print) gets a line per refused upload (docs/owners.md)."""

    campaign: Campaign | str | Path
    inbox: str | Path
    key: str | Path
    intake: Intake = field(init=False, repr=False)  # this server's, closed (:meth:`open`)
    owners: int = field(default=0, init=False)
    rows: int = field(default=0, init=False)
    rejected: int = field(default=0, init=False)
    say: Callable[[str], object] = field(default=lambda line: None, repr=False)
    meter: Any = field(default=None, init=False, repr=False)
    plan: Campaign = field(init=False, repr=False)  # the campaign, loaded

    def __post_init__(self) -> None:
        self.plan = self.campaign if isinstance(self.campaign, Campaign) else Campaign.load(self.campaign)

    async def open(self, specs: Sequence[ColumnSpec]) -> int:
        """Every server: open its inbox and agree on the owners present at all (:func:`secure.owners.close`); the public
        row count.  InputError at every server alike, naming the server: a column, the key, the inbox or the servers."""
        from mpyc.runtime import mpc

        from secure.meter import CostMeter
        from secure.session import agree_verdict

        server, problem, detail = int(mpc.pid), None, None
        declared = {spec.name: spec for spec in self.plan.columns}
        if len(mpc.parties) != self.plan.servers:
            raise InputError(f"all servers: the campaign names {self.plan.servers} servers, the run has "
                             f"{len(mpc.parties)}")
        if wrong := [spec.name for spec in specs if declared.get(spec.name) != spec]:
            raise InputError(f"all servers: column(s) {', '.join(wrong)} not declared so in the campaign (it declares "
                             f"{', '.join(map(str, declared.values()))})")
        self.meter = CostMeter()
        with self.meter.phase("close"):
            try:
                key = load_private_key(str(self.key).replace("{pid}", str(server)))
                opened = open_inbox(self.plan, server, key, self.inbox)
            except (ValueError, OSError) as exc:  # the path stays here (detail), the other servers see the line
                problem, detail = f"server {server}: cannot read its private key or its inbox", str(exc)
            await agree_verdict(problem, detail=detail)
            self.intake = await close(opened)
        for line in [*(f"note (at this server, not shared): {line}" for line in opened.rejected),
                     *(f"server {server}: owner {token} dropped: its record is not at every server"
                       for token in sorted(set(opened.tokens) - set(self.intake.tokens)))]:
            self.say(line)
        self.owners, self.rows, self.rejected = len(self.intake.tokens), int(self.intake.rows.sum()), 0
        return self.rows

    def _reject(self, rejected: dict[str, str]) -> None:
        """Count the owners ``rejected`` by a check (token -> its name; known to all servers) and tell ``say``."""
        self.rejected = len(rejected)
        for token, check in rejected.items():
            self.say(f"server {self.intake.server}: owner {token} rejected by the {check} check")

    def unavailable(self, names: list[str], statistic: str) -> dict[str, str]:
        """The paths the uploads cannot feed, and why (the planner's reasons): the histogram path unless the
        campaign's DPF keys count the query's grid (all its columns, in order); VUS encodes its classes locally."""
        declared = [spec.name for spec in self.plan.columns]
        paths = {} if statistic != "vus" else {path: "VUS from owners' shares: its class encoding is local to a "
                                                      "party; use a campaign with --dpf" for path in ("sort", "tuples")}
        if self.plan.dpf_bits is None or names != declared:
            paths["histogram"] = ("the campaign has no DPF keys (campaign --dpf)" if self.plan.dpf_bits is None else
                                  f"the campaign's DPF grid is {','.join(declared)}, not {','.join(names)}")
        return paths

    def dpf_seconds(self) -> float:
        """Modelled seconds of the DPF evaluation with its sketch: ``N G`` leaves at :data:`DPF_LEAVES_PER_SECOND`."""
        return self.rows * 2.0 ** (self.plan.dpf_bits or 0) / DPF_LEAVES_PER_SECOND

    async def histogram(self, sectype: Any, shape: Any) -> Any:
        """The accepted owners' joint counts (:func:`secure.owners.intake.owner_histogram`, one-hot checked)."""
        counts, rejected, kept = await owner_histogram(self.intake, self.plan, sectype, shape)
        self._reject(rejected)
        self.rows = int(kept.rows.sum())
        return counts

    async def counts(self) -> list[int]:
        """The rows as one public count, the servers' (each party's own: :meth:`FixedPointRows.counts`)."""
        return [self.rows]

    def secure_type(self, needed: int, what: str) -> Any:
        """MPyC's secure integers in the campaign's field, the most bits it holds at the current ``-K``.
        :raise InputError: ``what`` needs more than ``needed`` bits the campaign declared (same at every server)."""
        from mpyc.runtime import mpc

        security = int(mpc.options.sec_param)  # raised for the path's comparisons (dp.comparison_leakage)
        holds = self.plan.prime.bit_length() - security - 2
        if needed > holds:
            raise InputError(f"all servers: {what} needs {needed}-bit secure integers at -K {security}, but the "
                             f"campaign's field (-L {self.plan.bits} -K {self.plan.security}) holds {holds}: the "
                             f"owners must upload to a campaign with -L {needed} -K {security}, or use another path")
        return mpc.SecInt(holds, p=self.plan.prime)

    async def columns(self, sectype: Any, names: list[str]) -> Any:
        """The accepted owners' rows of columns ``names``, a secure ``(rows, columns)`` array in the campaign's
        field (:func:`secure.owners.intake.owner_columns`, degree- and grid-checked)."""
        from mpyc.runtime import mpc

        columns, rejected = await owner_columns(self.intake, self.plan, sectype)
        self._reject(rejected)
        self.rows = len(columns[names[0]])
        return mpc.np_stack([columns[name] for name in names], axis=1)

    def public(self) -> dict[str, Any]:
        """What the servers agree on besides the query: the campaign."""
        return {"campaign": self.plan.id, "rows_per_owner": self.plan.rows_per_owner}

    async def finish(self, result: Any) -> Any:
        """Every server, after the release: ``result`` (``None`` off the receivers) with its owners entry and the
        intake's phases (``close``; the ECDF family's ``histogram``) first in its phases, seconds and bytes."""
        intake = run_costs(await self.meter.totals_over_parties())
        return None if result is None else replace(
            result, owners=self.record(), phases={**intake["phases"], **result.phases},
            seconds=intake["seconds"] + result.seconds, bytes_sent=intake["bytes_sent"] + result.bytes_sent)

    def record(self) -> dict[str, Any]:
        """The release's owners entry (every number public by declaration)."""
        return {**self.public(), "owners": self.owners - self.rejected, "rows": self.rows, "rejected": self.rejected}
