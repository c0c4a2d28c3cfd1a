"""`mq acl update|delete|trust|version` against two brokers with ``aclEnable=true``,
each with its own plain_acl.yml: a change reaches every master's file and applies at
once; an account without admin rights is refused with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cluster import Cluster

ACL = """\
accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: userKey1
    secretKey: userSecret
    defaultTopicPerm: PUB
"""
ADMIN = ["--access-key", "adminKey", "--secret-key", "adminSecret"]

pytestmark = [
    pytest.mark.timeout(180),
    # each broker has its own file, as in production
    pytest.mark.cluster(
        brokers=2,
        files={f"{name}/plain_acl.yml": ACL for name in ("broker-a", "broker-b")},
        aclEnable="true",
        plainAclFile="{wd}/plain_acl.yml",
    ),
]


def acl_files(cluster: Cluster) -> list[Path]:
    return [cluster.base / name / "plain_acl.yml" for name in ("broker-a", "broker-b")]


def accounts(path: Path) -> dict[str, dict[str, Any]]:
    return {a["accessKey"]: a for a in yaml.safe_load(path.read_text())["accounts"]}


def test_update_reaches_every_master_and_applies_at_once(cluster: Cluster) -> None:
    cluster.ok(*ADMIN, "acl", "update", "appKey01", "--secret", "appSecret1",
               "--topic-perm", "Orders=PUB", "--topic-perm", "Audit=SUB")  # fmt: skip
    for path in acl_files(cluster):
        app = accounts(path)["appKey01"]
        assert app["secretKey"] == "appSecret1" and app["topicPerms"] == ["Orders=PUB", "Audit=SUB"]
        assert "admin" not in app  # not asked: not written
    cluster.ok(*ADMIN, "topic", "create", "-t", "Orders", "-q", "1")
    done = cluster.mq("--access-key", "appKey01", "--secret-key", "appSecret1",
                      "produce", "-t", "Orders", "--body", "x")  # fmt: skip
    assert done.returncode == 0, done.stderr
    versions: Any = cluster.json(*ADMIN, "acl", "version")
    assert sorted(v["broker"] for v in versions) == ["broker-a", "broker-b"]
    assert all(v["counter"] >= 1 and v["file"].endswith("plain_acl.yml") for v in versions)


def test_one_broker_by_name_and_delete(cluster: Cluster) -> None:
    cluster.ok(*ADMIN, "acl", "update", "tempKey01", "--secret", "tempSecret", "-b", "broker-b")
    a, b = acl_files(cluster)
    assert "tempKey01" not in accounts(a) and "tempKey01" in accounts(b)
    cluster.ok(*ADMIN, "acl", "delete", "tempKey01", "-b", "broker-b")
    assert "tempKey01" not in accounts(b)
    done = cluster.mq(*ADMIN, "acl", "delete", "tempKey01", "-b", "broker-b")
    assert done.returncode == 1 and "deleted failed" in done.stderr
    assert "Traceback" not in done.stderr


def test_trust_replaces_the_trusted_addresses(cluster: Cluster) -> None:
    cluster.ok(*ADMIN, "acl", "trust", "10.0.0.*", "192.168.1.10")
    for path in acl_files(cluster):
        doc = yaml.safe_load(path.read_text())
        assert doc["globalWhiteRemoteAddresses"] == ["10.0.0.*", "192.168.1.10"]


def test_refusals_are_one_line(cluster: Cluster) -> None:
    user = ["--access-key", "userKey1", "--secret-key", "userSecret"]
    done = cluster.mq(*user, "acl", "delete", "adminKey")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert all("adminKey" in accounts(p) for p in acl_files(cluster))
    done = cluster.mq(*ADMIN, "acl", "update", "appKey01", "--topic-perm", "Orders=WRITE")
    assert done.returncode == 2 and "Orders=WRITE" in done.stderr
