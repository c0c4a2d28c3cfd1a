"""CPU time per operation of the protocol and remoting work a hot request costs (not a test).

Usage: ``.venv/bin/python bench/request_cpu_bench.py [--n N] [--repeat R] [--only SUBSTR]
[--instructions]``

Every row is measured with :func:`time.process_time` in this one process (no sockets, no
servers): the figure is the best of ``R`` runs of ``N`` operations, in µs per operation.
On a busy machine CPU time still wobbles by ±30 %; ``--instructions`` instead counts the
instructions per operation under valgrind's callgrind (two runs per row, with and without
the ``N`` operations), which is exact to a few instructions and slow (seconds per row).

Broker side: decoding whole request frames (the Java 4.9.8 SEND_MESSAGE_V2 header in both
serializations, PULL_MESSAGE), parsing their typed headers, building and encoding the
answers, and queueing answers on a :class:`Channel` (``send`` + the end-of-pass flush, with
16 answers per loop pass) against a transport that only counts.
Client side: header -> extFields, reading the send answer's header, unique keys and
offset message ids, decoding a pull body into messages.
Store side: a 1 KiB send's records prepared and encoded, one unique key indexed.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from samples import SEND

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.client.pull_decode import decode_pulled
from mqcore.message.ids import create_offset_msg_id, create_uniq_key
from mqcore.message.model import MessageExt
from mqcore.message.properties import parse_properties_text
from mqcore.message.record import encode_record
from mqcore.protocol import (
    NEED_DATA,
    FrameDecoder,
    RemotingCommand,
    RequestCode,
    SerializeType,
    encode,
    encode_buffers,
)
from mqcore.protocol.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageResponseHeader,
    decode_send_message_header,
)
from mqcore.remoting import (
    InMemoryNetwork,
    InMemoryRemotingClient,
    RequestDispatcher,
    new_event_loop,
)
from mqcore.remoting.channel import Channel
from mqcore.store import batch_encoder
from mqcore.store.index_file import IndexFile
from mqcore.store.store_config import MessageStoreConfig

PULL = PullMessageRequestHeader(
    consumer_group="cg",
    topic="TopicTest",
    queue_id=1,
    queue_offset=12345,
    max_msg_nums=32,
    sys_flag=3,
    commit_offset=12000,
    suspend_timeout_millis=15000,
    sub_version=1_700_000_000_000,
    subscription="TagA || TagB",
    expression_type="TAG",
    bname="broker-a",
)
SEND_ANSWER_EXT = SendMessageResponseHeader(
    msg_id="0A0000010000291200000000000F4240",
    queue_id=1,
    queue_offset=4711,
    transaction_id=None,
).to_ext_fields() | {"uniqKey": "C0A8010A30394C7B5B1C0C3C6F2A0000"}


class _CountingTransport:
    """Just enough of asyncio.Transport for a Channel: counts writes and bytes."""

    def __init__(self) -> None:
        self.writes = 0
        self.nbytes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.nbytes += len(data)

    def writelines(self, data: list[bytes]) -> None:
        self.writes += 1
        self.nbytes += sum(len(b) for b in data)

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else None


def best_us(fn: Callable[[int], object], n: int, repeat: int) -> float:
    """Best of ``repeat`` CPU-time runs of ``fn(n)``, in µs per operation."""
    fn(max(1, n // 10))  # warm up caches
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn(n)
        best = min(best, time.process_time() - start)
    return best / n * 1e6


def _decode_frames(frame: bytes) -> Callable[[int], object]:
    """One frame per ``data_received`` chunk, as a synchronous client sends them."""

    def run(n: int) -> object:
        decoder = FrameDecoder()
        for _ in range(n):
            decoder.receive_data(frame)
            while decoder.next_command() is not NEED_DATA:
                pass
        return None

    return run


def _repeat(fn: Callable[[], object]) -> Callable[[int], object]:
    def run(n: int) -> object:
        for _ in range(n):
            fn()
        return None

    return run


def rows() -> list[tuple[str, Callable[[int], object]]]:
    out: list[tuple[str, Callable[[int], object]]] = []
    v2_ext = SEND.to_v2().to_ext_fields()
    for kind in SerializeType:
        tag = kind.name
        send = RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2, v2_ext, b"x" * 1024, opaque=7, serialize_type=kind
        )
        pull = RemotingCommand.request(
            RequestCode.PULL_MESSAGE, PULL.to_ext_fields(), opaque=8, serialize_type=kind
        )
        send_frame, pull_frame = encode(send), encode(pull)
        out.append((f"decode frame SEND_MESSAGE_V2 1 KiB ({tag})", _decode_frames(send_frame)))
        out.append((f"decode frame PULL_MESSAGE ({tag})", _decode_frames(pull_frame)))

        def send_answer(send: RemotingCommand = send) -> object:
            return encode_buffers(RemotingCommand.response_to(send, 0, None, SEND_ANSWER_EXT))

        def pull_answer(pull: RemotingCommand = pull) -> object:
            ext = PullMessageResponseHeader(0, 12377, 0, 20000).to_ext_fields()
            return encode_buffers(RemotingCommand.response_to(pull, 0, "FOUND", ext, b"y" * 4096))

        out.append((f"build+encode send answer ({tag})", _repeat(send_answer)))
        out.append((f"channel: SEND_MESSAGE_V2 in, answer out ({tag})", _channel_round(send_frame)))
        if kind == SerializeType.JSON:
            name = "channel: SEND_MESSAGE_V2 in, async answer out (JSON)"
            out.append((name, _channel_round(send_frame, asynchronous=True)))
        out.append((f"build+encode pull answer 4 KiB ({tag})", _repeat(pull_answer)))

    send_v2 = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2_ext)
    send_v1 = RemotingCommand.request(RequestCode.SEND_MESSAGE, SEND.to_ext_fields())
    pull = RemotingCommand.request(RequestCode.PULL_MESSAGE, PULL.to_ext_fields())
    out.append(
        ("typed header SEND_MESSAGE_V2", _repeat(lambda: decode_send_message_header(send_v2)))
    )
    out.append(("typed header SEND_MESSAGE", _repeat(lambda: decode_send_message_header(send_v1))))
    out.append(
        ("typed header PULL_MESSAGE", _repeat(lambda: PullMessageRequestHeader.from_command(pull)))
    )

    answer = RemotingCommand.response_to(send_v2, 0, None, SEND_ANSWER_EXT)
    out.append(
        ("client: send header -> V2 extFields", _repeat(lambda: SEND.to_v2().to_ext_fields()))
    )
    out.append(("client: pull header -> extFields", _repeat(PULL.to_ext_fields)))
    out.append(
        (
            "client: read send answer header",
            _repeat(lambda: SendMessageResponseHeader.from_command(answer)),
        )
    )
    out.append(("in-memory invoke, client + server (JSON)", _invoke_round(v2_ext)))
    out.append(("create_uniq_key", _repeat(create_uniq_key)))
    host = ("10.0.0.1", 10911)
    out.append(("create_offset_msg_id", _repeat(lambda: create_offset_msg_id(host, 1_000_000))))
    out.append(("channel send+flush, 16 answers/pass (JSON)", _channel_sends(answer, 16)))
    out.extend(_message_rows())
    rocketmq = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2,
        v2_ext,
        b"x" * 1024,
        opaque=9,
        serialize_type=SerializeType.ROCKETMQ,
    )
    out.append(
        (
            "broker: SEND_MESSAGE_V2 1 KiB (ROCKETMQ), channel to answer, store, dispatch",
            _broker_round(encode(rocketmq)),
        )
    )
    return out


def _message_rows() -> list[tuple[str, Callable[[int], object]]]:
    """Per-message work outside the protocol: the consumer's decode, the store's encode
    and index (the send's properties as a Java producer sets them)."""
    props = parse_properties_text(SEND.properties)
    hosts = {"born_host": ("10.0.0.1", 52311), "store_host": ("10.0.0.2", 10911)}
    record = encode_record(topic="TopicTest", body=b"x" * 1024, properties=props, **hosts)
    body = bytes(record) * 32
    msg = MessageExt(topic="TopicTest", body=b"x" * 1024, properties=props, **hosts)

    def store_one() -> object:
        return batch_encoder.encode(batch_encoder.prepare([msg], 4 << 20), 1 << 30, 7, 1)

    index_dir = tempfile.mkdtemp(prefix="mq-bench-index-")
    atexit.register(shutil.rmtree, index_dir, True)
    index = IndexFile.create(Path(index_dir) / "index", 100_000, 2_000_000)
    keys = iter(
        [f"TopicTest#{create_uniq_key()}" for _ in range(200_000)]
    )  # > 5 x 20,000 + warm-ups

    def index_one() -> object:
        return index.put_key(next(keys), 1 << 30, 1_700_000_000_000, write_header=False)

    return [
        (
            "client: decode pull body, 32 x 1 KiB records",
            _repeat(lambda: decode_pulled(body, "TopicTest")),
        ),
        ("store: prepare+encode a 1 KiB send", _repeat(store_one)),
        ("store: index a unique key (put_key)", _repeat(index_one)),
    ]


def _loop() -> asyncio.AbstractEventLoop:
    loop = new_event_loop()  # uvloop when installed, as the broker runs
    asyncio.set_event_loop(loop)
    return loop


def _channel(loop: asyncio.AbstractEventLoop, dispatcher: RequestDispatcher) -> Channel:
    async def make() -> Channel:
        channel = Channel(dispatcher)
        channel.connection_made(_CountingTransport())  # type: ignore[arg-type]
        return channel

    return loop.run_until_complete(make())


def _channel_sends(answer: RemotingCommand, per_pass: int) -> Callable[[int], object]:
    loop = _loop()
    channel = _channel(loop, RequestDispatcher())

    def run(n: int) -> object:
        async def go() -> None:
            for _ in range(n // per_pass):
                for _ in range(per_pass):
                    channel.send(answer)
                await asyncio.sleep(0)  # one loop pass: the flush runs

        loop.run_until_complete(go())
        return None

    return run


def _send_answer(channel: Channel, request: RemotingCommand) -> RemotingCommand:
    """What the broker's send processor does besides storing: parse, answer."""
    header = decode_send_message_header(request)
    ext = dict(SEND_ANSWER_EXT, queueId=str(header.queue_id))
    return RemotingCommand.response_to(request, 0, None, ext)


async def _send_answer_later(channel: Channel, request: RemotingCommand) -> RemotingCommand:
    """The same as a coroutine, as the broker answers when it waits for a flush."""
    return _send_answer(channel, request)


def _channel_round(frame: bytes, asynchronous: bool = False) -> Callable[[int], object]:
    """A request frame arrives, a processor answers, the answer is written."""
    loop = _loop()
    dispatcher = RequestDispatcher()
    processor = _send_answer_later if asynchronous else _send_answer
    dispatcher.register(RequestCode.SEND_MESSAGE_V2, processor)
    channel = _channel(loop, dispatcher)
    transport = channel._transport
    assert isinstance(transport, _CountingTransport)

    def run(n: int) -> object:
        async def go() -> None:
            for _ in range(n):
                channel.data_received(frame)
                await asyncio.sleep(0)  # one loop pass: the flush (or the task) runs
                if asynchronous:
                    await asyncio.sleep(0)  # and one for the flush after the task

        writes = transport.writes
        loop.run_until_complete(go())
        assert transport.writes - writes == n
        return None

    return run


def _broker_round(frame: bytes) -> Callable[[int], object]:
    """The whole of a send in a started broker (no sockets): the frame arrives on a
    channel, the broker's own send processor stores it, the answer is written and the
    reput pass dispatches it, one request per loop pass as a synchronous producer sends.
    Unique keys differ per request (the index sees new keys, as in a real run)."""
    loop = _loop()
    store_dir = tempfile.mkdtemp(prefix="mq-bench-broker-")
    atexit.register(shutil.rmtree, store_dir, True)
    config = BrokerConfig(
        broker_name="broker-a",
        broker_ip1="127.0.0.1",
        bind_address="127.0.0.1",
        listen_port=0,
        namesrv_addr=None,
    )
    store_config = MessageStoreConfig(store_path_root_dir=store_dir)
    broker = BrokerController(config, store_config)
    loop.run_until_complete(broker.start())
    atexit.register(broker.store.shutdown)  # (the loop's executor is gone by then)
    channel = _channel(loop, broker.server.dispatcher)
    transport = channel._transport
    assert isinstance(transport, _CountingTransport)
    head = frame[: frame.index(b"UNIQ_KEY\x01") + 9]
    tail = frame[len(head) + 32 :]
    frames = iter([head + create_uniq_key().encode() + tail for _ in range(60_000)])

    def run(n: int) -> object:
        async def go() -> None:
            for _ in range(n):
                channel.data_received(next(frames))
                for _ in range(3):  # the answer's flush, then the reput pass (one hop later)
                    await asyncio.sleep(0)

        writes = transport.writes
        loop.run_until_complete(go())
        assert transport.writes - writes == n
        assert not broker.store._pending
        return None

    return run


def _invoke_round(ext: dict[str, str]) -> Callable[[int], object]:
    """Client and server in one loop over the in-memory network: request built, invoked,
    answered, the answer read."""
    loop = _loop()
    dispatcher = RequestDispatcher()
    dispatcher.register(RequestCode.SEND_MESSAGE_V2, _send_answer)
    network = InMemoryNetwork()
    network.serve("bench:1", dispatcher)
    client = InMemoryRemotingClient(network)

    def run(n: int) -> object:
        async def go() -> None:
            for _ in range(n):
                request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext)
                await client.invoke("bench:1", request)

        loop.run_until_complete(go())
        return None

    return run


def instructions(names: list[str], n: int) -> list[float]:
    """Instructions per operation of each row, from one callgrind run of this script that
    dumps its counters whenever ``os.getppid`` (the marker) is called."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={tmp}/out",
            "--dump-before=os_getppid",
            sys.executable,
            __file__,
            "--n",
            str(n),
            "--run",
            *names,
        ]
        subprocess.run(cmd, capture_output=True, check=True)
        counts = []
        for i in range(1, 2 * len(names) + 2):
            text = Path(f"{tmp}/out.{i}").read_text()
            match = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if match is None:
                raise RuntimeError(f"no instruction count in callgrind dump {i}")
            counts.append(int(match.group(1)))
    # dump 1 is the start-up, then per row: its warm-up, then its n operations
    return [counts[2 * k + 2] / n for k in range(len(names))]


def run_marked(fns: list[Callable[[int], object]], n: int) -> None:
    """The body of an ``--instructions`` run: a marker around every measured stretch."""
    os.getppid()
    for fn in fns:
        fn(200)
        os.getppid()
        fn(n)
        os.getppid()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="operations per run")
    parser.add_argument("--repeat", type=int, default=5, help="runs per row (best is kept)")
    parser.add_argument("--only", default="", help="rows whose name contains this")
    parser.add_argument("--instructions", action="store_true", help="count under callgrind")
    parser.add_argument("--run", nargs="+", help=argparse.SUPPRESS)  # under callgrind
    args = parser.parse_args()
    table = dict(rows())
    if args.run is not None:
        run_marked([table[name] for name in args.run], args.n)
        return
    names = [name for name in table if args.only in name]
    width = max(map(len, names))
    if args.instructions:
        print(f"{'operation':<{width}}  {'instr/op':>12}")
        for name, count in zip(names, instructions(names, min(args.n, 2000)), strict=True):
            print(f"{name:<{width}}  {count:>12,.0f}")
        return
    print(f"{'operation':<{width}}  {'µs/op (CPU)':>12}", flush=True)
    for name in names:
        print(f"{name:<{width}}  {best_us(table[name], args.n, args.repeat):>12.2f}", flush=True)


if __name__ == "__main__":
    main()
