"""Where `mq produce` reads bodies: ``--body`` or ``--file`` (``count`` times each), else
stdin, one message per line, read by a thread so a blocked read never holds the process."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from mqcli.commands.produce_output import Stats
from mqcli.output import fail

__all__ = ["bodies", "read_file", "stdin_lines"]


def read_file(file: Path) -> bytes:
    """``--file``'s bytes (``-``: all of stdin); an unreadable file ends the command."""
    try:
        return sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")


async def bodies(
    body: str | None, file: Path | None, count: int, stats: Stats
) -> AsyncIterator[tuple[bytes, bool]]:
    """(body, templated?) pairs: the flag or file ``count`` times, else stdin lines."""
    if body is not None or file is not None:
        data, templated = (body.encode(), True) if body is not None else (b"", False)
        if file is not None:
            data = read_file(file)
        if not data:
            fail("the message body is empty", hint="RocketMQ refuses empty bodies")
        for _ in range(count):
            yield data, templated
        return
    lines = stdin_lines()
    while True:
        line = await lines.get()
        if line is None:
            return
        line = line.rstrip(b"\r\n")
        if not line:
            stats.skipped += 1
            continue
        for _ in range(count):
            yield line, True


class _StdinLines:
    """stdin lines (None at the end) read by a daemon thread: a blocked read never keeps
    the process from exiting on Ctrl-C, and a slow broker slows the reader down (at most
    ``buffered`` lines wait). The thread hands lines over with ``call_soon_threadsafe``,
    never a coroutine, so a loop that closes first leaves nothing unawaited behind."""

    def __init__(self, buffered: int = 1024) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._slots = threading.Semaphore(buffered)
        threading.Thread(target=self._read, name="mq-produce-stdin", daemon=True).start()

    def _put(self, item: bytes | None) -> None:
        self._slots.acquire()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _read(self) -> None:
        try:
            for line in sys.stdin.buffer:
                self._put(line)
            self._put(None)
        except (RuntimeError, OSError, ValueError):
            pass  # the loop is closed or stdin is gone: we are exiting

    async def get(self) -> bytes | None:
        item = await self._queue.get()
        self._slots.release()
        return item


def stdin_lines(buffered: int = 1024) -> _StdinLines:
    return _StdinLines(buffered)
