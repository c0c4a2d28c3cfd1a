"""`NamesrvController`: wires config, registries, the remoting server and the liveness scan.

Usage (in-process, e.g. tests)::

    controller = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1"))
    await controller.start()
    addr = controller.listen_address        # "127.0.0.1:<bound port>"
    ...
    await controller.shutdown()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from mqcore.acl.guard import AclGuard
from mqcore.acl.permission import NAMESRV_ADMIN_CODES
from mqcore.common.loop_lag import LoopLagMonitor
from mqcore.controller.server import ControllerConfig, ControllerManager
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.kvconfig import KVConfigManager
from mqcore.namesrv.metrics import metrics_endpoint
from mqcore.namesrv.processor import NamesrvProcessor
from mqcore.namesrv.routeinfo import RouteInfoManager
from mqcore.remoting import Channel, ChannelLimits, RemotingServer
from mqcore.remoting.tls import ServerTls

__all__ = ["NamesrvController"]

log = logging.getLogger("mq.namesrv")


class NamesrvController:
    """One name server. Several can run side by side; nothing syncs them (as RocketMQ)."""

    def __init__(
        self, config: NamesrvConfig, controller_config: ControllerConfig | None = None
    ) -> None:
        """``controller_config``: the controller's settings when the name server hosts
        one (``enableControllerInNamesrv``); RocketMQ 5's defaults otherwise."""
        self.config = config
        self.routes = RouteInfoManager(time.monotonic, config.broker_channel_expired_time / 1000)
        self.kv = KVConfigManager(Path(config.kv_config_path).expanduser())
        self.processor = NamesrvProcessor(config, self.routes, self.kv)
        self.server = RemotingServer(
            host=config.bind_address,
            port=config.listen_port,
            max_frame=config.frame_max_length,
            limits=ChannelLimits.from_config(config),
            tls=ServerTls.from_config(config),  # tls.server.mode and its files
        )
        self.processor.register_to(self.server.dispatcher)
        self.acl_guard = AclGuard.from_config(
            config.acl_enable,
            config.plain_acl_file,
            Path(config.kv_config_path).expanduser().parent,
            only=NAMESRV_ADMIN_CODES,
        )
        self.server.dispatcher.pre_dispatch = self.acl_guard  # ACL: admin codes only
        self.server.add_close_listener(self._channel_closed)
        self._scan_task: asyncio.Task[None] | None = None
        self.loop_lag = LoopLagMonitor(server="name server")
        """Every broker and client is served on one loop: a stall is logged."""
        self.metrics = metrics_endpoint(config, self.routes, self.loop_lag, self.server)
        """The Prometheus endpoint (``metricsExporterType=PROM``), None without it."""
        self.controller: ControllerManager | None = None
        """The controller it hosts (``enableControllerInNamesrv``), on the same port."""
        if config.enable_controller_in_namesrv:
            self.controller = ControllerManager(
                controller_config or ControllerConfig(), server=self.server
            )

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def listen_address(self) -> str:
        return self.server.listen_address

    def _channel_closed(self, channel: Channel) -> None:
        self.routes.on_channel_destroy(channel)

    async def start(self) -> None:
        """Load the KV file, listen, start the scan. Raises ConfigError / OSError."""
        self.kv.load()
        await self.server.start()
        try:
            if self.metrics is not None:
                self.metrics.serve()
            if self.controller is not None:
                await self.controller.start()
        except BaseException:
            if self.metrics is not None:
                await self.metrics.stop()
            await self.server.close()
            raise
        if self.acl_guard is not None:
            self.acl_guard.start()
        self._scan_task = asyncio.create_task(self._scan_loop(), name="namesrv-scan")
        self.loop_lag.start()

    async def _scan_loop(self) -> None:
        interval = self.config.scan_not_active_broker_interval / 1000
        while True:
            await asyncio.sleep(interval)
            self.scan_not_active_brokers()

    def scan_not_active_brokers(self) -> None:
        """Remove expired brokers and close their connections."""
        for channel in self.routes.scan_not_active_brokers():
            if isinstance(channel, Channel):
                channel.close()

    async def shutdown(self) -> None:
        if self.metrics is not None:
            await self.metrics.stop()
        await self.loop_lag.stop()
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
            self._scan_task = None
        if self.acl_guard is not None:
            await self.acl_guard.close()
        if self.controller is not None:
            await self.controller.shutdown()
        await self.server.close()
        log.info("name server on %s stopped", self.listen_address)
