"""What a broker asks of a consumer (``mqadmin consumeMessage``, ``consumerStatus`` with
``-s``), asked of a gRPC client over its Telemetry stream, as RocketMQ 5's proxy asks it.

CONSUME_MESSAGE_DIRECTLY becomes a ``VerifyMessageCommand`` with the message, answered by
a ``VerifyMessageResult`` whose status is the consume result (OK: ``CR_SUCCESS``,
FAILED_TO_CONSUME_MESSAGE: ``CR_LATER``, MESSAGE_CORRUPTED: ``CR_RETURN_NULL``);
GET_CONSUMER_RUNNING_INFO with ``jstackEnable`` becomes a ``PrintThreadStackTraceCommand``,
answered by a ``ThreadStackTrace``. Each command carries a nonce; the answer names it.
A 5.x client keeps no running info a 4.x tool could read, so a running info without the
stacks is refused (RocketMQ 5's proxy leaves it unanswered until the broker times out).

The Node.js SDK answers a verify command with the command itself (its nonce, status
NOT_IMPLEMENTED) instead of a result; that is taken as the result it means.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from mqcore.errors import MQTimeoutError
from mqcore.message.model import MessageExt
from mqcore.protocol import RemotingCommand, ResponseCode
from mqcore.protocol.bodies.running_info import ConsumeMessageDirectlyResult, ConsumerRunningInfo
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.messages import to_proto
from mqcore.remoting.errors import ChannelClosedError

__all__ = [
    "Answer",
    "PendingAnswers",
    "directly_result",
    "running_info_response",
    "thread_stack_command",
    "verify_command",
]

_CONSUME_RESULTS = {
    pb.Code.OK: "CR_SUCCESS",
    pb.Code.FAILED_TO_CONSUME_MESSAGE: "CR_LATER",
    pb.Code.MESSAGE_CORRUPTED: "CR_RETURN_NULL",
}


@dataclass(frozen=True, slots=True)
class Answer:
    """A client's answer to one command: its status and, for stacks, the text."""

    status: pb.Status
    text: str = ""


class PendingAnswers:
    """Commands sent to one client and not answered yet, by nonce."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._numbers = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[Answer]] = {}

    async def ask(self, send: Callable[[str], None], timeout: float, what: str) -> Answer:
        """``send(nonce)`` a command, then its answer within ``timeout`` seconds
        (MQTimeoutError otherwise; ChannelClosedError when the client goes first)."""
        nonce = f"{self._prefix}-{next(self._numbers)}"
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[nonce] = future
        try:
            send(nonce)
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise MQTimeoutError(f"no answer to {what} in {timeout:g} s") from None
        finally:
            self._waiting.pop(nonce, None)

    def resolve(self, nonce: str, answer: Answer) -> bool:
        """Complete the command ``nonce`` names; False when none waits (late, unknown)."""
        future = self._waiting.pop(nonce, None)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    def close(self, why: str) -> None:
        """The client is gone: every waiting command fails."""
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(ChannelClosedError(why))


def verify_command(nonce: str, message: MessageExt) -> spb.TelemetryCommand:
    verify = spb.VerifyMessageCommand(nonce=nonce, message=to_proto(message))
    return spb.TelemetryCommand(verify_message_command=verify)


def thread_stack_command(nonce: str) -> spb.TelemetryCommand:
    command = spb.PrintThreadStackTraceCommand(nonce=nonce)
    return spb.TelemetryCommand(print_thread_stack_trace_command=command)


def directly_result(answer: Answer) -> ConsumeMessageDirectlyResult:
    """A verify answer as a 4.x consumer's result; a status with no 4.x meaning (the
    Node.js SDK's NOT_IMPLEMENTED) is ``CR_THROW_EXCEPTION`` with the status named."""
    code = answer.status.code
    result = _CONSUME_RESULTS.get(code)
    if result is not None:
        return ConsumeMessageDirectlyResult(consume_result=result, remark="from gRPC client")
    name = pb.Code.Name(code) if code in pb.Code.values() else str(code)
    detail = f": {answer.status.message}" if answer.status.message else ""
    return ConsumeMessageDirectlyResult(
        consume_result="CR_THROW_EXCEPTION", remark=f"from gRPC client: {name}{detail}"
    )


def running_info_response(request: RemotingCommand, answer: Answer) -> RemotingCommand:
    """A stacks answer as GET_CONSUMER_RUNNING_INFO's response (RocketMQ 5's mapping)."""
    code = answer.status.code
    if code == pb.Code.OK:
        body = ConsumerRunningInfo(jstack=answer.text).encode()
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)
    if code == pb.Code.VERIFY_FIFO_MESSAGE_UNSUPPORTED:
        return RemotingCommand.response_to(
            request, ResponseCode.NO_PERMISSION, "forbidden to verify message"
        )
    return RemotingCommand.response_to(
        request, ResponseCode.SYSTEM_ERROR, f"thread stack trace failed: {answer.status.message}"
    )
