"""The dashboard's async poller: one :class:`~mqcli.tui.model.Snapshot` per refresh.

The app depends on the :class:`Poller` protocol (a snapshot per poll, and the
:class:`~mqcore.client.Admin` its views act through), so tests run it on a fake;
:class:`ClusterPoller` is the real one, and asks only through ``Admin`` methods.

What one :meth:`ClusterPoller.poll` asks, all concurrently (nothing per queue):

* every name server: GET_BROKER_CLUSTER_INFO (its health and the broker list);
* every broker: GET_BROKER_RUNTIME_INFO (TPS, today's counts, disk, commit log,
  ``scheduleMessageOffset_<level>`` = delay-level progress,
  ``scheduleMessageDeliverTps_<level>`` = its delivery rate, and role and HA state as
  :mod:`mqcli.ha` reads them; a slave's lag is its master's commit log max offset
  minus its own);
* every master: GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET (every group's offsets in
  one answer, so group lag needs no request per group), GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
  and GET_TOPIC_STATS_INFO per topic it hosts (RocketMQ 4.x has no all-topics stats
  request, so that one is per topic, never per queue);
* the highlighted group only: GET_CONSUME_STATS per master (exact last consume times)
  and its connections; on the delay view, one 1-message pull per level with waiting
  messages, to show when the next one is due;
* once per broker: GET_BROKER_CONFIG, for the ``messageDelayLevel`` table;
* every ``model_interval`` seconds (not every refresh): GET_CONSUMER_CONNECTION_LIST per
  non-system group, for its message model (CLUSTERING / BROADCASTING), which only the
  live consumers know (a subscription group's ``consumeBroadcastEnable`` means only that
  broadcasting is *allowed*); the answers are cached, and the highlighted group's is
  refreshed every poll. A group with no consumer online shows "-".

A broker that fails is returned as down with its error (and stays listed as down when
it leaves the name server), so one dead broker never fails the poll. When no name server
answers, the brokers last seen are returned as *unknown* (not down: a broker outlives its
name server, and clients with a cached route keep using it). Put TPS per topic
is derived from max-offset deltas between polls, and the rolling series for sparklines
and lag trends live in :class:`~mqcli.tui.model.History`.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from mqcli.credentials import client_config
from mqcli.ha import ha_state
from mqcli.tui.model import (
    DEFAULT_DELAY_LEVELS,
    BrokerRow,
    DelayLevelRow,
    GroupDetail,
    GroupQueueRow,
    GroupRow,
    History,
    Member,
    NamesrvHealth,
    QueueRow,
    Snapshot,
    TopicRow,
    topic_kind,
)
from mqcore.client import Admin
from mqcore.client.admin import QueueProgress
from mqcore.common.loop_lag import LoopLagFigures
from mqcore.errors import MQBrokerError, MQError
from mqcore.message import MessageExt
from mqcore.message.const import REPLY_TOPIC_POSTFIX
from mqcore.protocol import ResponseCode
from mqcore.protocol.bodies import ClusterInfo
from mqcore.store.metadata.subscription_group import SYSTEM_GROUPS
from mqcore.store.metadata.topic import RMQ_SYS_SCHEDULE_TOPIC, perm_to_string

__all__ = ["BrokerData", "ClusterPoller", "Poller", "parse_delay_levels", "peek"]

_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> list[tuple[str, int]]:
    """``"1s 5s 1m"`` -> ``[("1s", 1000), ("5s", 5000), ("1m", 60000)]``; bad parts skipped."""
    out = []
    for part in text.split():
        m = re.fullmatch(r"(\d+)([smhd])", part.strip())
        if m:
            out.append((part, int(m.group(1)) * _UNITS_MS[m.group(2)]))
    return out


def _system_group(name: str) -> bool:
    """The groups a broker makes for itself (and the transaction checker's)."""
    return name in SYSTEM_GROUPS or name.startswith("CID_RMQ_SYS_")


async def peek(
    admin: Admin, addr: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
) -> list[MessageExt]:
    """:meth:`Admin.peek <mqcore.client.Admin.peek>` for a view: an error reads as
    "nothing there" (a browsing dashboard shows less, it does not fail)."""
    try:
        return await admin.peek(addr, topic, queue_id, offset, max_nums)
    except MQError:
        return []


def _first_float(text: str | None) -> float:
    """Runtime info TPS values are ``"<10s> <1m> <10m>"``: the first window."""
    try:
        return float((text or "0").split()[0])
    except (ValueError, IndexError):
        return 0.0


def _int(text: str | None, default: int = 0) -> int:
    try:
        return int(text or default)
    except ValueError:
        return default


@dataclass(slots=True)
class BrokerData:
    """What one broker answered this poll (raw enough to merge across brokers)."""

    row: BrokerRow
    runtime: dict[str, str] = field(default_factory=dict)
    topics: dict[str, tuple[int, int]] = field(default_factory=dict)
    """topic -> (perm, read queue nums)."""
    stats: dict[tuple[str, int], QueueRow] = field(default_factory=dict)
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    """``topic@group`` -> {queue id: consumer offset}."""
    groups: dict[str, int] = field(default_factory=dict)
    """group -> retry max times."""


@runtime_checkable
class Poller(Protocol):
    """What the dashboard app needs of a cluster: a snapshot per refresh, and the
    :class:`~mqcore.client.Admin` its views act and look messages up through."""

    @property
    def admin(self) -> Admin: ...

    async def poll(self, *, group: str | None = None, delay_heads: bool = False) -> Snapshot:
        """One snapshot (``group``'s detail and the delay heads only when asked for)."""
        ...

    async def close(self) -> None: ...


class ClusterPoller:
    """Polls a cluster through an :class:`~mqcore.client.Admin`; see the module docstring.

    ``clock`` (epoch seconds) is injectable so rates are testable without sleeping.
    """

    def __init__(
        self,
        namesrv: str,
        *,
        timeout: float = 3.0,
        history: int = 60,
        clock: Callable[[], float] = time.time,
        model_interval: float = 15.0,
    ) -> None:
        self.namesrv = namesrv
        self.model_interval = model_interval
        self.timeout = timeout
        self.clock = clock
        self.admin = Admin(
            namesrv,
            instance_name=f"mq-tui-{os.getpid()}",
            timeout=timeout,
            client_config=client_config(),
        )
        self.history = History(history)
        self._known: dict[str, BrokerRow] = {}
        self._delay_tables: dict[str, list[tuple[str, int]]] = {}
        self._prev_max: dict[str, tuple[float, int]] = {}
        self._models: dict[str, str] = {}
        """group -> message model of its live consumers (absent: none online/unknown)."""
        self._models_at: float | None = None
        self._started = False

    async def start(self) -> None:
        if not self._started:
            await self.admin.start()
            self._started = True

    async def close(self) -> None:
        if self._started:
            self._started = False
            await self.admin.shutdown()

    # -- one refresh ----------------------------------------------------------------------

    async def poll(self, *, group: str | None = None, delay_heads: bool = False) -> Snapshot:
        """One snapshot of the cluster; raises only when no name server answers."""
        await self.start()
        started = time.perf_counter()
        now_s = self.clock()
        namesrvs, info = await self._namesrvs()
        snap = Snapshot(taken_ms=int(now_s * 1000), namesrvs=namesrvs)
        if info is None:
            snap.errors.append("no name server answers: " + "; ".join(
                f"{n.addr}: {n.error}" for n in namesrvs
            ))  # fmt: skip
            # a broker the name server cannot vouch for is not down: it may serve on
            snap.brokers = sorted(
                (replace(b, unknown=True) for b in self._known.values()),
                key=lambda b: (b.name, b.broker_id),
            )
            snap.latency_ms = (time.perf_counter() - started) * 1000
            return snap
        targets = [
            BrokerRow(data.cluster, name, bid, addr)
            for name, data in sorted(info.broker_addr_table.items())
            for bid, addr in sorted(data.broker_addrs.items())
        ]
        results = await asyncio.gather(*(self._broker(t) for t in targets))
        listed = {r.row.key for r in results}
        gone = [
            replace(b, up=False, error="no longer registered with the name server")
            for k, b in self._known.items()
            if k not in listed
        ]
        for r in results:
            self._known[r.row.key] = r.row
        self._slave_lag(results)
        snap.brokers = sorted([r.row for r in results] + gone, key=lambda b: (b.name, b.broker_id))
        snap.errors.extend(f"{b.key} @ {b.addr}: {b.error}" for b in snap.brokers if b.error)
        clusters = frozenset(info.cluster_addr_table)
        reserved = (
            clusters
            | frozenset(info.broker_addr_table)
            | {f"{c}_{REPLY_TOPIC_POSTFIX}" for c in clusters}
        )
        masters = [r for r in results if r.row.broker_id == 0 and r.row.up]
        snap.topics = self._topics(masters, reserved, now_s)
        snap.groups = self._groups(masters)
        snap.delay_levels = await self._delay_levels(masters, heads=delay_heads)
        if group:
            snap.group_detail = await self._group_detail(group)
        await self._group_models(snap.groups, now_s)
        snap.latency_ms = (time.perf_counter() - started) * 1000
        return snap

    async def _namesrvs(self) -> tuple[list[NamesrvHealth], ClusterInfo | None]:
        async def one(addr: str) -> tuple[NamesrvHealth, ClusterInfo | None]:
            t0 = time.perf_counter()
            try:
                info = await self.admin.cluster_info_from(addr)
            except Exception as exc:  # any failure means: this name server is down
                return NamesrvHealth(addr, False, error=str(exc) or type(exc).__name__), None
            return NamesrvHealth(addr, True, (time.perf_counter() - t0) * 1000), info

        answers = await asyncio.gather(*(one(a) for a in self.admin.namesrv_addrs))
        infos = [i for _, i in answers if i is not None]
        return [h for h, _ in answers], (infos[0] if infos else None)

    async def _broker(self, row: BrokerRow) -> BrokerData:
        data = BrokerData(row)
        admin = self.admin
        try:
            if row.broker_id == 0:
                runtime, topics, data.offsets, groups = await asyncio.gather(
                    admin.broker_runtime_info(row.addr),
                    admin.broker_topic_configs(row.addr),
                    admin.broker_consumer_offsets(row.addr),
                    admin.broker_subscription_groups(row.addr),
                )
                data.topics = {
                    t: (c.perm, c.read_queue_nums)
                    for t, c in topics.items()
                    if t != RMQ_SYS_SCHEDULE_TOPIC
                }
                data.groups = {g: c.retry_max_times for g, c in groups.items()}
                await self._topic_stats(data)
                await self._delay_table(row.addr)
            else:
                runtime = await admin.broker_runtime_info(row.addr)
            data.runtime = runtime
        except Exception as exc:  # a bad answer marks this broker down, not the poll
            row.up = False
            row.error = str(exc) or type(exc).__name__
            # keep what we knew about it (version, boot time) for the down row
            old = self._known.get(row.key)
            if old is not None:
                row.version, row.boot_ms = old.version, old.boot_ms
            return data
        rt = data.runtime
        row.version = rt.get("brokerVersionDesc", "-")
        row.boot_ms = _int(rt.get("bootTimestamp")) or None
        row.put_tps = _first_float(rt.get("putTps"))
        row.get_tps = _first_float(rt.get("getTransferedTps"))
        row.put_today = _int(rt.get("msgPutTotalTodayNow"))
        row.get_today = _int(rt.get("msgGetTotalTodayNow"))
        ratio = rt.get("commitLogDiskRatio")
        row.disk_ratio = float(ratio) if ratio not in (None, "-1") else None
        row.commit_log_max = _int(rt.get("commitLogMaxOffset"))
        row.ha = ha_state(rt, row.broker_id)
        row.store_problems = _int(rt.get("storeProblems"))
        lag = LoopLagFigures.from_runtime_info(rt)
        row.loop_lag_ms = lag.max_ms_last_minute if lag is not None else None
        return data

    async def _topic_stats(self, data: BrokerData) -> None:
        async def one(topic: str) -> None:
            try:
                table = await self.admin.broker_topic_stats(data.row.addr, topic)
            except MQBrokerError:
                return  # deleted between the two requests
            for mq, o in table.items():
                data.stats[(topic, mq.queue_id)] = QueueRow(
                    topic, data.row.name, mq.queue_id, o.min_offset, o.max_offset,
                    o.last_update_timestamp,
                )  # fmt: skip

        await asyncio.gather(*(one(t) for t in sorted(data.topics)))

    async def _delay_table(self, addr: str) -> None:
        if addr in self._delay_tables:
            return
        try:
            config = await self.admin.broker_config(addr)
            text = config.get("messageDelayLevel", DEFAULT_DELAY_LEVELS)
        except MQError:
            text = DEFAULT_DELAY_LEVELS
        self._delay_tables[addr] = parse_delay_levels(text) or parse_delay_levels(
            DEFAULT_DELAY_LEVELS
        )

    @staticmethod
    def _slave_lag(results: list[BrokerData]) -> None:
        masters = {r.row.name: r for r in results if r.row.broker_id == 0 and r.row.up}
        for r in results:
            master = masters.get(r.row.name)
            if r.row.broker_id != 0 and r.row.up and master is not None:
                r.row.ha = ha_state(
                    r.runtime, r.row.broker_id, master.row.commit_log_max, master.runtime
                )
                r.row.slave_lag_bytes = r.row.ha.lag_bytes

    # -- merging --------------------------------------------------------------------------

    def _topics(
        self, masters: list[BrokerData], reserved: frozenset[str], now_s: float
    ) -> dict[str, TopicRow]:
        topics: dict[str, TopicRow] = {}
        for data in masters:
            for name, (perm, _) in data.topics.items():
                row = topics.setdefault(name, TopicRow(name, topic_kind(name, reserved)))
                row.perm = perm_to_string(perm)
            for q in data.stats.values():
                if q.topic in topics:
                    topics[q.topic].queues.append(q)
        for row in topics.values():
            row.queues.sort(key=lambda q: (q.broker, q.queue_id))
            total = row.max_offset
            prev = self._prev_max.get(row.name)
            if prev is not None and now_s > prev[0]:
                row.put_tps = max(0, total - prev[1]) / (now_s - prev[0])
            self._prev_max[row.name] = (now_s, total)
            row.tps_history = self.history.add("topic:" + row.name, row.put_tps)
        return dict(sorted(topics.items()))

    def _groups(self, masters: list[BrokerData]) -> dict[str, GroupRow]:
        groups: dict[str, GroupRow] = {}
        for data in masters:
            for name, retry_max in data.groups.items():
                groups.setdefault(
                    name, GroupRow(name, system=_system_group(name), retry_max_times=retry_max)
                )
            for key, offsets in data.offsets.items():
                topic, _, name = key.partition("@")
                row = groups.setdefault(name, GroupRow(name, system=_system_group(name)))
                if topic not in row.topics:
                    row.topics.append(topic)
                # as GET_CONSUME_STATS: every queue of the topic, no offset yet = 0
                for q in (q for (t, _), q in data.stats.items() if t == topic):
                    row.queues += 1
                    row.total_lag += max(0, q.max_offset - max(0, offsets.get(q.queue_id, 0)))
        for row in groups.values():
            row.topics.sort()
            row.lag_history = [int(v) for v in self.history.add("group:" + row.name, row.total_lag)]
        live = {"topic:" + t for m in masters for t in m.topics} | {"group:" + g for g in groups}
        self.history.retain(live)
        return dict(sorted(groups.items()))

    async def _group_models(self, groups: dict[str, GroupRow], now_s: float) -> None:
        """Fill each row's message model from the cache, refreshing it for every
        non-system group when ``model_interval`` has passed since the last refresh."""
        due = self._models_at is None or now_s - self._models_at >= self.model_interval
        if due:
            self._models_at = now_s

            async def one(name: str) -> None:
                try:
                    connection = await self.admin.consumer_connections(name)
                except MQBrokerError as exc:
                    if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
                        self._models.pop(name, None)
                    return
                except MQError:
                    return  # keep what we knew
                if connection.message_model:
                    self._models[name] = connection.message_model
                else:
                    self._models.pop(name, None)

            await asyncio.gather(*(one(g.name) for g in groups.values() if not g.system))
            for gone in set(self._models) - set(groups):
                del self._models[gone]
        for row in groups.values():
            row.model = self._models.get(row.name, "-")

    async def _delay_levels(self, masters: list[BrokerData], *, heads: bool) -> list[DelayLevelRow]:
        rows: list[DelayLevelRow] = []
        for data in masters:
            table = self._delay_tables.get(data.row.addr) or parse_delay_levels(
                DEFAULT_DELAY_LEVELS
            )
            for level, (text, _) in enumerate(table, start=1):
                value = data.runtime.get(f"scheduleMessageOffset_{level}")
                delivered, _, max_offset = (value or "0,0").partition(",")
                tps = data.runtime.get(f"scheduleMessageDeliverTps_{level}")
                rows.append(
                    DelayLevelRow(
                        data.row.name, level, text, _int(delivered), _int(max_offset),
                        delivery_rate=_first_float(tps) if tps else None,
                    )
                )  # fmt: skip
        if heads:
            addrs = {d.row.name: d.row.addr for d in masters}
            delays = {d.row.name: self._delay_tables.get(d.row.addr, []) for d in masters}
            await asyncio.gather(
                *(self._delay_head(r, addrs[r.broker], delays[r.broker]) for r in rows if r.waiting)
            )
        return rows

    async def _delay_head(
        self, row: DelayLevelRow, addr: str, table: list[tuple[str, int]]
    ) -> None:
        """Deliver time of the level's next message: its store time plus the level's delay."""
        found = await peek(
            self.admin, addr, RMQ_SYS_SCHEDULE_TOPIC, row.level - 1, row.delivered, 1
        )
        if found and row.level <= len(table):
            row.next_due_ms = found[0].store_timestamp + table[row.level - 1][1]

    async def _group_detail(self, group: str) -> GroupDetail:
        detail = GroupDetail(group)
        progress: list[QueueProgress] = []
        try:
            progress, connection = await asyncio.gather(
                self.admin.consume_progress(group),
                self.admin.consumer_connections(group),
                return_exceptions=False,
            )
        except MQBrokerError as exc:
            if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                detail.error = str(exc)
            else:
                detail.model = "offline"
                self._models.pop(group, None)
            try:
                progress = await self.admin.consume_progress(group)
            except MQError as exc2:
                detail.error = str(exc2)
        except MQError as exc:
            detail.error = str(exc)
        else:
            detail.model = connection.message_model or "-"
            if connection.message_model:
                self._models[group] = connection.message_model
            detail.consume_type = connection.consume_type or "-"
            detail.subscriptions = {
                t: s.sub_string for t, s in sorted(connection.subscription_table.items())
            }
            detail.members = [
                Member(c.client_id, c.client_addr, c.language, c.version)
                for c in sorted(connection.connection_set, key=lambda c: c.client_id)
            ]
        detail.queues = [
            GroupQueueRow(
                p.mq.topic,
                p.mq.broker_name,
                p.mq.queue_id,
                p.broker_offset,
                p.consumer_offset,
                p.last_timestamp,
                p.in_flight,
                p.invisible,
            )
            for p in progress
        ]
        return detail
