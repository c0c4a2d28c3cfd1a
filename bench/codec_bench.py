"""Remoting codec and name-server round-trip throughput (not a test).

Usage: ``.venv/bin/python bench/codec_bench.py [--seconds S] [--concurrency N]``

Rows:
* encode / decode of a SEND_MESSAGE_V2 request with a 1 KiB body (the header Java 4.9.8
  sends), in both header serializations; decode is fed whole frames to one FrameDecoder.
* parsing the typed send header from the decoded extFields (what the broker does next).
* GET_ROUTEINFO_BY_TOPIC round trips against an in-process name server over loopback TCP,
  one request at a time and with N requests in flight, on uvloop when installed.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from samples import SEND

from mqcore.namesrv import NamesrvConfig, NamesrvController
from mqcore.protocol import (
    NEED_DATA,
    FrameDecoder,
    RemotingCommand,
    RequestCode,
    SerializeType,
    encode,
    encode_buffers,
)
from mqcore.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqcore.protocol.bodies import TopicConfigSerializeWrapper as Wrapper
from mqcore.protocol.headers import (
    GetRouteInfoRequestHeader,
    RegisterBrokerRequestHeader,
    decode_send_message_header,
)
from mqcore.remoting import RemotingClient, new_event_loop, uvloop_available

SEND_EXT = SEND.to_v2().to_ext_fields()


def rate(fn: Callable[[], int], seconds: float) -> float:
    """Operations per second of ``fn`` (which returns how many it did), over ``seconds``."""
    fn()  # warm up
    done = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        done += fn()
    return done / elapsed


def codec_rows(seconds: float) -> list[tuple[str, float]]:
    rows = []
    batch = 1000
    for kind in SerializeType:
        cmd = RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2, SEND_EXT, b"x" * 1024, opaque=7, serialize_type=kind
        )

        def enc(cmd: RemotingCommand = cmd) -> int:
            for _ in range(batch):
                encode_buffers(cmd)
            return batch

        frame = encode(cmd)
        stream = frame * batch

        def dec(stream: bytes = stream) -> int:
            decoder = FrameDecoder()
            decoder.receive_data(stream)
            n = 0
            while decoder.next_command() is not NEED_DATA:
                n += 1
            return n

        rows.append((f"encode SEND_MESSAGE_V2 1 KiB ({kind.name})", rate(enc, seconds)))
        rows.append((f"decode SEND_MESSAGE_V2 1 KiB ({kind.name})", rate(dec, seconds)))

    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, SEND_EXT, b"x" * 1024)

    def header() -> int:
        for _ in range(batch):
            decode_send_message_header(cmd)
        return batch

    rows.append(("parse typed SEND_MESSAGE_V2 header", rate(header, seconds)))
    return rows


async def route_rows(seconds: float, concurrency: int, tmp: str) -> list[tuple[str, float]]:
    config = NamesrvConfig(listen_port=0, bind_address="127.0.0.1", kv_config_path=f"{tmp}/kv")
    controller = NamesrvController(config)
    await controller.start()
    client = RemotingClient()
    addr = controller.listen_address
    try:
        wrapper = Wrapper({"TopicTest": TopicConfig("TopicTest", 4, 4)}, DataVersion(1, 1))
        reg = RegisterBrokerRequestHeader("broker-a", "127.0.0.1:10911", "c1", "", 0)
        await client.invoke(
            addr,
            RemotingCommand.request(
                RequestCode.REGISTER_BROKER,
                reg.to_ext_fields(),
                RegisterBrokerBody(wrapper).encode(),
            ),
        )
        ext = GetRouteInfoRequestHeader("TopicTest").to_ext_fields()
        rows = []
        for inflight in (1, concurrency):
            count = 0

            async def worker(deadline: float) -> None:
                nonlocal count
                while time.perf_counter() < deadline:
                    request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext)
                    resp = await client.invoke(addr, request)
                    assert resp.code == 0
                    count += 1

            await asyncio.gather(*(worker(time.perf_counter() + 0.2) for _ in range(inflight)))
            count = 0
            start = time.perf_counter()
            await asyncio.gather(*(worker(start + seconds) for _ in range(inflight)))
            elapsed = time.perf_counter() - start
            rows.append((f"route round trip, {inflight} in flight", count / elapsed))
        return rows
    finally:
        await client.close()
        await controller.shutdown()


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per row")
    parser.add_argument("--concurrency", type=int, default=32, help="in-flight route requests")
    args = parser.parse_args()
    rows = codec_rows(args.seconds)
    with tempfile.TemporaryDirectory() as tmp, asyncio.Runner(loop_factory=new_event_loop) as r:
        rows += r.run(route_rows(args.seconds, args.concurrency, tmp))
    loop = "uvloop" if uvloop_available() else "asyncio"
    width = max(len(name) for name, _ in rows)
    print(f"{'operation':<{width}}  {'ops/s':>12}   (loop: {loop})")
    for name, ops in rows:
        print(f"{name:<{width}}  {ops:>12,.0f}")


if __name__ == "__main__":
    main()
