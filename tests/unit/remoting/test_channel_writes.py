"""How a Channel turns answers into writes: coalesced, complete and in order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mqcore.errors import MQTimeoutError
from mqcore.protocol import NEED_DATA, FrameDecoder, RemotingCommand, SerializeType, encode
from mqcore.remoting import Channel
from mqcore.remoting.dispatcher import RequestDispatcher


class RecordingTransport:
    """Just enough of asyncio.Transport: keeps every write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def writelines(self, data: list[bytes]) -> None:
        self.writes.append(b"".join(data))

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def get_extra_info(self, name: str) -> Any:
        return None

    def answers(self) -> list[RemotingCommand]:
        decoder = FrameDecoder()
        decoder.receive_data(b"".join(self.writes))
        out = []
        while (cmd := decoder.next_command()) is not NEED_DATA:
            assert isinstance(cmd, RemotingCommand)
            out.append(cmd)
        return out


def sync_echo(channel: Channel, request: RemotingCommand) -> RemotingCommand:
    return RemotingCommand.response_to(request, 0, ext_fields={"n": str(request.opaque)})


async def async_echo(channel: Channel, request: RemotingCommand) -> RemotingCommand:
    await asyncio.sleep(0)
    return sync_echo(channel, request)


def make_channel(**limits: int) -> tuple[Channel, RecordingTransport]:
    dispatcher = RequestDispatcher()
    dispatcher.register(1, sync_echo)
    dispatcher.register(2, async_echo)
    channel = Channel(dispatcher, **limits)
    transport = RecordingTransport()
    channel.connection_made(transport)  # type: ignore[arg-type]
    return channel, transport


def requests(code: int, count: int, kind: SerializeType = SerializeType.JSON) -> bytes:
    return b"".join(
        encode(RemotingCommand.request(code, opaque=i, serialize_type=kind)) for i in range(count)
    )


async def test_answers_to_one_chunk_leave_in_one_write() -> None:
    channel, transport = make_channel()
    for kind in SerializeType:
        transport.writes.clear()
        channel.data_received(requests(1, 50, kind))
        assert len(transport.writes) == 1  # at the end of the chunk, not a pass later
        await asyncio.sleep(0)
        assert len(transport.writes) == 1  # the queued flush found nothing left
        answers = transport.answers()
        assert [a.opaque for a in answers] == list(range(50))
        assert [a.ext_fields["n"] for a in answers] == [str(i) for i in range(50)]
        assert all(a.is_response and a.serialize_type is kind for a in answers)


async def test_a_chunk_split_anywhere_still_gets_every_answer_in_order() -> None:
    channel, transport = make_channel()
    stream = requests(1, 20)
    for start in range(0, len(stream), 37):
        channel.data_received(stream[start : start + 37])
        if start % 2:
            await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [a.opaque for a in transport.answers()] == list(range(20))
    assert len(transport.writes) <= len(range(0, len(stream), 37))


async def test_async_answers_of_one_pass_share_one_write() -> None:
    channel, transport = make_channel()
    channel.data_received(requests(2, 30))
    assert transport.writes == []
    for _ in range(5):
        await asyncio.sleep(0)
    assert [a.opaque for a in transport.answers()] == list(range(30))
    assert len(transport.writes) == 1


async def test_sends_outside_a_chunk_are_flushed_at_the_end_of_the_pass() -> None:
    channel, transport = make_channel()
    for i in range(3):
        channel.send(RemotingCommand.request(7, opaque=i, oneway=True))
    assert transport.writes == []
    await asyncio.sleep(0)
    assert len(transport.writes) == 1
    assert [c.opaque for c in transport.answers()] == [0, 1, 2]


async def test_high_water_writes_at_once() -> None:
    channel, transport = make_channel(high_water=1024, low_water=0)
    channel.send(RemotingCommand.request(7, body=b"x" * 600))
    assert transport.writes == []
    channel.send(RemotingCommand.request(7, body=b"y" * 600))
    assert len(transport.writes) == 1  # over high water: written without waiting
    await asyncio.sleep(0)
    assert len(transport.writes) == 1
    assert [c.body[:1] for c in transport.answers()] == [b"x", b"y"]


def test_decoder_does_not_keep_a_buffer_the_caller_may_change() -> None:
    frame = encode(RemotingCommand.request(5, {"k": "v"}, b"body"))
    for chunk_type in (bytes, bytearray, memoryview):
        decoder = FrameDecoder()
        chunk = bytearray(frame)
        decoder.receive_data(chunk_type(chunk))
        chunk[-4:] = b"XXXX"  # the caller reuses its buffer
        cmd = decoder.next_command()
        assert isinstance(cmd, RemotingCommand) and cmd.body == b"body", chunk_type
        assert type(cmd.body) is bytes


def test_decoder_joins_a_held_chunk_with_the_next() -> None:
    frames = [encode(RemotingCommand.request(5, opaque=i, body=b"z" * i)) for i in range(3)]
    stream = b"".join(frames)
    cut = len(frames[0]) + 5  # the held bytes chunk ends inside frame 1
    decoder = FrameDecoder()
    decoder.receive_data(stream[:cut])
    first = decoder.next_command()
    assert isinstance(first, RemotingCommand) and first.opaque == 0
    assert decoder.next_command() is NEED_DATA and decoder.buffered == 5
    decoder.receive_data(stream[cut:])
    rest = [decoder.next_command(), decoder.next_command()]
    assert [c.opaque for c in rest if isinstance(c, RemotingCommand)] == [1, 2]
    assert decoder.next_command() is NEED_DATA and decoder.buffered == 0


async def test_invoke_times_out_cancels_and_answers() -> None:
    channel, _ = make_channel()
    with pytest.raises(MQTimeoutError, match=r"to request code 9 within 0\.01 s"):
        await channel.invoke(RemotingCommand.request(9, opaque=1), timeout=0.01)
    assert channel._pending == {}

    task = asyncio.ensure_future(channel.invoke(RemotingCommand.request(9, opaque=2), 0.05))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert channel._pending == {}
    await asyncio.sleep(0.1)  # the cancelled request's timer must not fire into anything

    pending = asyncio.ensure_future(channel.invoke(RemotingCommand.request(9, opaque=3), 5))
    await asyncio.sleep(0)
    answer = RemotingCommand.response_to(RemotingCommand.request(9, opaque=3), 0, "ok")
    channel.data_received(encode(answer))
    assert (await pending).remark == "ok"
    assert channel._pending == {}
