"""The stdin reader of `mq produce` when the event loop is gone before stdin ends."""

from __future__ import annotations

import asyncio
import gc
import io
import os
import sys
import threading
import warnings

import pytest

from mqcli.commands import produce_input


def test_lines_after_the_loop_closed_leave_no_unawaited_coroutine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read_end, write_end = os.pipe()
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(read_end, "rb")))
    monkeypatch.setattr(sys, "stdin", stdin)

    async def start() -> None:
        produce_input.stdin_lines(buffered=4)  # the command fails before reading a line

    asyncio.run(start())  # the loop is closed from here on
    (reader,) = [t for t in threading.enumerate() if t.name == "mq-produce-stdin"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        os.write(write_end, b"1\n2\n3\n")
        os.close(write_end)
        reader.join(10)
        gc.collect()
    stdin.close()
    assert not reader.is_alive()
    assert not [w for w in caught if "never awaited" in str(w.message)]
