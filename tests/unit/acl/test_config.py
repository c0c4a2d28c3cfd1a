"""plain_acl.yml in 4.9.8's format: the distribution's sample file and its edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.acl.config import load_acl_file, parse_acl
from mqcore.acl.permission import Perm, has_permission, parse_perm
from mqcore.errors import ConfigError

SAMPLE = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
"""


def test_sample_file() -> None:
    config = parse_acl(SAMPLE)
    assert [p.text for p in config.global_white_addresses] == ["10.10.103.*", "192.168.0.*"]
    rocketmq = config.accounts["RocketMQ"]
    assert rocketmq.secret_key == "12345678"  # a number to YAML, text to RocketMQ
    assert not rocketmq.admin
    assert rocketmq.default_topic_perm == Perm.DENY
    assert rocketmq.default_group_perm == Perm.SUB
    assert rocketmq.topic_perms == {
        "topicA": Perm.DENY,
        "topicB": Perm.PUB | Perm.SUB,
        "topicC": Perm.SUB,
    }
    assert rocketmq.resource_perms["%RETRY%groupB"] == Perm.PUB | Perm.SUB
    assert rocketmq.group_perms["groupA"] == Perm.DENY
    assert not rocketmq.white_remote_address.matches("192.168.1.1")
    admin = config.accounts["rocketmq2"]
    assert admin.admin and admin.white_remote_address.matches("192.168.1.7")
    assert admin.default_topic_perm == Perm.DENY  # missing default: DENY


@pytest.mark.parametrize(
    ("text", "perm"),
    [("PUB", Perm.PUB), ("SUB", Perm.SUB), ("PUB|SUB", 12), ("SUB|PUB", 12), (" DENY ", 1),
     ("pub", Perm.DENY), (None, Perm.DENY)],
)  # fmt: skip
def test_parse_perm(text: str | None, perm: int) -> None:
    assert parse_perm(text) == perm


def test_has_permission() -> None:
    assert has_permission(Perm.PUB, Perm.PUB | Perm.SUB)
    assert not has_permission(Perm.PUB, Perm.SUB)
    assert not has_permission(Perm.SUB, Perm.SUB | Perm.DENY)
    assert has_permission(Perm.ANY, Perm.SUB)
    assert not has_permission(Perm.ANY, Perm.DENY)


@pytest.mark.parametrize(
    "text",
    [
        "accounts:\n  - accessKey: short\n    secretKey: 12345678\n",
        "accounts:\n  - accessKey: RocketMQ\n",
        "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    topicPerms: [topicA]\n",
        "accounts:\n  - {accessKey: RocketMQ, secretKey: 12345678, whiteRemoteAddress: x.y}\n",
        "globalWhiteRemoteAddresses: [300.1.*.*]\n",
        "accounts: [\n",
        "- just a list\n",
    ],
)
def test_bad_files_are_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_acl(text)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    assert parse_acl("").accounts == {}
    assert load_acl_file(tmp_path / "absent.yml").accounts == {}


def test_first_account_of_a_key_wins() -> None:
    text = (
        "accounts:\n  - {accessKey: RocketMQ, secretKey: '11111111'}\n"
        "  - {accessKey: RocketMQ, secretKey: '22222222', admin: true}\n"
    )
    account = parse_acl(text).accounts["RocketMQ"]
    assert account.secret_key == "11111111" and not account.admin
