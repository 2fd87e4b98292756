"""Many data owners: upload once, go offline; the MPyC parties compute as servers (docs/owners.md).  Modules:
``campaign`` (the public campaign file), ``sealing`` (server keys, sealed records, the Shamir shares they carry),
``inbox`` (transport, uploads), ``intake`` (the servers' refusals, agreement and checks).

Threat model (docs/owners.md): at most ``t`` of the ``m`` servers semi-honest, any number of malicious owners;
servers 0 and 1 do not collude on the DPF (histogram) path (together they learn every owner's cell).  Public to the
servers: the owner tokens, each owner's row count (one upload per token) and the number of refused uploads."""
from __future__ import annotations

from secure.owners.campaign import Campaign
from secure.owners.inbox import FolderTransport, simulate_owners, submit
from secure.owners.intake import Intake, close, load_shares, open_inbox, owner_columns, owner_histogram
from secure.owners.sealing import generate_server_key, load_private_key, pack, seal, split, unseal

__all__ = ["Campaign", "FolderTransport", "simulate_owners", "submit", "Intake", "close", "load_shares", "open_inbox",
           "owner_columns", "owner_histogram", "generate_server_key", "load_private_key", "seal", "unseal", "pack",
           "split"]
