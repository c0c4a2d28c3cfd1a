"""Controller mode's settings under RocketMQ 5's key names and defaults."""

from __future__ import annotations

from mqcore.broker.config import BrokerConfig
from mqcore.store.store_config import MessageStoreConfig


def test_rocketmq_5_defaults() -> None:
    broker, store = BrokerConfig(), MessageStoreConfig()
    assert not broker.enable_controller_mode and broker.controller_addrs == []
    assert broker.controller_heart_beat_timeout_mills == 10_000
    assert broker.sync_broker_metadata_period == 5000
    assert broker.broker_election_priority == 2**31 - 1
    assert store.ha_max_time_slave_not_catchup == 15_000
    assert not store.all_ack_in_sync_state_set and store.min_in_sync_replicas == 1


def test_a_broker_conf_with_controller_keys() -> None:
    props = {
        "enableControllerMode": "true",
        "controllerAddr": "127.0.0.1:9878; 127.0.0.1:9868;",
        "syncBrokerMetadataPeriod": "1000",
        "checkSyncStateSetPeriod": "1000",
        "syncControllerMetadataPeriod": "2000",
        "controllerHeartBeatTimeoutMills": "3000",
        "brokerElectionPriority": "1",
        "haMaxTimeSlaveNotCatchup": "4000",
        "allAckInSyncStateSet": "true",
        "minInSyncReplicas": "2",
    }
    broker = BrokerConfig.from_properties(props)
    store = MessageStoreConfig.from_properties(props)
    assert broker.enable_controller_mode
    assert broker.controller_addrs == ["127.0.0.1:9878", "127.0.0.1:9868"]
    assert (broker.sync_broker_metadata_period, broker.check_sync_state_set_period) == (1000, 1000)
    assert broker.sync_controller_metadata_period == 2000
    assert broker.controller_heart_beat_timeout_mills == 3000
    assert broker.broker_election_priority == 1
    assert store.ha_max_time_slave_not_catchup == 4000
    assert store.all_ack_in_sync_state_set and store.min_in_sync_replicas == 2
