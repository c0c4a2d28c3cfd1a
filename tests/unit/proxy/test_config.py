"""`mq proxy`'s settings under RocketMQ 5's proxy key names."""

from __future__ import annotations

import pytest

from mqcore.broker.config import BrokerConfig
from mqcore.errors import ConfigError
from mqcore.proxy.config import ProxyConfig
from mqcore.proxy.consumer import ReceiveLimits


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


def test_the_receive_keys_are_rocketmq_5_s() -> None:
    config = ProxyConfig.from_properties(
        {
            "minInvisibleTimeMillsForRecv": "2000",
            "grpcClientConsumerMaxLongPollingTimeoutMillis": "30000",
            "renewAheadTimeMillis": "15000",
        }
    )
    limits = ReceiveLimits.of(config)
    assert (limits.min_invisible_ms, limits.max_long_polling_ms) == (2000, 30_000)
    assert limits.renew.ahead_ms == 15_000
    assert ReceiveLimits.of(ProxyConfig()) == ReceiveLimits()  # RocketMQ 5's defaults
    assert "defaultInvisibleTimeMills=60000" in ProxyConfig().to_properties_text()


@pytest.mark.parametrize(
    ("props", "text"),
    [
        ({"renewSchedulePeriodMillis": "0"}, "renewSchedulePeriodMillis must be > 0"),
        (
            {"minInvisibleTimeMillsForRecv": "7200000", "maxInvisibleTimeMills": "3600000"},
            "must not exceed maxInvisibleTimeMills",
        ),
        (
            {"grpcClientConsumerMinLongPollingTimeoutMillis": "30000"},
            "must not exceed grpcClientConsumerMaxLongPollingTimeoutMillis",
        ),
    ],
)
def test_receive_keys_out_of_range_are_refused(props: dict[str, str], text: str) -> None:
    with pytest.raises(ConfigError, match=text):
        ProxyConfig.from_properties(props)
    with pytest.raises(ConfigError, match=text):
        BrokerConfig.from_properties({"brokerName": "b", **props})
