"""Custom headers of the name server requests (spec §6)."""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader, JavaInt

__all__ = [
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "PutKVConfigRequestHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "UnregisterBrokerRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
]


@dataclass(frozen=True, slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103); ``broker_id`` 0 is the master."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: int
    compressed: bool = False
    body_crc32: JavaInt = 0


@dataclass(frozen=True, slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """Answer to REGISTER_BROKER; both fields are set only for slaves."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104), sent by a broker at shutdown."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(frozen=True, slots=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322); body = the broker's DataVersion."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(frozen=True, slots=True)
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool


@dataclass(frozen=True, slots=True)
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105)."""

    topic: str
    accept_standard_json_only: bool | None = None


@dataclass(frozen=True, slots=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV (216); without ``cluster_name`` every broker loses it."""

    topic: str
    cluster_name: str | None = None


@dataclass(frozen=True, slots=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str


@dataclass(frozen=True, slots=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str


@dataclass(frozen=True, slots=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: JavaInt


@dataclass(frozen=True, slots=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str


@dataclass(frozen=True, slots=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: JavaInt


@dataclass(frozen=True, slots=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str


@dataclass(frozen=True, slots=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str


@dataclass(frozen=True, slots=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str
