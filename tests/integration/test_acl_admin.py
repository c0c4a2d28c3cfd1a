"""The plain-ACL admin codes (50-53) against an in-process broker with ``aclEnable=true``:
each change is written to plain_acl.yml (with a new dataVersion) and enforced at once,
a change the broker could not load is refused with the file untouched, and only admin
accounts may make changes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
import yaml

from mqcore.protocol import RequestCode, ResponseCode
from tests.support.acl import ADMIN, USER, AclCluster, max_offset, send
from tests.support.inproc import running_broker, running_namesrv

pytestmark = pytest.mark.timeout(60)


async def ask(acl_cluster: AclCluster, code: int, fields: dict[str, str]) -> tuple[int, str]:
    client = acl_cluster.client(ADMIN)
    try:
        answer = await client.invoke(code, fields)
    finally:
        await client.close()
    return answer.code, answer.remark or ""


def accounts(path: Path) -> dict[str, dict[str, object]]:
    return {a["accessKey"]: a for a in yaml.safe_load(path.read_text())["accounts"]}


async def test_create_account_is_written_and_enforced_at_once(acl_cluster: AclCluster) -> None:
    fields = {"accessKey": "newUser1", "secretKey": "newSecret1", "admin": "false",
              "defaultTopicPerm": "DENY", "topicPerms": "both=PUB,other=PUB"}  # fmt: skip
    assert await ask(acl_cluster, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields) == (0, "")
    written = accounts(acl_cluster.acl_file)["newUser1"]
    assert written["secretKey"] == "newSecret1"
    assert written["topicPerms"] == ["both=PUB", "other=PUB"]
    assert written["admin"] is False
    doc = yaml.safe_load(acl_cluster.acl_file.read_text())
    assert doc["dataVersion"][0]["counter"] == 1
    await send(acl_cluster, "other", access_key="newUser1", secret_key="newSecret1")  # no poll wait
    assert max_offset(acl_cluster.broker, "other") == 1


async def test_update_keeps_fields_the_request_leaves_out(acl_cluster: AclCluster) -> None:
    fields = {"accessKey": "userKey1", "admin": "false", "topicPerms": "other=PUB"}
    assert (await ask(acl_cluster, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields))[0] == 0
    user = accounts(acl_cluster.acl_file)["userKey1"]
    assert user["secretKey"] == "userSecret" and user["defaultGroupPerm"] == "SUB"
    assert user["topicPerms"] == ["other=PUB"]
    await send(acl_cluster, "other", access_key="userKey1", secret_key="userSecret")
    assert max_offset(acl_cluster.broker, "other") == 1


@pytest.mark.parametrize(
    ("fields", "remark"),
    [
        ({"accessKey": "short", "secretKey": "newSecret1"}, "longer than 6"),
        ({"accessKey": "newUser1", "secretKey": "newSecret1", "topicPerms": "a=WRITE"}, "WRITE"),
        ({"accessKey": "newUser1"}, "needs a secretKey"),
        (
            {"accessKey": "newUser1", "secretKey": "newSecret1", "whiteRemoteAddress": "1.2.3"},
            "1.2.3",
        ),
    ],
)
async def test_a_change_the_broker_could_not_load_is_refused(
    acl_cluster: AclCluster, fields: dict[str, str], remark: str
) -> None:
    before = acl_cluster.acl_file.read_bytes()
    code, text = await ask(acl_cluster, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields)
    assert code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED and remark in text, text
    assert acl_cluster.acl_file.read_bytes() == before


async def test_delete_account(acl_cluster: AclCluster) -> None:
    code, _ = await ask(acl_cluster, RequestCode.DELETE_ACL_CONFIG, {"accessKey": "userKey1"})
    assert code == ResponseCode.SUCCESS and "userKey1" not in accounts(acl_cluster.acl_file)
    with pytest.raises(Exception, match="no ACL config"):
        await send(acl_cluster, "both", access_key="userKey1", secret_key="userSecret")
    code, text = await ask(acl_cluster, RequestCode.DELETE_ACL_CONFIG, {"accessKey": "userKey1"})
    assert code == ResponseCode.DELETE_ACL_CONFIG_FAILED
    assert text == "The accesskey[userKey1] corresponding to accessConfig has been deleted failed."


async def test_global_white_addresses_let_unsigned_requests_in(acl_cluster: AclCluster) -> None:
    fields = {"globalWhiteAddrs": "127.0.0.1,10.0.0.*"}
    assert (await ask(acl_cluster, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, fields))[0] == 0
    doc = yaml.safe_load(acl_cluster.acl_file.read_text())
    assert doc["globalWhiteRemoteAddresses"] == ["127.0.0.1", "10.0.0.*"]
    await send(acl_cluster, "other")  # unsigned, from a trusted address
    assert max_offset(acl_cluster.broker, "other") == 1
    fields["aclFileFullPath"] = "/etc/other_acl.yml"
    code, text = await ask(acl_cluster, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, fields)
    assert code == ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED and "ACL file" in text


async def test_version_counts_changes(acl_cluster: AclCluster) -> None:
    client = acl_cluster.client(USER)  # a read: any signed account
    try:
        answer = await client.invoke(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {})
        assert answer.code == ResponseCode.SUCCESS
        assert orjson.loads(answer.ext_fields["version"])["counter"] == 0
        await ask(acl_cluster, RequestCode.DELETE_ACL_CONFIG, {"accessKey": "userKey1"})
        answer = await client.invoke(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {})
    finally:
        await client.close()
    assert answer.code == ResponseCode.NO_PERMISSION  # the account is gone: refused at once
    client = acl_cluster.client(ADMIN)
    try:
        answer = await client.invoke(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {})
    finally:
        await client.close()
    fields = answer.ext_fields
    assert orjson.loads(fields["version"])["counter"] == 1
    assert list(orjson.loads(fields["allAclFileVersion"])) == [str(acl_cluster.acl_file)]
    assert fields["brokerAddr"] == acl_cluster.broker.broker_addr
    assert fields["brokerName"] == acl_cluster.broker.config.broker_name
    assert fields["clusterName"] == acl_cluster.broker.config.broker_cluster_name


async def test_only_admin_accounts_change_the_file(acl_cluster: AclCluster) -> None:
    client = acl_cluster.client(USER)
    try:
        answer = await client.invoke(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "adminKey"})
    finally:
        await client.close()
    assert answer.code == ResponseCode.NO_PERMISSION
    assert "adminKey" in accounts(acl_cluster.acl_file)


@pytest.fixture
async def plain_broker(tmp_path: Path) -> AsyncIterator[AclCluster]:
    async with (
        running_namesrv(tmp_path) as namesrv,
        running_broker(tmp_path, f"127.0.0.1:{namesrv.port}") as broker,
    ):
        yield AclCluster(namesrv, broker, tmp_path / "none.yml")


async def test_without_acl_the_codes_say_so(plain_broker: AclCluster) -> None:
    for code, fields in (
        (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "newUser1"}),
        (RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newUser1"}),
        (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "1.2.3.4"}),
        (RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}),
    ):
        answer_code, remark = await ask(plain_broker, code, fields)
        assert answer_code != ResponseCode.SUCCESS and "aclEnable=false" in remark
    assert not plain_broker.acl_file.exists()
