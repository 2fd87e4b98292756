"""Many data owners: server keys, a campaign, owners' sealed uploads, and a simulation of many owners.

Each owner uploads once (Shamir shares of its rows in the field of MPyC's ``SecInt(L)``, one record sealed to
each server) and goes offline; the servers later close their inboxes (docs/owners.md).  Run it::

    python -m scenarios.owner keygen --server 0 --dir keys           # at each server: 0, 1, 2
    python -m scenarios.owner campaign --servers keys/server0.pub keys/server1.pub keys/server2.pub -T 1 \\
        --columns x,y --domain x=0:10:1 --categories 'y=a|b|c' --rows-per-owner 1 --save campaign.json
    python -m scenarios.owner submit --campaign campaign.json --row "x=3.5,y=b" --inbox 'inbox/server{pid}'
    python -m scenarios.owner simulate --campaign campaign.json --owners 10000

Each command's options: its ``-h``, docs/owners.md.  Exit 0 done; 2 with one line ``error: ...``.
Threat model: :mod:`secure.owners`; this tool runs no MPC."""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from scenarios.kit.categories import parse_categories, parse_others
from scenarios.kit.cli import ScenarioParser, UsageError, asks_for_help, format_bytes
from scenarios.kit.options import parse_columns, parse_domains, parse_steps

__all__ = ["build_parser", "main"]


def build_parser() -> ScenarioParser:
    parser = ScenarioParser(prog="python -m scenarios.owner", description=__doc__, runs_as="tool")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{keygen,campaign,submit,simulate}",
                                     parser_class=ScenarioParser)
    keygen = commands.add_parser("keygen", runs_as="tool", help="a server's X25519 key pair",
                                 description="Write a server's private key (mode 0600) and public key.")
    keygen.add_argument("--server", type=int, required=True, metavar="I", help="the server's index 0, 1, ...")
    keygen.add_argument("--dir", required=True, metavar="DIR", help="where serverI.key and serverI.pub go")
    campaign = commands.add_parser("campaign", runs_as="tool", help="write a campaign file",
                                   description="Write a public campaign file.")
    campaign.add_argument("--servers", nargs="+", required=True, metavar="PUB",
                          help="the servers' public key files, server 0 first")
    campaign.add_argument("-T", type=int, default=1, dest="threshold", help="MPyC's threshold t of the servers")
    campaign.add_argument("-L", type=int, default=52, dest="bits", help="MPyC's bit length of the servers' run")
    campaign.add_argument("-K", type=int, default=72, dest="security", help="its security parameter; the field must "
                          "hold L + K >= the statistic's bits + the K' the run raises to (-L 52 -K 72 fit the sort and "
                          "tuple paths at up to 10^6 rows, epsilon <= 1: bits <= 52, K' <= 71; docs/owners.md)")
    campaign.add_argument("--columns", required=True, metavar="A,B,...", help="the declared columns, in order")
    campaign.add_argument("--domain", metavar="C=LO:HI[:BITS[:STEP]],...", help="the domain of each numeric column")
    campaign.add_argument("--categories", metavar="'C=A|B|...[,D=...]'", help="the list of each categorical column")
    campaign.add_argument("--other", metavar="C=NAME[,D=NAME]", help="a bucket for values outside C's list")
    campaign.add_argument("--rows-per-owner", type=int, default=1, metavar="N", help="the most rows an owner uploads")
    campaign.add_argument("--deadline", metavar="ISO", help="closing time in UTC (default: in 7 days)")
    campaign.add_argument("--dpf", action="store_true", help="owners add DPF keys for servers 0 and 1 (histograms)")
    campaign.add_argument("--save", required=True, metavar="PATH", help="the campaign file to write")
    inbox = "the servers' inboxes ({pid}: the server)"
    submit = commands.add_parser("submit", runs_as="tool", help="one owner's upload", description="One owner's upload.")
    submit.add_argument("--campaign", required=True, metavar="PATH", help="the campaign file")
    submit.add_argument("--row", action="append", required=True, metavar="C=V,...", help="one row (repeat)")
    submit.add_argument("--inbox", required=True, metavar="PATTERN", help=inbox)
    simulate = commands.add_parser("simulate", runs_as="tool", help="many owners' uploads, measured",
                                   description="Many owners' uploads, measured.")
    simulate.add_argument("--campaign", required=True, metavar="PATH", help="the campaign file")
    simulate.add_argument("--owners", type=int, default=1000, metavar="N", help="number of simulated owners")
    simulate.add_argument("--inbox", metavar="PATTERN", help=inbox + "; default: records only measured")
    simulate.add_argument("--seed", type=int, default=0, help="seed of the simulated values (not of the shares)")
    return parser


