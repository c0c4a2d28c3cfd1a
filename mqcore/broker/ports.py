"""The broker's two remoting ports, as RocketMQ has them: ``listenPort`` and the "VIP
channel" two below it (Java 4.x producers send there by default), built alike and bound
as a pair. With ``listenPort`` 0 a free pair is found."""

from __future__ import annotations

from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.remoting import ChannelLimits, RemotingServer
from mqcore.remoting.tls import ServerTls
from mqcore.store.store_config import MessageStoreConfig

__all__ = ["FAST_PORT_DISTANCE", "listen_pair", "server_pair"]

FAST_PORT_DISTANCE = 2
"""RocketMQ's VIP channel listens on ``listenPort - 2``."""
_PORT_PAIR_ATTEMPTS = 50


def server_pair(
    host: str,
    listen_port: int,
    store_config: MessageStoreConfig,
    limits: ChannelLimits,
    tls: ServerTls | None,
) -> tuple[RemotingServer, RemotingServer]:
    """The main and the fast server, not listening yet; frames carry a full batch."""
    max_frame = max(DEFAULT_MAX_FRAME, store_config.max_message_size + 1024 * 1024)
    main, fast = (
        RemotingServer(host=host, port=port, max_frame=max_frame, limits=limits, tls=tls)
        for port in (listen_port, max(0, listen_port - FAST_PORT_DISTANCE))
    )
    return main, fast


async def listen_pair(server: RemotingServer, fast: RemotingServer, listen_port: int) -> None:
    """Bind ``listen_port`` and ``listen_port - 2``; with port 0 find a free pair."""
    if listen_port != 0:
        server.port = listen_port
        fast.port = listen_port - FAST_PORT_DISTANCE
        if fast.port < 1:
            raise OSError(f"listenPort {listen_port} leaves no fast port")
        await server.start()
        try:
            await fast.start()
        except BaseException:
            await server.close()
            raise
        return
    last: OSError | None = None
    for _ in range(_PORT_PAIR_ATTEMPTS):
        fast.port = 0
        await fast.start()
        server.port = fast.port + FAST_PORT_DISTANCE
        try:
            await server.start()
            return
        except OSError as exc:
            last = exc
            await fast.close()
    raise OSError(f"no free port pair (port, port-2) found: {last}")
