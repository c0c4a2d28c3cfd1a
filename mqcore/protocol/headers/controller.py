"""Custom headers of RocketMQ 5's controller mode, with RocketMQ 5's field names.

In controller mode a broker group's master is not configured but elected: brokers register
with the controller (CONTROLLER_APPLY_BROKER_ID / CONTROLLER_REGISTER_BROKER), report that
they are alive (BROKER_HEARTBEAT), ask who the master is (CONTROLLER_GET_REPLICA_INFO), and
the master reports which slaves keep up with it (CONTROLLER_ALTER_SYNC_STATE_SET); when the
master is gone, an election (CONTROLLER_ELECT_MASTER) picks a new one from that set.

Java sends every non-null field, so the ``int``/``long``/``boolean`` primitives
(``invokeTime``, ``isLeader``, ...) are always on the wire; they have their Java defaults
here and are written back as such. Hardly any field is ``@CFNotNull``: a missing one is
simply ``None``. The keys are Java's field names, ``is`` prefixes included
(``isLeader``, ``isCleanLivingBroker``), and ``heartbeatTimeoutMills`` is spelt so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Self

from mqcore.common.jsonfields import now_ms
from mqcore.protocol.headers.base import CommandHeader, JavaInt

__all__ = [
    "AlterSyncStateSetRequestHeader",
    "AlterSyncStateSetResponseHeader",
    "ApplyBrokerIdRequestHeader",
    "ApplyBrokerIdResponseHeader",
    "BrokerHeartbeatRequestHeader",
    "CleanControllerBrokerDataRequestHeader",
    "ElectMasterRequestHeader",
    "ElectMasterResponseHeader",
    "GetMetaDataResponseHeader",
    "GetNextBrokerIdRequestHeader",
    "GetNextBrokerIdResponseHeader",
    "GetReplicaInfoRequestHeader",
    "GetReplicaInfoResponseHeader",
    "NotifyBrokerRoleChangedRequestHeader",
    "RegisterBrokerToControllerRequestHeader",
    "RegisterBrokerToControllerResponseHeader",
]


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequestHeader(CommandHeader):
    """BROKER_HEARTBEAT (904): a broker is alive. The controller elects among live brokers
    only, preferring the highest ``epoch``, then ``maxOffset``, then the lowest
    ``electionPriority``; without ``brokerId`` it answers CONTROLLER_INVALID_REQUEST.
    ``heartbeatTimeoutMills`` is how long the controller waits for the next one. Name
    servers get the same header with the three required fields only."""

    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int | None = None
    epoch: JavaInt | None = None
    max_offset: int | None = None
    confirm_offset: int | None = None
    heartbeat_timeout_mills: int | None = None
    election_priority: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class AlterSyncStateSetRequestHeader(CommandHeader):
    """CONTROLLER_ALTER_SYNC_STATE_SET (1001), from a master; the body is the new
    SyncStateSet. The master's id and epoch fence off a deposed master (the controller
    answers CONTROLLER_FENCED_MASTER_EPOCH); ``invokeTime`` is when the master decided,
    against which the controller judges the replicas' liveness."""

    broker_name: str | None = None
    master_broker_id: int | None = None
    master_epoch: JavaInt | None = None
    invoke_time: int = field(default_factory=now_ms)


@dataclass(frozen=True, slots=True)
class AlterSyncStateSetResponseHeader(CommandHeader):
    """Answer to CONTROLLER_ALTER_SYNC_STATE_SET; the body is the SyncStateSet accepted."""

    new_sync_state_set_epoch: JavaInt = 0


@dataclass(frozen=True, slots=True)
class ElectMasterRequestHeader(CommandHeader):
    """CONTROLLER_ELECT_MASTER (1002). All four fields are ``@CFNotNull``; Java's defaults
    (``""``, ``-1``, ``false``) are what the controller's own elections send, see
    :meth:`of_controller_trigger`. ``designateElect`` (mqadmin's ``electMaster``) makes
    ``brokerId`` the master if it is eligible, instead of whichever broker the controller
    would prefer."""

    cluster_name: str
    broker_name: str
    broker_id: int
    designate_elect: bool
    invoke_time: int = field(default_factory=now_ms)

    @classmethod
    def of_broker_trigger(cls, cluster_name: str, broker_name: str, broker_id: int) -> Self:
        """A broker that found no master asks to be elected (or for any election)."""
        return cls(cluster_name, broker_name, broker_id, designate_elect=False)

    @classmethod
    def of_controller_trigger(cls, broker_name: str) -> Self:
        """The controller's own election, when a group's master stopped heart-beating."""
        return cls("", broker_name, -1, designate_elect=False)

    @classmethod
    def of_admin_trigger(cls, cluster_name: str, broker_name: str, broker_id: int) -> Self:
        """An operator designates ``broker_id`` as the new master."""
        return cls(cluster_name, broker_name, broker_id, designate_elect=True)


