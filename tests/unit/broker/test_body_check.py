"""The send-time check that refuses a compressed-flagged body that does not inflate."""

from __future__ import annotations

import zlib

from mqcore.broker.body_check import compressed_body_problem
from mqcore.message.const import SysFlag

ZLIB = SysFlag.COMPRESSED_FLAG | SysFlag.COMPRESSION_ZLIB
LIMIT = 1024 * 1024


def test_plain_and_good_compressed_bodies_pass() -> None:
    assert compressed_body_problem(b"not zlib at all", 0, max_inflated=LIMIT) is None
    good = zlib.compress(b"hello " * 1000, 5)
    assert compressed_body_problem(good, SysFlag.COMPRESSED_FLAG, max_inflated=LIMIT) is None
    assert compressed_body_problem(memoryview(good), ZLIB, max_inflated=LIMIT) is None


def test_a_body_that_does_not_inflate_is_refused_with_a_reason() -> None:
    problem = compressed_body_problem(b"poison", SysFlag.COMPRESSED_FLAG, max_inflated=LIMIT)
    assert problem is not None and "does not inflate" in problem and "0x1" in problem


def test_a_cut_short_stream_is_refused() -> None:
    good = zlib.compress(b"x" * 10_000)
    problem = compressed_body_problem(good[:-6], ZLIB, max_inflated=LIMIT)
    assert problem is not None and "cut short" in problem


def test_a_zip_bomb_is_refused_without_inflating_it_whole() -> None:
    bomb = zlib.compress(b"\0" * (64 * 1024 * 1024), 9)  # 64 MiB in about 64 KiB
    problem = compressed_body_problem(bomb, ZLIB, max_inflated=LIMIT)
    assert problem is not None and f"more than {LIMIT}" in problem


def test_codecs_of_5x_are_left_to_their_readers() -> None:
    lz4 = SysFlag.COMPRESSED_FLAG | SysFlag.COMPRESSION_LZ4
    assert compressed_body_problem(b"lz4 frame", lz4, max_inflated=LIMIT) is None
