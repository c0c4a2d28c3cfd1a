"""Plain ACL end to end: an in-process name server and broker with ``aclEnable=true``,
driven by our own clients (signing with ``access_key``/``secret_key``) and raw requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.acl.signature import SessionCredentials
from mqcore.client import Admin
from mqcore.client.config import signing_hook
from mqcore.errors import MQBrokerError
from mqcore.namesrv.controller import NamesrvController
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from tests.support.acl import ACL, ADMIN, USER, AclCluster, max_offset, send
from tests.support.clients import TestClient
from tests.support.polling import until

pytestmark = pytest.mark.timeout(60)


async def test_right_key_publishes(acl_cluster: AclCluster) -> None:
    await send(acl_cluster, "pubOnly", access_key="userKey1", secret_key="userSecret")
    await send(acl_cluster, "both", access_key="userKey1", secret_key="userSecret")
    assert max_offset(acl_cluster.broker, "pubOnly") == 1


@pytest.mark.parametrize(
    ("keys", "remark"),
    [
        ({"access_key": "userKey1", "secret_key": "wrongSecret"}, "signature check failed"),
        ({"access_key": "nobody99", "secret_key": "userSecret"}, "no ACL config"),
        ({}, "no AccessKey"),
        ({"access_key": "userKey1", "secret_key": "userSecret", "topic": "subOnly"}, "no PUB"),
        ({"access_key": "userKey1", "secret_key": "userSecret", "topic": "denied"}, "no PUB"),
        ({"access_key": "userKey1", "secret_key": "userSecret", "topic": "other"}, "no PUB"),
    ],
)
async def test_refused_sends_write_nothing(
    acl_cluster: AclCluster, keys: dict[str, str], remark: str
) -> None:
    topic = keys.pop("topic", "both")
    with pytest.raises(MQBrokerError) as info:
        await send(acl_cluster, topic, **keys)
    assert info.value.code == ResponseCode.NO_PERMISSION
    assert remark in info.value.remark
    assert max_offset(acl_cluster.broker, topic) == 0


async def test_raw_request_without_signature(acl_cluster: AclCluster) -> None:
    client = acl_cluster.client(None)
    try:
        fields = {"AccessKey": "userKey1", "a": "pg", "b": "both", "c": "TBW102", "d": "4",
                  "e": "0", "f": "0", "g": "0", "h": "0", "i": "", "j": "0"}  # fmt: skip
        answer = await client.invoke(RequestCode.SEND_MESSAGE_V2, fields, b"x")
        assert answer.code == ResponseCode.NO_PERMISSION
        assert "signature check failed" in (answer.remark or "")
        assert max_offset(acl_cluster.broker, "both") == 0
    finally:
        await client.close()


async def pull(client: TestClient, topic: str, group: str) -> RemotingCommand:
    fields = {"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0",
              "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0",
              "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"}  # fmt: skip
    return await client.invoke(RequestCode.PULL_MESSAGE, fields)


async def test_pull_needs_sub_on_topic_and_group(acl_cluster: AclCluster) -> None:
    client = acl_cluster.client(USER)
    try:
        for topic, group, ok in [
            ("subOnly", "anyGroup", True),
            ("both", "anyGroup", True),
            ("pubOnly", "anyGroup", False),
            ("denied", "anyGroup", False),
            ("subOnly", "deniedGroup", False),
        ]:
            answer = await pull(client, topic, group)
            assert (answer.code != ResponseCode.NO_PERMISSION) is ok, (topic, group, answer)
        offsets = {"consumerGroup": "deniedGroup", "topic": "subOnly", "queueId": "0",
                   "commitOffset": "0"}  # fmt: skip
        answer = await client.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, offsets)
        assert answer.code == ResponseCode.NO_PERMISSION
        assert acl_cluster.broker.offsets.query("deniedGroup", "subOnly", 0) is None
        beat = await client.heartbeat(consumer_groups=["deniedGroup"], topics=["subOnly"])
        assert beat.code == ResponseCode.NO_PERMISSION
        beat = await client.heartbeat(consumer_groups=["okGroup"], topics=["subOnly"])
        assert beat.code == ResponseCode.SUCCESS
    finally:
        await client.close()


async def test_admin_codes_need_an_admin(acl_cluster: AclCluster) -> None:
    async with Admin(acl_cluster.ns, access_key="userKey1", secret_key="userSecret") as user:
        with pytest.raises(MQBrokerError) as info:
            await user.create_topic("newTopic")
        assert info.value.code == ResponseCode.NO_PERMISSION
        assert "needs an admin account" in info.value.remark
        with pytest.raises(MQBrokerError):
            await user.delete_topic("both")
    assert acl_cluster.broker.topic_configs.select("newTopic") is None
    assert acl_cluster.broker.topic_configs.select("both") is not None
    client = acl_cluster.client(USER)
    try:
        answer = await client.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=2\n")
        assert answer.code == ResponseCode.NO_PERMISSION
        assert acl_cluster.broker.config.broker_permission == 6
    finally:
        await client.close()
    async with Admin(acl_cluster.ns, access_key="adminKey", secret_key="adminSecret") as admin:
        await admin.create_topic("newTopic")
        await admin.delete_topic("newTopic")


async def test_name_server_guards_its_admin_codes(tmp_path: Path) -> None:
    acl_file = tmp_path / "ns_acl.yml"
    acl_file.write_text(ACL)
    from mqcore.namesrv.config import NamesrvConfig

    namesrv = NamesrvController(
        NamesrvConfig(
            listen_port=0,
            bind_address="127.0.0.1",
            kv_config_path=str(tmp_path / "kv.json"),
            acl_enable=True,
            plain_acl_file=str(acl_file),
        )
    )
    await namesrv.start()
    addr = f"127.0.0.1:{namesrv.port}"
    wipe = (RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    try:
        for creds, ok in ((None, False), (USER, False), (ADMIN, True)):
            client = TestClient(addr, "ns-acl@1")
            if creds is not None:
                client.remoting.rpc_hook = signing_hook(creds)
            try:
                answer = await client.invoke(*wipe)
                assert (answer.code != ResponseCode.NO_PERMISSION) is ok, (creds, answer)
                # reads stay open to anyone
                topics = await client.invoke(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
                assert topics.code == ResponseCode.SUCCESS
            finally:
                await client.close()
    finally:
        await namesrv.shutdown()


async def test_white_listed_address_needs_no_key(acl_cluster: AclCluster) -> None:
    client = acl_cluster.client(None)
    try:
        assert (await pull(client, "both", "g")).code == ResponseCode.NO_PERMISSION
        acl_cluster.acl_file.write_text("globalWhiteRemoteAddresses: [127.0.0.*]\n" + ACL)
        assert acl_cluster.broker.acl_guard is not None
        assert acl_cluster.broker.acl_guard.reload_if_changed()
        assert (await pull(client, "both", "g")).code != ResponseCode.NO_PERMISSION
        acl_cluster.acl_file.write_text("globalWhiteRemoteAddresses: [127.0.0.2]\n" + ACL)
        assert acl_cluster.broker.acl_guard.reload_if_changed()
        assert (await pull(client, "both", "g")).code == ResponseCode.NO_PERMISSION
    finally:
        await client.close()


async def test_file_changes_are_picked_up_by_the_watcher(acl_cluster: AclCluster) -> None:
    guard = acl_cluster.broker.acl_guard
    assert guard is not None
    await guard.close()
    guard.poll_interval = 0.05
    guard.start()
    client = acl_cluster.client(SessionCredentials("lateKey1", "lateSecret"))
    try:
        assert (await pull(client, "both", "g")).code == ResponseCode.NO_PERMISSION
        acl_cluster.acl_file.write_text(
            ACL
            + "  - {accessKey: lateKey1, secretKey: lateSecret,"
            + " defaultTopicPerm: SUB, defaultGroupPerm: SUB}\n"
        )
        await until(lambda: "lateKey1" in guard.config.accounts, what="the reload")
        assert (await pull(client, "both", "g")).code != ResponseCode.NO_PERMISSION
        acl_cluster.acl_file.write_text("accounts: [\n")  # broken: the old accounts stay
        await until(lambda: not guard.reload_if_changed(), what="a look at the broken file")
        assert (await pull(client, "both", "g")).code != ResponseCode.NO_PERMISSION
    finally:
        await client.close()
