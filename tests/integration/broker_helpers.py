"""Drive a broker in tests: start `mq broker` processes, and a raw remoting client.

:class:`RawBrokerClient` speaks the broker's requests with the typed headers directly
(the Python Producer/Consumer API is a later issue), so tests see exact codes.
"""

from __future__ import annotations

import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mqcore.message import MessageExt, decode_records
from mqcore.message.properties import encode_properties
from mqcore.message.record import encode_batch_body
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PullSysFlag,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from mqcore.remoting import RemotingClient

LISTEN_LINE = re.compile(r"mq broker listening on (\S+):(\d+)")
ANY_LISTEN_LINE = re.compile(r"listening on (\S+):(\d+)")


@dataclass
class BrokerProcess:
    proc: subprocess.Popen[str]
    addr: str
    store: Path
    stdout_lines: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, then SIGKILL if it does not exit in time. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def mq(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqcli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def start_broker(
    workdir: Path,
    namesrv: str | None = None,
    *,
    name: str = "broker-a",
    store: Path | None = None,
    own_log_dir: bool = False,
    **props: str,
) -> BrokerProcess:
    """Run `mq broker -c <file> --listen 127.0.0.1:0` and wait for its listen line.
    Logs go to ``workdir/logs``, or with ``own_log_dir`` where the broker puts them."""
    workdir.mkdir(parents=True, exist_ok=True)
    store = store or workdir / "store"
    settings = {
        "brokerName": name,
        "brokerIP1": "127.0.0.1",
        "logDir": str(workdir / "logs"),
        "storePathRootDir": str(store),
        "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 10_000),
        "maxHashSlotNum": "1000",
        "maxIndexNum": "4000",
        **props,
    }
    if namesrv is not None:
        settings["namesrvAddr"] = namesrv
    if own_log_dir:
        del settings["logDir"]
    conf = workdir / "broker.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    env = {**os.environ, "HOME": str(workdir)}
    env.pop("NAMESRV_ADDR", None)
    # stderr goes to a file: a pipe nobody drains could fill up and block the broker.
    err_path = workdir / "stderr.txt"
    with open(err_path, "ab") as err_file:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mqcli.main",
                "broker",
                "-c",
                str(conf),
                "--listen",
                "127.0.0.1:0",
            ],
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
            env=env,
        )
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    lines: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if m := LISTEN_LINE.search(line):
            return BrokerProcess(proc, f"{m.group(1)}:{m.group(2)}", store, lines)
    proc.kill()
    proc.wait(5)
    raise AssertionError(f"broker did not start: stdout={lines!r} stderr={err_path.read_text()!r}")


def restartable_broker_port() -> int:
    """A listen port for a broker a test stops and starts again on the same address: below
    the ephemeral range (so no process's outgoing connection takes it, or its fast port
    -2 or HA port +1, while the broker is down), with those three free now."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(20000, max(20010, low - 2))
        if all(_port_free(p) for p in (port - 2, port, port + 1)):
            return port
    raise AssertionError("no free port triple below the ephemeral range")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def serving(
    args: list[str], workdir: Path, *, netns: str | None = None
) -> Iterator[tuple[str, int]]:
    """Run ``mq ARGS`` (inside network namespace ``netns``) until its first "listening on
    HOST:PORT" line; yields (host, port); stops the process (TERM, then KILL) after."""
    workdir.mkdir(parents=True, exist_ok=True)
    prefix = ["ip", "netns", "exec", netns] if netns else []
    env = {**os.environ, "HOME": str(workdir)}
    env.pop("NAMESRV_ADDR", None)
    with open(workdir / "stderr.txt", "ab") as err:
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "mqcli.main", *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            cwd=workdir,
        )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        found = None
        while found is None and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
            line = proc.stdout.readline() if ready else ""
            if not line:
                break
            if m := ANY_LISTEN_LINE.search(line):
                found = (m.group(1), int(m.group(2)))
        assert found is not None, (
            f"mq {args[0]} did not start: {(workdir / 'stderr.txt').read_text()}"
        )
        yield found
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@dataclass
class PullResult:
    code: int
    remark: str | None
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt]
    raw: bytes


