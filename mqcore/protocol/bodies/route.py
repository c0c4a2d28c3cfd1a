"""Bodies of the name server: routes, cluster info, topic lists, broker registration.

Java classes: ``TopicRouteData``, ``QueueData``, ``BrokerData``, ``ClusterInfo``,
``TopicList``, ``KVTable``, ``DataVersion``, ``TopicConfig``,
``TopicConfigSerializeWrapper``, ``RegisterBrokerBody``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.common.metadata import DataVersion, PermName, TopicConfig
from mqcore.protocol.bodies.base import (
    RemotingBody,
    as_dict,
    as_int,
    as_list,
    as_str,
    int_key_map,
    str_map,
)

__all__ = [
    "MASTER_ID",
    "BrokerData",
    "ClusterInfo",
    "DataVersion",
    "KVTable",
    "PermName",
    "QueueData",
    "RegisterBrokerBody",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicList",
    "TopicRouteData",
]

MASTER_ID = 0
"""``MixAll.MASTER_ID``: broker id of a master."""


@dataclass(slots=True)
class TopicConfigSerializeWrapper(RemotingBody):
    """GET_ALL_TOPIC_CONFIG body; also the heart of RegisterBrokerBody."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "topicConfigTable": {k: v.to_json() for k, v in self.topic_config_table.items()},
        }

    @classmethod
    def from_json(cls, obj: Any) -> TopicConfigSerializeWrapper:
        obj = as_dict(obj)
        table = {
            str(name): TopicConfig.from_json(cfg)
            for name, cfg in as_dict(obj.get("topicConfigTable")).items()
        }
        for name, cfg in table.items():
            if not cfg.topic_name:
                cfg.topic_name = name
        return cls(table, DataVersion.from_json(obj.get("dataVersion")))


@dataclass(slots=True)
class RegisterBrokerBody(RemotingBody):
    """REGISTER_BROKER body (request version >= 37; older ones send a bare wrapper)."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "filterServerList": list(self.filter_server_list),
            "topicConfigSerializeWrapper": self.topic_config_serialize_wrapper.to_json(),
        }

    @classmethod
    def from_json(cls, obj: Any) -> RegisterBrokerBody:
        obj = as_dict(obj)
        if "topicConfigSerializeWrapper" not in obj and "topicConfigTable" in obj:
            return cls(TopicConfigSerializeWrapper.from_json(obj))
        return cls(
            TopicConfigSerializeWrapper.from_json(obj.get("topicConfigSerializeWrapper")),
            [as_str(s) for s in as_list(obj.get("filterServerList"))],
        )


@dataclass(slots=True)
class QueueData(RemotingBody):
    """One broker's queues of a topic in a route."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: Any) -> QueueData:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("brokerName")),
            as_int(obj.get("readQueueNums")),
            as_int(obj.get("writeQueueNums")),
            as_int(obj.get("perm")),
            as_int(obj.get("topicSysFlag")),
        )


@dataclass(slots=True)
class BrokerData(RemotingBody):
    """A broker name's addresses by broker id (0 = master, others = slaves)."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_json(cls, obj: Any) -> BrokerData:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("cluster")),
            as_str(obj.get("brokerName")),
            {k: as_str(v) for k, v in int_key_map(as_dict(obj.get("brokerAddrs"))).items()},
        )


@dataclass(slots=True)
class TopicRouteData(RemotingBody):
    """GET_ROUTEINFO_BY_TOPIC answer. ``queueDatas``/``brokerDatas`` are always written:
    ali-ons calls ``.sort()`` on both."""

    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
        }
        if self.order_topic_conf is not None:
            out["orderTopicConf"] = self.order_topic_conf
        out["queueDatas"] = [q.to_json() for q in self.queue_datas]
        return out

    @classmethod
    def from_json(cls, obj: Any) -> TopicRouteData:
        obj = as_dict(obj)
        conf = obj.get("orderTopicConf")
        return cls(
            [QueueData.from_json(q) for q in as_list(obj.get("queueDatas"))],
            [BrokerData.from_json(b) for b in as_list(obj.get("brokerDatas"))],
            None if conf is None else as_str(conf),
            {
                str(k): [as_str(a) for a in as_list(v)]
                for k, v in as_dict(obj.get("filterServerTable")).items()
            },
        )


@dataclass(slots=True)
class ClusterInfo(RemotingBody):
    """GET_BROKER_CLUSTER_INFO answer."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {k: v.to_json() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: sorted(v) for k, v in self.cluster_addr_table.items()},
        }

    @classmethod
    def from_json(cls, obj: Any) -> ClusterInfo:
        obj = as_dict(obj)
        return cls(
            {
                str(k): BrokerData.from_json(v)
                for k, v in as_dict(obj.get("brokerAddrTable")).items()
            },
            {
                str(k): {as_str(n) for n in as_list(v)}
                for k, v in as_dict(obj.get("clusterAddrTable")).items()
            },
        )


@dataclass(slots=True)
class TopicList(RemotingBody):
    """A set of topic names (``brokerAddr`` only in GET_SYSTEM_TOPIC_LIST_FROM_NS)."""

    topic_list: set[str] = field(default_factory=set)
    broker_addr: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.broker_addr is not None:
            out["brokerAddr"] = self.broker_addr
        out["topicList"] = sorted(self.topic_list)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> TopicList:
        obj = as_dict(obj)
        addr = obj.get("brokerAddr")
        return cls(
            {as_str(t) for t in as_list(obj.get("topicList"))},
            None if addr is None else as_str(addr),
        )


@dataclass(slots=True)
class KVTable(RemotingBody):
    """A text map: KV namespaces, GET_BROKER_RUNTIME_INFO."""

    table: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"table": dict(self.table)}

    @classmethod
    def from_json(cls, obj: Any) -> KVTable:
        return cls(str_map(as_dict(obj).get("table")))
