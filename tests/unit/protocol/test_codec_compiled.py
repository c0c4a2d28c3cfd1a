"""The compiled frame codec (``_codec.pyx``) equals the pure reference: fed the same
chunks, both decoders give the same commands, the same errors (word for word) and hold
the same bytes; both encoders frame commands into the same buffers."""

from __future__ import annotations

import struct
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.errors import LocalProtocolError
from mqcore.protocol import NEED_DATA, RemotingCommand, SerializeType, codec
from tests.support.compiled import compiled_twin, outcome

PureDecoder = codec.PURE["FrameDecoder"]
pure_encode_buffers = codec.PURE["encode_buffers"]


@pytest.fixture(scope="module")
def twin() -> ModuleType:
    return compiled_twin("mqcore.protocol._codec")


texts = st.text(max_size=8)
commands = st.builds(
    RemotingCommand.request,
    st.integers(0, 400),
    st.dictionaries(texts, texts, max_size=3),
    st.binary(max_size=40),
    opaque=st.integers(0, 2**31 - 1),
    serialize_type=st.sampled_from(list(SerializeType)),
)


def frame_of(cmd: RemotingCommand) -> bytes:
    return b"".join(bytes(part) for part in pure_encode_buffers(cmd))


def drain(decoder: Any) -> list[Any]:
    """Every outcome until NEED_DATA or an error (then once more: it stays broken)."""
    seen: list[Any] = []
    for _ in range(64):
        got = outcome(decoder.next_command)
        seen.append(got)
        if got[0] != "ok":
            seen.append(outcome(decoder.next_command))
            break
        if got[1] is NEED_DATA:
            break
    seen.append(decoder.buffered)
    return seen


@settings(max_examples=150, deadline=None)
@given(
    st.lists(commands, min_size=1, max_size=4),
    st.lists(st.integers(0, 60), max_size=6),
    st.binary(max_size=12),
    st.booleans(),
    st.integers(16, 400),
    st.data(),
)
def test_compiled_decoder_equals_the_pure_one(
    twin: ModuleType,
    cmds: list[RemotingCommand],
    cuts: list[int],
    junk: bytes,
    eof: bool,
    max_frame: int,
    data: Any,
) -> None:
    stream = bytearray(b"".join(frame_of(c) for c in cmds) + junk)
    for _ in range(data.draw(st.integers(0, 2))):  # sometimes damaged too
        stream[data.draw(st.integers(0, len(stream) - 1))] = data.draw(st.integers(0, 255))
    pure, compiled = PureDecoder(max_frame), twin.FrameDecoder(max_frame)
    assert compiled.max_frame == pure.max_frame == max_frame
    chunks, at = [], 0
    for cut in [*sorted(cuts), len(stream)]:
        if cut > at:
            chunks.append(bytes(stream[at:cut]))
            at = cut
    for i, chunk in enumerate(chunks):
        form: Any = chunk if i % 2 == 0 else memoryview(bytearray(chunk))
        assert outcome(pure.receive_data, form) == outcome(compiled.receive_data, form)
        assert drain(pure) == drain(compiled)
    if eof:
        pure.receive_data(b"")
        compiled.receive_data(b"")
        assert drain(pure) == drain(compiled)
        assert outcome(pure.receive_data, b"x") == outcome(compiled.receive_data, b"x")


def test_compiled_decoder_refuses_bad_prefixes_as_the_pure_one(twin: ModuleType) -> None:
    cases = [
        struct.pack(">i", 2),  # shorter than 4
        struct.pack(">i", -5) + b"\0" * 4,
        struct.pack(">i", 2**31 - 1) + b"\0" * 4,  # past max_frame
        struct.pack(">ii", 4, 9),  # header longer than the frame
        struct.pack(">ii", 4, 7 << 24),  # unknown serialize type
        struct.pack(">ii", 6, 2) + b"{}",
        struct.pack(">ii", 6, 2) + b"[]",  # a JSON header that is not an object
    ]
    for raw in cases:
        pure, compiled = PureDecoder(1024), twin.FrameDecoder(1024)
        pure.receive_data(raw)
        compiled.receive_data(raw)
        assert drain(pure) == drain(compiled), raw


@settings(max_examples=100, deadline=None)
@given(commands, st.integers(8, 300))
def test_compiled_encoder_equals_the_pure_one(
    twin: ModuleType, cmd: RemotingCommand, max_frame: int
) -> None:
    assert outcome(twin.encode_buffers, cmd) == outcome(pure_encode_buffers, cmd)
    got = outcome(lambda: twin.encode_buffers(cmd, max_frame=max_frame))
    assert got == outcome(lambda: pure_encode_buffers(cmd, max_frame=max_frame))


def test_compiled_encoder_passes_the_body_through(twin: ModuleType) -> None:
    body = memoryview(b"y" * 100)
    cmd = RemotingCommand.request(11, {"a": "b"}, body)
    buffers = twin.encode_buffers(cmd)
    assert buffers[1] is body and buffers == pure_encode_buffers(cmd)
    with pytest.raises(LocalProtocolError):
        twin.encode_buffers(cmd, max_frame=64)
