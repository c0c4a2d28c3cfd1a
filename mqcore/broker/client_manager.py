"""Who is connected: producer groups and consumer groups (RocketMQ's ProducerManager,
ConsumerManager and ConsumerGroupInfo).

Both are fed by HEART_BEAT and emptied by UNREGISTER_CLIENT, by a closed connection
(:meth:`ConsumerManager.on_channel_closed`) and by :meth:`scan_not_active` for clients
silent longer than ``channelExpiredTimeout`` (120 s). Whenever a consumer group's members
or subscriptions change, its remaining members get NOTIFY_CONSUMER_IDS_CHANGED (oneway) so
Java consumers rebalance at once instead of within 20 s.

Everything here runs on the event loop; nothing blocks and nothing awaits (a oneway
notification is written straight to the transport, as Java's ``writeAndFlush``).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from mqcore.common.aio import run_all, run_in_slices
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies import Connection, ConsumerConnection, SubscriptionData
from mqcore.protocol.headers import NotifyConsumerIdsChangedRequestHeader
from mqcore.remoting import Channel, ChannelClosedError

__all__ = [
    "ClientChannelInfo",
    "ConsumerGroupEvent",
    "ConsumerGroupInfo",
    "ConsumerGroupListener",
    "ConsumerManager",
    "ProducerManager",
]

log = logging.getLogger("mq.broker.client")

_GROUPS_PER_STEP = 128
"""Groups scanned between two chances to give the loop back."""


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    """One client connection of a group; ``last_update`` is a monotonic time (s)."""

    channel: Channel
    client_id: str
    language: str = "JAVA"
    version: int = 0
    last_update: float = field(default_factory=time.monotonic)

    def connection(self) -> Connection:
        return Connection(self.client_id, self.channel.remote_address, self.language, self.version)


class ConsumerGroupEvent(enum.Enum):
    """What :class:`ConsumerManager` tells its listeners (ConsumerGroupEvent.java)."""

    CHANGE = "CHANGE"
    """Members or subscriptions changed; listeners get the group's channels."""
    REGISTER = "REGISTER"
    """A heartbeat (re)registered subscriptions; listeners get them."""
    UNREGISTER = "UNREGISTER"
    """The group has no member left."""


ConsumerGroupListener = Callable[[ConsumerGroupEvent, str, Sequence[object]], None]


