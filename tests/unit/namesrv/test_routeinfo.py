"""RouteInfoManager rules with a fake clock; config parsing; KV persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqcore.errors import ConfigError
from mqcore.namesrv import KVConfigManager, NamesrvConfig, RouteInfoManager, parse_properties
from mqcore.protocol.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wrapper(counter: int, **topics: int) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {t: TopicConfig(t, n, n) for t, n in topics.items()}, DataVersion(1, counter)
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def routes(clock: Clock) -> RouteInfoManager:
    return RouteInfoManager(clock, expired=120)


def test_slave_topics_do_not_change_queue_data(routes: RouteInfoManager) -> None:
    routes.register_broker("c", "m:1", "a", 0, "m:2", wrapper(1, T=4), channel="chm")
    result = routes.register_broker("c", "s:1", "a", 1, "s:2", wrapper(1, T=8, X=1))
    assert (result.master_addr, result.ha_server_addr) == ("m:1", "m:2")
    route = routes.pick_topic_route_data("T")
    assert route is not None and route.queue_datas[0].write_queue_nums == 4
    assert route.broker_datas[0].broker_addrs == {0: "m:1", 1: "s:1"}
    assert routes.pick_topic_route_data("X") is None


def test_queue_data_only_updates_on_new_data_version(routes: RouteInfoManager) -> None:
    routes.register_broker("c", "m:1", "a", 0, "m:2", wrapper(1, T=4))
    changed = wrapper(1, T=16)  # same version: ignored
    routes.register_broker("c", "m:1", "a", 0, "m:2", changed)
    assert routes.pick_topic_route_data("T").queue_datas[0].write_queue_nums == 4  # type: ignore[union-attr]
    routes.register_broker("c", "m:1", "a", 0, "m:2", wrapper(2, T=16))
    assert routes.pick_topic_route_data("T").queue_datas[0].write_queue_nums == 16  # type: ignore[union-attr]


def test_a_registration_of_some_topics_keeps_the_others(routes: RouteInfoManager) -> None:
    """4.9.8's registerIncrementBrokerData: the body holds the changed topic alone."""
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(1, T=4, U=4, V=4))
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(2, New=2))
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(3, U=8))
    assert routes.get_all_topic_list().topic_list == {"T", "U", "V", "New"}
    assert routes.pick_topic_route_data("U").queue_datas[0].write_queue_nums == 8  # type: ignore[union-attr]
    assert routes.pick_topic_route_data("T").queue_datas[0].write_queue_nums == 4  # type: ignore[union-attr]


def test_parts_of_a_split_registration_share_one_version(routes: RouteInfoManager) -> None:
    """RocketMQ 5's enableSplitRegistration: every part carries the table's version, so
    the parts after the first add the topics the name server lacks."""
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(7, T1=1, T2=1))
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(7, T3=1, T4=1))
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(7, T5=1))
    assert routes.get_all_topic_list().topic_list == {"T1", "T2", "T3", "T4", "T5"}


def test_a_wiped_write_perm_outlives_same_version_registrations(
    routes: RouteInfoManager,
) -> None:
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(1, T=4))
    assert routes.wipe_write_perm_of_broker("a") == 1
    routes.register_broker("c", "m:1", "a", 0, "", wrapper(1, T=4))  # the 30 s heartbeat
    assert routes.pick_topic_route_data("T").queue_datas[0].perm == 4  # type: ignore[union-attr]


def test_slave_promoted_to_master_moves_address(routes: RouteInfoManager) -> None:
    routes.register_broker("c", "s:1", "a", 1, "s:2", wrapper(1, T=4))
    routes.register_broker("c", "s:1", "a", 0, "s:2", wrapper(1, T=4))
    info = routes.get_all_cluster_info()
    assert info.broker_addr_table["a"].broker_addrs == {0: "s:1"}


def test_expiry_and_channel_close(routes: RouteInfoManager, clock: Clock) -> None:
    routes.register_broker("c", "a:1", "a", 0, "", wrapper(1, T=4), channel="ch-a")
    routes.register_broker("c", "b:1", "b", 0, "", wrapper(1, T=4, U=2), channel="ch-b")
    clock.now += 100
    routes.register_broker("c", "b:1", "b", 0, "", wrapper(1, T=4, U=2), channel="ch-b")
    clock.now += 21
    assert routes.scan_not_active_brokers() == ["ch-a"]
    route = routes.pick_topic_route_data("T")
    assert route is not None and [b.broker_name for b in route.broker_datas] == ["b"]
    routes.on_channel_destroy("ch-b")
    assert routes.pick_topic_route_data("T") is None
    assert routes.get_all_cluster_info().cluster_addr_table == {}
    assert routes.get_all_topic_list().topic_list == set()


