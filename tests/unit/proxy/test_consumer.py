"""The receive bounds of the access point: polling time and invisible time as RocketMQ
5's proxy computes and checks them (no broker needed: the checks come first); and which
broker each call goes to (a fake seam records it)."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from mqcore.common.metadata import PERM_READ, PERM_WRITE, SubscriptionGroupConfig
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.extra_info import ExtraInfo
from mqcore.protocol.headers.pop import ChangeInvisibleTimeResponseHeader
from mqcore.proxy.brokers import BrokerQueues, Brokers
from mqcore.proxy.consumer import ConsumerService, ReceiveLimits
from mqcore.proxy.context import CallContext
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.receipts import ReceiptHandle
from mqcore.proxy.status import ProxyError

CALL = CallContext(client_id="c@1", remote_address="127.0.0.1:1", client_version="5.1.2")


def _unused(*args: Any) -> Any:
    raise AssertionError("no broker request expected")


class FakeBrokers:
    """The part of the seam the consumer calls reads: a topic's queues, no group config."""

    def __init__(self, *queues: BrokerQueues) -> None:
        self._queues = list(queues)

    async def queues(self, topic: str) -> list[BrokerQueues]:
        return self._queues

    async def group_config(self, group: str) -> SubscriptionGroupConfig | None:
        return None


RW = PERM_READ | PERM_WRITE


def brokers(*queues: BrokerQueues) -> Brokers:
    return cast(Brokers, FakeBrokers(*queues))


def command(call: CallContext, code: int, ext: dict[str, str]) -> RemotingCommand:
    return RemotingCommand.request(code, ext)


def service(settings: pb.Settings | None = None) -> ConsumerService:
    return ConsumerService(brokers(), _unused, lambda client_id: settings, _unused, ReceiveLimits())


def receive(polling_ms: int | None = None, invisible_ms: int = 30_000) -> spb.ReceiveMessageRequest:
    request = spb.ReceiveMessageRequest(auto_renew=False)
    request.invisible_duration.FromMilliseconds(invisible_ms)
    if polling_ms is not None:
        request.long_polling_timeout.FromMilliseconds(polling_ms)
    return request


@pytest.mark.parametrize(
    ("polling_ms", "remaining_ms", "expected"),
    [
        (15_000, 30_000, 15_000),  # the request's own
        (1_000, 30_000, 5_000),  # at least the proxy's 5 s
        (60_000, 90_000, 20_000),  # at most its 20 s
        (15_000, 8_000, 8_000),  # never past the call's deadline
        (15_000, None, 15_000),  # no deadline
    ],
)
def test_the_polling_time_is_the_request_s_within_the_proxy_s_bounds(
    polling_ms: int, remaining_ms: int | None, expected: int
) -> None:
    assert service().polling_time(receive(polling_ms), CALL, remaining_ms) == expected


def test_without_a_polling_time_the_deadline_less_half_the_request_timeout() -> None:
    settings = pb.Settings()
    settings.request_timeout.FromMilliseconds(4_000)
    assert service(settings).polling_time(receive(), CALL, 14_000) == 12_000
    assert service().polling_time(receive(), CALL, 14_000) == 12_500  # 3 s default


def test_a_deadline_too_close_for_any_poll_is_refused() -> None:
    with pytest.raises(ProxyError) as caught:
        service().polling_time(receive(10_000), CALL, 4_000)
    assert caught.value.code == pb.Code.ILLEGAL_POLLING_TIME
    old = CallContext(client_id="c@1", remote_address="x:1", client_version="5.0.1")
    with pytest.raises(ProxyError) as caught:
        service().polling_time(receive(10_000), old, 4_000)
    assert caught.value.code == pb.Code.BAD_REQUEST  # clients before 5.0.3 know no better


def test_invisible_time_bounds_and_auto_renew() -> None:
    consumer = service()
    assert consumer.invisible_time(receive(invisible_ms=10_000)) == 10_000
    for too in (9_999, 12 * 3600 * 1000 + 1):
        with pytest.raises(ProxyError) as caught:
            consumer.invisible_time(receive(invisible_ms=too))
        assert caught.value.code == pb.Code.ILLEGAL_INVISIBLE_TIME
    renewed = receive(invisible_ms=0)
    renewed.auto_renew = True
    assert consumer.invisible_time(renewed) == 60_000


async def test_a_failure_inside_a_receive_is_answered_with_a_status() -> None:
    """The stream still says why (INTERNAL_SERVER_ERROR) and ends with its timestamp."""

    async def broken(
        call: CallContext, broker: str, request: RemotingCommand, timeout: float | None
    ) -> RemotingCommand:
        raise RuntimeError("disk on fire")

    side = brokers(BrokerQueues("broker-a", 4, 4, RW))
    consumer = ConsumerService(side, broken, lambda client_id: None, command)
    request = receive(10_000)
    request.group.name, request.message_queue.topic.name = "g", "T"
    answers = [a async for a in consumer.receive_message(request, CALL, 30_000)]
    assert [a.WhichOneof("content") for a in answers] == ["status", "delivery_timestamp"]
    assert answers[0].status.code == pb.Code.INTERNAL_SERVER_ERROR
    assert "disk on fire" in answers[0].status.message