class ProducerManager:
    """Producer group -> its client channels (transaction check-backs pick one)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.groups: dict[str, dict[Channel, ClientChannelInfo]] = {}

    def register(self, group: str, info: ClientChannelInfo) -> None:
        channels = self.groups.setdefault(group, {})
        current = channels.get(info.channel)
        if current is None:
            current = channels[info.channel] = info
            log.info("new producer connected, group: %s %s", group, info.client_id)
        current.last_update = self._clock()

    def unregister(self, group: str, channel: Channel) -> bool:
        channels = self.groups.get(group)
        if channels is None or channels.pop(channel, None) is None:
            return False
        log.info("producer unregistered, group: %s %s", group, channel.remote_address)
        if not channels:
            del self.groups[group]
        return True

    def on_channel_closed(self, channel: Channel) -> list[str]:
        """Drop the channel from every group; returns the groups it was in."""
        return [g for g in list(self.groups) if self.unregister(g, channel)]

    def scan_not_active(self, timeout: float) -> list[ClientChannelInfo]:
        """Drop channels without a heartbeat for ``timeout`` seconds (and close them)."""
        expired: list[ClientChannelInfo] = []
        run_all(self._scan_steps(timeout, expired))
        return expired

    async def scan_not_active_in_slices(self, timeout: float) -> list[ClientChannelInfo]:
        """:meth:`scan_not_active` a slice of groups at a time (the periodic scan)."""
        expired: list[ClientChannelInfo] = []
        await run_in_slices(self._scan_steps(timeout, expired))
        return expired

    def _scan_steps(self, timeout: float, expired: list[ClientChannelInfo]) -> Iterator[None]:
        now = self._clock()
        for n, group in enumerate(list(self.groups), 1):  # keys: no 10,000 pairs kept alive
            for channel, info in list(self.groups.get(group, {}).items()):
                if now - info.last_update > timeout:
                    log.warning("producer %s of %s expired", info.client_id, group)
                    self.unregister(group, channel)
                    expired.append(info)
            if n % _GROUPS_PER_STEP == 0:
                yield
        for info in expired:
            info.channel.close()

    def group_channels(self, group: str) -> list[ClientChannelInfo]:
        return list(self.groups.get(group, {}).values())

    def available_channel(self, group: str) -> Channel | None:
        """A live channel of the group (``getAvailableChannel``), or None."""
        for info in self.groups.get(group, {}).values():
            if not info.channel.closed:
                return info.channel
        return None

    def find_channel(self, client_id: str) -> Channel | None:
        for channels in self.groups.values():
            for info in channels.values():
                if info.client_id == client_id:
                    return info.channel
        return None


class ConsumerGroupInfo:
    """A consumer group's members and subscriptions (``ConsumerGroupInfo``)."""

    def __init__(
        self, group: str, consume_type: str, message_model: str, consume_from_where: str
    ) -> None:
        self.group = group
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.channels: dict[Channel, ClientChannelInfo] = {}
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.last_update_ms = int(time.time() * 1000)

    def update_channel(
        self,
        info: ClientChannelInfo,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        now: float,
    ) -> bool:
        """Add or refresh a member; True when it is new (or its client id changed)."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        old = self.channels.get(info.channel)
        changed = old is None or old.client_id != info.client_id
        if changed:
            self.channels[info.channel] = info
            log.info("new consumer connected, group: %s %s", self.group, info.client_id)
        self.channels[info.channel].last_update = now
        self.last_update_ms = int(time.time() * 1000)
        return changed

    def update_subscriptions(self, subs: Iterable[SubscriptionData]) -> bool:
        """Replace the subscription table with a heartbeat's; a subscription already known
        is replaced only by a newer ``subVersion``. True when topics were added/removed."""
        changed = False
        wanted: dict[str, SubscriptionData] = {}
        for sub in subs:
            wanted[sub.topic] = sub
            old = self.subscriptions.get(sub.topic)
            if old is None:
                self.subscriptions[sub.topic] = sub
                changed = True
                log.info("subscription changed, group: %s add %s", self.group, sub.topic)
            elif sub.sub_version > old.sub_version:
                self.subscriptions[sub.topic] = sub
        for topic in [t for t in self.subscriptions if t not in wanted]:
            del self.subscriptions[topic]
            changed = True
            log.info("subscription changed, group: %s remove %s", self.group, topic)
        self.last_update_ms = int(time.time() * 1000)
        return changed

    def remove_channel(self, channel: Channel) -> ClientChannelInfo | None:
        return self.channels.pop(channel, None)

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channels.values():
            if info.client_id == client_id:
                return info
        return None

    def all_channels(self) -> list[Channel]:
        return list(self.channels)

    def all_client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]

    def connection(self) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST's answer for this group."""
        return ConsumerConnection(
            [info.connection() for info in self.channels.values()],
            dict(self.subscriptions),
            self.consume_type,
            self.message_model,
            self.consume_from_where,
        )


