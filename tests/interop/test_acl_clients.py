"""Third-party clients sign as RocketMQ expects: ali-ons (accessKeyId/accessKeySecret,
OnsChannel=ALIYUN) and the Apache C++-core client (set_session_credentials) against a
broker with aclEnable, with the right and a wrong secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from interop_support import ALIONS_SCRIPT, run_json_lines

from tests.support.acl import AclCluster, max_offset

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]


def alions(alions_dir: Path, secret: str) -> tuple[list[str], dict[str, str]]:
    env = {"ALIONS_NODE_DIR": str(alions_dir), "ALIONS_ACCESS_KEY": "userKey1",
           "ALIONS_SECRET_KEY": secret}  # fmt: skip
    return ["node", str(ALIONS_SCRIPT)], env


async def test_alions_with_the_right_and_a_wrong_secret(
    acl_cluster: AclCluster, alions_dir: Path
) -> None:
    command, env = alions(alions_dir, "wrongSecret")
    results = await run_json_lines([*command, "produce-try", acl_cluster.ns, "both", "2"], env=env)
    assert len(results) == 2 and all("error" in r for r in results), results
    assert max_offset(acl_cluster.broker, "both") == 0
    command, env = alions(alions_dir, "userSecret")
    results = await run_json_lines([*command, "produce-try", acl_cluster.ns, "both", "3"], env=env)
    assert [r.get("status") for r in results] == ["SEND_OK"] * 3, results
    assert max_offset(acl_cluster.broker, "both") == 3
    results = await run_json_lines(
        [*command, "produce-try", acl_cluster.ns, "subOnly", "1"], env=env
    )
    assert "error" in results[0], results
    assert max_offset(acl_cluster.broker, "subOnly") == 0
    seen = await run_json_lines(
        [*command, "consume", acl_cluster.ns, "both", "ons-acl-cg", "3"], env=env
    )
    assert sorted(m["body"] for m in seen) == [f"ons-body-{i}" for i in range(3)]


async def test_cpp_client_with_the_right_and_a_wrong_secret(
    acl_cluster: AclCluster, cpp_client: list[str]
) -> None:
    home = {"HOME": str(acl_cluster.acl_file.parent)}  # the client's logs and offsets stay here
    wrong = {"CPP_ACCESS_KEY": "userKey1", "CPP_SECRET_KEY": "wrongSecret", **home}
    results = await run_json_lines(
        [*cpp_client, "produce-try", acl_cluster.ns, "both", "2"], env=wrong
    )
    assert len(results) == 2 and all("error" in r for r in results), results
    assert max_offset(acl_cluster.broker, "both") == 0
    right = {"CPP_ACCESS_KEY": "userKey1", "CPP_SECRET_KEY": "userSecret", **home}
    results = await run_json_lines(
        [*cpp_client, "produce-try", acl_cluster.ns, "both", "3"], env=right
    )
    assert [r.get("status") for r in results] == [0, 0, 0], results  # SEND_OK
    assert max_offset(acl_cluster.broker, "both") == 3
    seen = await run_json_lines(
        [*cpp_client, "consume", acl_cluster.ns, "both", "cpp-acl-cg", "3", "60"], env=right
    )
    assert sorted(m["body"] for m in seen) == [f"cpp-body-{i}" for i in range(3)]
