"""asyncio transports of the remoting protocol: server, client, channels, dispatch.

Entry points: :class:`RemotingServer` (register processors by request code, then
``await start()``), :class:`RemotingClient` (``await invoke(addr, request)``), and the
socket-free :class:`InMemoryNetwork` / :class:`InMemoryRemotingClient` for tests.
"""

from __future__ import annotations

from mqcore.remoting.channel import Channel
from mqcore.remoting.client import RemotingClient, split_address
from mqcore.remoting.dispatcher import Processor, ProcessorResult, RequestDispatcher
from mqcore.remoting.errors import ChannelClosedError, RemotingConnectError
from mqcore.remoting.loop import new_event_loop, run, uvloop_available
from mqcore.remoting.memory import InMemoryNetwork, InMemoryRemotingClient
from mqcore.remoting.server import (
    DEFAULT_FRAME_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_PER_ADDRESS,
    ChannelLimits,
    RemotingServer,
)

__all__ = [
    "DEFAULT_FRAME_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_PER_ADDRESS",
    "Channel",
    "ChannelClosedError",
    "ChannelLimits",
    "InMemoryNetwork",
    "InMemoryRemotingClient",
    "Processor",
    "ProcessorResult",
    "RemotingClient",
    "RemotingConnectError",
    "RemotingServer",
    "RequestDispatcher",
    "new_event_loop",
    "run",
    "split_address",
    "uvloop_available",
]
