"""ACL at `mq proxy` (cluster mode) in front of two brokers that have ``aclEnable``: the
proxy checks each gRPC call's signature and rights against its ``plainAclFile``
(``enableACL``), and signs what it forwards with its own keys
(``enableAclRpcHookForClusterMode``), so a client needs rights of its own, not the
proxy's."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from grpc import aio

from mqcore.acl.signature import SessionCredentials
from mqcore.client import ClientConfig
from mqcore.errors import ConfigError
from mqcore.proxy.cluster import ClusterAccessPoint
from mqcore.proxy.config import ProxyConfig
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from tests.support.inproc import LIVE_STORE, LiveCluster

ACL = """\
accounts:
  - accessKey: proxyKey
    secretKey: proxySecret
    admin: true
  - accessKey: appKey01
    secretKey: appSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [Orders=PUB|SUB]
"""
DATE = "20261206T101010Z"
PROXY_KEYS = ClientConfig(credentials=SessionCredentials("proxyKey", "proxySecret"))


def metadata(access_key: str | None = None, secret: str = "") -> tuple[tuple[str, str], ...]:
    """A client's call metadata, signed as the 5.x SDKs sign it when a key is given."""
    base = (("x-mq-client-id", "acl-client@1"), ("x-mq-language", "PYTHON"))
    if access_key is None:
        return base
    sign = hmac.new(secret.encode(), DATE.encode(), hashlib.sha1).hexdigest()
    authorization = (
        f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, Signature={sign}"
    )
    return (*base, ("authorization", authorization), ("x-mq-date-time", DATE))


def message(topic: str) -> pb.Message:
    sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper())
    return pb.Message(topic=pb.Resource(name=topic), body=b"x", system_properties=sp)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[LiveCluster, Path]]:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL)
    settings = {"acl_enable": True, "plain_acl_file": str(acl_file)}
    live = LiveCluster(tmp_path, store=dict(LIVE_STORE), settings=settings)
    async with live.running("broker-a", "broker-b") as started:
        for topic in ("Orders", "Secret"):
            await started.create_topic(topic, 2)
        yield started, acl_file


async def serving(config: ProxyConfig, client_config: ClientConfig | None) -> ClusterAccessPoint:
    proxy = ClusterAccessPoint(config, client_config=client_config)
    await proxy.start()
    return proxy


def proxy_config(namesrv: str, acl_file: Path, **keys: Any) -> ProxyConfig:
    return ProxyConfig(
        namesrv_addr=namesrv,
        grpc_server_port=0,
        bind_address="127.0.0.1",
        plain_acl_file=str(acl_file),
        **keys,
    )


async def test_the_proxy_checks_the_client_and_signs_as_itself(
    cluster: tuple[LiveCluster, Path],
) -> None:
    live, acl_file = cluster
    config = proxy_config(
        live.addr, acl_file, enable_acl=True, enable_acl_rpc_hook_for_cluster_mode=True
    )
    proxy = await serving(config, PROXY_KEYS)
    try:
        async with aio.insecure_channel(proxy.address) as channel:
            stub = MessagingServiceStub(channel)

            async def send(topic: str, meta: Any) -> spb.SendMessageResponse:
                request = spb.SendMessageRequest(messages=[message(topic)])
                answer: spb.SendMessageResponse = await stub.SendMessage(request, metadata=meta)
                return answer

            unsigned = await send("Orders", metadata())
            assert unsigned.status.code == pb.Code.UNAUTHORIZED, unsigned
            wrong = await send("Orders", metadata("appKey01", "notTheSecret"))
            assert wrong.status.code == pb.Code.UNAUTHORIZED, wrong
            assert "signature" in wrong.status.message
            denied = await send("Secret", metadata("appKey01", "appSecret"))
            assert denied.status.code == pb.Code.UNAUTHORIZED, denied
            assert "Secret" in denied.status.message

            allowed = await send("Orders", metadata("appKey01", "appSecret"))
            assert allowed.status.code == pb.Code.OK, allowed  # the brokers took the proxy's keys
            stored = sum(
                broker.store.get_max_offset_in_queue("Orders", q)
                for broker in live.brokers.values()
                for q in range(2)
            )
            assert stored == 1

            route = spb.QueryRouteRequest(topic=pb.Resource(name="Secret"))
            hidden = await stub.QueryRoute(route, metadata=metadata("appKey01", "appSecret"))
            assert hidden.status.code == pb.Code.UNAUTHORIZED, hidden

            acl_file.write_text(ACL.replace("[Orders=PUB|SUB]", "[Orders=PUB|SUB, Secret=PUB]"))
            proxy.brokers.acl_guard.reload_if_changed()  # what its watch does within seconds
            granted = await send("Secret", metadata("appKey01", "appSecret"))
            assert granted.status.code == pb.Code.OK, granted
    finally:
        await proxy.stop()


async def test_without_its_own_keys_the_brokers_refuse_what_the_proxy_forwards(
    cluster: tuple[LiveCluster, Path],
) -> None:
    live, acl_file = cluster
    proxy = await serving(proxy_config(live.addr, acl_file, enable_acl=True), None)
    try:
        async with aio.insecure_channel(proxy.address) as channel:
            stub = MessagingServiceStub(channel)
            request = spb.SendMessageRequest(messages=[message("Orders")])
            answer = await stub.SendMessage(request, metadata=metadata("appKey01", "appSecret"))
            assert answer.status.code == pb.Code.FORBIDDEN, answer  # the broker's NO_PERMISSION
    finally:
        await proxy.stop()


def test_signing_needs_keys_and_acl_needs_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    signing = ProxyConfig(namesrv_addr="127.0.0.1:9876", enable_acl_rpc_hook_for_cluster_mode=True)
    with pytest.raises(ConfigError, match="own keys"):
        ClusterAccessPoint(signing)
    with pytest.raises(ConfigError, match="plainAclFile"):
        ClusterAccessPoint(ProxyConfig(namesrv_addr="127.0.0.1:9876", enable_acl=True))
    bad = tmp_path / "plain_acl.yml"
    bad.write_text("accounts: [nonsense")
    with pytest.raises(ConfigError):
        ClusterAccessPoint(proxy_config("127.0.0.1:9876", bad, enable_acl=True))
