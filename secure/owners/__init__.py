"""Many data owners: upload once, go offline; the MPyC parties compute as servers (docs/owners.md).

- :mod:`secure.owners.campaign` the public campaign file (servers' keys, ``t``, ``L``, ``K``, the field's prime,
  declared columns, rows per owner, deadline, DPF grid);
- :mod:`secure.owners.sealing`  server keys, records sealed to one server (X25519 + HKDF-SHA256 + AES-256-GCM);
- :mod:`secure.owners.shares`   Shamir shares in MPyC's field, the payload;
- :mod:`secure.owners.inbox`    the transport, :func:`submit`, :func:`simulate_owners`;
- :mod:`secure.owners.intake`   :func:`open_inbox` (refusals), :func:`close` (agreement), :func:`load_shares`, the checks.

Threat model: at most ``t`` of the ``m`` servers semi-honest (they follow the protocol and may pool what they
see), any number of malicious owners.  A server colluding with owners learns only those owners' rows.  For the
DPF (histogram) path servers 0 and 1 must not collude: together they learn every owner's cell.  Who uploaded
(the owner tokens) and how many rows each owner uploaded are visible to the servers; one upload per owner token
(a token with two records is refused whole); the number of refused uploads is public."""
from __future__ import annotations

from secure.owners.campaign import Campaign, field_prime, grid_bits
from secure.owners.inbox import FolderTransport, Transport, simulate_owners, submit
from secure.owners.intake import Intake, close, load_shares, open_inbox, owner_columns, owner_histogram
from secure.owners.sealing import RecordError, generate_server_key, load_private_key, seal, unseal
from secure.owners.shares import pack, split, unpack

__all__ = ["Campaign", "field_prime", "grid_bits", "Intake", "close", "open_inbox", "owner_columns",
           "FolderTransport", "Transport", "simulate_owners", "submit", "RecordError", "generate_server_key",
           "load_private_key", "seal", "unseal", "load_shares", "pack", "split", "unpack", "owner_histogram"]
