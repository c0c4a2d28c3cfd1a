"""The controller's request handlers: RocketMQ 5's ControllerRequestProcessor codes.

Each handler decodes its header (and body), lets :class:`~mqcore.controller.raft.
ControllerRaft` decide it on the Raft leader and replicate the events, and answers with
the result's code, response header and body. A node that is not the leader answers
CONTROLLER_NOT_LEADER, and brokers look for the leader with CONTROLLER_GET_METADATA_INFO
(the node that says ``isLeader``). After a successful election the brokers of that
broker name are told (NOTIFY_BROKER_ROLE_CHANGED), when ``notify`` is given.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mqcore.controller.heartbeats import BrokerHeartbeatManager
from mqcore.controller.raft import ControllerRaft
from mqcore.controller.replicas import NO_BROKER_ID, ReplicasInfoManager
from mqcore.controller.results import ControllerResult
from mqcore.errors import MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.controller import SyncStateSet, decode_broker_names
from mqcore.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    CleanControllerBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
    RegisterBrokerToControllerRequestHeader,
)
from mqcore.remoting import Channel, Processor

__all__ = ["ControllerProcessor", "RoleChangeNotifier"]

log = logging.getLogger("mq.controller")

RoleChangeNotifier = Callable[[str, ControllerResult[Any]], Awaitable[None]]
"""``notify(broker_name, election_result)``: tell that broker set's replicas."""


def answer(request: RemotingCommand, result: ControllerResult[Any]) -> RemotingCommand:
    """The result as RocketMQ 5 answers it: code, remark, response header, body."""
    response = result.response
    ext = response.to_ext_fields() if hasattr(response, "to_ext_fields") else None
    body = result.body.encode() if result.body is not None else b""
    return RemotingCommand.response_to(request, result.code, result.remark, ext, body)


