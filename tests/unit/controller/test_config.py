"""RocketMQ 5's way of naming a controller group, and the mistakes it refuses."""

from __future__ import annotations

import pytest

from mqcore.controller.config import RaftConfig, parse_peers
from mqcore.errors import ConfigError


def test_peers_keep_their_order_and_ids() -> None:
    assert parse_peers(" n0-127.0.0.1:9877; n1-10.0.0.2:9878 ;") == {
        "n0": "127.0.0.1:9877",
        "n1": "10.0.0.2:9878",
    }


@pytest.mark.parametrize(
    "text", ["", ";", "n0", "n0-127.0.0.1", "n0-127.0.0.1:x", "-127.0.0.1:1", "n0-h:1;n0-h:2"]
)
def test_malformed_peer_lists_are_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_peers(text)


def test_the_self_id_must_be_a_peer() -> None:
    with pytest.raises(ConfigError, match="n3"):
        RaftConfig.from_rocketmq("n0-127.0.0.1:9877", "n3")


def test_an_empty_store_path_keeps_the_log_in_memory() -> None:
    config = RaftConfig.from_rocketmq("n0-127.0.0.1:9877", "n0", "")
    assert config.store_path is None
    assert config.others == ()


def test_a_plain_address_list() -> None:
    config = RaftConfig("127.0.0.1:1", ("127.0.0.1:1", "127.0.0.1:2"))
    assert config.others == ("127.0.0.1:2",)
    with pytest.raises(ConfigError):
        RaftConfig("localhost")
