"""`mq` signs with --access-key/--secret-key, MQ_ACCESS_KEY/MQ_SECRET_KEY or a context,
against an in-process broker with aclEnable (the CLI runs as a subprocess)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from tests.support.acl import AclCluster, max_offset

pytestmark = pytest.mark.timeout(90)

MQ = [sys.executable, "-m", "mqcli.main"]


async def mq(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MQ_", "NAMESRV", "ROCKETMQ"))}
    base["MQ_CONFIG_DIR"] = str(tmp_path / "mqconfig")
    proc = await asyncio.create_subprocess_exec(
        *MQ, *args, env={**base, **(env or {})},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def test_cli_keys_from_options_env_and_context(
    acl_cluster: AclCluster, tmp_path: Path
) -> None:
    send = ["produce", "-n", acl_cluster.ns, "-t", "pubOnly", "--body", "x"]
    code, out = await mq(tmp_path, *send)
    assert code != 0 and "no AccessKey" in out, out
    code, out = await mq(tmp_path, "--access-key", "userKey1", "--secret-key", "wrongSecret", *send)
    assert code != 0 and "signature check failed" in out
    code, out = await mq(tmp_path, "--access-key", "userKey1", "--secret-key", "userSecret", *send)
    assert code == 0, out
    env = {"MQ_ACCESS_KEY": "userKey1", "MQ_SECRET_KEY": "userSecret"}
    code, out = await mq(tmp_path, *send, env=env)
    assert code == 0, out
    assert max_offset(acl_cluster.broker, "pubOnly") == 2

    create = ["topic", "create", "-n", acl_cluster.ns, "-t", "cliTopic", "-q", "2"]
    code, out = await mq(tmp_path, *create, env=env)
    assert code != 0 and "needs an admin account" in out
    assert acl_cluster.broker.topic_configs.select("cliTopic") is None
    after = ["topic", "create", "-n", acl_cluster.ns, "-t", "cliTopicAfter", "-q", "1"]
    code, out = await mq(
        tmp_path, *after, "--access-key", "adminKey", "--secret-key", "adminSecret"
    )
    assert code == 0, out  # the keys after the command sign as well as before it
    assert acl_cluster.broker.topic_configs.select("cliTopicAfter") is not None
    code, out = await mq(
        tmp_path, "context", "add", "ops", "-n", acl_cluster.ns, "--select",
        "--access-key", "adminKey", "--secret-key", "adminSecret",
    )  # fmt: skip
    assert code == 0, out
    code, out = await mq(tmp_path, "topic", "create", "-t", "cliTopic", "-q", "2")
    assert code == 0, out
    assert acl_cluster.broker.topic_configs.select("cliTopic") is not None
    code, out = await mq(tmp_path, "context", "ls", "--json")
    assert "adminSecret" not in out