@dataclass(frozen=True, slots=True)
class ElectMasterResponseHeader(CommandHeader):
    """Answer to CONTROLLER_ELECT_MASTER (also with CONTROLLER_MASTER_STILL_EXIST); the body
    is an ElectMasterResponseBody. No master elected leaves the master fields out."""

    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: JavaInt | None = None
    sync_state_set_epoch: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class RegisterBrokerToControllerRequestHeader(CommandHeader):
    """CONTROLLER_REGISTER_BROKER (1003): a broker that holds its id (applied or on disk)
    registers its address. ``invokeTime`` is set by Java's constructor when the request
    is made (a bare Java ``long``, so 0 when decoded without one)."""

    cluster_name: str | None = None
    broker_name: str | None = None
    broker_id: int | None = None
    broker_address: str | None = None
    invoke_time: int = field(default_factory=now_ms)


@dataclass(frozen=True, slots=True)
class RegisterBrokerToControllerResponseHeader(CommandHeader):
    """Answer to CONTROLLER_REGISTER_BROKER: the group's master, if any; the body is the
    group's SyncStateSet."""

    cluster_name: str | None = None
    broker_name: str | None = None
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: JavaInt | None = None
    sync_state_set_epoch: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class GetReplicaInfoRequestHeader(CommandHeader):
    """CONTROLLER_GET_REPLICA_INFO (1004): who is master of ``brokerName``."""

    broker_name: str | None = None


@dataclass(frozen=True, slots=True)
class GetReplicaInfoResponseHeader(CommandHeader):
    """Answer to CONTROLLER_GET_REPLICA_INFO; the body is the group's SyncStateSet."""

    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class GetMetaDataResponseHeader(CommandHeader):
    """Answer to CONTROLLER_GET_METADATA_INFO (1005, a request without header): which
    controller leads, so brokers send everything else there. ``peers`` is the controller
    group's member list as one text; ``controllerLeaderId`` is text, not a number."""

    group: str | None = None
    controller_leader_id: str | None = None
    controller_leader_address: str | None = None
    is_leader: bool = False
    peers: str | None = None


@dataclass(frozen=True, slots=True)
class NotifyBrokerRoleChangedRequestHeader(CommandHeader):
    """NOTIFY_BROKER_ROLE_CHANGED (1008), the controller's oneway push to each broker of a
    group after an election; the body is the new SyncStateSet."""

    master_address: str | None = None
    master_epoch: JavaInt | None = None
    sync_state_set_epoch: JavaInt | None = None
    master_broker_id: int | None = None


@dataclass(frozen=True, slots=True)
class CleanControllerBrokerDataRequestHeader(CommandHeader):
    """CLEAN_BROKER_DATA (1011), mqadmin's ``cleanBrokerMetadata``: forget brokers of
    ``brokerName``. ``brokerControllerIdsToClean`` is broker ids joined by ``;`` (none: the
    whole group); live brokers are kept unless ``isCleanLivingBroker``."""

    broker_name: str
    cluster_name: str | None = None
    broker_controller_ids_to_clean: str | None = None
    is_clean_living_broker: bool = False
    invoke_time: int = field(default_factory=now_ms)


@dataclass(frozen=True, slots=True)
class GetNextBrokerIdRequestHeader(CommandHeader):
    """CONTROLLER_GET_NEXT_BROKER_ID (1012): a broker without an id asks which it may
    apply for."""

    cluster_name: str | None = None
    broker_name: str | None = None


@dataclass(frozen=True, slots=True)
class GetNextBrokerIdResponseHeader(CommandHeader):
    cluster_name: str | None = None
    broker_name: str | None = None
    next_broker_id: int | None = None


@dataclass(frozen=True, slots=True)
class ApplyBrokerIdRequestHeader(CommandHeader):
    """CONTROLLER_APPLY_BROKER_ID (1013): claim ``appliedBrokerId``. ``registerCheckCode``
    is ``<brokerAddress>;<timestamp>``: a broker that re-applies after a crash is known
    by it and given its id again (anyone else: CONTROLLER_BROKER_ID_INVALID)."""

    cluster_name: str | None = None
    broker_name: str | None = None
    applied_broker_id: int | None = None
    register_check_code: str | None = None


@dataclass(frozen=True, slots=True)
class ApplyBrokerIdResponseHeader(CommandHeader):
    cluster_name: str | None = None
    broker_name: str | None = None
