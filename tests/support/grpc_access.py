"""A broker's own gRPC access point (local mode) served for a test, and a stub of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from grpc import aio

from mqcore.broker.controller import BrokerController
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from mqcore.proxy.local import LocalAccessPoint


@asynccontextmanager
async def access_point_stub(
    broker: BrokerController, **options: Any
) -> AsyncIterator[tuple[LocalAccessPoint, Any]]:
    """``broker``'s access point on a free port (``options``: LocalAccessPoint's) and a
    MessagingService stub over a plaintext channel to it; both closed after."""
    point = LocalAccessPoint(broker, 0, **options)
    await point.start()
    try:
        async with aio.insecure_channel(point.address) as channel:
            yield point, MessagingServiceStub(channel)
    finally:
        await point.stop()
