"""Start `mq namesrv` as a subprocess on an ephemeral port and talk to it like a broker."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqcore.protocol.headers import RegisterBrokerRequestHeader
from mqcore.remoting import RemotingClient

LISTEN_LINE = re.compile(r"listening on (\S+):(\d+)")


@dataclass
class NamesrvProcess:
    proc: subprocess.Popen[str]
    addr: str
    workdir: Path

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then SIGKILL if it does not exit in time. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        return self.proc.returncode


def start_namesrv(workdir: Path, **props: str) -> NamesrvProcess:
    """Run `mq namesrv -c <file> --listen 127.0.0.1:0` and wait for its listen line."""
    workdir.mkdir(parents=True, exist_ok=True)
    settings = {
        "kvConfigPath": str(workdir / "kv" / "kvConfig.json"),
        "logDir": str(workdir / "logs"),
        **props,
    }
    conf = workdir / "namesrv.properties"
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    env = {**os.environ, "HOME": str(workdir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqcli.main", "namesrv", "-c", str(conf), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 20
    assert proc.stdout is not None
    line = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        if m := LISTEN_LINE.search(line):
            return NamesrvProcess(proc, f"{m.group(1)}:{m.group(2)}", workdir)
    proc.kill()
    _, err = proc.communicate(timeout=5)
    raise AssertionError(f"namesrv did not start: stdout={line!r} stderr={err!r}")


def topic_wrapper(counter: int, **topics: int) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {name: TopicConfig(name, queues, queues) for name, queues in topics.items()},
        DataVersion(1_700_000_000_000, counter),
    )


async def register(
    client: RemotingClient,
    namesrv: str,
    *,
    cluster: str,
    name: str,
    broker_id: int,
    addr: str,
    wrapper: TopicConfigSerializeWrapper,
) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(
        broker_name=name,
        broker_addr=addr,
        cluster_name=cluster,
        ha_server_addr=addr.replace(":109", ":119"),
        broker_id=broker_id,
    )
    body = RegisterBrokerBody(wrapper).encode()
    request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)
    return await client.invoke(namesrv, request)
