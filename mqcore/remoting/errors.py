"""Transport failures. Both are retriable: the request may be sent again elsewhere."""

from __future__ import annotations

from mqcore.errors import MQClientError

__all__ = ["ChannelClosedError", "RemotingConnectError"]


class RemotingConnectError(MQClientError):
    """Could not open a connection to the address (refused, unreachable, timed out)."""

    retriable = True


class ChannelClosedError(MQClientError):
    """The connection closed before the answer arrived (or before the request was sent)."""

    retriable = True
