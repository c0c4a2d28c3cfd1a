"""`mq proxy`'s settings under RocketMQ 5's proxy key names."""

from __future__ import annotations

import pytest

from mqcore.errors import ConfigError
from mqcore.proxy.config import ProxyConfig


def test_rocketmq_5_s_keys_and_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MQ_NAMESRV_ADDR", raising=False)
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876")
    default = ProxyConfig()
    assert (default.proxy_mode, default.grpc_server_port) == ("cluster", 8081)
    assert default.namesrv_addr == "10.0.0.1:9876"  # RocketMQ's environment variable
    config = ProxyConfig.from_properties(
        {"namesrvAddr": "a:9876;b:9876", "grpcServerPort": "9081", "proxyMode": "CLUSTER"}
    )
    assert (config.namesrv_addr, config.grpc_server_port) == ("a:9876;b:9876", 9081)
    assert config.proxy_mode == "cluster"
    assert "grpcServerPort=9081" in config.to_properties_text()


@pytest.mark.parametrize(
    ("props", "text"),
    [
        ({"proxyMode": "remote"}, "proxyMode must be cluster or local"),
        ({"grpcServerPort": "70000"}, "grpcServerPort out of range"),
        ({"grpcServerPort": "x"}, "grpcServerPort"),
    ],
)
def test_bad_values_are_refused_by_name(props: dict[str, str], text: str) -> None:
    with pytest.raises(ConfigError, match=text):
        ProxyConfig.from_properties(props)
