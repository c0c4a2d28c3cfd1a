"""`ClientRole`: the lifecycle a producer, a consumer and an admin share.

A role is configured with the name servers, an instance name, a
:class:`~mqcore.client.config.ClientConfig` and ACL keys, or handed a
:class:`~mqcore.client.instance.ClientInstance` to share (``instance=``). :meth:`start`
takes that instance, or builds one of its own, and calls the role's :meth:`_open`;
:meth:`shutdown` calls :meth:`_close` and shuts down the instance only if the role built
it (a shared one is its owner's to shut down). ``async with`` does both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from mqcore.client.config import default_namesrv, with_credentials
from mqcore.client.errors import ClientStateError
from mqcore.client.instance import ClientConfig, ClientInstance

__all__ = ["ClientRole"]


class ClientRole:
    """Starts and stops a role over its client instance; see the module docstring."""

    def __init__(
        self,
        namesrv: str | Sequence[str] | None = None,
        instance_name: str | None = None,
        client_config: ClientConfig | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        instance: ClientInstance | None = None,
    ) -> None:
        self.namesrv = namesrv if namesrv is not None else default_namesrv()
        self.instance_name = instance_name
        self.client_config = with_credentials(client_config, access_key, secret_key)
        self._shared = instance
        self._instance: ClientInstance | None = None

    async def start(self) -> None:
        if self._instance is not None:
            return
        instance = self._shared or ClientInstance(
            self.namesrv, instance_name=self.instance_name, config=self.client_config
        )
        self._instance = instance
        try:
            await self._open(instance)
        except BaseException:
            self._instance = None
            await self._release(instance)
            raise

    async def shutdown(self) -> None:
        instance, self._instance = self._instance, None
        if instance is None:
            return
        try:
            await self._close(instance)
        finally:
            await self._release(instance)

    async def _release(self, instance: ClientInstance) -> None:
        if instance is not self._shared:
            await instance.shutdown()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    @property
    def instance(self) -> ClientInstance:
        """The client instance while started; ClientStateError otherwise."""
        if self._instance is None:
            raise ClientStateError(self._not_started())
        return self._instance

    @property
    def started(self) -> bool:
        return self._instance is not None

    async def refresh_route(self, topic: str) -> bool:
        """Fetch ``topic``'s route from the name servers into the instance's cache;
        False when they know none."""
        return await self.instance.update_route(topic)

    def broker_addrs(self) -> dict[str, dict[int, str]]:
        """Broker name -> broker id -> address, of every route in the cache (a copy)."""
        return dict(self.instance.broker_addrs)

    # -- what a role adds -------------------------------------------------------------------

    async def _open(self, instance: ClientInstance) -> None:
        """Join ``instance`` (``self.instance`` is already set); raising undoes the start."""
        await instance.start()

    async def _close(self, instance: ClientInstance) -> None:
        """Leave ``instance``; it is shut down afterwards if the role built it."""

    def _not_started(self) -> str:
        return f"{type(self).__name__} is not started: call `await start()` or use `async with`"
