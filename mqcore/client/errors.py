"""Client-side errors whose messages say what to check.

They extend the tree of :mod:`mqcore.errors` (drawn there) and the transport errors of
:mod:`mqcore.remoting.errors`, so ``except RemotingConnectError`` still catches an
unreachable broker or name server, and ``except MQClientError`` catches everything here::

    MQClientError
    ├── RemotingConnectError           (mqcore.remoting) cannot connect; retriable
    │   ├── NameServerUnreachableError no name server of the list answers
    │   └── BrokerUnreachableError     a broker address does not answer
    ├── TopicRouteNotFoundError        no route for a topic (invalid_route)
    ├── NotANameServerError            a broker's address where a name server's belongs
    ├── ClientStateError               not started / already shut down / duplicate group
    ├── InvalidMessageError            bad topic name, empty or too large body (ValueError)
    └── InvalidGroupError              bad producer/consumer group name (ValueError)

Flags follow aiokafka: ``retriable`` (sending again, maybe elsewhere, can succeed) and
``invalid_route`` (the cached route is stale; refresh it before retrying).
"""

from __future__ import annotations

from collections.abc import Sequence

from mqcore.errors import MQBrokerError, MQClientError, MQTimeoutError
from mqcore.protocol import RemotingCommand, ResponseCode
from mqcore.remoting.errors import ChannelClosedError, RemotingConnectError

__all__ = [
    "RETRY_RESPONSE_CODES",
    "BrokerUnreachableError",
    "ClientStateError",
    "InvalidGroupError",
    "InvalidMessageError",
    "NameServerUnreachableError",
    "NotANameServerError",
    "TopicRouteNotFoundError",
    "is_retriable",
]

RETRY_RESPONSE_CODES = frozenset(
    {
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.NO_PERMISSION,
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)
"""Broker answers a producer retries on another queue/broker (Java's
``DefaultMQProducer.retryResponseCodes``, ali-ons the same six); spec §5.2."""


class NameServerUnreachableError(RemotingConnectError):
    """None of the configured name servers answered."""

    retriable = True

    def __init__(self, addrs: Sequence[str], detail: str = "") -> None:
        self.addrs = list(addrs)
        which = ", ".join(self.addrs) or "(none configured)"
        noun = "name server" if len(self.addrs) == 1 else "name servers"
        text = f"{noun} {which} unreachable: is `mq namesrv` running and the address right?"
        super().__init__(f"{text} ({detail})" if detail else text)


class BrokerUnreachableError(RemotingConnectError):
    """A broker address does not accept connections (down, wrong brokerIP1, firewall)."""

    retriable = True

    def __init__(self, addr: str, detail: str = "") -> None:
        self.addr = addr
        text = f"broker {addr} is down or unreachable"
        super().__init__(f"{text} ({detail})" if detail else text)


class TopicRouteNotFoundError(MQClientError):
    """The name servers know no route for the topic."""

    invalid_route = True

    def __init__(self, topic: str) -> None:
        self.topic = topic
        super().__init__(
            f"no route for topic {topic}: does it exist (`mq topic create -t {topic}`)? "
            "is autoCreateTopicEnable on? is the name server address right?"
        )


class NotANameServerError(MQClientError):
    """The name server address is a broker's: it answers name server requests with
    REQUEST_CODE_NOT_SUPPORTED (the usual mix-up of -n with a broker's port)."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        super().__init__(f"{addr} is a broker, not a name server")
        self.hint = (
            "give the name server's address (`mq namesrv` listens on 9876 by default); "
            f"the broker's own namesrvAddr names it: mq broker config get namesrvAddr "
            f"--addr {addr}"
        )


class ClientStateError(MQClientError):
    """A producer, consumer or admin used in the wrong state (not started, closed, ...)."""


class InvalidMessageError(MQClientError, ValueError):
    """A message the broker would refuse: bad topic name, empty or oversized body."""


class InvalidGroupError(MQClientError, ValueError):
    """A producer or consumer group name RocketMQ refuses (``Validators.checkGroup``)."""


def is_retriable(exc: BaseException) -> bool:
    """Whether a send that failed with ``exc`` may be retried on another broker."""
    if isinstance(exc, MQBrokerError):
        return exc.code in RETRY_RESPONSE_CODES
    if isinstance(exc, (MQTimeoutError, RemotingConnectError, ChannelClosedError)):
        return True
    return bool(getattr(exc, "retriable", False))


def check_ok(response: RemotingCommand, *codes: int) -> RemotingCommand:
    """``response`` when its code is one of ``codes`` (default SUCCESS); otherwise the
    broker's or name server's refusal as :class:`MQBrokerError` with its remark."""
    if response.code not in (codes or (ResponseCode.SUCCESS,)):
        raise MQBrokerError(response.code, response.remark)
    return response