class ConsumerManager:
    """Consumer group -> :class:`ConsumerGroupInfo`, and the notifications it owes.

    ``listeners`` receive every :class:`ConsumerGroupEvent` (the consumer filter manager
    and tests use it). ``notify_enabled`` is the broker-wide switch
    (``notifyConsumerIdsChangedEnable``); each call also passes the group's own switch.
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, *, notify_enabled: bool = True
    ) -> None:
        self._clock = clock
        self.notify_enabled = notify_enabled
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self.listeners: list[ConsumerGroupListener] = []

    # -- membership ---------------------------------------------------------------------

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        subscriptions: Iterable[SubscriptionData],
        *,
        notify: bool = True,
    ) -> bool:
        """A heartbeat of ``info`` for ``group``; True when members or topics changed
        (the group's members were then notified if ``notify``)."""
        subs = list(subscriptions)
        group_info = self.groups.get(group)
        if group_info is None:
            group_info = self.groups[group] = ConsumerGroupInfo(
                group, consume_type, message_model, consume_from_where
            )
        members_changed = group_info.update_channel(
            info, consume_type, message_model, consume_from_where, self._clock()
        )
        subs_changed = group_info.update_subscriptions(subs)
        changed = members_changed or subs_changed
        if changed and notify:
            self._emit(ConsumerGroupEvent.CHANGE, group, group_info.all_channels())
        self._emit(ConsumerGroupEvent.REGISTER, group, subs)
        return changed

    def unregister_consumer(self, group: str, channel: Channel, *, notify: bool = True) -> bool:
        """UNREGISTER_CLIENT of one member; the rest are notified."""
        group_info = self.groups.get(group)
        if group_info is None or group_info.remove_channel(channel) is None:
            return False
        log.info("consumer unregistered, group: %s %s", group, channel.remote_address)
        self._member_gone(group, group_info, notify)
        return True

    def on_channel_closed(self, channel: Channel) -> list[str]:
        """A connection closed: drop it from every group and notify the others."""
        left = []
        for group, group_info in list(self.groups.items()):
            if group_info.remove_channel(channel) is not None:
                log.info("consumer channel closed, group: %s %s", group, channel.remote_address)
                self._member_gone(group, group_info, True)
                left.append(group)
        return left

    def scan_not_active(self, timeout: float) -> list[ClientChannelInfo]:
        """Drop members without a heartbeat for ``timeout`` seconds, close their
        connections, and notify the members that remain."""
        expired: list[ClientChannelInfo] = []
        run_all(self._scan_steps(timeout, expired))
        return expired

    async def scan_not_active_in_slices(self, timeout: float) -> list[ClientChannelInfo]:
        """:meth:`scan_not_active` a slice of groups at a time (the periodic scan: 10,000
        groups are ~10 ms of the loop at once)."""
        expired: list[ClientChannelInfo] = []
        await run_in_slices(self._scan_steps(timeout, expired))
        return expired

    def _scan_steps(self, timeout: float, expired: list[ClientChannelInfo]) -> Iterator[None]:
        now = self._clock()
        for n, group in enumerate(list(self.groups), 1):  # keys: no 10,000 pairs kept alive
            group_info = self.groups.get(group)
            if group_info is None:
                continue  # gone meanwhile
            gone = [i for i in group_info.channels.values() if now - i.last_update > timeout]
            for info in gone:
                log.warning("consumer %s of %s expired", info.client_id, group)
                group_info.remove_channel(info.channel)
                expired.append(info)
            if gone:
                self._member_gone(group, group_info, True)
            if n % _GROUPS_PER_STEP == 0:
                yield
        for info in expired:
            info.channel.close()

    def _member_gone(self, group: str, group_info: ConsumerGroupInfo, notify: bool) -> None:
        if not group_info.channels:
            if self.groups.get(group) is group_info:
                del self.groups[group]
            self._emit(ConsumerGroupEvent.UNREGISTER, group, ())
        if notify:
            self._emit(ConsumerGroupEvent.CHANGE, group, group_info.all_channels())

    # -- events -------------------------------------------------------------------------

    def _emit(self, event: ConsumerGroupEvent, group: str, args: Sequence[object]) -> None:
        if event is ConsumerGroupEvent.CHANGE and self.notify_enabled:
            self.notify_ids_changed(group, [c for c in args if isinstance(c, Channel)])
        for listener in self.listeners:
            try:
                listener(event, group, args)
            except Exception:
                log.exception("consumer group listener failed for %s %s", event, group)

    @staticmethod
    def notify_ids_changed(group: str, channels: Iterable[Channel]) -> int:
        """Send NOTIFY_CONSUMER_IDS_CHANGED (oneway) to ``channels``; returns how many."""
        fields = NotifyConsumerIdsChangedRequestHeader(group).to_ext_fields()
        sent = 0
        for channel in channels:
            request = RemotingCommand.request(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, fields, oneway=True
            )
            try:
                channel.send(request)
                sent += 1
            except ChannelClosedError:
                continue
            except Exception:  # a transport in a bad state must not break the broker
                log.exception("notify consumer ids changed to %s failed", channel)
        return sent

    # -- reads --------------------------------------------------------------------------

    def get_group(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        """The group's subscription to ``topic`` from heartbeats (the pull path's check)."""
        group_info = self.groups.get(group)
        return None if group_info is None else group_info.subscriptions.get(topic)

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        group_info = self.groups.get(group)
        return None if group_info is None else group_info.find_channel(client_id)

    def client_ids(self, group: str) -> list[str]:
        group_info = self.groups.get(group)
        return [] if group_info is None else group_info.all_client_ids()

    def groups_by_topic(self, topic: str) -> set[str]:
        """Online groups subscribed to ``topic`` (``queryTopicConsumeByWho``)."""
        return {g for g, info in self.groups.items() if topic in info.subscriptions}