class RawBrokerClient:
    """Typed requests over one :class:`RemotingClient` connection to ``addr``."""

    def __init__(self, addr: str, *, group: str = "test-producer") -> None:
        self.addr = addr
        self.group = group
        self.client = RemotingClient()

    async def close(self) -> None:
        await self.client.close()

    async def __aenter__(self) -> RawBrokerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def invoke(self, request: RemotingCommand, timeout: float = 5.0) -> RemotingCommand:
        return await self.client.invoke(self.addr, request, timeout)

    def send_request(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: str | None = None,
        queue_id: int = 0,
        properties: dict[str, str] | None = None,
        code: int = RequestCode.SEND_MESSAGE_V2,
        queue_nums: int = 4,
    ) -> RemotingCommand:
        props = {"WAIT": "true", **(properties or {})}
        if tags:
            props["TAGS"] = tags
        if keys:
            props["KEYS"] = keys
        header = SendMessageRequestHeader(
            producer_group=self.group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=queue_nums,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties(props).decode(),
        )
        ext = (
            header.to_v2().to_ext_fields()
            if code != RequestCode.SEND_MESSAGE
            else header.to_ext_fields()
        )
        return RemotingCommand.request(code, ext, body)

    async def send(self, topic: str, body: bytes, **kw: object) -> RemotingCommand:
        return await self.invoke(self.send_request(topic, body, **kw))  # type: ignore[arg-type]

    def batch_request(
        self,
        topic: str,
        bodies: list[bytes],
        *,
        tags: str | None = None,
        queue_id: int = 0,
        batch_properties: dict[str, str] | None = None,
    ) -> RemotingCommand:
        entries = [(0, b, {"TAGS": tags} if tags else {}) for b in bodies]
        header = SendMessageRequestHeader(
            producer_group=self.group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties({"WAIT": "true", **(batch_properties or {})}).decode(),
            batch=True,
        )
        return RemotingCommand.request(
            RequestCode.SEND_BATCH_MESSAGE,
            header.to_v2().to_ext_fields(),
            encode_batch_body(entries),
        )

    async def send_batch(self, topic: str, bodies: list[bytes], **kw: object) -> RemotingCommand:
        return await self.invoke(self.batch_request(topic, bodies, **kw))  # type: ignore[arg-type]

    async def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        group: str = "test-consumer",
        max_nums: int = 32,
        subscription: str | None = "*",
        suspend_ms: int = 0,
        commit_offset: int | None = None,
        timeout: float = 10.0,
        expression_type: str = "TAG",
    ) -> PullResult:
        flags = 0
        if subscription is not None:
            flags |= PullSysFlag.SUBSCRIPTION
        if suspend_ms:
            flags |= PullSysFlag.SUSPEND
        if commit_offset is not None:
            flags |= PullSysFlag.COMMIT_OFFSET
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=flags,
            commit_offset=commit_offset or 0,
            suspend_timeout_millis=suspend_ms,
            sub_version=0,
            subscription=subscription,
            expression_type=expression_type,
        )
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        response = await self.invoke(request, timeout)
        raw = bytes(response.body)
        if "nextBeginOffset" in response.ext_fields:
            h = PullMessageResponseHeader.from_command(response)
            nxt, lo, hi = h.next_begin_offset, h.min_offset, h.max_offset
        else:
            nxt = lo = hi = -1
        return PullResult(response.code, response.remark, nxt, lo, hi, decode_records(raw), raw)

    async def pull_all(
        self, topic: str, queue_id: int, *, group: str = "test-consumer"
    ) -> list[MessageExt]:
        out: list[MessageExt] = []
        offset = 0
        while True:
            r = await self.pull(topic, queue_id, offset, group=group)
            if r.code != ResponseCode.SUCCESS:
                return out
            out.extend(r.messages)
            offset = r.next_begin_offset

    async def query_offset(self, group: str, topic: str, queue_id: int) -> tuple[int, int | None]:
        header = QueryConsumerOffsetRequestHeader(group, topic, queue_id)
        response = await self.invoke(
            RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext_fields())
        )
        if response.code != ResponseCode.SUCCESS:
            return response.code, None
        return response.code, QueryConsumerOffsetResponseHeader.from_command(response).offset

    async def update_offset(self, group: str, topic: str, queue_id: int, offset: int) -> int:
        header = UpdateConsumerOffsetRequestHeader(group, topic, queue_id, offset)
        response = await self.invoke(
            RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields())
        )
        return response.code

    async def max_offset(self, topic: str, queue_id: int) -> int:
        header = GetMaxOffsetRequestHeader(topic, queue_id)
        response = await self.invoke(
            RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
        )
        assert response.code == ResponseCode.SUCCESS, response
        return GetMaxOffsetResponseHeader.from_command(response).offset


def send_header(response: RemotingCommand) -> SendMessageResponseHeader:
    return SendMessageResponseHeader.from_command(response)
