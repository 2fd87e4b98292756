"""Owners drill: three servers over an inbox of honest owners and every malicious upload of issue 24; a server
frozen or killed while they release (the cases and what each must show: docs/drills.md).

Run it (it starts its own three local servers; this process runs no MPyC itself)::

    python -m scenarios.drills.owners --quick --json owners.json

Threat model drilled (docs/owners.md): at most ``t`` servers semi-honest, any number of malicious owners; a
crashed or frozen server is a failure, not an attack."""
from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scenarios.drills.harness import (_LOST, _SILENT, RESULT_NAME, CheckedOutcome, DrillResult, PartySpec,
                                      print_notes, drill_main, drill_row, format_table, parse_drill_argv, run_three,
                                      victim_drill)

__all__ = ["CASES", "build_inbox", "main"]

#: the malicious uploads, each under its own owner token, and the servers that must print a line about it
CASES = {"value 2": (0, 1, 2), "two-hot": (0, 1, 2), "wrong field": (0, 1, 2), "replayed record": (0, 1, 2),
         "record at only some servers": (0, 1), "wrong campaign": (0, 1, 2)}
LIMIT = 10.0  # --silence-limit of the freeze and kill runs
MARGIN = 10.0  # the survivors' bound: the silence limit plus this


def _file(case: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", case) + ".rec"


def build_inbox(root: str, owners: int) -> dict[str, Any]:
    """Keys, a campaign (x, y on 0:15 with DPF keys), ``owners`` honest owners and one upload per case of
    :data:`CASES` (in files named after the case) in ``root``; the honest rows and each case's owner token."""
    from secure import numeric
    from secure.fss.dpf import MODULUS, full_domain_sum, gen
    from secure.owners import Campaign, FolderTransport, generate_server_key, pack, seal, simulate_owners, split

    public = [generate_server_key(server, f"{root}/keys")[1].read_text().strip() for server in range(3)]
    columns = [numeric("x", lower=0, upper=15, step=1), numeric("y", lower=0, upper=15, step=1)]
    campaign, other = (Campaign.create(public_keys=public, threshold=1, columns=columns, bits=40, security=60,
                                       deadline="2100-01-01T00:00:00Z", dpf=True) for _ in range(2))
    campaign.save(f"{root}/campaign.json")
    generator = np.random.default_rng(24)
    x = generator.integers(0, 16, owners)
    rows = {"x": x, "y": np.clip(x + generator.integers(-3, 4, owners), 0, 15)}
    transport = FolderTransport(f"{root}/inbox/server{{pid}}")
    simulate_owners(campaign, rows, transport)
    bits, cell = int(campaign.dpf_bits or 0), campaign.cells(np.array([[3, 4]]))
    keys = {"value 2": gen(cell, bits=bits, betas=[2])}
    while "two-hot" not in keys:  # +1 or -1 lands at leaf 0 of the point's block (a control bit): keep +1
        pair = gen(cell, bits=bits)
        leaf = [k.leaf_cw.copy() for k in pair]
        for cw in leaf:
            cw[0, 0] = (int(cw[0, 0]) + 1) % MODULUS
        forged = (replace(pair[0], leaf_cw=leaf[0]), replace(pair[1], leaf_cw=leaf[1]))
        if sorted(((full_domain_sum(forged[0]) + full_domain_sum(forged[1])) % MODULUS).tolist())[-2:] == [1, 1]:
            keys["two-hot"] = forged
    tokens = {}
    for case, servers in CASES.items():
        tokens[case] = token = os.urandom(16).hex()
        shares = split(campaign, np.array([[[3, 4]]], dtype=object))
        pair = keys.get(case) or gen(cell, bits=bits)
        if case == "wrong field":
            shares[2, 0, 0, 0] = campaign.prime  # not in [0, p): server 2 refuses; gone at the others by agreement
        for server in servers:
            sealed = seal(other if case == "wrong campaign" else campaign, server, token,
                          pack(campaign, shares[server], [pair[server].to_bytes()] if server < 2 else None)[0])
            for copy in ("a", "b") if case == "replayed record" else ("",):
                (transport.folder(server) / _file(case + copy)).write_bytes(sealed)
    return {"rows": rows, "tokens": tokens, "campaign": campaign}


def serve(argv: Sequence[str]) -> int:
    """One server (``--serve DIR`` and MPyC's options): the complete Kendall's tau at epsilon 1e9 from the inbox of
    :func:`build_inbox`, printing one line per rejected upload (kept at this server); server 0 also the estimate."""
    import secure
    import dp.umpc
    from dp.umpc.owners import Owners

    root = argv[list(argv).index("--serve") + 1]
    rest = [word for word in argv if word not in ("--serve", root)]

    async def job(party: Any) -> Any:
        owners = Owners(campaign=f"{root}/campaign.json", inbox=f"{root}/inbox/server{{pid}}",
                        key=f"{root}/keys/server{{pid}}.key", say=print)
        query = dp.umpc.Query(statistic="kendall", columns=list(owners.plan.columns), epsilon=1e9, tuples="all",
                              path="histogram")
        release = await dp.umpc.release(query, owners, ledger=f"{root}/ledger", budget="1e15:1e-3")
        return lambda: print(json.dumps({"estimate": release.estimate}))

    return int(secure.run(job, argv=rest, script_args=["--serve", root]))


@dataclass
class CaseResult(CheckedOutcome):
    """One malicious upload: the servers that named it and the first line."""

    name: str
    servers: list[int]
    line: str
    problems: list[str] = field(default_factory=list)


def upload_drill(root: str, owners: int, party_args: Sequence[str]) -> tuple[list[CaseResult], DrillResult]:
    """The servers over the inbox: each case named at its servers, the estimate the honest owners' exact one."""
    import dp.umpc
    from dp.umpc.complete import simulate_complete

    built = build_inbox(root, owners)
    results, _ = run_three([PartySpec("drills.owners", ("--serve", root))] * 3, root, party_args=party_args)
    cases = []
    for case, servers in CASES.items():
        token, name = built["tokens"][case], _file(case)[:-4]
        named = {r.party: [line for line in r.stdout.splitlines() if token in line or name in line] for r in results}
        problems = [f"server {s} printed no line about it" for s in servers if not named[s]]
        problems += [f"server {s} printed {len(named[s])} lines" for s in servers if len(named[s]) > 1
                     and case != "replayed record"]  # a replay: a line per copy
        said = [line for lines in named.values() for line in lines]
        first = next((line for line in said if "refused" in line), said[0] if said else "")
        cases.append(CaseResult(case, [s for s in range(3) if named[s]], first, problems))
    query = dp.umpc.Query(statistic="kendall", columns=list(built["campaign"].columns), epsilon=1e9, tuples="all")
    rows = np.column_stack([built["rows"]["x"], built["rows"]["y"]]).astype(float)
    exact = simulate_complete(query.base, [rows], threshold=0).exact_on_tuples
    problems = [f"server {r.party} exited {r.code}: {r.error_lines[:1]}" for r in results if r.code != 0]
    last = results[0].stdout.strip().splitlines()[-1:] or ["{}"]
    estimate = json.loads(last[0]).get("estimate") if last[0].startswith("{") else None
    if estimate is None or abs(estimate - exact) > 1e-9:
        problems.append(f"released {estimate}, exact over the honest owners {exact}")
    summary = DrillResult("statistic over the honest owners", "refusal", [r.code for r in results], None,
                          f"{estimate} vs {exact:.10g}", True, "", [r.error_lines for r in results], None, problems)
    return cases, summary


def stop_drill(kind: str, root: str, party_args: Sequence[str]) -> DrillResult:
    """Server 1 of ``scenarios.ustat --owners`` freezes (``SIGSTOP``) or is killed on entering the histogram phase;
    both others must exit 1 within :data:`LIMIT` + :data:`MARGIN` s with one line, nothing released."""
    base = ("--owners", f"{root}/inbox/server{{pid}}", "--campaign", f"{root}/campaign.json", "--server-key",
            f"{root}/keys/server{{pid}}.key", "--stat", "kendall", "--columns", "x,y", "--epsilon", "1e9", "--pairs",
            "all", "--path", "histogram", "--silence-limit", f"{LIMIT:g}", "--json", RESULT_NAME, "--ledger",
            f"{root}/ledger", "--budget", "1e15:1e-3")
    os.makedirs(f"{root}/{kind}")
    # the servers' intake of the owners' uploads sends nothing: a survivor may still be finishing the close
    return victim_drill(f"server 1 {'frozen' if kind == 'freeze' else 'killed'} at histogram", kind, "ustat", base,
                        "histogram", f"{root}/{kind}", party_args=party_args, allowed=("close", "intake", "histogram"),
                        patterns={"silent": _SILENT} if kind == "freeze" else {"lost": _LOST},
                        expected="party 1 ...; nothing was released",
                        failed="server 1 did not stop at the histogram phase (exit {code})", bound=LIMIT + MARGIN,
                        late=f"the survivors did not stop within {LIMIT + MARGIN:g} s", limit=LIMIT)


def run_all(options: Any, root: str) -> tuple[list[CaseResult], list[DrillResult]]:
    """The upload drill, then the freeze and kill runs at once (on the same inbox)."""
    cases, summary = upload_drill(root, 60 if options.quick else 400, options.party_args)
    with ThreadPoolExecutor(max_workers=2) as pool:
        stops = list(pool.map(lambda kind: stop_drill(kind, root, options.party_args), ("freeze", "kill")))
    return cases, [summary, *stops]


def report(outcome: tuple[list[CaseResult], list[DrillResult]]) -> None:
    """Print the tables: one row per malicious upload, then the statistic and the stopped servers."""
    cases, runs = outcome
    print("Owners drill: 3 servers, malicious uploads among honest owners (complete Kendall, epsilon 1e9)")
    print(format_table(["malicious upload", "named at servers", "check", "line"],
                       [[c.name, " ".join(map(str, c.servers)), "ok" if c.ok else "FAILED", c.line] for c in cases]))
    print_notes(cases)
    print(f"\nServers stopping: --silence-limit {LIMIT:g} s (bound {LIMIT + MARGIN:g} s); the statistic row: "
          "released vs exact")
    print(format_table(["drill", "exits", "seconds to stop", "phase", "released", "check", "message"],
                       [drill_row(r, r.phase) for r in runs]))
    print_notes(runs)


def main(argv: Sequence[str] | None = None) -> int:
    """The drill (``--serve DIR``: one of its servers); 0 all as expected, 1 some not, 2 bad usage."""
    words = list(sys.argv[1:] if argv is None else argv)
    if "--serve" in words:
        return serve(words)
    return drill_main(
        words, name="owners drill",
        parse=lambda w: parse_drill_argv(w, "python -m scenarios.drills.owners", __doc__ or ""),
        run=run_all, report=report,
        record=lambda options, outcome: {"quick": options.quick, "cases": [c.record() for c in outcome[0]],
                                         "drills": [r.record() for r in outcome[1]]},
        failures=lambda outcome: [c.name for c in outcome[0] if not c.ok] + [r.name for r in outcome[1] if not r.ok])


if __name__ == "__main__":
    sys.exit(main())
