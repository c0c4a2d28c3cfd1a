"""The connection limits of the broker's servers, from BrokerConfig's keys.

``serverChannelMaxIdleTimeSeconds``, ``serverFrameReadTimeoutSeconds`` and
``serverMaxConnectionsPerAddress`` apply to the main and the fast port alike (see
:class:`~mqcore.remoting.ChannelLimits`); they must be set before the servers start.
"""

from __future__ import annotations

from mqcore.broker.config import BrokerConfig
from mqcore.remoting import ChannelLimits, RemotingServer

__all__ = ["apply_channel_limits"]


def apply_channel_limits(config: BrokerConfig, *servers: RemotingServer) -> ChannelLimits:
    """Give ``servers`` the limits ``config`` asks for. Raises ConfigError."""
    limits = ChannelLimits.from_config(config)
    for server in servers:
        server.limits = limits
    return limits
