"""`Producer`: RocketMQ's ``DefaultMQProducer`` in asyncio.

::

    async with Producer("pg", namesrv="127.0.0.1:9876") as producer:
        msg = make_message("TopicTest", "hello", tags="TagA", keys=["order-1"])
        result = await producer.send(msg)
        task = producer.send_async(msg, callback=lambda result, exc: ...)
        await producer.send_oneway(msg)
        results = await producer.send_batch(messages)            # <= 4 MiB per request
        await producer.send(msg, selector=select_by_hash, arg=order_id)   # partition order
        answer = await producer.request(msg, timeout=3.0)        # waits for the reply

A send picks a queue round robin (skipping brokers that were slow or failed recently,
:mod:`mqcore.client.latency`), and retries ``retry_times_when_send_failed`` times on
another broker after a network error, a timeout or a retriable broker code, all within
``send_timeout``. Topics unknown to the name servers are sent through ``TBW102``'s
brokers, which auto-create them when ``autoCreateTopicEnable`` is on. Bodies of at least
``compress_msg_body_over_howmuch`` bytes go zlib-compressed (level 5, sysflag 0x1|0x300),
as the Java >= 4.9.4 producer sends them. Every message gets a ``UNIQ_KEY``.

:meth:`Producer.request` is RocketMQ 4.6+'s request/reply; a message made by
:func:`~mqcore.client.request_reply.create_reply_message` is sent as a reply
(SEND_REPLY_MESSAGE_V2) by :meth:`Producer.send`, see :mod:`mqcore.client.request_reply`.
With ``trace=True`` (the Java client's ``enableMsgTrace``) every send the broker stored
writes a Pub trace record to ``RMQ_SYS_TRACE_TOPIC`` (or ``trace_topic``), off the send
path; see :mod:`mqcore.client.trace` and ``mq message trace``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from mqcore.client.api import SendResult, SendStatus
from mqcore.client.config import DEFAULT_NAMESRV, default_namesrv
from mqcore.client.errors import (
    BrokerUnreachableError,
    InvalidMessageError,
    is_retriable,
)
from mqcore.client.instance import AUTO_CREATE_TOPIC_KEY, ClientConfig, ClientInstance
from mqcore.client.latency import MQFaultStrategy
from mqcore.client.request_reply import (
    RequestTimeoutError,
    is_reply_message,
    prepare_request,
)
from mqcore.client.role import ClientRole
from mqcore.client.selectors import (
    MessageQueueSelector,
    select_by_hash,
    select_by_random,
    select_fixed,
)
from mqcore.client.validators import (
    MAX_MESSAGE_SIZE,
    validate_group,
    validate_message,
    validate_topic,
)
from mqcore.errors import MQClientError, MQTimeoutError
from mqcore.message import Message, MessageExt, SysFlag, create_uniq_key, encode_properties
from mqcore.message.const import (
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
)
from mqcore.message.properties import validate_property
from mqcore.message.record import encode_batch_body
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.headers import SendMessageRequestHeader

if TYPE_CHECKING:
    from mqcore.client.trace import SendTraceHook
    from mqcore.client.trace_dispatcher import TraceDispatcher

__all__ = [
    "DEFAULT_NAMESRV",
    "MessageQueueSelector",
    "Producer",
    "SendCallback",
    "SendResult",
    "SendStatus",
    "default_namesrv",
    "make_message",
    "select_by_hash",
    "select_by_random",
    "select_fixed",
    "split_batches",
    "validate_group",
    "validate_message",
    "validate_topic",
]

log = logging.getLogger("mq.client.producer")

_BATCH_ENTRY_OVERHEAD = 22
"""Bytes a batch entry adds to body + properties (five i32 and one i16)."""

SendCallback: TypeAlias = Callable[[SendResult | None, BaseException | None], object]
"""Called with ``(result, None)`` or ``(None, error)`` when an async send finishes."""


def make_message(
    topic: str,
    body: bytes | str,
    *,
    tags: str | None = None,
    keys: str | Iterable[str] | None = None,
    properties: dict[str, str] | None = None,
    delay_level: int = 0,
    flag: int = 0,
) -> Message:
    """A :class:`Message` in one call (``str`` bodies are UTF-8 encoded)."""
    msg = Message(topic, body.encode() if isinstance(body, str) else bytes(body), flag)
    for name, value in (properties or {}).items():
        validate_property(name, value)
        msg.properties[name] = value
    msg.tags = tags
    msg.keys = [keys] if isinstance(keys, str) else list(keys or [])
    msg.delay_level = delay_level
    return msg


def _prepare(msg: Message) -> None:
    """UNIQ_KEY and WAIT, as the Java producer sets them before sending."""
    if not msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX):
        msg.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = create_uniq_key()
    msg.properties.setdefault(PROPERTY_WAIT_STORE_MSG_OK, "true")


def _entry_size(msg: Message) -> int:
    return _BATCH_ENTRY_OVERHEAD + len(msg.body) + len(encode_properties(msg.properties))


def split_batches(
    messages: Sequence[Message], limit: int = MAX_MESSAGE_SIZE
) -> list[list[Message]]:
    """Consecutive runs of messages whose batch body stays within ``limit`` bytes."""
    batches: list[list[Message]] = []
    current: list[Message] = []
    size = 0
    for msg in messages:
        entry = _entry_size(msg)
        if entry > limit:
            raise InvalidMessageError(
                f"message of {entry} bytes does not fit in a batch of at most {limit} bytes"
            )
        if current and size + entry > limit:
            batches.append(current)
            current, size = [], 0
        current.append(msg)
        size += entry
    if current:
        batches.append(current)
    return batches


class Producer(ClientRole):
    """Sends messages; see the module docstring. Not started until :meth:`start`.

    ``instance`` shares a :class:`ClientInstance` with other producers and consumers
    (its owner shuts it down); without one the producer builds its own."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv: str | Sequence[str] | None = None,
        *,
        instance_name: str | None = None,
        send_timeout: float = 3.0,
        retry_times_when_send_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_msg_body_over_howmuch: int = 4096,
        compress_level: int = 5,
        max_message_size: int = MAX_MESSAGE_SIZE,
        default_topic_queue_nums: int = 4,
        send_latency_fault_enable: bool = True,
        client_config: ClientConfig | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        trace: bool = False,
        trace_topic: str | None = None,
        instance: ClientInstance | None = None,
    ) -> None:
        validate_group(group)
        super().__init__(namesrv, instance_name, client_config, access_key, secret_key, instance)
        self.group = group
        self.send_timeout = send_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self.fault_strategy = MQFaultStrategy(send_latency_fault_enable)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.trace_dispatcher: TraceDispatcher | None = None
        """With ``trace``: writes a Pub record per stored send (``enableMsgTrace``)."""
        self._trace: SendTraceHook | None = None
        if trace:  # opt-in: a producer without it does not load the trace modules
            from mqcore.client.trace import SendTraceHook
            from mqcore.client.trace_dispatcher import TraceDispatcher

            self.trace_dispatcher = TraceDispatcher(
                trace_producer(group, "PRODUCER", self.namesrv, self.client_config),
                trace_topic=trace_topic,
            )
            self._trace = SendTraceHook(self.trace_dispatcher, group)

    # -- lifecycle ------------------------------------------------------------------------

    async def _open(self, instance: ClientInstance) -> None:
        await instance.register_producer(self)
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.start()

    async def _close(self, instance: ClientInstance) -> None:
        """Wait for sends in flight, then leave the brokers (UNREGISTER_CLIENT)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.shutdown()
        await instance.unregister_producer(self.group)

    def _not_started(self) -> str:
        return (
            f"producer {self.group} is not started: call `await producer.start()`"
            " or use `async with Producer(...)`"
        )

    # -- sending --------------------------------------------------------------------------

    async def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send and wait until stored. With ``queue`` or ``selector`` the message goes to
        that queue and is not retried elsewhere (ordering beats availability)."""
        instance = self.instance
        validate_message(msg, self.max_message_size)
        _prepare(msg)
        timeout = self.send_timeout if timeout is None else timeout
        if queue is None and selector is None:
            return await self._send_default(msg, timeout)
        deadline = time.monotonic() + timeout
        if queue is None:
            assert selector is not None
            info = await instance.find_publish_info(msg.topic)
            queue = selector(info.queues, msg, arg)
            if queue not in info.queues:
                raise MQClientError(f"the selector chose {queue}, not a queue of {msg.topic}")
        body, sys_flag = self._body(msg)
        return await self._send_to(queue, msg, body, sys_flag, deadline, msg.unique_key or "")

    def send_async(
        self,
        msg: Message,
        callback: SendCallback | None = None,
        **kwargs: Any,
    ) -> asyncio.Task[SendResult]:
        """Start :meth:`send` as a task; ``callback(result, error)`` runs when it ends.
        (With a callback, a failure is reported there and not re-raised by the task.)"""
        self.instance  # fail now, not in the task, if not started  # noqa: B018
        task = asyncio.create_task(self.send(msg, **kwargs))
        self._tasks.add(task)

        def done(t: asyncio.Task[SendResult]) -> None:
            self._tasks.discard(t)
            if callback is None:
                return
            if t.cancelled():
                callback(None, asyncio.CancelledError())
                return
            exc = t.exception()
            try:
                callback(None if exc else t.result(), exc)
            except Exception:
                log.exception("send callback failed")

        task.add_done_callback(done)
        return task

    async def send_oneway(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> None:
        """Send without waiting for the broker (no result, no retry; may be lost)."""
        instance = self.instance
        validate_message(msg, self.max_message_size)
        _prepare(msg)
        info = await instance.find_publish_info(msg.topic)
        if queue is None:
            queue = (
                selector(info.queues, msg, arg)
                if selector is not None
                else self.fault_strategy.select_queue(info)
            )
        addr = await instance.master_addr_or_refresh(queue)
        body, sys_flag = self._body(msg)
        header = self._header(msg, queue, sys_flag, batch=False)
        begin = time.monotonic()
        try:
            await instance.api.send_message_oneway(addr, header, body, reply=is_reply_message(msg))
        except MQClientError:
            self._record(queue.broker_name, begin, isolation=True)
            raise
        self._record(queue.broker_name, begin, isolation=False)

    async def request(
        self,
        msg: Message,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> MessageExt:
        """Send ``msg`` as a request and return the reply a consumer sends back
        (``DefaultMQProducer.request``); ``timeout`` (seconds, default ``send_timeout``)
        covers both. Raises :class:`~mqcore.client.request_reply.RequestTimeoutError` when
        the request was stored but no reply came in time, the send's error otherwise."""
        instance = self.instance
        timeout = self.send_timeout if timeout is None else timeout
        begin = time.monotonic()
        correlation_id = prepare_request(msg, instance.client_id, timeout)
        if msg.topic not in instance.routes:
            # The broker pushes the reply only to a client it knows: introduce ourselves to
            # the topic's brokers before a replier can answer (as 4.9.8's prepareSendRequest).
            await instance.find_publish_info(msg.topic)
            await instance.send_heartbeat_to_all_brokers()
        future = instance.request_futures.register(correlation_id)
        try:
            remaining = max(0.001, timeout - (time.monotonic() - begin))
            await self.send(msg, queue=queue, selector=selector, arg=arg, timeout=remaining)
            remaining = timeout - (time.monotonic() - begin)
            try:
                return await asyncio.wait_for(future, max(0.0, remaining))
            except TimeoutError:
                raise RequestTimeoutError(
                    f"send request message to <{msg.topic}> OK, but wait reply message timeout,"
                    f" {int(timeout * 1000)} ms."
                ) from None
        finally:
            instance.request_futures.remove(correlation_id)

    async def send_batch(
        self,
        messages: Iterable[Message],
        *,
        queue: MessageQueue | None = None,
        timeout: float | None = None,
    ) -> list[SendResult]:
        """Send messages of one topic as batches of at most ``max_message_size`` bytes;
        one result per batch (``msg_id`` = the batch's UNIQ_KEYs joined by commas)."""
        self.instance  # raises if not started  # noqa: B018
        msgs = list(messages)
        if not msgs:
            return []
        topic = msgs[0].topic
        for msg in msgs:
            validate_message(msg, self.max_message_size)
            if msg.topic != topic:
                raise InvalidMessageError(
                    f"a batch holds one topic; got {topic} and {msg.topic} (send them apart)"
                )
            if msg.delay_level > 0:
                raise InvalidMessageError("delayed messages cannot be sent in a batch")
            if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                raise InvalidMessageError("retry-topic messages cannot be sent in a batch")
            _prepare(msg)
        timeout = self.send_timeout if timeout is None else timeout
        results: list[SendResult] = []
        for batch in split_batches(msgs, self.max_message_size):
            body = encode_batch_body((m.flag, m.body, m.properties) for m in batch)
            carrier = Message(topic, body, properties={PROPERTY_WAIT_STORE_MSG_OK: "true"})
            carrier.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = create_uniq_key()
            msg_id = ",".join(m.unique_key or "" for m in batch)
            deadline = time.monotonic() + timeout
            if queue is not None:
                results.append(await self._send_to(queue, carrier, body, 0, deadline, msg_id, True))
            else:
                results.append(await self._send_default(carrier, timeout, body, msg_id))
        return results

    # -- the send path --------------------------------------------------------------------

    async def _send_default(
        self, msg: Message, timeout: float, batch_body: bytes | None = None, msg_id: str = ""
    ) -> SendResult:
        """``sendDefaultImpl``: choose a queue, send, retry elsewhere on failure."""
        instance = self.instance
        begin = time.monotonic()
        deadline = begin + timeout
        info = await instance.find_publish_info(msg.topic)
        if batch_body is None:
            body, sys_flag = self._body(msg)
            msg_id = msg.unique_key or ""
        else:
            body, sys_flag = batch_body, 0
        attempts = 1 + max(0, self.retry_times_when_send_failed)
        last_broker: str | None = None
        last_error: BaseException | None = None
        result: SendResult | None = None
        brokers_sent: list[str] = []
        for attempt in range(attempts):
            if time.monotonic() >= deadline:
                break
            if attempt > 0 and isinstance(last_error, BrokerUnreachableError):
                # a broker gone (a master that failed over): the name servers may already
                # route its broker name elsewhere, so ask now instead of at the next poll
                await instance.update_route(msg.topic)
                info = await instance.find_publish_info(msg.topic)
            elif (
                attempt > 0
                and last_error is not None
                and getattr(last_error, "invalid_route", False)
            ):
                info = await instance.find_publish_info(msg.topic)
            mq = self.fault_strategy.select_queue(info, last_broker)
            last_broker = mq.broker_name
            brokers_sent.append(mq.broker_name)
            try:
                result = await self._send_to(
                    mq, msg, body, sys_flag, deadline, msg_id, batch_body is not None
                )
            except MQClientError as exc:
                last_error = exc
                if not is_retriable(exc):
                    raise
                log.info("send to %s failed (attempt %d): %s", mq, attempt + 1, exc)
                continue
            if (
                result.status is not SendStatus.SEND_OK
                and self.retry_another_broker_when_not_store_ok
            ):
                continue
            return result
        if result is not None:
            return result
        cost = int((time.monotonic() - begin) * 1000)
        if last_error is None:
            raise MQTimeoutError(f"send to {msg.topic} timed out after {cost} ms")
        if isinstance(last_error, MQTimeoutError):
            raise MQTimeoutError(
                f"send to {msg.topic} failed {len(brokers_sent)} time(s) in {cost} ms"
                f" (brokers {', '.join(brokers_sent)}): {last_error}"
            ) from last_error
        raise last_error

    async def _send_to(
        self,
        mq: MessageQueue,
        msg: Message,
        body: bytes,
        sys_flag: int,
        deadline: float,
        msg_id: str,
        batch: bool = False,
    ) -> SendResult:
        """``sendKernelImpl``: one SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE (a reply:
        SEND_REPLY_MESSAGE_V2) to ``mq``'s master."""
        instance = self.instance
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise MQTimeoutError(f"send to {mq.topic} timed out before reaching {mq.broker_name}")
        addr = await instance.master_addr_or_refresh(mq)
        header = self._header(msg, mq, sys_flag, batch=batch)
        trace = self._trace.before(msg, addr, len(body)) if self._trace else None
        begin = time.monotonic()
        try:
            result = await instance.api.send_message(
                addr, mq.broker_name, header, body, msg_id=msg_id, timeout=remaining,
                reply=not batch and is_reply_message(msg),
            )  # fmt: skip
        except MQClientError:
            self._record(mq.broker_name, begin, isolation=True)
            raise
        self._record(mq.broker_name, begin, isolation=False)
        if trace is not None and self._trace is not None:
            self._trace.after(trace, result)
        return result

    def _record(self, broker_name: str, begin: float, *, isolation: bool) -> None:
        latency = int((time.monotonic() - begin) * 1000)
        self.fault_strategy.update_fault_item(broker_name, latency, isolation)

    def _body(self, msg: Message) -> tuple[bytes, int]:
        """The body to send and its sysflag: compressed when large, PREPARED for TRAN_MSG."""
        body, sys_flag = msg.body, 0
        if len(body) >= self.compress_msg_body_over_howmuch:
            body = zlib.compress(body, self.compress_level)
            sys_flag |= SysFlag.COMPRESSED_FLAG | SysFlag.COMPRESSION_ZLIB
        if msg.properties.get(PROPERTY_TRANSACTION_PREPARED) == "true":
            sys_flag |= SysFlag.TRANSACTION_PREPARED_TYPE
        return body, sys_flag

    def _header(
        self, msg: Message, mq: MessageQueue, sys_flag: int, *, batch: bool
    ) -> SendMessageRequestHeader:
        props = msg.properties
        reconsume_times: int | None = 0
        max_reconsume: int | None = None
        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            props = dict(props)
            reconsume_times = int(props.pop(PROPERTY_RECONSUME_TIME, "0") or 0)
            raw_max = props.pop(PROPERTY_MAX_RECONSUME_TIMES, None)
            max_reconsume = int(raw_max) if raw_max else None
        return SendMessageRequestHeader(
            producer_group=self.group,
            topic=mq.topic,
            default_topic=AUTO_CREATE_TOPIC_KEY,
            default_topic_queue_nums=self.default_topic_queue_nums,
            queue_id=mq.queue_id,
            sys_flag=sys_flag,
            born_timestamp=int(time.time() * 1000),
            flag=msg.flag,
            properties=encode_properties(props).decode("utf-8"),
            reconsume_times=reconsume_times,
            unit_mode=False,
            batch=batch,
            max_reconsume_times=max_reconsume,
            bname=mq.broker_name,
        )

    # -- queries --------------------------------------------------------------------------

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The writable queues a send to ``topic`` chooses from (for custom selectors)."""
        return list((await self.instance.find_publish_info(topic)).queues)

    def __repr__(self) -> str:
        return f"<Producer {self.group} {'started' if self._instance else 'new'}>"


def trace_producer(
    group: str, kind: str, namesrv: str | Sequence[str], client_config: ClientConfig | None
) -> Producer:
    """The producer a traced client writes its trace records with, named as 4.9.8 names it:
    a group of its own (``_INNER_TRACE_PRODUCER-<group>-<kind>-<n>``) on a client instance
    of its own per name server list, so trace sends never share the user's producer."""
    from mqcore.client.trace_dispatcher import (
        MAX_TRACE_MESSAGE_SIZE,
        TRACE_INSTANCE_NAME,
        trace_producer_group,
    )

    ns = namesrv if isinstance(namesrv, str) else ";".join(namesrv)
    return Producer(
        trace_producer_group(group, kind),
        namesrv,
        instance_name=f"{TRACE_INSTANCE_NAME}_{ns}",
        send_timeout=5.0,
        max_message_size=MAX_TRACE_MESSAGE_SIZE,
        client_config=client_config,
    )
