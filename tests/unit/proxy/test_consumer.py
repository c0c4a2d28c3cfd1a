"""The receive bounds of the access point: polling time and invisible time as RocketMQ
5's proxy computes and checks them (no broker needed: the checks come first)."""

from __future__ import annotations

from typing import Any

import pytest

from mqcore.protocol import RemotingCommand
from mqcore.proxy.consumer import ConsumerService, ReceiveLimits
from mqcore.proxy.context import BrokerSide, CallContext
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.status import ProxyError

CALL = CallContext(client_id="c@1", remote_address="127.0.0.1:1", client_version="5.1.2")


def _unused(*args: Any) -> Any:
    raise AssertionError("no broker request expected")


def service(settings: pb.Settings | None = None) -> ConsumerService:
    side = BrokerSide(
        dispatch=_unused,
        broker_name="broker-a",
        topic_config=lambda topic: None,
        group_config=lambda group: None,
        channel_closed=lambda channel: None,
    )
    return ConsumerService(side, _unused, lambda client_id: settings, _unused, ReceiveLimits())


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

    async def broken(call: CallContext, command: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("disk on fire")

    def command(call: CallContext, code: int, ext: dict[str, str]) -> RemotingCommand:
        return RemotingCommand.request(code, ext)

    side = BrokerSide(
        dispatch=_unused,
        broker_name="broker-a",
        topic_config=lambda topic: None,
        group_config=lambda group: None,
        channel_closed=lambda channel: None,
    )
    consumer = ConsumerService(side, broken, lambda client_id: None, command)
    request = receive(10_000)
    request.group.name, request.message_queue.topic.name = "g", "T"
    answers = [a async for a in consumer.receive_message(request, CALL, 30_000)]
    assert [a.WhichOneof("content") for a in answers] == ["status", "delivery_timestamp"]
    assert answers[0].status.code == pb.Code.INTERNAL_SERVER_ERROR
    assert "disk on fire" in answers[0].status.message
