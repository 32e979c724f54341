"""What a stateless HTTP endpoint remembers of the 2025-era handshake, by caller.

The endpoint mints no session id, so nothing ties ``initialize`` (which declares
the client's capabilities) or ``logging/setLevel`` to the POSTs that follow. This
keeps both by principal, for the ``tools/call`` requests of that principal, on
this replica: the last handshake of a principal wins, and the least recently
seen are forgotten past ``limit``. Behind a load balancer, route each caller to
one replica (docs/context.md); elsewhere a call sees no capabilities and no
log level, so it logs nothing and gets "not supported" if it asks the client.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..principal import Principal
from ..server.dispatch import Connection

__all__ = ["LegacyPeers"]

DEFAULT_LIMIT = 10_000


@dataclass(slots=True)
class _Peer:
    capabilities: dict[str, Any] = field(default_factory=dict)
    log_level: str | None = None


class LegacyPeers:
    """Handshake state by principal digest, least recently used first."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._peers: OrderedDict[str, _Peer] = OrderedDict()

    def load(self, principal: Principal, connection: Connection) -> None:
        """Give ``connection`` what this principal's handshake set up, if anything."""
        peer = self._peers.get(principal.digest)
        if peer is None:
            return
        self._peers.move_to_end(principal.digest)
        connection.client_capabilities = peer.capabilities
        connection.log_level = peer.log_level

    def save(self, method: str, principal: Principal, connection: Connection) -> None:
        """Remember what an ``initialize`` or ``logging/setLevel`` just set."""
        if method == "initialize":
            peer = _Peer(connection.client_capabilities)  # a new handshake starts afresh
        elif method == "logging/setLevel":
            peer = self._peers.get(principal.digest) or _Peer()
            peer.log_level = connection.log_level
        else:
            return
        self._peers[principal.digest] = peer
        self._peers.move_to_end(principal.digest)
        while len(self._peers) > self._limit:
            self._peers.popitem(last=False)

    def asks(self, principal: Principal) -> bool:
        """Whether this principal's client can be sent requests (elicitation, sampling)."""
        peer = self._peers.get(principal.digest)
        return peer is not None and any(
            isinstance(peer.capabilities.get(c), dict) for c in ("elicitation", "sampling")
        )
