"""`mq broker -c FILE` reads 4.9.8's keys that mq has no setting for quietly (a file a
4.9.8 broker used, or one UPDATE_BROKER_CONFIG saved them in); other unknown keys are
reported as probable typos."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcli.commands.broker import _ROCKETMQ_TABLES, load_config
from mqcore.broker.config import BrokerConfig
from mqcore.store.store_config import MessageStoreConfig


def test_rocketmq_only_keys_are_quiet_typos_are_reported(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ours = set(BrokerConfig.property_fields()) | set(MessageStoreConfig.property_fields())
    java_only = sorted(k for table in _ROCKETMQ_TABLES for k, _ in table if k not in ours)
    assert len(java_only) > 20  # the 4.9.8 tables hold keys mq does not implement
    conf = tmp_path / "broker.conf"
    lines = [f"{key}=1" for key in java_only[:10]] + ["brokerNmae=typo", "brokerName=b1"]
    conf.write_text("\n".join(lines) + "\n")
    broker, _ = load_config(conf, store=tmp_path / "store")
    err = capfd.readouterr().err
    assert broker.broker_name == "b1"
    assert "brokerNmae" in err and err.count("unknown property") == 1, err
