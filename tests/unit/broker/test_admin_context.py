"""Admin processors built from a `BrokerContext` of stand-ins, with no controller: what
they change and answer is all they were handed (topic table, offsets, locks, the
re-register call), so a request is checked on its own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from mqcore.broker.client_manager import ConsumerManager, ProducerManager
from mqcore.broker.config import BrokerConfig
from mqcore.broker.context import BrokerContext
from mqcore.broker.long_polling import LongPollingService
from mqcore.broker.pop.inflight import PopInflightCounter
from mqcore.broker.processor.admin import AdminProcessor
from mqcore.broker.processor.admin_group import GroupAdminProcessor
from mqcore.broker.rebalance_lock import RebalanceLockManager
from mqcore.broker.stats import BrokerStatsManager
from mqcore.broker.topics import TopicService
from mqcore.common.loop_lag import LoopLagMonitor
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ConsumeStats, MessageQueue, TopicStatsTable
from mqcore.protocol.bodies.topic_admin import CreateTopicListRequestBody
from mqcore.protocol.headers import (
    CreateTopicRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
)
from mqcore.store.metadata import (
    ConsumerFilterManager,
    ConsumerOffsetManager,
    DelayOffsetManager,
    SubscriptionGroupManager,
    TopicConfig,
    TopicConfigManager,
)
from mqcore.store.metadata.persister import ConfigPersister
from mqcore.store.store_config import MessageStoreConfig

from .broker_fakes import FakeChannel

BROKER = "broker-a"


class FakeStore:
    """A store of two queues per topic: queue ``q`` holds offsets ``q`` to ``10 + q``,
    each stored at ``1000 * (offset + 1)``."""

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return queue_id

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return 10 + queue_id

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        return 1000 * (offset + 1)


class Broker:
    """The parts a test looks at after a request, and the context made of them."""

    def __init__(self, root: Path) -> None:
        self.registers: list[bool] = []
        self.registered_topics: list[str] = []
        self.config = BrokerConfig(broker_name=BROKER, broker_ip1="127.0.0.1")
        self.store_config = MessageStoreConfig(store_path_root_dir=str(root))
        self.topic_configs = TopicConfigManager(root)
        self.offsets = ConsumerOffsetManager(root)
        self.locks = RebalanceLockManager()
        topics = TopicService(
            self.topic_configs,
            self.config,
            offsets=self.offsets,
            persister=ConfigPersister(),  # not started: durable writes are made at once
            request_register=self.request_register,
            register_topics=self.registered_topics.extend,
        )
        self.ctx = BrokerContext(
            config=self.config,
            store_config=self.store_config,
            store=cast(Any, FakeStore()),
            appender=cast(Any, None),  # no admin request here appends
            topics=topics,
            topic_configs=self.topic_configs,
            groups=SubscriptionGroupManager(root),
            offsets=self.offsets,
            delay_offsets=DelayOffsetManager(root),
            filters=ConsumerFilterManager(root),
            persister=ConfigPersister(),
            producers=ProducerManager(),
            consumers=ConsumerManager(),
            locks=self.locks,
            long_polling=LongPollingService(),
            stats=BrokerStatsManager(),
            stats_history=cast(Any, None),
            loop_lag=LoopLagMonitor(),
            schedule_service=cast(Any, None),  # no admin request here reads the delay levels
            transaction_service=cast(Any, None),
            # the consume stats read the POP in-flight counter; nothing else of POP
            pop=cast(Any, SimpleNamespace(inflight=PopInflightCounter())),
            ha=cast(Any, None),
            ha_client=cast(Any, None),
            acl_guard=None,
            replicas=None,
            store_host=lambda: ("127.0.0.1", 10911),
            broker_addr=lambda: "127.0.0.1:10911",
            request_register=self.request_register,
        )

    def request_register(self, force: bool = True) -> None:
        self.registers.append(force)


@pytest.fixture
def broker(tmp_path: Path) -> Broker:
    return Broker(tmp_path)


async def test_create_topic_goes_to_the_table_and_registers_it_alone(broker: Broker) -> None:
    header = CreateTopicRequestHeader("Orders", "TBW102", 4, 4, 6, "SINGLE_TAG")
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())

    response = await AdminProcessor(broker.ctx).update_and_create_topic(FakeChannel(), request)

    assert response.code == ResponseCode.SUCCESS, response.remark
    created = broker.topic_configs.table["Orders"]
    assert (created.read_queue_nums, created.write_queue_nums, created.perm) == (4, 4, 6)
    assert broker.registered_topics == ["Orders"]  # the increment, not the whole table
    assert broker.registers == []
    reread = TopicConfigManager(broker.store_config.root)
    reread.load()
    assert "Orders" in reread.table  # on disk before the answer


async def test_a_topic_list_is_created_in_one_go(broker: Broker) -> None:
    broker.topic_configs.update(TopicConfig("Same", 4, 4))
    configs = [TopicConfig("A", 2, 2), TopicConfig("B", 3, 3, perm=4), TopicConfig("Same", 4, 4)]
    body = CreateTopicListRequestBody(configs).encode()
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=body)
    writes = broker.topic_configs.writes

    response = await AdminProcessor(broker.ctx).update_and_create_topic_list(FakeChannel(), request)

    assert response.code == ResponseCode.SUCCESS, response.remark
    assert broker.topic_configs.table["B"] == TopicConfig("B", 3, 3, perm=4)
    assert broker.registered_topics == ["A", "B"]  # unchanged "Same" is left alone
    assert broker.topic_configs.writes == writes + 1


async def test_a_topic_list_with_one_bad_name_creates_nothing(broker: Broker) -> None:
    configs = [TopicConfig("Fine", 2, 2), TopicConfig("bad name", 2, 2)]
    body = CreateTopicListRequestBody(configs).encode()
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=body)

    response = await AdminProcessor(broker.ctx).update_and_create_topic_list(FakeChannel(), request)

    assert response.code == ResponseCode.INVALID_PARAMETER
    assert "bad name" in (response.remark or "")
    assert "Fine" not in broker.topic_configs.table and broker.registered_topics == []


def test_topic_stats_come_from_the_store(broker: Broker) -> None:
    broker.topic_configs.update(TopicConfig("Orders", read_queue_nums=2, write_queue_nums=2))
    request = RemotingCommand.request(
        RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader("Orders").to_ext_fields()
    )

    response = AdminProcessor(broker.ctx).get_topic_stats_info(FakeChannel(), request)

    assert response.code == ResponseCode.SUCCESS, response.remark
    table = TopicStatsTable.decode(response.body).offset_table
    q1 = table[MessageQueue("Orders", BROKER, 1)]
    assert (q1.min_offset, q1.max_offset, q1.last_update_timestamp) == (1, 11, 11_000)


def test_broker_permission_and_lock_time_apply_at_once(broker: Broker) -> None:
    version = broker.topic_configs.data_version.counter
    request = RemotingCommand.request(
        RequestCode.UPDATE_BROKER_CONFIG,
        body=b"brokerPermission=4\nrebalanceLockMaxLiveTime=5000\n",
    )

    response = AdminProcessor(broker.ctx).update_broker_config(FakeChannel(), request)

    assert response.code == ResponseCode.SUCCESS, response.remark
    assert broker.config.broker_permission == 4
    assert broker.locks.max_live == 5.0
    assert broker.topic_configs.data_version.counter == version + 1
    assert broker.registers == [True]
    saved = broker.store_config.config_path / "broker.properties"
    assert "brokerPermission=4" in saved.read_text()


def test_consume_stats_from_offsets_and_store(broker: Broker) -> None:
    broker.topic_configs.update(TopicConfig("Orders", read_queue_nums=2, write_queue_nums=2))
    broker.offsets.commit("cg", "Orders", 0, 4)
    header = GetConsumeStatsRequestHeader("cg")
    request = RemotingCommand.request(RequestCode.GET_CONSUME_STATS, header.to_ext_fields())

    response = GroupAdminProcessor(broker.ctx).get_consume_stats(FakeChannel(), request)

    assert response.code == ResponseCode.SUCCESS, response.remark
    table = ConsumeStats.decode(response.body).offset_table
    q0, q1 = (table[MessageQueue("Orders", BROKER, q)] for q in (0, 1))
    assert (q0.broker_offset, q0.consumer_offset, q0.last_timestamp) == (10, 4, 4000)
    assert (q1.broker_offset, q1.consumer_offset, q1.last_timestamp) == (11, 0, 0)
