"""Third-party clients sign as RocketMQ expects: ali-ons (accessKeyId/accessKeySecret,
OnsChannel=ALIYUN) and the Apache C++-core client (set_session_credentials) against a
broker with aclEnable, with the right and a wrong secret."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from test_acl import AclCluster, max_offset
from test_acl import cluster as cluster  # the fixture

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

SCRIPT = Path(__file__).with_name("alions_clients.js")


async def run(command: list[str], env: dict[str, str], timeout: float = 90) -> list[dict[str, Any]]:
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **env},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def alions(alions_dir: Path, secret: str) -> tuple[list[str], dict[str, str]]:
    env = {"ALIONS_NODE_DIR": str(alions_dir), "ALIONS_ACCESS_KEY": "userKey1",
           "ALIONS_SECRET_KEY": secret}  # fmt: skip
    return ["node", str(SCRIPT)], env


async def test_alions_with_the_right_and_a_wrong_secret(
    cluster: AclCluster, alions_dir: Path
) -> None:
    command, env = alions(alions_dir, "wrongSecret")
    results = await run([*command, "produce-try", cluster.ns, "both", "2"], env)
    assert len(results) == 2 and all("error" in r for r in results), results
    assert max_offset(cluster.broker, "both") == 0
    command, env = alions(alions_dir, "userSecret")
    results = await run([*command, "produce-try", cluster.ns, "both", "3"], env)
    assert [r.get("status") for r in results] == ["SEND_OK"] * 3, results
    assert max_offset(cluster.broker, "both") == 3
    results = await run([*command, "produce-try", cluster.ns, "subOnly", "1"], env)
    assert "error" in results[0], results
    assert max_offset(cluster.broker, "subOnly") == 0
    seen = await run([*command, "consume", cluster.ns, "both", "ons-acl-cg", "3"], env)
    assert sorted(m["body"] for m in seen) == [f"ons-body-{i}" for i in range(3)]


async def test_cpp_client_with_the_right_and_a_wrong_secret(
    cluster: AclCluster, cpp_client: list[str]
) -> None:
    wrong = {"CPP_ACCESS_KEY": "userKey1", "CPP_SECRET_KEY": "wrongSecret"}
    results = await run([*cpp_client, "produce-try", cluster.ns, "both", "2"], wrong)
    assert len(results) == 2 and all("error" in r for r in results), results
    assert max_offset(cluster.broker, "both") == 0
    right = {"CPP_ACCESS_KEY": "userKey1", "CPP_SECRET_KEY": "userSecret"}
    results = await run([*cpp_client, "produce-try", cluster.ns, "both", "3"], right)
    assert [r.get("status") for r in results] == [0, 0, 0], results  # SEND_OK
    assert max_offset(cluster.broker, "both") == 3
    seen = await run([*cpp_client, "consume", cluster.ns, "both", "cpp-acl-cg", "3", "60"], right)
    assert sorted(m["body"] for m in seen) == [f"cpp-body-{i}" for i in range(3)]
