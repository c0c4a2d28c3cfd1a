"""`MQClientAPI`: one typed coroutine per broker request the clients make.

RocketMQ's ``MQClientAPIImpl`` (and the pull half of ``PullAPIWrapper``), given a
:class:`~mqcore.client.transport.ClientTransport` to send through and a
:class:`~mqcore.client.route_table.RouteTable` to find brokers in (a
:class:`~mqcore.client.instance.ClientInstance` builds one as ``instance.api``).
Producers, consumers and the admin all go through here, so response-code handling lives
in one place:

* a non-success code the request does not expect raises ``MQBrokerError(code, remark)``;
* an unreachable broker raises :class:`~mqcore.client.errors.BrokerUnreachableError`,
  no answer in time :class:`~mqcore.errors.MQTimeoutError`;
* "nothing there" answers are values, not errors: QUERY_CONSUMER_OFFSET's 22 is ``None``,
  QUERY_MESSAGE's 22 is ``[]``, and pulls return a :class:`PullResult` whose status says
  FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL.

Methods take the broker address (callers pick master or slave); :meth:`MQClientAPI.pull`
picks it itself from the broker's ``suggestWhichBrokerId``, as the Java consumer does.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqcore.client.errors import TopicRouteNotFoundError
from mqcore.client.pull_decode import UndecodableMessage, decode_pulled
from mqcore.errors import MessageIdError, MQBrokerError, MQClientError
from mqcore.message import decode_offset_msg_id, decode_records
from mqcore.message.const import (
    PROPERTY_MAX_OFFSET,
    PROPERTY_MIN_OFFSET,
    PROPERTY_TAGS,
)
from mqcore.message.model import MessageExt
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from mqcore.protocol.bodies.route import MASTER_ID
from mqcore.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PullSysFlag,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)

if TYPE_CHECKING:
    from mqcore.client.route_table import RouteTable
    from mqcore.client.transport import ClientTransport

__all__ = [
    "MQClientAPI",
    "PullResult",
    "PullStatus",
    "SendResult",
    "SendStatus",
    "parse_tags",
]

PULL_TIMEOUT = 30.0
"""Client timeout of a pull: the broker holds it up to 15 s (spec §4)."""
SUSPEND_TIMEOUT = 15.0


class SendStatus(enum.Enum):
    """How a stored message was stored (codes 0, 10, 12, 11)."""

    SEND_OK = 0
    FLUSH_DISK_TIMEOUT = 10
    FLUSH_SLAVE_TIMEOUT = 12
    SLAVE_NOT_AVAILABLE = 11


_SEND_OK_CODES: dict[int, SendStatus] = {s.value: s for s in SendStatus}


@dataclass(frozen=True, slots=True)
class SendResult:
    """A stored message: ``msg_id`` is its UNIQ_KEY (comma-joined for a batch),
    ``offset_msg_id`` where it lives (store host + commit log offset)."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    recall_handle: str | None = None
    """A timer message's handle for RECALL_MESSAGE (RocketMQ 5 brokers answer one)."""

    @property
    def ok(self) -> bool:
        return self.status is SendStatus.SEND_OK


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(slots=True)
class PullResult:
    """A pull's answer; ``messages`` are decoded (and tag-filtered by :meth:`MQClientAPI.pull`)
    with ``MIN_OFFSET``/``MAX_OFFSET`` properties set, as the Java client hands them on."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = MASTER_ID


def parse_tags(expression: str | None) -> frozenset[str]:
    """Tags of a TAG expression (``"A || B"``); empty for ``*``/blank (= everything)."""
    if not expression or expression.strip() == "*":
        return frozenset()
    return frozenset(t.strip() for t in expression.split("||") if t.strip())


def _expect(response: RemotingCommand, *ok: int) -> RemotingCommand:
    if response.code not in (ok or (ResponseCode.SUCCESS,)):
        raise MQBrokerError(response.code, response.remark)
    return response


def _send_code(header: SendMessageRequestHeader, reply: bool) -> int:
    if reply:
        return RequestCode.SEND_REPLY_MESSAGE_V2
    return RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2


class MQClientAPI:
    """Typed broker requests; see the module docstring."""

    def __init__(self, transport: ClientTransport, routes: RouteTable) -> None:
        self.transport = transport
        """Where requests go (connections, language, signing)."""
        self.routes = routes
        """Where brokers are: the route cache the requests look addresses up in."""
        self.pull_from_which_node: dict[MessageQueue, int] = {}
        """Per queue, the broker id the last pull answer suggested (0 = master)."""

    def _timeout(self, timeout: float | None) -> float:
        return timeout if timeout is not None else self.transport.request_timeout

    # -- sending --------------------------------------------------------------------------

    async def send_message(
        self,
        addr: str,
        broker_name: str,
        header: SendMessageRequestHeader,
        body: bytes,
        *,
        msg_id: str,
        timeout: float | None = None,
        reply: bool = False,
    ) -> SendResult:
        """SEND_MESSAGE_V2 (SEND_BATCH_MESSAGE when ``header.batch``, SEND_REPLY_MESSAGE_V2
        for a ``reply``, as 4.9.8 sends ``MSG_TYPE=reply``) and its result.

        ``msg_id`` is the UNIQ_KEY (comma-joined for batches) the result reports.
        """
        request = self.transport.request(_send_code(header, reply), header.to_v2(), body)
        response = await self.transport.invoke(addr, request, self._timeout(timeout))
        return self.send_result(response, header.topic, broker_name, msg_id)

    async def send_message_oneway(
        self, addr: str, header: SendMessageRequestHeader, body: bytes, *, reply: bool = False
    ) -> None:
        request = self.transport.request(
            _send_code(header, reply), header.to_v2(), body, oneway=True
        )
        await self.transport.invoke_oneway(addr, request)

    @staticmethod
    def send_result(
        response: RemotingCommand, topic: str, broker_name: str, msg_id: str
    ) -> SendResult:
        """The SendResult of a send's (or a reply's) answer; MQBrokerError when refused."""
        status = _SEND_OK_CODES.get(response.code)
        if status is None:
            raise MQBrokerError(response.code, response.remark)
        head = SendMessageResponseHeader.from_command(response)
        ext = response.ext_fields
        return SendResult(
            status=status,
            msg_id=msg_id,
            offset_msg_id=head.msg_id,
            message_queue=MessageQueue(topic, broker_name, head.queue_id),
            queue_offset=head.queue_offset,
            transaction_id=head.transaction_id,
            region_id=ext.get("MSG_REGION") or "DefaultRegion",
            trace_on=ext.get("TRACE_ON", "true") != "false",
            recall_handle=ext.get("recallHandle"),
        )

    async def end_transaction_oneway(
        self, addr: str, header: EndTransactionRequestHeader, remark: str | None = None
    ) -> None:
        request = self.transport.request(
            RequestCode.END_TRANSACTION, header, oneway=True, remark=remark
        )
        await self.transport.invoke_oneway(addr, request)

    # -- pulling --------------------------------------------------------------------------

    async def pull_message(
        self, addr: str, header: PullMessageRequestHeader, timeout: float = PULL_TIMEOUT
    ) -> PullResult:
        """One PULL_MESSAGE; messages decoded, unfiltered. Error codes raise."""
        request = self.transport.request(RequestCode.PULL_MESSAGE, header)
        response = await self.transport.invoke(addr, request, timeout)
        status = _PULL_STATUS.get(response.code)
        if status is None:
            raise MQBrokerError(response.code, response.remark)
        head = PullMessageResponseHeader.from_command(response)
        messages: list[MessageExt] = []
        next_begin = head.next_begin_offset
        if status is PullStatus.FOUND:
            pulled = decode_pulled(response.body, header.topic)
            messages = pulled.messages
            if not pulled.complete:
                # Never move past records nobody saw: resume after the last one decoded.
                resume = messages[-1].queue_offset + 1 if messages else header.queue_offset
                next_begin = min(next_begin, resume)
        return PullResult(
            status,
            next_begin,
            head.min_offset,
            head.max_offset,
            messages,
            head.suggest_which_broker_id,
        )

    async def pull(
        self,
        mq: MessageQueue,
        *,
        group: str,
        offset: int,
        max_nums: int = 32,
        expression: str = "*",
        expression_type: str = "TAG",
        sub_version: int = 0,
        commit_offset: int = 0,
        suspend: bool = True,
        suspend_timeout: float = SUSPEND_TIMEOUT,
        send_subscription: bool = True,
        timeout: float = PULL_TIMEOUT,
    ) -> PullResult:
        """Pull ``mq`` from the node the broker last suggested (``PullAPIWrapper``).

        Found messages are filtered by tag client-side (the broker filters by tag hash,
        which may collide), get ``MIN_OFFSET``/``MAX_OFFSET``, and the suggested broker id
        is remembered for the next pull of this queue.
        """
        broker_id = self.pull_from_which_node.get(mq, MASTER_ID)
        found = self.routes.find_broker_addr_in_subscribe(mq.broker_name, broker_id)
        if found is None:
            await self.routes.update(mq.topic)
            found = self.routes.find_broker_addr_in_subscribe(mq.broker_name, broker_id)
        if found is None:
            raise MQClientError(
                f"broker {mq.broker_name} of {mq.topic} is not in any route: is it running?"
            )
        addr, is_slave = found
        sys_flag = 0
        if commit_offset > 0 and not is_slave:
            sys_flag |= PullSysFlag.COMMIT_OFFSET
        if suspend:
            sys_flag |= PullSysFlag.SUSPEND
        if send_subscription:
            sys_flag |= PullSysFlag.SUBSCRIPTION
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=int(suspend_timeout * 1000),
            sub_version=sub_version,
            subscription=expression if send_subscription else None,
            expression_type=expression_type,
            bname=mq.broker_name,
        )
        result = await self.pull_message(addr, header, timeout)
        self.pull_from_which_node[mq] = result.suggest_which_broker_id
        if result.messages:
            tags = parse_tags(expression) if expression_type == "TAG" else frozenset()
            if tags:
                # A record whose properties could not be read is delivered, not filtered.
                result.messages = [
                    m
                    for m in result.messages
                    if m.properties.get(PROPERTY_TAGS) in tags
                    or (isinstance(m, UndecodableMessage) and not m.properties)
                ]
            lo, hi = str(result.min_offset), str(result.max_offset)
            for m in result.messages:
                m.properties[PROPERTY_MIN_OFFSET] = lo
                m.properties[PROPERTY_MAX_OFFSET] = hi
        return result

    # -- queues, brokers and members (what rebalancing asks) ------------------------------

    @property
    def client_id(self) -> str:
        return self.transport.client_id

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        """Readable queues of ``topic`` from the route cache; raises
        TopicRouteNotFoundError when the name servers know no route."""
        return await self.routes.subscribe_queues(topic)

    async def _master(self, mq: MessageQueue) -> str:
        return await self.routes.master_addr_or_refresh(mq)

    async def _any_node(self, mq: MessageQueue) -> str:
        addr = self.routes.find_any_broker_addr(mq.broker_name)
        return addr if addr is not None else await self._master(mq)

    async def consumer_ids(self, topic: str, group: str, timeout: float | None = None) -> list[str]:
        """GET_CONSUMER_LIST_BY_GROUP at a broker of ``topic`` (master preferred);
        [] when that broker has no live consumer of the group."""
        route = await self.routes.get(topic)
        names = sorted(b.broker_name for b in route.broker_datas)
        if not names:
            return []
        addr = await self._any_node(MessageQueue(topic, names[0], 0))
        header = GetConsumerListByGroupRequestHeader(group)
        request = self.transport.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header)
        response = await self.transport.invoke(addr, request, timeout)
        if response.code == ResponseCode.SYSTEM_ERROR and "no consumer" in (response.remark or ""):
            return []
        _expect(response)
        return GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list

    async def check_client_config(
        self, group: str, subscriptions: Iterable[SubscriptionData]
    ) -> None:
        """CHECK_CLIENT_CONFIG for every non-TAG subscription at the masters of its topic, as
        the Java consumer does at start: a broker without ``enablePropertyFilter``, or one
        that cannot parse the expression, fails ``start()`` with its reason instead of every
        pull failing later. Topics without a route yet are skipped."""
        for sub in subscriptions:
            if sub.expression_type == "TAG":
                continue
            try:
                route = await self.routes.get(sub.topic)
            except TopicRouteNotFoundError:
                continue
            body = CheckClientRequestBody(self.transport.client_id, group, sub).encode()
            for broker in route.broker_datas:
                addr = broker.master_addr()
                if addr is None:
                    continue
                request = self.transport.request(RequestCode.CHECK_CLIENT_CONFIG, body=body)
                response = await self.transport.invoke(addr, request)
                if response.code != ResponseCode.SUCCESS:
                    raise MQBrokerError(
                        response.code,
                        f"broker {broker.broker_name} refuses the {sub.expression_type}"
                        f" subscription {sub.sub_string!r} of {sub.topic}: {response.remark}"
                        " (SQL92 needs enablePropertyFilter=true in broker.conf)",
                    )

    # -- consumer offsets (at the master, or a slave while the master is gone) --------------

    async def query_consumer_offset(
        self, group: str, mq: MessageQueue, timeout: float | None = None
    ) -> int | None:
        """The committed offset, or None when the broker has none (code 22)."""
        header = QueryConsumerOffsetRequestHeader(group, mq.topic, mq.queue_id, mq.broker_name)
        request = self.transport.request(RequestCode.QUERY_CONSUMER_OFFSET, header)
        addr = await self.routes.offset_broker_addr(mq)
        response = await self.transport.invoke(addr, request, timeout)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        _expect(response)
        return QueryConsumerOffsetResponseHeader.from_command(response).offset

    async def update_consumer_offset(
        self,
        group: str,
        mq: MessageQueue,
        offset: int,
        *,
        oneway: bool = True,
        timeout: float | None = None,
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (oneway unless told otherwise) to the master, or to a
        slave while the route has no master (a slave keeps what it is sent)."""
        header = UpdateConsumerOffsetRequestHeader(
            group, mq.topic, mq.queue_id, offset, mq.broker_name
        )
        request = self.transport.request(RequestCode.UPDATE_CONSUMER_OFFSET, header, oneway=oneway)
        addr = await self.routes.offset_broker_addr(mq)
        if oneway:
            await self.transport.invoke_oneway(addr, request)
        else:
            _expect(await self.transport.invoke(addr, request, timeout))

    # -- queue offsets and time (at the master) -------------------------------------------

    async def max_offset(self, mq: MessageQueue, timeout: float | None = None) -> int:
        """GET_MAX_OFFSET: the next offset to be written in the queue."""
        header = GetMaxOffsetRequestHeader(mq.topic, mq.queue_id, mq.broker_name)
        request = self.transport.request(RequestCode.GET_MAX_OFFSET, header)
        response = await self.transport.invoke(await self._master(mq), request, timeout)
        return GetMaxOffsetResponseHeader.from_command(_expect(response)).offset

    async def min_offset(self, mq: MessageQueue, timeout: float | None = None) -> int:
        header = GetMinOffsetRequestHeader(mq.topic, mq.queue_id, mq.broker_name)
        request = self.transport.request(RequestCode.GET_MIN_OFFSET, header)
        response = await self.transport.invoke(await self._master(mq), request, timeout)
        return GetMinOffsetResponseHeader.from_command(_expect(response)).offset

    async def search_offset(
        self, mq: MessageQueue, timestamp_ms: int, timeout: float | None = None
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the queue offset of the message stored nearest then."""
        header = SearchOffsetRequestHeader(mq.topic, mq.queue_id, timestamp_ms, mq.broker_name)
        request = self.transport.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)
        response = await self.transport.invoke(await self._master(mq), request, timeout)
        return SearchOffsetResponseHeader.from_command(_expect(response)).offset

    async def earliest_msg_store_time(self, mq: MessageQueue, timeout: float | None = None) -> int:
        """GET_EARLIEST_MSG_STORETIME: store time (ms) of the queue's oldest message."""
        header = GetEarliestMsgStoretimeRequestHeader(mq.topic, mq.queue_id, mq.broker_name)
        request = self.transport.request(RequestCode.GET_EARLIEST_MSG_STORETIME, header)
        response = await self.transport.invoke(await self._master(mq), request, timeout)
        return GetEarliestMsgStoretimeResponseHeader.from_command(_expect(response)).timestamp

    # -- orderly consumption (locks at the master) ----------------------------------------

    async def lock_batch(
        self,
        group: str,
        broker_name: str,
        mqs: Iterable[MessageQueue],
        timeout: float | None = None,
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ: the subset of ``mqs`` this client now holds."""
        mqs = set(mqs)
        if not mqs:
            return set()
        addr = await self._master(next(iter(mqs)))
        body = LockBatchRequestBody(group, self.transport.client_id, mqs).encode()
        request = self.transport.request(RequestCode.LOCK_BATCH_MQ, body=body)
        response = _expect(await self.transport.invoke(addr, request, timeout))
        return LockBatchResponseBody.decode(response.body).lock_ok_mq_set

    async def unlock_batch(
        self,
        group: str,
        broker_name: str,
        mqs: Iterable[MessageQueue],
        *,
        oneway: bool = False,
        timeout: float | None = None,
    ) -> None:
        mqs = set(mqs)
        if not mqs:
            return
        addr = await self._master(next(iter(mqs)))
        body = UnlockBatchRequestBody(group, self.transport.client_id, mqs).encode()
        request = self.transport.request(RequestCode.UNLOCK_BATCH_MQ, body=body, oneway=oneway)
        if oneway:
            await self.transport.invoke_oneway(addr, request)
        else:
            _expect(await self.transport.invoke(addr, request, timeout))

    # -- retries --------------------------------------------------------------------------

    async def consumer_send_msg_back(
        self,
        msg: MessageExt,
        group: str,
        *,
        broker_name: str | None = None,
        delay_level: int = 0,
        max_reconsume_times: int = 16,
        timeout: float = 5.0,
    ) -> None:
        """CONSUMER_SEND_MSG_BACK to the master of ``broker_name`` (else the message's store
        host): the broker copies the message to ``%RETRY%group`` (or the DLQ).
        ``delay_level`` 0 lets the broker pick 3 + reconsume times; -1 = straight to DLQ."""
        addr = self.routes.find_master_addr(broker_name) if broker_name else None
        if addr is None:
            ip, port = msg.store_host
            addr = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=group,
            delay_level=delay_level,
            origin_msg_id=msg.unique_key or msg.msg_id,
            origin_topic=msg.topic,
            unit_mode=False,
            max_reconsume_times=max_reconsume_times,
            bname=broker_name,
        )
        request = self.transport.request(RequestCode.CONSUMER_SEND_MSG_BACK, header)
        _expect(await self.transport.invoke(addr, request, timeout))

    # -- looking messages up --------------------------------------------------------------

    async def query_message(
        self,
        addr: str,
        topic: str,
        key: str,
        max_num: int,
        begin_ms: int,
        end_ms: int,
        *,
        unique_key: bool = False,
        timeout: float = 15.0,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE through the broker's index; [] when nothing matches."""
        from mqcore.protocol.headers.admin import QueryMessageRequestHeader  # tools only

        header = QueryMessageRequestHeader(
            topic=topic,
            key=key,
            max_num=max_num,
            begin_timestamp=begin_ms,
            end_timestamp=end_ms,
            unique_key_query=unique_key,
        )
        request = self.transport.request(RequestCode.QUERY_MESSAGE, header)
        response = await self.transport.invoke(addr, request, timeout)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        return decode_records(_expect(response).body)

    async def view_message(
        self, addr: str, commit_log_offset: int, timeout: float | None = None
    ) -> MessageExt:
        """VIEW_MESSAGE_BY_ID: the record at a commit log offset."""
        from mqcore.protocol.headers.admin import ViewMessageRequestHeader  # tools only

        header = ViewMessageRequestHeader(commit_log_offset)
        response = await self.transport.invoke(
            addr, self.transport.request(RequestCode.VIEW_MESSAGE_BY_ID, header), timeout
        )
        messages = decode_records(_expect(response).body)
        if not messages:
            raise MQClientError(f"broker {addr} returned no record at offset {commit_log_offset}")
        return messages[0]

    async def view_message_by_id(self, offset_msg_id: str) -> MessageExt:
        """The message an offset msg id names, asked of the broker the id points to."""
        ip, port, offset = decode_offset_msg_id(offset_msg_id)
        if not 0 < port < 65536:
            raise MessageIdError(
                f"{offset_msg_id} is not an offset msg id (its port would be {port});"
                " is it a unique key? look it up with the topic"
            )
        host = f"[{ip}]" if ":" in ip else ip
        return await self.view_message(f"{host}:{port}", offset)
