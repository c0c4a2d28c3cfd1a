"""What a call of the access point knows of its caller, and of its broker."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mqcore.acl.config import PlainAclConfig
from mqcore.common.metadata import SubscriptionGroupConfig, TopicConfig
from mqcore.protocol import RemotingCommand
from mqcore.remoting import Channel

__all__ = ["BrokerSide", "CallContext", "dispatch_in_process"]


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who makes a call: the ``x-mq-*`` metadata and the peer's address."""

    client_id: str
    remote_address: str
    language: str = "JAVA"
    client_version: str = ""
    namespace: str = ""
    access_key: str | None = None
    """The account the call was signed with (ACL), None when unsigned."""


@dataclass(frozen=True, slots=True)
class BrokerSide:
    """What the access point uses of its broker (local mode): its request handlers, and a
    few look-ups and notices the handlers' requests cannot express."""

    dispatch: Callable[[Channel, RemotingCommand], Awaitable[RemotingCommand | None]]
    """A remoting request into the broker's handlers, in process (no ACL check there:
    the access point checks gRPC calls itself)."""
    broker_name: str
    topic_config: Callable[[str], TopicConfig | None]
    group_config: Callable[[str], SubscriptionGroupConfig | None]
    channel_closed: Callable[[Channel], None]
    """The broker's reaction to a closed client connection (forget it in every group)."""
    acl: Callable[[], PlainAclConfig | None] = lambda: None
    """The ACL accounts in force (``aclEnable``), None without ACL."""


async def dispatch_in_process(
    dispatch: Callable[[Channel, RemotingCommand], object],
    channel: Channel,
    request: RemotingCommand,
) -> RemotingCommand | None:
    """A dispatcher's answer, awaited when its processor answers later."""
    result = dispatch(channel, request)
    if inspect.isawaitable(result):
        result = await result
    return result if isinstance(result, RemotingCommand) else None
