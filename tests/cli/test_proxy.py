"""`mq proxy`: the gRPC access point in cluster mode as a process. It starts in front of
a name server, says where it listens, serves, stops cleanly, and a taken port fails in
one line."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

from grpc import aio

from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from tests.support.processes import MQ, launch, server_env, start_namesrv, stop_process


async def test_mq_proxy_serves_in_front_of_a_name_server_and_stops_cleanly(
    tmp_path: Path,
) -> None:
    namesrv = start_namesrv(tmp_path / "ns")
    try:
        proxy = launch(
            ["proxy", "-n", namesrv.addr, "--grpc-port", "0", "--bind", "127.0.0.1",
             "--log-dir", str(tmp_path / "logs")],
            tmp_path / "proxy",
        )  # fmt: skip
        try:
            (line,) = proxy.stdout_lines
            assert "proxyMode=cluster" in line and f"namesrv={namesrv.addr}" in line
            async with aio.insecure_channel(proxy.addr) as channel:
                answer = await MessagingServiceStub(channel).QueryRoute(
                    spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopic")),
                    metadata=(("x-mq-client-id", "cli-test"),),
                    timeout=10,
                )
            assert answer.status.code == pb.Code.TOPIC_NOT_FOUND, answer  # asked the name server
        finally:
            assert stop_process(proxy.proc, sig=signal.SIGINT) == 0
        assert (tmp_path / "proxy" / "stderr.txt").read_text() == ""
        assert list((tmp_path / "logs").glob("proxy-*.log"))
    finally:
        namesrv.stop()


def test_a_taken_grpc_port_fails_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*MQ, "proxy", "-n", "127.0.0.1:9876", "--bind", "127.0.0.1",
             "--grpc-port", str(port), "--log-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=60, env=server_env(tmp_path),
        )  # fmt: skip
    assert done.returncode == 1, done
    (line,) = [text for text in done.stderr.splitlines() if text.strip()][:1]
    assert f"cannot serve gRPC on 127.0.0.1:{port}" in line
    assert "--grpc-port" in done.stderr and "Traceback" not in done.stderr


def test_the_effective_config_speaks_rocketmq_5_s_keys(tmp_path: Path) -> None:
    conf = tmp_path / "proxy.conf"
    conf.write_text("namesrvAddr=10.0.0.1:9876\ngrpcServerPort=9081\nnoSuchKey=1\n")
    done = subprocess.run(
        [*MQ, "proxy", "-c", str(conf), "-p"],
        capture_output=True, text=True, timeout=60, env=server_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done
    assert "namesrvAddr=10.0.0.1:9876\n" in done.stdout and "grpcServerPort=9081\n" in done.stdout
    assert "proxyMode=cluster\n" in done.stdout
    assert "unknown property 'noSuchKey'" in done.stderr
    bad = subprocess.run(
        [*MQ, "proxy", "-n", "x:1", "--grpc-port", "70000", "-p"],
        capture_output=True, text=True, timeout=60, env=server_env(tmp_path),
    )  # fmt: skip
    assert bad.returncode == 1 and "grpcServerPort out of range" in bad.stderr


async def test_acl_keys_reach_the_proxy_and_its_own_keys_are_required(tmp_path: Path) -> None:
    """enableACL from the config file checks the SDKs' calls; enableAclRpcHookForClusterMode
    takes the proxy's keys as any command's (``mq --access-key ... proxy``) and refuses to
    start without them."""
    acl = tmp_path / "plain_acl.yml"
    acl.write_text("accounts:\n  - accessKey: proxyKey01\n    secretKey: proxySecret\n")
    conf = tmp_path / "proxy.conf"
    conf.write_text(f"enableACL=true\nplainAclFile={acl}\nenableAclRpcHookForClusterMode=true\n")
    keyless = subprocess.run(
        [*MQ, "proxy", "-c", str(conf), "-n", "127.0.0.1:9876", "--bind", "127.0.0.1",
         "--grpc-port", "0", "--log-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=server_env(tmp_path),
    )  # fmt: skip
    assert keyless.returncode == 1, keyless
    assert "enableAclRpcHookForClusterMode needs the proxy's own keys" in keyless.stderr
    namesrv = start_namesrv(tmp_path / "ns")
    try:
        proxy = launch(
            ["--access-key", "proxyKey01", "--secret-key", "proxySecret", "proxy",
             "-c", str(conf), "-n", namesrv.addr, "--grpc-port", "0", "--bind", "127.0.0.1",
             "--log-dir", str(tmp_path / "logs")],
            tmp_path / "proxy",
        )  # fmt: skip
        try:
            async with aio.insecure_channel(proxy.addr) as channel:
                answer = await MessagingServiceStub(channel).QueryRoute(
                    spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopic")),
                    metadata=(("x-mq-client-id", "cli-test"),),
                    timeout=10,
                )
            assert answer.status.code == pb.Code.UNAUTHORIZED, answer  # unsigned: refused
        finally:
            assert stop_process(proxy.proc, sig=signal.SIGINT) == 0
    finally:
        namesrv.stop()
