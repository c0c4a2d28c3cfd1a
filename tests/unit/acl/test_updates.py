"""Remote edits of plain_acl.yml (mqcore.acl.updates): 4.9.8's merge rules, the
dataVersion bump, and nothing written when the result would not load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mqcore.acl.updates import (
    AccountUpdate,
    data_version,
    delete_account,
    edit_acl_file,
    split_list,
    upsert_account,
)
from mqcore.errors import ConfigError

FILE = """\
globalWhiteRemoteAddresses: [10.0.0.*]
accounts:
  - accessKey: userKey1
    secretKey: userSecret
    whiteRemoteAddress: 192.168.1.*
    defaultTopicPerm: PUB
    topicPerms: [a=SUB]
dataVersion:
  - counter: 41
    timestamp: 1700000000000
"""


def test_update_merges_into_the_existing_account_and_bumps_the_version() -> None:
    doc = yaml.safe_load(FILE)
    upsert_account(doc, AccountUpdate("userKey1", group_perms=["g=SUB"], admin=True))
    (account,) = doc["accounts"]
    assert account == {
        "accessKey": "userKey1", "secretKey": "userSecret", "whiteRemoteAddress": "192.168.1.*",
        "defaultTopicPerm": "PUB", "topicPerms": ["a=SUB"], "admin": True, "groupPerms": ["g=SUB"],
    }  # fmt: skip
    version = data_version(doc)
    assert version.counter == 42 and version.timestamp > 1700000000000


def test_new_account_is_appended_and_delete_removes_it() -> None:
    doc = yaml.safe_load(FILE)
    upsert_account(doc, AccountUpdate("newUser1", secret_key="newSecret1"))
    assert [a["accessKey"] for a in doc["accounts"]] == ["userKey1", "newUser1"]
    assert delete_account(doc, "newUser1") and not delete_account(doc, "newUser1")
    assert data_version(doc).counter == 43


@pytest.mark.parametrize("perm", ["a=WRITE", "a", "a=PUB=SUB"])
def test_bad_resource_perms_are_refused(perm: str) -> None:
    with pytest.raises(ConfigError):
        upsert_account(yaml.safe_load(FILE), AccountUpdate("userKey1", topic_perms=[perm]))


def test_split_list_is_utilall_split() -> None:
    assert split_list(None) is None
    assert split_list("") == [] and split_list("a=PUB, b=SUB,") == ["a=PUB", "b=SUB"]


def test_edit_leaves_the_file_alone_when_the_result_would_not_load(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(FILE)

    def bad(doc: dict[str, object]) -> None:
        doc["globalWhiteRemoteAddresses"] = ["1.2.3"]

    with pytest.raises(ConfigError):
        edit_acl_file(path, bad)
    assert path.read_text() == FILE
    result = edit_acl_file(path, lambda doc: delete_account(doc, "userKey1"))
    assert result is not None and result[0].accounts == {} and result[1].counter == 42
    assert edit_acl_file(path, lambda doc: delete_account(doc, "userKey1")) is None
    assert data_version(yaml.safe_load(path.read_text())).counter == 42  # nothing written


def test_admin_left_out_keeps_the_file_value() -> None:
    doc = yaml.safe_load(FILE)
    upsert_account(doc, AccountUpdate("userKey1", admin=True))
    upsert_account(doc, AccountUpdate("userKey1", topic_perms=["b=PUB"]))  # as mq's CLI sends
    assert doc["accounts"][0]["admin"] is True
    upsert_account(doc, AccountUpdate("userKey1", admin=False))  # as 4.9.8's mqadmin sends
    assert doc["accounts"][0]["admin"] is False
