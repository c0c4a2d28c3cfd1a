"""A server's -c file may name RocketMQ's TLS file (``tls.config.file``): its tls.* keys
are read too and win, a relative path is taken beside the config file, and anything but
tls.* keys in it is an error naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.common.properties import read_server_properties
from mqcore.errors import ConfigError


def test_tls_file_keys_are_merged_and_win(tmp_path: Path) -> None:
    (tmp_path / "tls.properties").write_text(
        "tls.server.mode=enforcing\ntls.test.mode.enable=false\n"
    )
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b1\ntls.server.mode=permissive\ntls.config.file=tls.properties\n")
    props = read_server_properties(conf)
    assert props == {
        "brokerName": "b1", "tls.server.mode": "enforcing", "tls.test.mode.enable": "false",
    }  # fmt: skip


def test_no_tls_file_key_reads_the_file_alone(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b1\n")
    assert read_server_properties(conf) == {"brokerName": "b1"}


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "cannot read"), ("brokerName=evil\n", "only tls.* keys")],
)
def test_bad_tls_file_is_an_error_naming_it(
    tmp_path: Path, content: str | None, message: str
) -> None:
    if content is not None:
        (tmp_path / "tls.properties").write_text(content)
    conf = tmp_path / "ns.conf"
    conf.write_text("tls.config.file=tls.properties\n")
    with pytest.raises(ConfigError, match=message) as info:
        read_server_properties(conf)
    assert "tls.properties" in str(info.value)
