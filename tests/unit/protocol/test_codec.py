"""Frame codec: round trips, golden frames from the spec, limits, hostile input."""

from __future__ import annotations

import dataclasses
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.errors import LocalProtocolError, ProtocolError, RemoteProtocolError
from mqcore.protocol import (
    NEED_DATA,
    FrameDecoder,
    LanguageCode,
    RemotingCommand,
    RequestCode,
    SerializeType,
    encode,
    encode_buffers,
)

# Spec §2: the Java 4.9.8 SEND_MESSAGE_V2 header, byte for byte (359 bytes).
JAVA_SEND_V2_HEADER = (
    rb'{"code":310,"extFields":{"a":"pg","b":"TopicTest","c":"TBW102","d":"4","e":"1","f":"0",'
    rb'"g":"1700000000000","h":"0","i":"KEYS\u0001k1\u0002UNIQ_KEY\u0001C0A8010A30394C7B5B1C0C3C'
    rb'6F2A0000\u0002WAIT\u0001true\u0002TAGS\u0001TagA","j":"0","k":"false","m":"false",'
    rb'"n":"broker-a"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON",'
    rb'"version":409}'
)
SEND_V2_EXT = {
    "a": "pg",
    "b": "TopicTest",
    "c": "TBW102",
    "d": "4",
    "e": "1",
    "f": "0",
    "g": "1700000000000",
    "h": "0",
    "i": "KEYS\x01k1\x02UNIQ_KEY\x01C0A8010A30394C7B5B1C0C3C6F2A0000"
    "\x02WAIT\x01true\x02TAGS\x01TagA",
    "j": "0",
    "k": "false",
    "m": "false",
    "n": "broker-a",
}


def decode_all(data: bytes, max_frame: int = 16 * 1024 * 1024) -> list[RemotingCommand]:
    decoder = FrameDecoder(max_frame)
    decoder.receive_data(data)
    out = []
    while (cmd := decoder.next_command()) is not NEED_DATA:
        assert isinstance(cmd, RemotingCommand)
        out.append(cmd)
    return out


def test_golden_java_json_frame() -> None:
    frame = bytes.fromhex("00000170 00000167") + JAVA_SEND_V2_HEADER + b"hello"
    assert len(JAVA_SEND_V2_HEADER) == 0x167
    (cmd,) = decode_all(frame)
    assert cmd.code == RequestCode.SEND_MESSAGE_V2
    assert cmd.opaque == 7 and cmd.flag == 0 and cmd.version == 409
    assert cmd.language is LanguageCode.JAVA
    assert cmd.ext_fields == SEND_V2_EXT
    assert cmd.body == b"hello"
    assert cmd.serialize_type is SerializeType.JSON
    # Our encoder writes the same fields in the same (alphabetical) order as fastjson.
    assert encode(cmd) == frame


def _hand_binary_ext(ext: dict[str, str]) -> bytes:
    out = b""
    for k, v in ext.items():
        out += struct.pack(">h", len(k)) + k.encode() + struct.pack(">i", len(v.encode()))
        out += v.encode()
    return out


def test_golden_java_binary_frame() -> None:
    ext = _hand_binary_ext(SEND_V2_EXT)
    assert len(ext) == 213
    header = bytes.fromhex("0136 00 0199 00000007 00000000 00000000 000000d5") + ext
    frame = bytes.fromhex("000000f3 010000ea") + header + b"hello"
    assert len(frame) == 243 + 4
    (cmd,) = decode_all(frame)
    assert cmd.code == 310 and cmd.opaque == 7 and cmd.version == 409
    assert cmd.remark is None
    assert cmd.ext_fields == SEND_V2_EXT
    assert cmd.body == b"hello"
    assert cmd.serialize_type is SerializeType.ROCKETMQ
    assert encode(cmd) == frame


def test_ali_ons_header_values_become_java_text() -> None:
    header = (
        b'{"code":310,"language":"JAVA","opaque":1,"flag":0,"version":121,"extFields":'
        b'{"a":"pg","b":"TopicTest","d":4,"g":1700000000000,"k":false,"x":true,"n":null,'
        b'"f":1.0}}'
    )
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    (cmd,) = decode_all(frame)
    assert cmd.version == 121
    assert cmd.ext_fields == {
        "a": "pg",
        "b": "TopicTest",
        "d": "4",
        "g": "1700000000000",
        "k": "false",
        "x": "true",
        "f": "1",
    }


def test_unknown_language_and_fields_are_tolerated() -> None:
    header = b'{"code":105,"language":"COBOL","opaque":3,"flag":0,"extra":[1],"extFields":{}}'
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    (cmd,) = decode_all(frame)
    assert cmd.language is LanguageCode.OTHER and cmd.version == 0 and cmd.ext_fields == {}


@pytest.mark.parametrize("kind", list(SerializeType))
def test_response_mirrors_request(kind: SerializeType) -> None:
    req = RemotingCommand.request(105, {"topic": "t"}, serialize_type=kind, opaque=99)
    resp = RemotingCommand.response_to(req, 17, remark="nope", ext_fields={"x": "1"})
    (back,) = decode_all(encode(resp))
    assert back.is_response and not back.is_oneway
    assert back.opaque == 99 and back.code == 17 and back.remark == "nope"
    assert back.serialize_type is kind and back.version == 409


