"""The cluster access point's own decisions, without a cluster: what it refuses to start
with, and the endpoints its routes name."""

from __future__ import annotations

import pytest

from mqcore.errors import ConfigError
from mqcore.proxy.cluster import ClusterAccessPoint
from mqcore.proxy.config import ProxyConfig
from mqcore.proxy.grpc_v2 import definition_pb2 as pb


@pytest.mark.parametrize(
    ("config", "text"),
    [
        (ProxyConfig(namesrv_addr="127.0.0.1:9876", proxy_mode="local"), "grpcServerPort"),
        (ProxyConfig(namesrv_addr=""), "no name server address"),
        (ProxyConfig(namesrv_addr=" ; "), "no name server address"),
    ],
)
async def test_what_it_refuses_to_start_with(config: ProxyConfig, text: str) -> None:
    with pytest.raises(ConfigError, match=text):
        ClusterAccessPoint(config)


async def test_routes_name_the_address_the_client_used_at_the_proxy_s_port() -> None:
    config = ProxyConfig(namesrv_addr="127.0.0.1:9876", grpc_server_port=8081, bind_address="::1")
    proxy = ClusterAccessPoint(config)
    asked = pb.Endpoints(
        scheme=pb.AddressScheme.DOMAIN_NAME,
        addresses=[pb.Address(host="mq.example", port=443), pb.Address(host="mq2", port=80)],
    )
    named = proxy._endpoints(asked)
    assert named.scheme == pb.AddressScheme.DOMAIN_NAME
    assert [(a.host, a.port) for a in named.addresses] == [("mq.example", 8081), ("mq2", 8081)]
    own = proxy._endpoints(pb.Endpoints())  # the client said nothing: where the proxy is
    assert own.scheme == pb.AddressScheme.IPv6
    assert [(a.host, a.port) for a in own.addresses] == [("::1", 8081)]
    config.use_endpoint_port_from_request = True  # behind a port mapping
    assert [a.port for a in proxy._endpoints(asked).addresses] == [443, 80]
    await proxy.brokers.close()
