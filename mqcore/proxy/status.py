"""Statuses of the gRPC answers: ``apache.rocketmq.v2.Code`` and its message.

RocketMQ 5's proxy answers a refused call with gRPC status OK and the refusal in the
response's own ``status`` field (the SDKs read that, not the transport's status). A check of
the access point itself raises :class:`ProxyError` with the code to answer; a broker answer
other than success becomes a code by the proxy's small table (``ResponseBuilder``): what it
does not name is INTERNAL_SERVER_ERROR, the broker's remark the message.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mqcore.errors import MQError, MQTimeoutError
from mqcore.protocol import RemotingCommand, ResponseCode
from mqcore.proxy.grpc_v2 import definition_pb2 as pb

__all__ = [
    "ProxyError",
    "brokers_failing",
    "code_of_response",
    "ok",
    "status",
    "status_of_response",
]

_REMOTING_CODES: dict[int, pb.Code] = {
    ResponseCode.SUCCESS: pb.Code.OK,
    ResponseCode.SYSTEM_BUSY: pb.Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: pb.Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: pb.Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.NO_PERMISSION: pb.Code.FORBIDDEN,
    ResponseCode.TOPIC_NOT_EXIST: pb.Code.TOPIC_NOT_FOUND,
}
"""The proxy's table, plus the two refusals a local broker answers itself (NO_PERMISSION,
TOPIC_NOT_EXIST) under the codes RocketMQ 5 gives their exceptions."""


class ProxyError(MQError):
    """A call refused by the access point: ``code`` is what its response's status says."""

    def __init__(self, code: pb.Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status(code: pb.Code, message: str | None = None) -> pb.Status:
    """A status; without a message, the code's name (as the proxy writes OK)."""
    return pb.Status(code=code, message=message if message is not None else pb.Code.Name(code))


def ok() -> pb.Status:
    return status(pb.Code.OK)


def code_of_response(response_code: int) -> pb.Code:
    return _REMOTING_CODES.get(response_code, pb.Code.INTERNAL_SERVER_ERROR)


def status_of_response(response: RemotingCommand) -> pb.Status:
    """A broker's answer as a status: its code mapped, its remark (or the number) said."""
    message = response.remark if response.remark else str(int(response.code))
    return status(code_of_response(response.code), message)


@contextmanager
def brokers_failing() -> Iterator[None]:
    """The brokers cannot be asked (unreachable, no answer in time, no name server
    answers): the call's status says so, as RocketMQ 5's proxy maps its client's
    failures, rather than as an unexpected error."""
    try:
        yield
    except ProxyError:
        raise
    except MQTimeoutError as exc:
        raise ProxyError(pb.Code.PROXY_TIMEOUT, str(exc)) from exc
    except MQError as exc:
        raise ProxyError(pb.Code.INTERNAL_SERVER_ERROR, str(exc)) from exc