def test_response_bit_and_oneway_bit() -> None:
    oneway = RemotingCommand.request(15, oneway=True)
    (back,) = decode_all(encode(oneway))
    assert back.is_oneway and not back.is_response and back.flag == 2


def test_encode_buffers_does_not_copy_body() -> None:
    body = memoryview(bytearray(b"x" * 100_000))
    parts = encode_buffers(RemotingCommand.request(310, body=body))
    assert parts[1] is body
    (back,) = decode_all(b"".join(parts))
    assert back.body == bytes(body)


def test_ext_values_must_be_text_when_encoding() -> None:
    cmd = RemotingCommand.request(105, {"queueId": 1})  # type: ignore[dict-item]
    with pytest.raises(LocalProtocolError):
        encode(cmd)


def test_frame_too_large_is_refused_before_buffering() -> None:
    decoder = FrameDecoder(max_frame=1024)
    decoder.receive_data(struct.pack(">i", 1021))  # 1021 + 4 > 1024
    with pytest.raises(RemoteProtocolError, match="exceeds"):
        decoder.next_command()
    with pytest.raises(RemoteProtocolError):  # stays broken
        decoder.next_command()
    with pytest.raises(LocalProtocolError):
        encode(RemotingCommand.request(310, body=b"x" * 2000), max_frame=1024)


def test_frame_at_limit_is_accepted() -> None:
    cmd = RemotingCommand.request(310, body=b"")
    head = len(encode(cmd))
    cmd = dataclasses.replace(cmd, body=b"y" * (1024 - head))
    frame = encode(cmd, max_frame=1024)
    assert len(frame) == 1024
    assert decode_all(frame, max_frame=1024)[0].body == cmd.body


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">ii", 4 + 3, 3) + b"{{{",  # not JSON
        struct.pack(">ii", 4 + 2, 2) + b"[]",  # not an object
        struct.pack(">ii", 4 + 12, 12) + b'{"code":"x"}',  # code not an int
        struct.pack(">ii", 4, 10),  # header longer than the frame
        struct.pack(">ii", 2, 0),  # length below 4
        struct.pack(">ii", 4 + 2, (7 << 24) | 2) + b"{}",  # unknown serialize type
        struct.pack(">ii", 4 + 5, (1 << 24) | 5) + b"\x00\x01\x00\x00\x00",  # short binary
    ],
)
def test_bad_frames_raise_protocol_error(frame: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_all(frame)


def test_eof_inside_frame() -> None:
    frame = encode(RemotingCommand.request(105, {"topic": "t"}))
    decoder = FrameDecoder()
    decoder.receive_data(frame[:-1])
    assert decoder.next_command() is NEED_DATA
    decoder.receive_data(b"")
    with pytest.raises(RemoteProtocolError, match="closed inside"):
        decoder.next_command()


def test_clean_eof_between_frames() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(encode(RemotingCommand.request(105)))
    decoder.receive_data(b"")
    assert isinstance(decoder.next_command(), RemotingCommand)
    assert decoder.next_command() is NEED_DATA


text = st.text(st.characters(codec="utf-8"), max_size=20)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-(2**15), 2**15 - 1),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.none() | text.filter(bool),
    ext_fields=st.dictionaries(text, text.filter(bool), max_size=5),
    body=st.binary(max_size=300),
    language=st.sampled_from(list(LanguageCode)),
    version=st.integers(0, 2**15 - 1),
    serialize_type=st.sampled_from(list(SerializeType)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(commands, min_size=1, max_size=5), st.data())
def test_round_trip_any_chunking(cmds: list[RemotingCommand], data: st.DataObject) -> None:
    stream = b"".join(encode(c) for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        if cut > prev:  # b"" would mean EOF
            decoder.receive_data(stream[prev:cut])
            prev = cut
        while (cmd := decoder.next_command()) is not NEED_DATA:
            assert isinstance(cmd, RemotingCommand)
            out.append(cmd)
    assert decoder.buffered == 0
    assert out == cmds


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(1, 50), max_size=8))
def test_random_bytes_never_crash(garbage: bytes, chunks: list[int]) -> None:
    decoder = FrameDecoder(max_frame=4096)
    pos = 0
    try:
        for size in [*chunks, len(garbage)]:
            if garbage[pos : pos + size]:
                decoder.receive_data(garbage[pos : pos + size])
            pos += size
            while decoder.next_command() is not NEED_DATA:
                pass
        decoder.receive_data(b"")
        decoder.next_command()
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.sampled_from(list(SerializeType)))
def test_random_headers_never_crash(header: bytes, kind: SerializeType) -> None:
    frame = struct.pack(">ii", 4 + len(header), (kind << 24) | len(header)) + header
    try:
        decode_all(frame)
    except ProtocolError:
        pass


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=10,
    )
)
def test_random_json_headers_never_crash(obj: object) -> None:
    header = json.dumps({"code": 1, "extFields": {"k": obj}, "remark": obj}).encode()
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    try:
        (cmd,) = decode_all(frame)
    except ProtocolError:
        return
    assert cmd.remark is None or isinstance(cmd.remark, str)
    assert all(isinstance(v, str) for v in cmd.ext_fields.values())
