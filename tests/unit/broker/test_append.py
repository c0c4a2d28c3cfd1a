"""The one append path: every stored message is counted in the broker statistics, a
refused put neither stores nor counts, and writers that did not count before (the
transaction bridge) now do."""

from __future__ import annotations

from mqcore.broker.controller import BrokerController
from mqcore.message.model import MessageExt
from mqcore.store.results import PutStatus
from mqcore.store.store_config import BrokerRole


def message(topic: str = "Appended", body: bytes = b"x") -> MessageExt:
    return MessageExt(topic=topic, body=body, queue_id=0, properties={"TAGS": "A"})


async def test_a_stored_batch_is_counted_once_per_message(broker: BrokerController) -> None:
    before = broker.stats.put_total.msgs
    result = broker.appender.put([message(body=b"a"), message(body=b"bb")])
    assert result.ok and result.msg_count == 2
    assert broker.stats.topic_put_snapshot("Appended").msgs == 2
    assert broker.stats.put_total.msgs == before + 2


async def test_a_refused_put_is_not_counted(broker: BrokerController) -> None:
    broker.store_config.broker_role = BrokerRole.SLAVE  # the store refuses: not writable
    try:
        result = broker.appender.put([message()])
    finally:
        broker.store_config.broker_role = BrokerRole.ASYNC_MASTER
    assert result.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert broker.stats.topic_put_snapshot("Appended").msgs == 0


async def test_transaction_writes_are_counted(broker: BrokerController) -> None:
    result = broker.transaction_service.bridge.put(message(topic="TxCounted"))
    assert result.ok
    assert broker.stats.topic_put_snapshot("TxCounted").msgs == 1


async def test_too_few_in_sync_replicas_refuse_a_waiting_put_up_front(
    broker: BrokerController,
) -> None:
    """Controller mode, SYNC_MASTER with ``minInSyncReplicas`` 2 and an in-sync set of the
    master alone: a put whose answer waits for replicas is refused before it is stored
    (RocketMQ 5's IN_SYNC_REPLICAS_NOT_ENOUGH; stored, it could never be acknowledged);
    one that does not wait (WAIT=false) is stored, as in RocketMQ 5."""
    end = broker.store.commit_log.max_offset
    broker.store_config.broker_role = BrokerRole.SYNC_MASTER
    broker.store_config.min_in_sync_replicas = 2
    broker.ha.in_sync_ids = {1}
    try:
        refused = broker.appender.put([message()])
        assert refused.status is PutStatus.IN_SYNC_REPLICAS_NOT_ENOUGH
        assert broker.store.commit_log.max_offset == end
        assert broker.appender.put([message()], wait=False).ok
        broker.ha.in_sync_ids = {1, 2}
        assert broker.appender.put([message()]).ok
    finally:
        broker.ha.in_sync_ids = None
        broker.store_config.broker_role = BrokerRole.ASYNC_MASTER
        broker.store_config.min_in_sync_replicas = 1
    assert broker.stats.topic_put_snapshot("Appended").msgs == 2
