"""Many data owners: upload once, go offline; the MPyC parties compute as servers (docs/owners.md).  Modules:
``campaign`` (the public campaign file), ``sealing`` (server keys, sealed records), ``shares`` (Shamir shares, the
payload), ``inbox`` (transport, uploads), ``intake`` (the servers' refusals, agreement and checks).

Threat model: at most ``t`` of the ``m`` servers semi-honest (they follow the protocol and may pool what they
see), any number of malicious owners.  A server colluding with owners learns only those owners' rows.  For the
DPF (histogram) path servers 0 and 1 must not collude: together they learn every owner's cell.  Who uploaded
(the owner tokens) and how many rows each owner uploaded are visible to the servers; one upload per owner token
(a token with two records is refused whole); the number of refused uploads is public."""
from __future__ import annotations

from secure.owners.campaign import Campaign
from secure.owners.inbox import FolderTransport, simulate_owners, submit
from secure.owners.intake import Intake, close, load_shares, open_inbox, owner_columns, owner_histogram
from secure.owners.sealing import generate_server_key, load_private_key, seal, unseal
from secure.owners.shares import pack, split

__all__ = ["Campaign", "FolderTransport", "simulate_owners", "submit", "Intake", "close", "load_shares", "open_inbox",
           "owner_columns", "owner_histogram", "generate_server_key", "load_private_key", "seal", "unseal", "pack",
           "split"]
