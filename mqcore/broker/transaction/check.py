"""Check-back of half messages nobody ended (``TransactionalMessageCheckService`` and
``TransactionalMessageServiceImpl.check``; store-format §13 item 5, protocol §9.2).

Every ``transactionCheckInterval`` one round walks the half queue from its progress
offset. Op messages read from the op queue's progress say which half messages are over.
For each other half message, in queue order:

* checked ``transactionCheckMax`` times already, or born longer ago than
  ``fileReservedTime`` -> moved to ``TRANS_CHECK_MAX_TIME_TOPIC`` (never checked again);
* stored after the round began, or younger than ``transactionTimeOut`` -> the round
  stops (everything behind it is younger still);
* younger than its ``CHECK_IMMUNITY_TIME_IN_SECONDS`` -> a copy is parked at the tail
  (so one long immunity does not hold the queue up) and looked at again later;
* otherwise a copy with ``TRANSACTION_CHECK_TIMES`` + 1 is appended and
  CHECK_TRANSACTION_STATE (oneway, body = the message under its real topic) goes to one
  live producer of its ``PGROUP``, which answers with END_TRANSACTION on the copy.

Progress of both queues is stored under ``CID_RMQ_SYS_TRANS``, so a restarted broker
carries on where it stopped. Copies keep the original's offset in mq's own
``MQ_HALF_ORIGIN_OFFSET`` (never delivered); parked copies also get 4.9.8's
``TRAN_PREPARED_QUEUE_OFFSET`` (the first parked copy's own offset), as 4.9.8 writes it.
One deviation, for short check intervals: a check copy is not asked about again before
``transactionTimeOut`` after it was stored, so an answer still on its way is not
overtaken by a second question.

A round runs without yielding to the event loop, so END_TRANSACTION never interleaves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqcore.broker.transaction.bridge import ORIGIN_OFFSET
from mqcore.broker.transaction.service import TransactionalMessageService, origin_offset
from mqcore.message.const import (
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
)
from mqcore.message.ids import create_offset_msg_id
from mqcore.message.model import MessageExt
from mqcore.message.record import encode_record
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.headers import CheckTransactionStateRequestHeader
from mqcore.remoting import ChannelClosedError

if TYPE_CHECKING:
    from mqcore.broker.client_manager import ProducerManager
    from mqcore.broker.config import BrokerConfig
    from mqcore.store.metadata.persister import ConfigPersister
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["CheckReport", "TransactionalMessageCheckService"]

log = logging.getLogger("mq.broker.transaction")

MAX_PROCESS_TIME = 60.0
"""A round gives up after this many seconds (``MAX_PROCESS_TIME_LIMIT``)."""
_OP_READ_LIMIT = 100_000
"""Op messages read per round at most (the unread op backlog is normally tiny)."""


@dataclass
class CheckReport:
    """What one round did (for logs and tests)."""

    checked: list[int] = field(default_factory=list)
    """Half-queue offsets of the copies a producer was asked about."""
    discarded: list[int] = field(default_factory=list)
    parked: list[int] = field(default_factory=list)
    resolved: int = 0
    """Half messages found ended (op message or earlier decision)."""
    no_producer: int = 0
    half_progress: tuple[int, int] = (0, 0)
    op_progress: tuple[int, int] = (0, 0)


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


class TransactionalMessageCheckService:
    """One check round per ``transactionCheckInterval`` (started with the broker)."""

    def __init__(
        self,
        service: TransactionalMessageService,
        *,
        config: BrokerConfig,
        store_config: MessageStoreConfig,
        producers: ProducerManager,
        persister: ConfigPersister,
        every: Callable[..., object] | None = None,
    ) -> None:
        self.service = service
        self.bridge = service.bridge
        self.config = config
        """``transactionCheckInterval``, ``transactionTimeOut``, ``transactionCheckMax``."""
        self.store_config = store_config
        """``fileReservedTime``: older half messages are discarded, not checked."""
        self.producers = producers
        """Whom a check goes to: a live channel of the half message's producer group."""
        self.persister = persister
        """Writes the half/op progress (consumer offsets) soon after a round moved it."""
        self.every = every
        """The master role's timers (:meth:`~mqcore.broker.services.Timers.every`)."""
        self.rounds = 0

    def start(self) -> None:
        """Relearn what the unread op messages ended, then check every interval."""
        self._read_ops(self.bridge.progress(RMQ_SYS_TRANS_OP_HALF_TOPIC), 0)
        if self.every is not None:
            interval = self.config.transaction_check_interval
            self.every(interval, self.check, name="transaction-check")

    # -- one round ------------------------------------------------------------------------
    def check(self) -> CheckReport:
        """One round over the half queue (see the module docstring)."""
        self.rounds += 1
        report = CheckReport()
        bridge = self.bridge
        if bridge.max_offset(RMQ_SYS_TRANS_HALF_TOPIC) == 0:
            return report
        cfg = self.config
        timeout = max(0, cfg.transaction_time_out)
        check_max = cfg.transaction_check_max
        reserved_ms = self.store_config.file_reserved_time * 3600 * 1000
        start_ms = _now_ms()
        deadline = time.monotonic() + MAX_PROCESS_TIME
        half_offset = bridge.progress(RMQ_SYS_TRANS_HALF_TOPIC)
        op_offset = bridge.progress(RMQ_SYS_TRANS_OP_HALF_TOPIC)
        remove, done_ops = self._read_ops(op_offset, half_offset)

        i = new_offset = half_offset
        batch: list[MessageExt] = []
        while time.monotonic() < deadline:
            if i in remove:
                done_ops.append(remove.pop(i))
                report.resolved += 1
                i = new_offset = i + 1
                continue
            while batch and batch[0].queue_offset < i:
                batch.pop(0)
            if not batch or batch[0].queue_offset != i:
                batch, next_offset, at_end = bridge.read(RMQ_SYS_TRANS_HALF_TOPIC, i)
                batch = [m for m in batch if m.queue_offset >= i]
                if not batch:
                    if at_end or next_offset <= i:
                        break
                    i = new_offset = next_offset  # a hole: records already cleaned up
                    continue
                if batch[0].queue_offset != i:
                    i = new_offset = batch[0].queue_offset
                    continue
            msg = batch.pop(0)
            if self.service.is_ended(msg):
                report.resolved += 1
                i = new_offset = i + 1
                continue
            checks = _int(msg.properties.get(PROPERTY_TRANSACTION_CHECK_TIMES), 0)
            now = _now_ms()
            if checks >= check_max or now - msg.born_timestamp > reserved_ms:
                self._discard(msg, report)
                i = new_offset = i + 1
                continue
            if msg.store_timestamp >= start_ms:
                break
            age = now - msg.born_timestamp
            immunity_raw = msg.properties.get(PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
            if immunity_raw is not None:
                immunity = _int(immunity_raw, -1)
                immunity = timeout if immunity < 0 else immunity * 1000
                if age < immunity:
                    if not self._park(msg, report):
                        break
                    i = new_offset = i + 1
                    continue
            elif 0 <= age < timeout:
                break
            if checks and 0 <= now - msg.store_timestamp < timeout:
                break
            if not self._check_back(msg, checks + 1, report):
                break
            i = new_offset = i + 1

        if new_offset != half_offset:
            bridge.set_progress(RMQ_SYS_TRANS_HALF_TOPIC, new_offset)
        new_op_offset = _contiguous(op_offset, done_ops)
        if new_op_offset != op_offset:
            bridge.set_progress(RMQ_SYS_TRANS_OP_HALF_TOPIC, new_op_offset)
        if new_offset != half_offset or new_op_offset != op_offset:
            # On disk within a second, not at the next offsets flush: a crash before that
            # restarted the check from the old progress, putting back a new copy of every
            # open half message each time (50 kills: 47,637 checks for 5,000 transactions).
            self.persister.request(self.bridge.offsets)
        report.half_progress = (half_offset, new_offset)
        report.op_progress = (op_offset, new_op_offset)
        if report.checked or report.discarded:
            log.info(
                "transaction check: %d asked, %d discarded, %d parked, half %d->%d, op %d->%d",
                len(report.checked),
                len(report.discarded),
                len(report.parked),
                half_offset,
                new_offset,
                op_offset,
                new_op_offset,
            )
        return report

    def _read_ops(self, op_offset: int, half_offset: int) -> tuple[dict[int, int], list[int]]:
        """Op messages from ``op_offset``: {half offset: op offset} still ahead of the half
        progress, and the op offsets already behind it (``fillOpRemoveMap``)."""
        remove: dict[int, int] = {}
        done: list[int] = []
        offset, read = op_offset, 0
        while read < _OP_READ_LIMIT:
            ops, next_offset, at_end = self.bridge.read(RMQ_SYS_TRANS_OP_HALF_TOPIC, offset, 256)
            for op in ops:
                read += 1
                try:
                    half = int(bytes(op.body).decode("ascii"))
                except ValueError:
                    log.warning("op message at %d has a bad body %r", op.queue_offset, op.body)
                    done.append(op.queue_offset)
                    continue
                self.service.mark_ended(half)
                if half < half_offset:
                    done.append(op.queue_offset)
                else:
                    remove[half] = op.queue_offset
            if at_end or next_offset <= offset:
                break
            offset = next_offset
        return remove, done

    # -- outcomes -------------------------------------------------------------------------
    def _discard(self, msg: MessageExt, report: CheckReport) -> None:
        """Checked too often or too old: keep it in TRANS_CHECK_MAX_TIME_TOPIC for people."""
        log.info(
            "half message %s (queue offset %d) checked %s times: moved to %s",
            msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            msg.queue_offset,
            msg.properties.get(PROPERTY_TRANSACTION_CHECK_TIMES, "0"),
            TRANS_CHECK_MAX_TIME_TOPIC,
        )
        self.bridge.put_moved(msg, TRANS_CHECK_MAX_TIME_TOPIC, 0)
        report.discarded.append(msg.queue_offset)

    def _park(self, msg: MessageExt, report: CheckReport) -> bool:
        """Append a copy of a message still immune from checks (``putImmunityMsgBack``)."""
        props = dict(msg.properties)
        props.setdefault(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET, str(msg.queue_offset))
        props[ORIGIN_OFFSET] = str(origin_offset(msg))
        result = self.bridge.put_back(msg, props)
        if result.ok:
            report.parked.append(result.queue_offset)
        return result.ok

    def _check_back(self, msg: MessageExt, checks: int, report: CheckReport) -> bool:
        """Append the next check copy and ask a producer of its group about it."""
        props = dict(msg.properties)
        props[PROPERTY_TRANSACTION_CHECK_TIMES] = str(checks)
        props[ORIGIN_OFFSET] = str(origin_offset(msg))
        result = self.bridge.put_back(msg, props)
        if not result.ok:
            return False
        copy = self.bridge.look(result.wrote_offset)
        if copy is None:
            return False
        copy.queue_offset = result.queue_offset
        report.checked.append(copy.queue_offset)
        if not self._send_check(copy):
            report.no_producer += 1
        return True

    def _send_check(self, copy: MessageExt) -> bool:
        """CHECK_TRANSACTION_STATE to one live channel of the copy's producer group."""
        group = copy.properties.get(PROPERTY_PRODUCER_GROUP, "")
        channel = self.producers.available_channel(group)
        if channel is None:
            log.warning("no live producer of group %r to check %s", group, copy.msg_id)
            return False
        uniq = copy.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=copy.queue_offset,
            commit_log_offset=copy.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=create_offset_msg_id(copy.store_host, copy.commit_log_offset),
        )
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE,
            header.to_ext_fields(),
            _check_body(copy),
            oneway=True,
        )
        try:
            channel.send(request)
        except ChannelClosedError:
            return False
        except Exception:  # a broken transport must not end the round
            log.exception("sending a transaction check to %s failed", channel)
            return False
        return True


def _check_body(copy: MessageExt) -> bytes:
    """The copy as one record under its real topic and queue (``MessageDecoder.encode``)."""
    return bytes(
        encode_record(
            topic=copy.properties.get(PROPERTY_REAL_TOPIC, copy.topic),
            body=copy.body,
            properties={k: v for k, v in copy.properties.items() if k != ORIGIN_OFFSET},
            queue_id=_int(copy.properties.get(PROPERTY_REAL_QUEUE_ID), copy.queue_id),
            flag=copy.flag,
            sys_flag=copy.sys_flag,
            born_timestamp=copy.born_timestamp,
            born_host=copy.born_host,
            store_host=copy.store_host,
            store_timestamp=copy.store_timestamp,
            queue_offset=copy.queue_offset,
            physical_offset=copy.commit_log_offset,
            reconsume_times=copy.reconsume_times,
            prepared_transaction_offset=copy.prepared_transaction_offset,
        )
    )


def _contiguous(start: int, done: list[int]) -> int:
    """The op progress: past every done op offset that follows on from ``start``."""
    offset = start
    for value in sorted(set(done)):
        if value < offset:
            continue
        if value != offset:
            break
        offset += 1
    return offset


def _now_ms() -> int:
    return int(time.time() * 1000)
