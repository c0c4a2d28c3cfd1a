"""Broker request processors, one module per area.

Each module exposes ``handlers(ctx) -> dict[request code, Processor]``: it builds its
processors from the :class:`~mqcore.broker.context.BrokerContext` and returns its table.
A processor module never imports the controller, starts no service and schedules no
timer; the controller puts each table on its ports (:mod:`mqcore.broker.port_handlers` says which).

Shared here: :func:`reply`, the one way processors build an answer (response code,
remark, typed header), so every error carries a remark as RocketMQ's do;
:func:`reply_when_written`, the answer to a change that must be on disk first; and
:func:`serve`, the one way a table of handlers goes onto the broker's ports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from concurrent.futures import Future

from mqcore.errors import ConfigError
from mqcore.protocol import RemotingCommand, ResponseCode
from mqcore.protocol.headers import CommandHeader
from mqcore.remoting import Processor, RemotingServer

__all__ = ["reply", "reply_when_written", "serve"]


def serve(servers: Iterable[RemotingServer], table: Mapping[int, Processor]) -> None:
    """Register every code of ``table`` on each of ``servers`` (the main and fast ports
    alike, as RocketMQ registers its processors on both)."""
    for server in servers:
        for code, fn in table.items():
            server.register(code, fn)


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


async def reply_when_written(request: RemotingCommand, *written: Future[None]) -> RemotingCommand:
    """SUCCESS once every write of ``written`` (the persister's group commits) is done;
    SYSTEM_ERROR naming the file when one failed (the change stays in memory and is
    written again at the next turn, but the client is not told it is durable)."""
    for future in written:
        try:
            await asyncio.wrap_future(future)
        except ConfigError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"not persisted: {exc}")
    return reply(request)
