"""What `mq produce` shows: one row per send (an aligned table or NDJSON) on stdout, the
progress bar on a terminal's stderr when sending many, and the closing rate line."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from mqcli.output import err_console
from mqcore.client import SendResult
from mqcore.message import Message

if TYPE_CHECKING:  # the progress bar loads only on a terminal, when sending many
    from rich.progress import Progress

__all__ = ["HEADERS", "ROW_FORMAT", "Printer", "Stats", "progress_bar"]

ROW_FORMAT = "{:<10} {:<32} {:<16} {:>5} {:>10}"
HEADERS = ("STATUS", "MSG-ID", "BROKER", "QUEUE", "OFFSET")


class Printer:
    """Rows on stdout: an aligned table (header once) or NDJSON."""

    def __init__(self, *, as_json: bool, quiet: bool) -> None:
        self.as_json = as_json
        self.quiet = quiet
        self._header = False
        self._reasons: set[str] = set()

    def _write(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def result(self, n: int, msg: Message, result: SendResult | None, error: str | None) -> None:
        if self.quiet:
            if error and error not in self._reasons:  # the exit code alone does not say why
                self._reasons.add(error)
                err_console.print(f"[red]send {n} failed:[/] {error}", markup=True, highlight=False)
            return
        mq = result.message_queue if result else None
        status = (
            "FAILED" if error else (result.status.name if result else "ONEWAY")
        )  # ONEWAY: sent, no answer expected
        if self.as_json:
            obj: dict[str, Any] = {
                "index": n,
                "sendStatus": status,
                "msgId": result.msg_id if result else msg.unique_key,
                "topic": msg.topic,
            }
            if result is not None:
                obj.update(
                    offsetMsgId=result.offset_msg_id,
                    brokerName=mq.broker_name if mq else None,
                    queueId=mq.queue_id if mq else None,
                    queueOffset=result.queue_offset,
                )
                if result.recall_handle:  # a timer message: `mq message recall` takes it
                    obj["recallHandle"] = result.recall_handle
                state = getattr(result, "local_transaction_state", None)  # TransactionSendResult
                if state is not None:
                    obj["transactionState"] = state.name
            if error:
                obj["error"] = error
            self._write(orjson.dumps(obj).decode())
            return
        if not self._header:
            self._header = True
            self._write(ROW_FORMAT.format(*HEADERS))
        if error:
            self._write(ROW_FORMAT.format(status, msg.unique_key or "-", "-", "-", "-"))
            err_console.print(f"[red]send {n} failed:[/] {error}", markup=True, highlight=False)
            return
        self._write(
            ROW_FORMAT.format(
                status,
                (result.msg_id if result else msg.unique_key) or "-",
                mq.broker_name if mq else "-",
                str(mq.queue_id) if mq else "-",
                str(result.queue_offset) if result else "-",
            )
        )

    def batch(self, first: int, msgs: list[Message], result: SendResult) -> None:
        """A batch answer covers consecutive offsets; print one row per message."""
        ids = result.msg_id.split(",")
        for i, msg in enumerate(msgs):
            one = SendResult(
                result.status,
                ids[i] if i < len(ids) else msg.unique_key or "",
                result.offset_msg_id,
                result.message_queue,
                result.queue_offset + i,
            )
            self.result(first + i, msg, one, None)


@dataclass(slots=True)
class Stats:
    sent: int = 0
    failed: int = 0
    skipped: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self, topic: str) -> str:
        took = max(time.monotonic() - self.started, 1e-6)
        done = self.sent + self.failed
        text = f"{self.sent} sent to {topic} in {took:.2f} s ({done / took:,.1f} msg/s)"
        if self.failed:
            text += f", [red]{self.failed} failed[/]"
        if self.skipped:
            text += f", {self.skipped} empty line(s) skipped"
        return text


def progress_bar(total: int | None) -> Progress | None:
    if (total is not None and total <= 1) or not err_console.is_terminal:
        return None  # (one message first: asking the console builds it)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("[bold]sending"),
        BarColumn(),
        MofNCompleteColumn() if total else TextColumn("{task.completed}"),
        TextColumn("{task.fields[rate]} msg/s"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        redirect_stdout=sys.stdout.isatty(),
        redirect_stderr=False,
    )
