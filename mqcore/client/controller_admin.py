"""`ControllerAdmin`: what an operator asks RocketMQ 5's controllers (mqadmin's
``getControllerMetaData``, ``getSyncStateSet`` and ``electMaster``), from mq's or a real
RocketMQ 5 controller alike.

Controllers are given as their remoting addresses; the leader is the one that says so
(GET_METADATA_INFO's ``isLeader``), and only the leader answers reads and elections.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

from mqcore.errors import MQBrokerError, MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.controller import (
    BrokerReplicasInfo,
    ElectMasterResponseBody,
    encode_broker_names,
)
from mqcore.protocol.headers.controller import (
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
)
from mqcore.remoting import RemotingClient

__all__ = ["ControllerAdmin", "ControllerMetadata"]


@dataclass(frozen=True, slots=True)
class ControllerMetadata:
    """One controller's view: its group, the Raft leader it knows, whether it leads."""

    address: str
    group: str | None
    leader_id: str | None
    leader_address: str | None
    is_leader: bool
    peers: str | None


class ControllerAdmin:
    """``async with ControllerAdmin("host:port;host:port") as admin: ...``"""

    def __init__(self, controllers: str | list[str], *, timeout: float = 5.0) -> None:
        addrs = controllers.split(";") if isinstance(controllers, str) else controllers
        self.controllers = [a.strip() for a in addrs if a.strip()]
        self.timeout = timeout
        self._client = RemotingClient()

    async def __aenter__(self) -> ControllerAdmin:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._client.close()

    async def _call(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        response = await self._client.invoke(addr, request, self.timeout)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, f"{response.remark or ''} (controller {addr})")
        return response

    async def metadata(self, addr: str) -> ControllerMetadata:
        """GET_METADATA_INFO of one controller."""
        response = await self._call(
            addr, RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO)
        )
        h = GetMetaDataResponseHeader.from_command(response)
        return ControllerMetadata(
            addr, h.group, h.controller_leader_id, h.controller_leader_address, h.is_leader, h.peers
        )

    async def leader(self) -> str:
        """The remoting address of the controller that leads; MQBrokerError when none
        of them says it does."""
        for addr in self.controllers:
            try:
                if (await self.metadata(addr)).is_leader:
                    return addr
            except (OSError, MQError):
                continue
        raise MQBrokerError(
            ResponseCode.CONTROLLER_NOT_LEADER,
            f"no controller of {';'.join(self.controllers)} leads (an election may be under way)",
        )

    async def sync_state_data(self, broker_names: list[str]) -> BrokerReplicasInfo:
        """CONTROLLER_GET_SYNC_STATE_DATA: masters, epochs and in-sync replicas."""
        request = RemotingCommand.request(
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=encode_broker_names(broker_names)
        )
        return BrokerReplicasInfo.decode((await self._call(await self.leader(), request)).body)

    async def elect_master(
        self, cluster: str, broker_name: str, broker_id: int
    ) -> tuple[ElectMasterResponseHeader, ElectMasterResponseBody | None]:
        """mqadmin ``electMaster``: make ``broker_id`` the master (designated: it is
        elected only if it may be)."""
        header = ElectMasterRequestHeader.of_admin_trigger(cluster, broker_name, broker_id)
        request = RemotingCommand.request(
            RequestCode.CONTROLLER_ELECT_MASTER, header.to_ext_fields()
        )
        response = await self._call(await self.leader(), request)
        body = ElectMasterResponseBody.decode(response.body) if response.body else None
        return ElectMasterResponseHeader.from_command(response), body
