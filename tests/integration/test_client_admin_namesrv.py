"""Admin's name-server operations (NamesrvAdminMixin) against an in-process name server
and broker: write permission and KV config."""

from __future__ import annotations

import pytest

from mqcore.client import Admin
from mqcore.common.metadata import PermName
from tests.support.inproc import LiveCluster

pytestmark = pytest.mark.timeout(60)


async def test_wipe_and_add_write_perm(cluster: LiveCluster) -> None:
    async with Admin(cluster.addr) as admin:
        await admin.create_topic("Drain", queues=2)
        await cluster.wait_route("Drain")
        assert cluster.namesrv is not None
        topics = len(cluster.namesrv.routes.get_topics_by_cluster("DefaultCluster").topic_list)

        counts = await admin.wipe_write_perm("broker-a")
        assert counts == {cluster.addr: topics} and topics > 1
        route = await admin.topic_route("Drain")
        assert not route.queue_datas[0].perm & PermName.WRITE
        assert route.queue_datas[0].perm & PermName.READ

        assert await admin.add_write_perm("broker-a") == {cluster.addr: topics}
        assert (await admin.topic_route("Drain")).queue_datas[0].perm & PermName.WRITE
        assert await admin.wipe_write_perm("nope") == {cluster.addr: 0}
        assert "Drain" in await admin.topics_by_cluster("DefaultCluster")
        assert await admin.topics_by_cluster("NoCluster") == set()


async def test_kv_config(cluster: LiveCluster) -> None:
    async with Admin(cluster.addr) as admin:
        assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "Orders") is None
        assert await admin.kv_list("ORDER_TOPIC_CONFIG") == {}
        await admin.put_kv_config("ORDER_TOPIC_CONFIG", "Orders", "broker-a:4")
        await admin.put_kv_config("ORDER_TOPIC_CONFIG", "Other", "broker-a:2")
        assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "Orders") == "broker-a:4"
        assert await admin.kv_list("ORDER_TOPIC_CONFIG") == {
            "Orders": "broker-a:4",
            "Other": "broker-a:2",
        }
        await admin.delete_kv_config("ORDER_TOPIC_CONFIG", "Orders")
        await admin.delete_kv_config("ORDER_TOPIC_CONFIG", "Orders")  # already gone: fine
        assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "Orders") is None
        assert await admin.kv_list("ORDER_TOPIC_CONFIG") == {"Other": "broker-a:2"}