def test_reregistration_on_new_channel_survives_old_close(routes: RouteInfoManager) -> None:
    routes.register_broker("c", "a:1", "a", 0, "", wrapper(1, T=4), channel="old")
    routes.register_broker("c", "a:1", "a", 0, "", wrapper(1, T=4), channel="new")
    routes.on_channel_destroy("old")
    assert routes.pick_topic_route_data("T") is not None


def test_wipe_and_add_write_perm(routes: RouteInfoManager) -> None:
    routes.register_broker("c", "a:1", "a", 0, "", wrapper(1, T=4, U=4))
    assert routes.wipe_write_perm_of_broker("a") == 2
    assert routes.pick_topic_route_data("T").queue_datas[0].perm == 4  # type: ignore[union-attr]
    assert routes.add_write_perm_of_broker("a") == 2
    assert routes.pick_topic_route_data("T").queue_datas[0].perm == 6  # type: ignore[union-attr]


def test_properties_and_config(tmp_path: Path) -> None:
    props = parse_properties(
        "# c\n! c\nlistenPort = 1\nkvConfigPath: /x\nlogLevel DEBUG\na=b\\\n c\n"
    )
    assert props == {"listenPort": "1", "kvConfigPath": "/x", "logLevel": "DEBUG", "a": "bc"}
    config = NamesrvConfig()
    config.update({"listenPort": "10", "orderMessageEnable": "false", "unknown": "1"})
    assert config.listen_port == 10 and config.order_message_enable is False
    with pytest.raises(ConfigError):
        config.update({"orderMessageEnable": "yes"})
    assert "listenPort=10\n" in config.to_properties_text()


def test_kv_persistence(tmp_path: Path) -> None:
    path = tmp_path / "ns" / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.load()
    kv.put("ns", "k", "v")
    kv.put("ns", "k2", "v2")
    kv.delete("ns", "k")
    assert json.loads(path.read_bytes()) == {"configTable": {"ns": {"k2": "v2"}}}
    assert list(path.parent.iterdir()) == [path]  # no temporary files left behind
    again = KVConfigManager(path)
    again.load()
    assert again.get("ns", "k2") == "v2" and again.get("ns", "k") is None
    path.write_text("{not json")
    with pytest.raises(ConfigError):
        KVConfigManager(path).load()
    # Java writes bare integer keys sometimes; the loader must accept fastjson's dialect.
    path.write_text('{"configTable":{"ns":{1:"x"}}}')
    fastjson_kv = KVConfigManager(path)
    fastjson_kv.load()
    assert fastjson_kv.get("ns", "1") == "x"


def stamped(state_version: int, **topics: int) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {t: TopicConfig(t, n, n) for t, n in topics.items()}, DataVersion(1, 1, state_version)
    )


def test_an_old_master_back_from_a_partition_does_not_take_the_route_back(
    routes: RouteInfoManager,
) -> None:
    """Controller mode: the new master registered at epoch 3. The old one, back from a
    partition and not yet told, registers as master at epoch 2: ignored (RocketMQ 5
    compares stateVersion), and it is not kept as a live broker. A master at a higher
    epoch takes the route; 4.x brokers (no stateVersion) replace each other as before."""
    routes.register_broker("c", "new:1", "a", 0, "", stamped(3, T=4), channel="n")
    assert routes.register_broker("c", "old:1", "a", 0, "", stamped(2, T=4), channel="o")
    route = routes.pick_topic_route_data("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "new:1"}
    assert routes.query_data_version("old:1") is None
    routes.register_broker("c", "old:1", "a", 0, "", stamped(4, T=4), channel="o")
    route = routes.pick_topic_route_data("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "old:1"}
    routes.register_broker("c", "x:1", "b", 0, "", wrapper(1, U=4))
    routes.register_broker("c", "y:1", "b", 0, "", wrapper(1, U=4))
    route = routes.pick_topic_route_data("U")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "y:1"}


def test_data_version_json_carries_state_version_only_when_set() -> None:
    assert DataVersion(5, 2).to_json() == {"counter": 2, "timestamp": 5}
    five = DataVersion(5, 2, 7)
    assert five.to_json() == {"counter": 2, "stateVersion": 7, "timestamp": 5}
    assert DataVersion.decode(five.encode()) == five
    assert DataVersion.decode(b'{"counter":2,"timestamp":5}').state_version == 0