class Recorder:
    """A seam's request end that answers every request with ``code``, noting the broker
    and the timeout of each."""

    def __init__(self, code: int = ResponseCode.SUCCESS) -> None:
        self.code = code
        self.sent: list[tuple[int, str, float | None]] = []

    async def __call__(
        self, call: CallContext, broker: str, request: RemotingCommand, timeout: float | None
    ) -> RemotingCommand:
        self.sent.append((request.code, broker, timeout))
        changed = ChangeInvisibleTimeResponseHeader(int(time.time() * 1000), 30_000, 0)
        return RemotingCommand.response_to(request, self.code, "as told", changed.to_ext_fields())


async def receive_from(consumer: ConsumerService, broker: str) -> list[spb.ReceiveMessageResponse]:
    request = receive(10_000)
    request.group.name, request.message_queue.topic.name = "g", "T"
    request.message_queue.broker.name = broker
    return [a async for a in consumer.receive_message(request, CALL, 30_000)]


async def test_a_receive_pops_at_the_broker_its_queue_names_else_at_each_readable_in_turn() -> None:
    sent = Recorder(ResponseCode.PULL_NOT_FOUND)
    side = brokers(
        BrokerQueues("broker-a", 4, 4, RW),
        BrokerQueues("broker-b", 4, 4, RW),
        BrokerQueues("broker-c", 4, 4, PERM_WRITE),  # not readable: never popped
    )
    consumer = ConsumerService(side, sent, lambda client_id: None, command)
    for name in ("broker-b", "broker-a", "broker-c", "", "nowhere", ""):
        answers = await receive_from(consumer, name)
        assert answers[0].status.code == pb.Code.MESSAGE_NOT_FOUND
    brokers_asked = [broker for _, broker, _ in sent.sent]
    assert brokers_asked[:2] == ["broker-b", "broker-a"]
    in_turn = (["broker-a", "broker-b"] * 2, ["broker-b", "broker-a"] * 2)
    assert brokers_asked[2:] in in_turn, brokers_asked
    assert {timeout for _, _, timeout in sent.sent} == {30.0}, "what the deadline leaves"


@pytest.mark.parametrize(
    ("queues", "code"),
    [
        ((), pb.Code.TOPIC_NOT_FOUND),
        ((BrokerQueues("broker-a", 4, 4, PERM_WRITE),), pb.Code.FORBIDDEN),
        ((BrokerQueues("broker-a", 0, 4, RW),), pb.Code.FORBIDDEN),
    ],
)
async def test_a_receive_without_a_readable_broker_is_refused(
    queues: tuple[BrokerQueues, ...], code: pb.Code
) -> None:
    sent = Recorder()
    consumer = ConsumerService(brokers(*queues), sent, lambda client_id: None, command)
    answers = await receive_from(consumer, "broker-a")
    assert answers[0].status.code == code, answers[0]
    assert sent.sent == [], "nothing popped"


async def test_acks_and_changes_go_to_the_broker_named_in_the_receipt_handle() -> None:
    """No route needed: the broker that popped the message wrote its name there."""
    sent = Recorder()
    consumer = ConsumerService(brokers(), sent, lambda client_id: None, command)
    now = int(time.time() * 1000)
    handles = {
        name: ExtraInfo(7, now, 60_000, 0, "0", name, 1, 9).encode() + " 4096"
        for name in ("broker-b", "broker-c")
    }
    ack = spb.AckMessageRequest(
        topic=pb.Resource(name="T"),
        group=pb.Resource(name="g"),
        entries=[
            spb.AckMessageEntry(message_id=f"M{name}", receipt_handle=text)
            for name, text in handles.items()
        ],
    )
    answer = await consumer.ack_message(ack, CALL)
    assert answer.status.code == pb.Code.OK, answer
    change = spb.ChangeInvisibleDurationRequest(
        topic=pb.Resource(name="T"),
        group=pb.Resource(name="g"),
        message_id="Mbroker-c",
        receipt_handle=handles["broker-c"],
    )
    change.invisible_duration.FromSeconds(30)
    changed = await consumer.change_invisible_duration(change, CALL)
    assert changed.status.code == pb.Code.OK, changed
    assert ReceiptHandle.decode(changed.receipt_handle).receipt.broker_name == "broker-c"
    assert [(code, broker) for code, broker, _ in sent.sent] == [
        (RequestCode.ACK_MESSAGE, "broker-b"),
        (RequestCode.ACK_MESSAGE, "broker-c"),
        (RequestCode.CHANGE_MESSAGE_INVISIBLETIME, "broker-c"),
    ]