class ControllerProcessor:
    """One controller node's handlers over its Raft state and heartbeat table."""

    def __init__(
        self,
        raft: ControllerRaft,
        heartbeats: BrokerHeartbeatManager,
        *,
        group: str | None = None,
        peers: str | None = None,
        notify: RoleChangeNotifier | None = None,
    ) -> None:
        self.raft = raft
        self.heartbeats = heartbeats
        self.group = group
        """``controllerDLegerGroup``, as GET_METADATA_INFO reports it."""
        self.peers = peers
        self.notify = notify

    def handlers(self) -> dict[int, Processor]:
        return {
            RequestCode.BROKER_HEARTBEAT: self.broker_heartbeat,
            RequestCode.CONTROLLER_GET_METADATA_INFO: self.get_metadata_info,
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: self.get_next_broker_id,
            RequestCode.CONTROLLER_APPLY_BROKER_ID: self.apply_broker_id,
            RequestCode.CONTROLLER_REGISTER_BROKER: self.register_broker,
            RequestCode.CONTROLLER_ELECT_MASTER: self.elect_master,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: self.alter_sync_state_set,
            RequestCode.CONTROLLER_GET_REPLICA_INFO: self.get_replica_info,
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: self.get_sync_state_data,
            RequestCode.CLEAN_BROKER_DATA: self.clean_broker_data,
        }

    # -- liveness and leadership ---------------------------------------------------------
    def broker_heartbeat(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | None:
        self.heartbeats.on_heartbeat(BrokerHeartbeatRequestHeader.from_command(request))
        return None if request.is_oneway else RemotingCommand.response_to(request)

    def get_metadata_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        leader = self.raft.leader_address
        header = GetMetaDataResponseHeader(
            group=self.group,
            controller_leader_id=leader,
            controller_leader_address=leader,
            is_leader=self.raft.is_leader,
            peers=self.peers,
        )
        return RemotingCommand.response_to(request, ext_fields=header.to_ext_fields())

    # -- replicas ------------------------------------------------------------------------
    async def get_next_broker_id(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = GetNextBrokerIdRequestHeader.from_command(request)
        return await self._decide(
            request,
            lambda m: m.get_next_broker_id(h.cluster_name or "", h.broker_name or ""),
        )

    async def apply_broker_id(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = ApplyBrokerIdRequestHeader.from_command(request)
        return await self._decide(
            request,
            lambda m: m.apply_broker_id(
                h.cluster_name or "",
                h.broker_name or "",
                h.applied_broker_id if h.applied_broker_id is not None else NO_BROKER_ID,
                h.register_check_code or "",
            ),
        )

    async def register_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = RegisterBrokerToControllerRequestHeader.from_command(request)
        liveness = self.heartbeats.liveness(self.raft.is_leader)
        return await self._decide(
            request,
            lambda m: m.register_broker(
                h.cluster_name or "",
                h.broker_name or "",
                h.broker_id if h.broker_id is not None else NO_BROKER_ID,
                h.broker_address or "",
                liveness,
            ),
        )

    async def elect_master(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = ElectMasterRequestHeader.from_command(request)
        result = await self.elect(h.broker_name, h.broker_id, designate=h.designate_elect)
        return answer(request, result)

    async def elect(
        self, broker_name: str, broker_id: int | None, *, designate: bool = False
    ) -> ControllerResult[Any]:
        """An election (asked by a replica, an administrator or this controller when a
        master went silent); the replicas are told of a new master."""
        liveness = self.heartbeats.liveness(self.raft.is_leader)
        wanted = None if broker_id is None or broker_id == NO_BROKER_ID else broker_id
        result: ControllerResult[Any] = await self.raft.execute(
            lambda m: m.elect_master(broker_name, wanted, liveness, designate_elect=designate)
        )
        if result.ok and self.notify is not None:
            try:
                await self.notify(broker_name, result)
            except Exception:
                log.exception("telling %s's replicas of the new master failed", broker_name)
        return result

    async def alter_sync_state_set(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = AlterSyncStateSetRequestHeader.from_command(request)
        proposed = SyncStateSet.decode(request.body)
        liveness = self.heartbeats.liveness(self.raft.is_leader)
        return await self._decide(
            request,
            lambda m: m.alter_sync_state_set(
                h.broker_name or "",
                h.master_broker_id if h.master_broker_id is not None else NO_BROKER_ID,
                h.master_epoch if h.master_epoch is not None else -1,
                frozenset(proposed.sync_state_set),
                proposed.sync_state_set_epoch,
                liveness,
            ),
        )

    async def clean_broker_data(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = CleanControllerBrokerDataRequestHeader.from_command(request)
        liveness = self.heartbeats.liveness(self.raft.is_leader)
        return await self._decide(
            request,
            lambda m: m.clean_broker_data(
                h.cluster_name or "",
                h.broker_name,
                h.broker_controller_ids_to_clean,
                liveness,
                clean_living_broker=h.is_clean_living_broker,
            ),
        )

    # -- reads (the leader's state) ------------------------------------------------------
    def get_replica_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = GetReplicaInfoRequestHeader.from_command(request)
        if not self.raft.is_leader:
            return self._not_leader(request)
        return answer(request, self.raft.read(lambda m: m.get_replica_info(h.broker_name or "")))

    def get_sync_state_data(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        names = decode_broker_names(request.body)
        if not self.raft.is_leader:
            return self._not_leader(request)
        liveness = self.heartbeats.liveness(self.raft.is_leader)
        return answer(request, self.raft.read(lambda m: m.get_sync_state_data(names, liveness)))

    # -- helpers --------------------------------------------------------------------------
    async def _decide(
        self,
        request: RemotingCommand,
        decide: Callable[[ReplicasInfoManager], ControllerResult[Any]],
    ) -> RemotingCommand:
        try:
            result = await self.raft.execute(decide)
        except MQError as e:
            return RemotingCommand.response_to(
                request, ResponseCode.CONTROLLER_INVALID_REQUEST, str(e)
            )
        return answer(request, result)

    def _not_leader(self, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(
            request,
            ResponseCode.CONTROLLER_NOT_LEADER,
            f"the controller leader is {self.raft.leader_address}",
        )
