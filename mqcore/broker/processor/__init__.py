"""Broker request processors, one module per area; each exposes ``register(controller)``.

Shared here: :func:`reply`, the one way processors build an answer (response code,
remark, typed header), so every error carries a remark as RocketMQ's do.
"""

from __future__ import annotations

from mqcore.protocol import RemotingCommand, ResponseCode
from mqcore.protocol.headers import CommandHeader

__all__ = ["reply"]


def reply(
    request: RemotingCommand,
    code: int = ResponseCode.SUCCESS,
    remark: str | None = None,
    header: CommandHeader | None = None,
    body: bytes | bytearray | memoryview = b"",
) -> RemotingCommand:
    """The response to ``request`` with ``header``'s fields as extFields."""
    return RemotingCommand.response_to(
        request, code, remark, header.to_ext_fields() if header is not None else None, body
    )
