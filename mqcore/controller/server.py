"""`ControllerManager`: one controller node at work (RocketMQ 5's ControllerManager).

It runs the Raft node (:class:`~mqcore.controller.raft.ControllerRaft`), keeps the
heartbeat table, serves the controller's request codes on a remoting server (its own,
``mq controller`` on RocketMQ 5's 19876; or the name server's, ``enableControllerInNamesrv``)
and, while it leads, watches for masters that went silent: every
``scanNotActiveBrokerInterval`` the replicas silent for longer than their heartbeat
timeout are dropped, and a broker name whose master is among them gets a new master
from its in-sync set (never an out-of-sync one unless ``enableElectUncleanMaster``). The
replicas are told of every new master (NOTIFY_BROKER_ROLE_CHANGED) when
``notifyBrokerRoleChanged``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqcore.common.aio import cancel_and_wait
from mqcore.common.properties import PropertiesConfig, prop
from mqcore.controller.config import RaftConfig
from mqcore.controller.heartbeats import BrokerHeartbeatManager
from mqcore.controller.processor import ControllerProcessor
from mqcore.controller.raft import ControllerRaft
from mqcore.controller.results import ControllerResult
from mqcore.errors import ConfigError
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies.controller import SyncStateSet
from mqcore.protocol.headers.controller import NotifyBrokerRoleChangedRequestHeader
from mqcore.remoting import RemotingClient, RemotingServer

__all__ = ["CONTROLLER_PORT", "ControllerConfig", "ControllerManager", "controller_config_from"]

log = logging.getLogger("mq.controller")

CONTROLLER_PORT = 19876
"""RocketMQ 5's ControllerStartup listens here."""
_NOTIFY_TIMEOUT = 3.0


@dataclass
class ControllerConfig(PropertiesConfig):
    """A controller node's settings under RocketMQ 5's ControllerConfig keys."""

    controller_d_leger_group: str = prop("controllerDLegerGroup", "DefaultControllerGroup")
    controller_d_leger_peers: str = prop("controllerDLegerPeers", "n0-127.0.0.1:9877")
    """The Raft group: ``id-host:port`` separated by ``;`` (Raft ports, not remoting)."""
    controller_d_leger_self_id: str = prop("controllerDLegerSelfId", "n0")
    controller_store_path: str = ""
    """Where the Raft log and snapshots live; empty: in memory (lost at a restart)."""
    enable_elect_unclean_master: bool = False
    scan_not_active_broker_interval: int = 5000
    notify_broker_role_changed: bool = True
    listen_port: int = CONTROLLER_PORT
    bind_address: str = "0.0.0.0"

    def raft_config(self) -> RaftConfig:
        return RaftConfig.from_rocketmq(
            self.controller_d_leger_peers,
            self.controller_d_leger_self_id,
            self.controller_store_path or None,
            enable_elect_unclean_master=self.enable_elect_unclean_master,
        )


class ControllerManager:
    """Construct, ``await start()``, ``await shutdown()``."""

    def __init__(self, config: ControllerConfig, *, server: RemotingServer | None = None) -> None:
        self.config = config
        self.raft = ControllerRaft(config.raft_config())
        self.heartbeats = BrokerHeartbeatManager()
        self.client = RemotingClient()
        self.processor = ControllerProcessor(
            self.raft,
            self.heartbeats,
            group=config.controller_d_leger_group,
            peers=config.controller_d_leger_peers,
            notify=self.notify_role_change if config.notify_broker_role_changed else None,
        )
        self._own_server = server is None
        self.server = server or RemotingServer(host=config.bind_address, port=config.listen_port)
        """Its own (``mq controller``), or the name server's it shares."""
        for code, handler in self.processor.handlers().items():
            self.server.register(code, handler)
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def start(self) -> None:
        """Join the Raft group, listen (unless the server is shared) and scan."""
        self.raft.start()
        try:
            if self._own_server:
                await self.server.start()
        except BaseException:
            await self.raft.stop()
            raise
        self._tasks.append(asyncio.create_task(self._scan_loop(), name="controller-scan"))
        log.info(
            "controller %s (Raft %s) serving on %s",
            self.config.controller_d_leger_self_id,
            self.raft.self_address,
            self.addr,
        )

    async def shutdown(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        if self._own_server:
            await self.server.close()
        await self.client.close()
        await self.raft.stop()

    # -- masters that went silent ------------------------------------------------------
    async def _scan_loop(self) -> None:
        interval = self.config.scan_not_active_broker_interval / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.scan()
            except Exception:
                log.exception("scanning for inactive brokers failed")

    async def scan(self) -> list[str]:
        """Drop the silent replicas and, on the leader, elect a master for every broker
        name that needs one (its master silent or gone); the names elected for."""
        self.heartbeats.expire()
        if not self.raft.is_leader:
            self.heartbeats.liveness(leading=False)  # a later lead starts a new grace
            return []
        liveness = self.heartbeats.liveness(leading=True)
        names = self.raft.read(lambda m: m.scan_need_reelect_broker_sets(liveness))
        elected = []
        for name in names:
            result = await self.processor.elect(name, None)
            log.warning(
                "master of %s inactive: election %s (%s)",
                name,
                "done" if result.ok else "failed",
                result.remark or getattr(result.response, "master_address", None),
            )
            if result.ok:
                elected.append(name)
        return elected

    async def notify_role_change(self, broker_name: str, result: ControllerResult[Any]) -> None:
        """NOTIFY_BROKER_ROLE_CHANGED to every replica of ``broker_name``."""
        response = result.response
        header = NotifyBrokerRoleChangedRequestHeader(
            master_address=getattr(response, "master_address", None),
            master_epoch=getattr(response, "master_epoch", None),
            sync_state_set_epoch=getattr(response, "sync_state_set_epoch", None),
            master_broker_id=getattr(response, "master_broker_id", None),
        )
        members = self.raft.read(lambda m: m.state.get(broker_name))
        if members is None:
            return
        body = SyncStateSet(set(members.sync_state_set), members.sync_state_set_epoch).encode()
        for address in [replica.address for replica in members.replicas.values()]:
            request = RemotingCommand.request(
                RequestCode.NOTIFY_BROKER_ROLE_CHANGED, header.to_ext_fields(), body
            )
            try:
                await self.client.invoke(address, request, _NOTIFY_TIMEOUT)
            except Exception as e:  # the broker also polls its replica info
                log.info("role change not delivered to %s: %s", address, e)


def controller_config_from(path: Path | None, **overrides: Any) -> ControllerConfig:
    """A ``controller.conf`` (RocketMQ 5's keys), or the defaults, with ``overrides``
    (field name -> value; ``None`` leaves a setting as it is)."""
    try:
        config = ControllerConfig() if path is None else ControllerConfig.from_properties(path)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}") from None
    chosen = {k: v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(config, **chosen) if chosen else config
