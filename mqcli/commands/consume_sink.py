"""How `mq consume` prints what it consumed: a table fitted as rows come, JSON lines, or a
kcat-style template, counted against ``--count``.

Its own module so that every way of consuming (push, pull, the quick look, POP) prints
alike. A consumer that answers for each message (``--nack``, ``--fail-rate``, POP) shows
the answer in a RESULT column (``consumeResult`` in JSON).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import orjson

from mqcli.commands.consume_look import PipeClosed
from mqcli.render import (
    MESSAGE_HEADERS,
    MESSAGE_HEADERS_WIDE,
    message_json,
    message_row,
    preview,
)
from mqcli.template import Template
from mqcore.message import MessageExt

__all__ = ["MIN_WIDTHS", "Sink"]

MIN_WIDTHS = {
    "QUEUE": 16, "OFFSET": 6, "TAGS": 8, "KEYS": 8, "PROPERTIES": 10, "RETRY": 5,
    "STORE-TIME": 23, "UNIQ-KEY": 32, "MSG-ID": 32,
}  # fmt: skip
_SHORT = {"CONSUME_SUCCESS": "ACK", "RECONSUME_LATER": "NACK"}
"""The RESULT column's words for a push listener's answers."""


class Sink:
    """Prints messages in the chosen format and counts them against ``--count``."""

    def __init__(
        self,
        fmt: str,
        template: Template | None,
        charset: str,
        limit: int | None,
        show_result: bool,
        quiet: bool = False,
    ) -> None:
        self.fmt = fmt
        self.quiet = quiet
        # In a pipe the body is never cut to a preview (nothing asked for a fitted view).
        self.whole_body = not sys.stdout.isatty()
        self.template = template
        self.charset = charset
        self.limit = limit
        self.show_result = show_result
        self.count = 0
        self.pipe_closed = False
        """Standard output's reader went away (``| head``)."""
        self._header = False
        self._widths: list[int] = []

    @property
    def full(self) -> bool:
        return self.limit is not None and self.count >= self.limit

    def emit(
        self,
        msg: MessageExt,
        broker: str | None,
        nack: bool = False,
        *,
        result: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Print ``msg``; raises :class:`PipeClosed` (the message not counted) when
        standard output's reader is gone. ``result`` replaces the ACK/NACK text of the
        RESULT column (and ``consumeResult``); ``extra`` adds fields to a JSON line."""
        if self.quiet:
            self.count += 1
            return
        if result is None:
            result = "RECONSUME_LATER" if nack else "CONSUME_SUCCESS"
        try:
            self._write(msg, broker, result, extra)
        except BrokenPipeError:
            _silence_stdout()
            self.pipe_closed = True
            raise PipeClosed from None
        self.count += 1

    def _write(
        self, msg: MessageExt, broker: str | None, result: str, extra: dict[str, Any] | None
    ) -> None:
        out = sys.stdout
        if self.template is not None:
            out.write(self.template.render(msg, charset=self.charset, broker=broker))
        elif self.fmt == "json":
            obj = message_json(msg, charset=self.charset)
            obj["brokerName"] = broker
            if self.show_result:
                obj["consumeResult"] = result
            if extra:
                obj.update(extra)
            out.write(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode() + "\n")
        else:
            wide = self.fmt == "wide"
            cells = message_row(msg, broker=broker, wide=wide, charset=self.charset)
            if self.whole_body:
                cells[-1] = preview(msg.body, 0, self.charset)
            headers = list(MESSAGE_HEADERS_WIDE if wide else MESSAGE_HEADERS)
            if not wide and msg.reconsume_times:
                cells[0] += f" retry={msg.reconsume_times}"
            if self.show_result:
                headers.insert(0, "RESULT")
                cells.insert(0, _SHORT.get(result, result))
            if not self._header:
                self._header = True
                self._widths = [max(len(h), MIN_WIDTHS.get(h, 0)) for h in headers[:-1]]
                out.write(self._line(headers))
            out.write(self._line(cells))
        out.flush()

    def _line(self, cells: list[str]) -> str:
        for i, cell in enumerate(cells[:-1]):
            self._widths[i] = max(self._widths[i], min(len(cell), 40))
        head = "  ".join(c.ljust(w) for c, w in zip(cells[:-1], self._widths, strict=True))
        return f"{head}  {cells[-1]}\n"


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the flush at exit does not fail again."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
