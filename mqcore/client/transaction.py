"""`TransactionProducer`: RocketMQ's ``TransactionMQProducer`` in asyncio (protocol §11.5).

::

    def execute(msg: Message, arg: object) -> LocalTransactionState:
        db.insert_order(arg)                        # the local transaction
        return LocalTransactionState.COMMIT_MESSAGE

    def check(msg: MessageExt) -> LocalTransactionState:   # the broker asks again later
        return COMMIT_MESSAGE if db.has_order(msg.keys[0]) else ROLLBACK_MESSAGE

    async with TransactionProducer(
        "pg", namesrv="127.0.0.1:9876",
        execute_local_transaction=execute, check_local_transaction=check,
    ) as producer:
        result = await producer.send_message_in_transaction(make_message("T", "hi"), arg=order)

A transaction has three steps: the message is sent as a *half message* (``TRAN_MSG=true``,
``PGROUP``, PREPARED sysflag) which the broker stores but does not deliver; the local
transaction runs; its outcome goes to the broker that stored the half message as
END_TRANSACTION (oneway): commit delivers the message, rollback drops it, UNKNOWN leaves
it to the broker to ask later with CHECK_TRANSACTION_STATE, which this producer answers
from ``check_local_transaction``. The callbacks may be plain or coroutine functions (plain
ones run on the event loop: keep them short). Instead of passing them, a subclass may
override the two methods of the same names.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from mqcore.client.api import SendResult, SendStatus
from mqcore.client.errors import ClientStateError
from mqcore.client.producer import Producer
from mqcore.errors import MessageIdError, MQClientError
from mqcore.message import Message, MessageExt
from mqcore.message.const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_PREPARED,
)
from mqcore.message.ids import decode_offset_msg_id
from mqcore.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

__all__ = [
    "CheckLocalTransaction",
    "ExecuteLocalTransaction",
    "LocalTransactionState",
    "TransactionProducer",
    "TransactionSendResult",
]

log = logging.getLogger("mq.client.transaction")


class LocalTransactionState(enum.Enum):
    """A local transaction's outcome. ``UNKNOW`` is RocketMQ's spelling (an alias)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOWN = "UNKNOW"
    UNKNOW = "UNKNOW"  # noqa: PIE796 - the alias is the point

    @classmethod
    def coerce(cls, value: object) -> LocalTransactionState:
        """A state from a callback's return: a member, or its name/value as a string
        (``None`` means not known yet)."""
        if isinstance(value, cls):
            return value
        if value is None:
            return cls.UNKNOWN
        if isinstance(value, str):
            text = value.strip().upper()
            if text in cls.__members__:
                return cls.__members__[text]
            if text in ("COMMIT", "ROLLBACK"):
                return cls.__members__[text + "_MESSAGE"]
        raise TypeError(f"not a LocalTransactionState: {value!r}")


COMMIT_OR_ROLLBACK: dict[LocalTransactionState, int] = {
    LocalTransactionState.COMMIT_MESSAGE: 8,
    LocalTransactionState.ROLLBACK_MESSAGE: 12,
    LocalTransactionState.UNKNOWN: 0,
}
"""END_TRANSACTION's ``commitOrRollback`` (the transaction sysflag values) per state."""

