"""Where a controller node is and who its peers are.

RocketMQ 5 names the Raft group in ``controllerDLegerPeers`` (``n0-127.0.0.1:9877;
n1-127.0.0.1:9878``), this node in ``controllerDLegerSelfId`` (``n0``) and its files in
``controllerStorePath``; :meth:`RaftConfig.from_rocketmq` reads those, and the plain
constructor takes addresses. The Raft addresses are the peers' own port, not the
controller's remoting port.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mqcore.errors import ConfigError

__all__ = ["RaftConfig", "parse_peers"]


def parse_peers(text: str) -> dict[str, str]:
    """``n0-host:port;n1-host:port`` as ``{"n0": "host:port", ...}`` in that order."""
    peers: dict[str, str] = {}
    for item in text.split(";"):
        item = item.strip()
        if not item:
            continue
        node_id, sep, address = item.partition("-")
        if not sep or not node_id or not _is_address(address):
            raise ConfigError(f"controllerDLegerPeers: {item!r} is not id-host:port")
        if node_id in peers:
            raise ConfigError(f"controllerDLegerPeers: {node_id} is named twice")
        peers[node_id] = address
    if not peers:
        raise ConfigError("controllerDLegerPeers names no peer")
    return peers


def _is_address(address: str) -> bool:
    host, sep, port = address.rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


@dataclass(frozen=True)
class RaftConfig:
    """One controller node: its Raft address, the others', and where it keeps its log.

    ``store_path`` holds the Raft journal and snapshots, so the state survives a restart
    of every node; ``None`` keeps them in memory (tests). The timeouts are Raft's
    (seconds): a leader that is silent for ``election_timeout`` is replaced. A snapshot
    is written (and the journal cut) once the log holds ``snapshot_min_entries`` or
    ``snapshot_min_seconds`` have passed since the last one."""

    self_address: str
    peer_addresses: tuple[str, ...] = ()
    store_path: Path | None = None
    enable_elect_unclean_master: bool = False
    election_timeout: tuple[float, float] = (0.4, 1.4)
    heartbeat_period: float = 0.1
    connection_retry: float = 0.5
    snapshot_min_entries: int = 5000
    snapshot_min_seconds: float = 300.0

    def __post_init__(self) -> None:
        for address in (self.self_address, *self.peer_addresses):
            if not _is_address(address):
                raise ConfigError(f"a Raft address is host:port, not {address!r}")

    @property
    def others(self) -> tuple[str, ...]:
        """The peers other than this node (a peer list may name this node too)."""
        return tuple(a for a in self.peer_addresses if a != self.self_address)

    @classmethod
    def from_rocketmq(
        cls,
        peers: str,
        self_id: str,
        store_path: str | Path | None = None,
        *,
        enable_elect_unclean_master: bool = False,
    ) -> RaftConfig:
        """From ``controllerDLegerPeers``, ``controllerDLegerSelfId`` and
        ``controllerStorePath`` (an empty path keeps the log in memory)."""
        table = parse_peers(peers)
        if self_id not in table:
            raise ConfigError(
                f"controllerDLegerSelfId {self_id!r} is not in controllerDLegerPeers "
                f"({', '.join(table)})"
            )
        return cls(
            self_address=table[self_id],
            peer_addresses=tuple(table.values()),
            store_path=Path(store_path) if store_path else None,
            enable_elect_unclean_master=enable_elect_unclean_master,
        )
