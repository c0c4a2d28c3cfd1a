"""What a client instance is configured with, and what it needs of its producers and
consumers (kept apart from :mod:`mqcore.client.instance` so they can be read alone)."""

from __future__ import annotations

import dataclasses
import os
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from mqcore.acl.signature import SessionCredentials, sign_request
from mqcore.client.route import local_ip
from mqcore.protocol import LanguageCode, RemotingCommand
from mqcore.protocol.bodies import ConsumerData, MessageQueue
from mqcore.remoting import RemotingClient, RequestDispatcher
from mqcore.remoting.dispatcher import RpcHook
from mqcore.remoting.tls import client_context

__all__ = [
    "DEFAULT_NAMESRV",
    "ClientConfig",
    "ConsumerHandle",
    "ProducerHandle",
    "SessionCredentials",
    "default_namesrv",
    "signing_hook",
    "with_credentials",
]

DEFAULT_NAMESRV = "127.0.0.1:9876"


def default_namesrv() -> str:
    """``MQ_NAMESRV_ADDR``, else RocketMQ's ``NAMESRV_ADDR``, else 127.0.0.1:9876."""
    return os.environ.get("MQ_NAMESRV_ADDR") or os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV


@dataclass(slots=True)
class ClientConfig:
    """Settings of a client instance (RocketMQ's ``ClientConfig``; durations in seconds).

    ``remoting_factory`` builds the transport from the dispatcher of server-initiated
    requests; tests pass ``lambda d: InMemoryRemotingClient(network, d)``.
    """

    instance_name: str | None = None
    client_ip: str = field(default_factory=local_ip)
    poll_name_server_interval: float = 30.0
    heartbeat_broker_interval: float = 30.0
    rebalance_interval: float = 20.0
    persist_consumer_offset_interval: float = 5.0
    request_timeout: float = 3.0
    connect_timeout: float = 3.0
    tls: bool = field(default_factory=lambda: _env_flag("MQ_TLS") or bool(_env("MQ_TLS_CA")))
    """Talk to name servers and brokers over TLS (default: ``MQ_TLS=1``, or ``MQ_TLS_CA``
    set)."""
    tls_ca_path: str | None = field(default_factory=lambda: _env("MQ_TLS_CA"))
    """PEM file of the CA the servers' certificates chain to (implies ``tls``; default
    ``MQ_TLS_CA``, else the system's CAs)."""
    tls_cert_path: str | None = field(default_factory=lambda: _env("MQ_TLS_CERT"))
    """A client certificate (PEM) for servers with ``tls.server.need.client.auth``."""
    tls_key_path: str | None = field(default_factory=lambda: _env("MQ_TLS_KEY"))
    tls_verify: bool = True
    """False accepts any server certificate (RocketMQ's ``tls.test.mode.enable``): tests only."""
    language: LanguageCode = LanguageCode.PYTHON
    remoting_factory: Callable[[RequestDispatcher], RemotingClient] | None = None
    credentials: SessionCredentials | None = None
    """Sign every request for a broker or name server with ACL enabled (plain ACL)."""

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of this instance's connections, or None for plain TCP.
        Raises ConfigError when a file does not load."""
        if not self.tls and not self.tls_ca_path:
            return None
        return client_context(
            ca_path=self.tls_ca_path,
            cert_path=self.tls_cert_path,
            key_path=self.tls_key_path,
            verify=self.tls_verify,
        )


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def _env_flag(name: str) -> bool:
    return (os.environ.get(name) or "").strip().lower() in ("1", "true", "yes", "on")


def with_credentials(
    config: ClientConfig | None, access_key: str | None, secret_key: str | None
) -> ClientConfig | None:
    """``config`` (a copy) carrying the keys, for the ``access_key=``/``secret_key=``
    options of producers, consumers and Admin; ``config`` itself when no key is given."""
    if access_key is None and secret_key is None:
        return config
    if not access_key or not secret_key:
        raise ValueError("give both access_key and secret_key, or neither")
    base = config if config is not None else ClientConfig()
    return dataclasses.replace(base, credentials=SessionCredentials(access_key, secret_key))


def signing_hook(credentials: SessionCredentials) -> RpcHook:
    """The RemotingClient hook that signs as RocketMQ's AclClientRPCHook."""

    def hook(addr: str, request: RemotingCommand) -> RemotingCommand:
        return sign_request(request, credentials)

    return hook


class ProducerHandle(Protocol):
    """What the instance needs of a producer (transactions add ``check_transaction_state``,
    called if present: ``(broker_addr, msg, header) -> None | Awaitable[None]``)."""

    @property
    def group(self) -> str: ...


class ConsumerHandle(Protocol):
    """What the instance needs of a consumer (implemented by the consumer classes).

    ``do_rebalance`` is called every ``rebalance_interval`` and at once when a broker
    sends NOTIFY_CONSUMER_IDS_CHANGED for the group; ``reset_offset`` when an admin resets
    the group's offsets (RESET_CONSUMER_CLIENT_OFFSET). Optional members, used when present:
    ``persist_consumer_offset()`` (every ``persist_consumer_offset_interval``) and
    ``running_info(jstack=False)`` (GET_CONSUMER_RUNNING_INFO: a ConsumerRunningInfo, or
    its JSON as a dict).
    Each may be a plain or a coroutine function.
    """

    @property
    def group(self) -> str: ...

    def consumer_data(self) -> ConsumerData: ...

    def do_rebalance(self) -> Awaitable[None] | None: ...

    def reset_offset(
        self, topic: str, offsets: dict[MessageQueue, int]
    ) -> Awaitable[None] | None: ...