ExecuteLocalTransaction: TypeAlias = Callable[
    [Message, Any], "LocalTransactionState | Awaitable[LocalTransactionState]"
]
CheckLocalTransaction: TypeAlias = Callable[
    [MessageExt], "LocalTransactionState | Awaitable[LocalTransactionState]"
]


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """The half message's send result and what the local transaction decided."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOWN


async def _call(fn: Callable[..., Any], *args: Any) -> LocalTransactionState:
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return LocalTransactionState.coerce(value)


class TransactionProducer(Producer):
    """A :class:`Producer` that also sends messages in transactions (module docstring)."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv: str | list[str] | None = None,
        *,
        execute_local_transaction: ExecuteLocalTransaction | None = None,
        check_local_transaction: CheckLocalTransaction | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, namesrv, **kwargs)
        self._execute = execute_local_transaction
        self._check = check_local_transaction
        self.checks_answered = 0
        """CHECK_TRANSACTION_STATE requests answered (for tools and tests)."""
        self._answered: asyncio.Condition | None = None

    @classmethod
    def answering(
        cls,
        local: LocalTransactionState | str,
        check: LocalTransactionState | str | None = None,
        group: str = "DEFAULT_PRODUCER",
        namesrv: str | list[str] | None = None,
        **kwargs: Any,
    ) -> TransactionProducer:
        """A producer whose local transactions always end ``local`` and whose check-back
        answer is ``check`` (default: the same): for demos and tools such as
        ``mq produce --transaction unknown --check-answer commit``."""
        local_state = LocalTransactionState.coerce(local)
        check_state = local_state if check is None else LocalTransactionState.coerce(check)
        return cls(
            group,
            namesrv,
            execute_local_transaction=lambda msg, arg: local_state,
            check_local_transaction=lambda msg: check_state,
            **kwargs,
        )

    async def wait_checks_answered(self, count: int = 1, timeout: float | None = None) -> bool:
        """Wait until ``count`` check-backs have been answered; False on timeout (a demo
        that leaves a transaction UNKNOWN stays up until the broker asks)."""
        if self._answered is None:
            self._answered = asyncio.Condition()
        async with self._answered:
            try:
                await asyncio.wait_for(
                    self._answered.wait_for(lambda: self.checks_answered >= count), timeout
                )
            except TimeoutError:
                return False
        return True

    # -- the callbacks (override, or pass them to the constructor) ------------------------

    async def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        """Run the local transaction that goes with ``msg``."""
        if self._execute is None:
            raise ClientStateError(
                f"transaction producer {self.group} has no execute_local_transaction"
            )
        return await _call(self._execute, msg, arg)

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        """The outcome of the local transaction of an earlier half message, asked by
        the broker; ``msg`` is under its real topic, ``msg.unique_key`` is the id."""
        if self._check is None:
            log.warning("transaction producer %s has no check_local_transaction", self.group)
            return LocalTransactionState.UNKNOWN
        return await _call(self._check, msg)

    # -- sending --------------------------------------------------------------------------

    async def send_message_in_transaction(
        self, msg: Message, arg: Any = None, *, timeout: float | None = None
    ) -> TransactionSendResult:
        """Send ``msg`` as a half message, run the local transaction, report its outcome.

        Raises if the half message cannot be sent (nothing was stored then). A failing
        local transaction counts as UNKNOWN; a half message the broker did not store
        cleanly (e.g. FLUSH_DISK_TIMEOUT) is rolled back without running it."""
        self.instance  # raises if not started  # noqa: B018
        if self._execute is None and (
            type(self).execute_local_transaction is TransactionProducer.execute_local_transaction
        ):
            raise ClientStateError(
                f"transaction producer {self.group} needs execute_local_transaction"
            )
        if msg.properties.pop(PROPERTY_DELAY_TIME_LEVEL, None) is not None:
            log.info("a transactional message cannot be delayed: delay level dropped")
        msg.properties[PROPERTY_TRANSACTION_PREPARED] = "true"
        msg.properties[PROPERTY_PRODUCER_GROUP] = self.group
        try:
            result = await self.send(msg, timeout=timeout)
        except MQClientError as exc:
            raise MQClientError(f"sending the half message to {msg.topic} failed: {exc}") from exc
        state = LocalTransactionState.ROLLBACK_MESSAGE
        error: BaseException | None = None
        if result.status is SendStatus.SEND_OK:
            try:
                state = await self.execute_local_transaction(msg, arg)
            except Exception as exc:
                log.warning("local transaction of %s failed: %r", result.msg_id, exc)
                state, error = LocalTransactionState.UNKNOWN, exc
        try:
            await self._end_transaction(msg, result, state, error)
        except Exception as exc:  # the broker will check back
            log.warning("END_TRANSACTION for %s (%s) failed: %s", result.msg_id, state.name, exc)
        return TransactionSendResult(
            status=result.status,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            message_queue=result.message_queue,
            queue_offset=result.queue_offset,
            transaction_id=result.msg_id,
            region_id=result.region_id,
            trace_on=result.trace_on,
            local_transaction_state=state,
        )

    async def _end_transaction(
        self,
        msg: Message,
        result: SendResult,
        state: LocalTransactionState,
        error: BaseException | None,
    ) -> None:
        """END_TRANSACTION (oneway) to the master that stored the half message; with
        tracing on, an EndTransaction trace record after it (4.9.8's end-transaction
        hook)."""
        try:
            _, _, commit_log_offset = decode_offset_msg_id(result.offset_msg_id)
        except MessageIdError as exc:
            raise MQClientError(f"bad offset msg id in the send result: {exc}") from exc
        addr = await self.instance.master_addr_or_refresh(result.message_queue)
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=COMMIT_OR_ROLLBACK[state],
            msg_id=result.msg_id,
            from_transaction_check=False,
            transaction_id=result.msg_id,
            bname=result.message_queue.broker_name,
        )
        remark = f"executeLocalTransactionBranch exception: {error!r}" if error else None
        await self.instance.api.end_transaction_oneway(addr, header, remark)
        if self._trace is not None:
            self._trace.end_transaction(
                msg, result.msg_id, addr, state.value, result.msg_id, from_check=False
            )

    # -- check-back (called by the ClientInstance on CHECK_TRANSACTION_STATE) -------------

    async def check_transaction_state(
        self, broker_addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """Answer a broker's question about a half message with END_TRANSACTION."""
        error: BaseException | None = None
        try:
            state = await self.check_local_transaction(msg)
        except Exception as exc:
            log.warning("check_local_transaction of %s failed: %r", msg.unique_key, exc)
            state, error = LocalTransactionState.UNKNOWN, exc
        answer = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=COMMIT_OR_ROLLBACK[state],
            msg_id=msg.unique_key or header.msg_id or msg.msg_id,
            from_transaction_check=True,
            transaction_id=header.transaction_id,
        )
        remark = f"checkLocalTransactionState exception: {error!r}" if error else None
        await self.instance.api.end_transaction_oneway(broker_addr, answer, remark)
        if self._trace is not None:
            self._trace.end_transaction(
                msg, answer.msg_id or "", broker_addr, state.value, header.transaction_id,
                from_check=True,
            )  # fmt: skip
        self.checks_answered += 1
        if self._answered is not None:
            async with self._answered:
                self._answered.notify_all()

    def __repr__(self) -> str:
        return f"<TransactionProducer {self.group} {'started' if self._instance else 'new'}>"
