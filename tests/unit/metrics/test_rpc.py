"""``rocketmq_rpc_latency``: the dispatcher tells its observer of each answered request,
and the histogram is labelled as RocketMQ 5 labels it."""

from __future__ import annotations

import asyncio
from typing import Any

from mqcore.metrics.families import MetricSet
from mqcore.metrics.rpc import RpcLatency
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.remoting import RequestDispatcher
from tests.support.metrics import samples_of, value


def _reply(code: int = ResponseCode.SUCCESS) -> Any:
    return lambda _channel, request: RemotingCommand.response_to(request, code)


def _histogram(rpc: RpcLatency) -> MetricSet:
    metrics = MetricSet({"node_type": "broker"})
    rpc.collect(metrics)
    return metrics


async def test_sync_and_deferred_answers_are_timed() -> None:
    dispatcher = RequestDispatcher()
    rpc = RpcLatency()
    dispatcher.observer = rpc
    dispatcher.register(RequestCode.SEND_MESSAGE_V2, _reply())
    dispatcher.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, _reply(ResponseCode.TOPIC_NOT_EXIST))
    released = asyncio.Event()

    async def held_pull(_channel: object, request: RemotingCommand) -> RemotingCommand:
        await released.wait()
        return RemotingCommand.response_to(request, ResponseCode.PULL_NOT_FOUND)

    dispatcher.register(RequestCode.PULL_MESSAGE, held_pull)
    channel: Any = None
    for _ in range(3):
        dispatcher.dispatch(channel, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2))
    dispatcher.dispatch(channel, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC))
    pending = dispatcher.dispatch(channel, RemotingCommand.request(RequestCode.PULL_MESSAGE))
    # a oneway request is not answered, and not timed (as RocketMQ's writeResponse)
    dispatcher.dispatch(channel, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, oneway=True))
    samples = samples_of(_histogram(rpc))
    assert value(samples, "rocketmq_rpc_latency_count", request_code="pull_message") is None
    released.set()
    assert asyncio.iscoroutine(pending)
    assert (await pending).code == ResponseCode.PULL_NOT_FOUND

    samples = samples_of(_histogram(rpc))
    send = {"request_code": "send_message_v2", "response_code": "success"}
    assert value(samples, "rocketmq_rpc_latency_count", **send) == 3
    assert value(samples, "rocketmq_rpc_latency_bucket", le="+Inf", **send) == 3
    assert (
        value(
            samples,
            "rocketmq_rpc_latency_count",
            request_code="get_routeinfo_by_topic",
            response_code="topic_not_exist",
            is_long_polling="false",
            protocol_type="remoting",
            result="success",
            node_type="broker",
        )
        == 1
    )
    # a pull answered from a task was held by long polling
    assert (
        value(
            samples,
            "rocketmq_rpc_latency_count",
            request_code="pull_message",
            response_code="pull_not_found",
            is_long_polling="true",
        )
        == 1
    )


async def test_no_observer_costs_nothing_and_changes_nothing() -> None:
    dispatcher = RequestDispatcher()
    dispatcher.register(RequestCode.SEND_MESSAGE_V2, _reply())
    answer = dispatcher.dispatch(None, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2))  # type: ignore[arg-type]
    assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SUCCESS


def test_unknown_codes_are_their_numbers() -> None:
    rpc = RpcLatency()
    request = RemotingCommand.request(9999)
    rpc(request, RemotingCommand.response_to(request, 777), 0.0, False)
    samples = samples_of(_histogram(rpc))
    assert (
        value(samples, "rocketmq_rpc_latency_count", request_code="9999", response_code="777") == 1
    )
