"""Half messages from PREPARED to COMMIT or ROLLBACK (``TransactionalMessageServiceImpl``
and ``EndTransactionProcessor``'s logic; store-format §13, protocol §9.1).

A half message's life, one row per END_TRANSACTION ``commitOrRollback`` value (the
producer's local transaction state, or its answer to a check-back)::

    value  state     real topic                        op message   answer
      0    UNKNOW    -                                 -            none (check later)
      8    COMMIT    new record, COMMIT sysflag,       tag d, body  SUCCESS
                     PREPAREDTRANSACTIONOFFSET = half  = half qoff
     12    ROLLBACK  -                                 tag d        SUCCESS

Before acting, the record at ``commitLogOffset`` must be a half message of the
request's ``producerGroup`` at ``tranStateTableOffset``: anything else is refused and
changes nothing. The first decision wins: a half message (or a check copy of it) that
was already ended only gets its own op message, so a late answer to a check-back cannot
deliver a committed message twice.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqcore.broker.transaction.bridge import (
    ORIGIN_OFFSET,
    TransactionalMessageBridge,
    ensure_system_topic,
    render_half,
)
from mqcore.message.const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    RMQ_SYS_TRANS_HALF_TOPIC,
    SysFlag,
)
from mqcore.message.model import MessageExt
from mqcore.protocol import ResponseCode
from mqcore.protocol.headers import EndTransactionRequestHeader

if TYPE_CHECKING:
    from mqcore.broker.topics import TopicService

__all__ = [
    "END_ACTIONS",
    "EndAction",
    "EndOutcome",
    "TransactionalMessageService",
    "is_half_message",
    "origin_offset",
    "prepare_half_message",
]

log = logging.getLogger("mq.broker.transaction")

_ENDED_MEMORY = 65536
"""Half-queue offsets remembered as ended (beyond the op messages still unread)."""


@dataclass(frozen=True, slots=True)
class EndAction:
    """What one ``commitOrRollback`` value does to a half message."""

    name: str
    tran_type: int
    deliver: bool
    """Write the message to its real topic."""


END_ACTIONS: dict[int, EndAction | None] = {
    SysFlag.TRANSACTION_NOT_TYPE: None,
    SysFlag.TRANSACTION_COMMIT_TYPE: EndAction("COMMIT", SysFlag.TRANSACTION_COMMIT_TYPE, True),
    SysFlag.TRANSACTION_ROLLBACK_TYPE: EndAction(
        "ROLLBACK", SysFlag.TRANSACTION_ROLLBACK_TYPE, False
    ),
}
"""The state table above; ``None``: unknown yet, nothing happens."""


@dataclass(frozen=True, slots=True)
class EndOutcome:
    code: int
    remark: str | None = None


def is_half_message(msg: MessageExt) -> bool:
    """A send to park until END_TRANSACTION: ``TRAN_MSG=true`` or the PREPARED sysflag."""
    return (
        msg.properties.get(PROPERTY_TRANSACTION_PREPARED) == "true"
        or msg.transaction_type == SysFlag.TRANSACTION_PREPARED_TYPE
    )


def prepare_half_message(topics: TopicService, msg: MessageExt) -> MessageExt:
    """Rewrite a sent PREPARED message as a half message (the send path stores it).

    A delay level is dropped: the Java producer never sends one with a transaction, and
    a delayed half message would be parked in the schedule topic and lost."""
    if msg.properties.pop(PROPERTY_DELAY_TIME_LEVEL, None) is not None:
        log.info("transactional message to %s: delay level ignored", msg.topic)
    ensure_system_topic(topics, RMQ_SYS_TRANS_HALF_TOPIC)
    return render_half(msg)


def origin_offset(msg: MessageExt) -> int:
    """Half-queue offset of the half message a (check or parked) copy descends from
    (``TRAN_PREPARED_QUEUE_OFFSET``: copies written by earlier versions)."""
    for key in (ORIGIN_OFFSET, PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET):
        raw = msg.properties.get(key)
        if raw is not None:
            try:
                return int(raw)
            except ValueError:
                pass
    return msg.queue_offset


class TransactionalMessageService:
    """END_TRANSACTION's work and the memory of which half messages are over."""

    def __init__(self, bridge: TransactionalMessageBridge) -> None:
        self.bridge = bridge
        self._ended: OrderedDict[int, None] = OrderedDict()

    # -- what is over ---------------------------------------------------------------------
    def mark_ended(self, *half_offsets: int) -> None:
        for offset in half_offsets:
            self._ended[offset] = None
            self._ended.move_to_end(offset)
        while len(self._ended) > _ENDED_MEMORY:
            self._ended.popitem(last=False)

    def is_ended(self, msg: MessageExt) -> bool:
        """The half message, or the one it is a copy of, was committed or rolled back."""
        return msg.queue_offset in self._ended or origin_offset(msg) in self._ended

    # -- END_TRANSACTION ------------------------------------------------------------------
    def end_transaction(self, header: EndTransactionRequestHeader) -> EndOutcome | None:
        """Commit or roll back; None when there is nothing to answer (UNKNOW)."""
        value = header.commit_or_rollback
        if value not in END_ACTIONS:
            return EndOutcome(
                ResponseCode.SYSTEM_ERROR,
                f"commitOrRollback {value} is none of 0 (unknown), 8 (commit), 12 (rollback)",
            )
        action = END_ACTIONS[value]
        if action is None:
            log.info(
                "producer group %s left transaction %s unknown%s; it will be checked back",
                header.producer_group,
                header.msg_id,
                " (answering a check)" if header.from_transaction_check else "",
            )
            return None
        half = self.bridge.look(header.commit_log_offset)
        if half is None:
            return EndOutcome(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        refused = _check_prepared(half, header)
        if refused is not None:
            log.warning("END_TRANSACTION %s of %s refused: %s", action.name, header.msg_id, refused)
            return EndOutcome(ResponseCode.SYSTEM_ERROR, refused)
        if self.is_ended(half):
            log.info("transaction %s already ended; %s ignored", header.msg_id, action.name)
            if half.queue_offset not in self._ended:
                self.bridge.put_op(half)
                self.mark_ended(half.queue_offset)
            return EndOutcome(ResponseCode.SUCCESS)
        if action.deliver:
            final = _final_message(half, action.tran_type)
            if isinstance(final, str):
                return EndOutcome(ResponseCode.SYSTEM_ERROR, final)
            result = self.bridge.put(final)
            if not result.ok:
                return EndOutcome(
                    ResponseCode.SYSTEM_ERROR,
                    f"storing the committed message failed: {result.status.value} {result.remark}",
                )
        if not self.bridge.put_op(half):
            return EndOutcome(ResponseCode.SYSTEM_ERROR, "writing the op message failed")
        self.mark_ended(half.queue_offset, origin_offset(half))
        log.debug("transaction %s: %s", header.msg_id, action.name)
        return EndOutcome(ResponseCode.SUCCESS)


def _check_prepared(half: MessageExt, header: EndTransactionRequestHeader) -> str | None:
    """Why the record is not the half message the request names (``checkPrepareMessage``)."""
    if half.topic != RMQ_SYS_TRANS_HALF_TOPIC:
        return f"the message at commitLogOffset {header.commit_log_offset} is not a half message"
    if half.properties.get(PROPERTY_PRODUCER_GROUP) != header.producer_group:
        return "The producer group wrong"
    if half.queue_offset != header.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.commit_log_offset != header.commit_log_offset:
        return "The commit log offset wrong"
    return None


def _final_message(half: MessageExt, tran_type: int) -> MessageExt | str:
    """The message for the real topic (``endMessageTransaction``), or why there is none.

    The properties stay the half message's, ``REAL_TOPIC``/``REAL_QID``/``TRAN_MSG``/
    ``WAIT`` included, as RocketMQ stores them (consumers read ``TRAN_MSG``); only mq's
    own origin marker of check copies goes."""
    topic = half.properties.get(PROPERTY_REAL_TOPIC)
    try:
        queue_id = int(half.properties.get(PROPERTY_REAL_QUEUE_ID, ""))
    except ValueError:
        queue_id = -1
    if not topic or queue_id < 0:
        return "the half message has no REAL_TOPIC/REAL_QID"
    properties = {k: v for k, v in half.properties.items() if k != ORIGIN_OFFSET}
    return half.rerouted(
        topic,
        queue_id,
        properties=properties,
        sys_flag=SysFlag.reset_transaction_value(half.sys_flag, tran_type),
        prepared_transaction_offset=half.commit_log_offset,
    )