def _keygen(options: argparse.Namespace) -> None:
    from secure.owners import generate_server_key

    if options.server < 0:
        raise UsageError(f"--server must be 0, 1, ..., got {options.server}")
    try:
        private, public = generate_server_key(options.server, options.dir)
    except FileExistsError as exc:
        raise UsageError(f"{exc.filename} exists: a server keeps its key (remove it to make a new one)") from None
    print(f"server {options.server}: private key {private} (keep it), public key {public} (for the campaign)")


def _campaign(options: argparse.Namespace) -> None:
    from secure.columns import ColumnSpec
    from secure.owners import Campaign

    names = parse_columns(options.columns)
    domains, steps = parse_domains(options.domain), parse_steps(options.domain)
    lists, others = parse_categories(options.categories), parse_others(options.other)
    for name in [*domains, *lists, *others]:
        if name not in names:
            raise UsageError(f"column '{name}' is declared but not in --columns {options.columns}")
    columns = []
    for name in names:
        if name in lists:
            columns.append(ColumnSpec.categorical(name, lists[name], other=others.get(name)))
        elif name in domains:
            low, high, bits = domains[name]
            columns.append(ColumnSpec(name, low, high, bits or 0, step=steps.get(name)))
        else:
            raise UsageError(f"column '{name}' needs --domain {name}=LO:HI[:BITS] or --categories {name}=A|B|...")
    deadline = options.deadline or (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=7)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    keys = [Path(path).read_text().strip() for path in options.servers]
    campaign = Campaign.create(public_keys=keys, threshold=options.threshold, columns=columns, deadline=deadline,
                               rows_per_owner=options.rows_per_owner, bits=options.bits, security=options.security,
                               dpf=options.dpf)
    campaign.save(options.save)
    print(f"campaign {campaign.id}: {campaign.servers} servers, t = {campaign.threshold}, L = {campaign.bits}, "
          f"K = {campaign.security}, p = {campaign.prime}, until {campaign.deadline}; written to {options.save}")


def _submit(options: argparse.Namespace) -> None:
    from secure.owners import Campaign, FolderTransport, submit

    rows = []
    for text in options.row:
        pairs = [item.partition("=") for item in text.split(",")]
        if any(not sep or not name.strip() for name, sep, _ in pairs):
            raise UsageError(f"--row expects C=V,..., got '{text}'")
        rows.append({name.strip(): value.strip() for name, _, value in pairs})
    _, sent = submit(Campaign.load(options.campaign), rows, FolderTransport(options.inbox))
    print(f"uploaded {len(rows)} row{'s' * (len(rows) > 1)}: one record per server, "
          f"{', '.join(format_bytes(size) for size in sent)}")


def _simulate(options: argparse.Namespace) -> None:
    from secure.owners import Campaign, FolderTransport, simulate_owners, submit

    if options.owners < 1:
        raise UsageError(f"--owners must be at least 1, got {options.owners}")
    campaign = Campaign.load(options.campaign)
    generator = np.random.default_rng(options.seed)
    shape = (options.owners, campaign.rows_per_owner)
    columns = {spec.name: (generator.choice(np.array(spec.labels), size=shape) if spec.categories is not None
                           else generator.uniform(spec.lower, spec.upper, size=shape)) for spec in campaign.columns}
    class Counted:  # a transport that only counts (secure.owners.inbox.Transport): no --inbox
        def post(self, server: int, record: bytes) -> None: pass
    transport = FolderTransport(options.inbox) if options.inbox else Counted()
    start = time.process_time()
    _, sent = simulate_owners(campaign, columns, transport)
    middle = time.process_time()
    for i in range(20):
        submit(campaign, [{name: values[i % options.owners, 0] for name, values in columns.items()}], Counted())
    seconds, alone = middle - start, (time.process_time() - middle) / 20
    rows = options.owners * campaign.rows_per_owner
    print(f"{options.owners} owners, {campaign.rows_per_owner} row(s) each, {campaign.servers} servers"
          + (f", DPF keys on a 2^{campaign.dpf_bits} grid" if campaign.dpf_bits else ""))
    print(f"  owner CPU: {1e3 * seconds / options.owners:.3f} ms per owner generated together, "
          f"{1e3 * alone:.3f} ms for one owner alone (1 row)")
    print(f"  bytes per server per row: {', '.join(f'{size / rows:.0f}' for size in sent)}")


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "keygen": _keygen, "campaign": _campaign, "submit": _submit, "simulate": _simulate}


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if asks_for_help(words):
        words = [words[0], "--help"] if words and words[0] in COMMANDS else ["--help"]
    try:
        parser = build_parser()
        if "--help" not in words:
            parser.refuse_unknown(words)
        options = parser.parse_args(words)
        COMMANDS[options.command](options)
    except SystemExit as exc:
        return int(exc.code or 0)
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename or 'a file'}: {(exc.strerror or str(exc)).lower()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
