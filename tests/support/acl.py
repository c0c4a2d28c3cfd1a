"""An in-process name server and broker with plain ACL on (``aclEnable=true``): the
accounts, the cluster fixture and the helpers the ACL tests of several folders share."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from mqcore.acl.signature import SessionCredentials
from mqcore.broker.controller import BrokerController
from mqcore.client import Admin, Producer, make_message
from mqcore.client.config import signing_hook
from mqcore.namesrv.controller import NamesrvController
from tests.support.clients import TestClient
from tests.support.inproc import running_broker, running_namesrv
from tests.support.polling import until

ACL = """\
accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: userKey1
    secretKey: userSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [pubOnly=PUB, subOnly=SUB, both=PUB|SUB, denied=DENY]
    groupPerms: [deniedGroup=DENY]
"""
ADMIN = SessionCredentials("adminKey", "adminSecret")
USER = SessionCredentials("userKey1", "userSecret")


@dataclass
class AclCluster:
    namesrv: NamesrvController
    broker: BrokerController
    acl_file: Path

    @property
    def ns(self) -> str:
        return f"127.0.0.1:{self.namesrv.port}"

    def client(self, creds: SessionCredentials | None, addr: str | None = None) -> TestClient:
        c = TestClient(addr or self.broker.broker_addr, "acl-test@1")
        if creds is not None:
            c.remoting.rpc_hook = signing_hook(creds)
        return c


@contextlib.asynccontextmanager
async def running_acl_cluster(tmp_path: Path) -> AsyncIterator[AclCluster]:
    """A name server and a broker with ``aclEnable`` on :data:`ACL`, five topics made by
    the admin account (the ``acl_cluster`` fixture of tests/conftest.py)."""
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL)
    async with running_namesrv(tmp_path) as namesrv:
        ns = f"127.0.0.1:{namesrv.port}"
        async with running_broker(
            tmp_path, ns, acl_enable=True, plain_acl_file=str(acl_file)
        ) as broker:
            await until(lambda: bool(namesrv.routes.live_broker_addrs()), what="registration")
            async with Admin(ns, access_key="adminKey", secret_key="adminSecret") as admin:
                for topic in ("pubOnly", "subOnly", "both", "denied", "other"):
                    await admin.create_topic(topic, queues=2)
            yield AclCluster(namesrv, broker, acl_file)


def max_offset(broker: BrokerController, topic: str) -> int:
    return sum(broker.store.get_max_offset_in_queue(topic, q) for q in range(2))


async def send(cluster: AclCluster, topic: str, **keys: str) -> None:
    async with Producer("acl_pg", cluster.ns, retry_times_when_send_failed=0, **keys) as p:
        await p.send(make_message(topic, b"hello"))
