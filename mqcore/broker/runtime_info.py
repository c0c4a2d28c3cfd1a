"""What GET_BROKER_RUNTIME_INFO reports: :class:`RuntimeInfo`.

RocketMQ's key names and value formats (``mqadmin brokerStatus``, the dashboard and our
TUI read them): statistics, versions and uptime, commit log bounds, disk ratios, the
schedule offsets, replication state (mq's own keys, which 4.9.8 tools show as "-"), how
late the event loop runs, and what recovery found damaged.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import TYPE_CHECKING

from mqcore.common.core import summary as core_summary
from mqcore.protocol import MQ_VERSION
from mqcore.store.cleanup import disk_used_ratio
from mqcore.store.store_config import BrokerRole

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["BROKER_VERSION_DESC", "RuntimeInfo", "human_bytes", "runtime_text"]

BROKER_VERSION_DESC = "V4_9_8"


def human_bytes(count: int) -> str:
    """``MixAll.humanReadableByteCount(bytes, false)``: ``"93.1 GiB"``."""
    if count < 1024:
        return f"{count} B"
    exp = 0
    value = float(count)
    while value >= 1024 and exp < 6:
        value /= 1024
        exp += 1
    return f"{value:.1f} {'KMGTPE'[exp - 1]}iB"


def runtime_text(seconds: float) -> str:
    """StoreStatsService's ``runtime`` value: ``[ 0 days, 1 hours, 2 minutes, 3 seconds ]``."""
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {secs} seconds ]"


class RuntimeInfo:
    """The runtime table of the broker ``ctx``, counting its uptime from construction."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.boot_monotonic = time.monotonic()
        self.boot_ms = int(time.time() * 1000)

    def table(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO's table (all values strings, RocketMQ's key names)."""
        c = self.ctx
        store = c.store
        info: dict[str, str] = {}
        info.update(c.stats.runtime_info())
        info["brokerVersionDesc"] = BROKER_VERSION_DESC
        info["brokerVersion"] = str(MQ_VERSION)
        # mq's own key: the compiled core or the pure one (and why), as `mq --version` says
        info["mqCore"] = core_summary()
        info["bootTimestamp"] = str(self.boot_ms)
        info["runtime"] = runtime_text(time.monotonic() - self.boot_monotonic)
        info["startAcceptSendRequestTimeStamp"] = "0"
        info["commitLogMaxOffset"] = str(store.max_phy_offset)
        # 4.9.8's CommitLog.getMinOffset: -1 while there is no commit log file
        empty = store.commit_log.queue.first_file is None
        info["commitLogMinOffset"] = "-1" if empty else str(store.min_phy_offset)
        info["dispatchBehindBytes"] = str(store.dispatch_behind_bytes())
        earliest = self._earliest_message_time()
        info["earliestMessageTimeStamp"] = str(earliest if self._earliest_readable() else -1)
        # mq's own key: the store time of the oldest message, whatever follows it
        info["earliestStoredMessageTimeStamp"] = str(earliest)
        info["pageCacheLockTimeMills"] = "0"
        for pool, capacity in (("send", 10000), ("pull", 100000), ("query", 20000)):
            info[f"{pool}ThreadPoolQueueSize"] = "0"
            info[f"{pool}ThreadPoolQueueCapacity"] = str(capacity)
            info[f"{pool}ThreadPoolQueueHeadWaitTimeMills"] = "0"
        # requests are served on the event loop: no thread pool queue holds any
        info["EndTransactionQueueSize"] = "0"
        info["EndTransactionThreadPoolQueueCapacity"] = "100000"
        # no transient store pool: 4.9.8's availableBufferNums() is Integer.MAX_VALUE then
        info["remainTransientStoreBufferNumbs"] = str(2**31 - 1)
        commit_log = store.commit_log
        info["remainHowManyDataToFlush"] = human_bytes(
            max(0, commit_log.max_offset - commit_log.flushed_where)
        )
        info.update(self._disk_info())
        info.update(self._schedule_offsets())
        if c.timer_service is not None:  # RocketMQ 5's timer keys (timerReadBehind, ...)
            info.update(c.timer_service.runtime_info())
        info.update(self._ha_info())
        # mq's own keys: how late the event loop ran what was due (0 for a sound loop)
        info.update(c.loop_lag.runtime_info())
        report = store.recovery_report
        problems = report.problems if report is not None else []
        info["storeProblems"] = str(len(problems))
        if problems:
            # mq's own keys: what recovery found damaged and worked around, for operators
            info["storeProblemsDetail"] = " | ".join(str(p) for p in problems[:10])
        return info

    def _ha_info(self) -> dict[str, str]:
        """Replication state: keys of ``mq`` only (4.9.8 has none; tools show "-")."""
        c = self.ctx
        role = c.store_config.broker_role
        info = {"brokerRole": role.value}
        if role is not BrokerRole.SLAVE:
            info["haConnectionCount"] = str(c.ha.connection_count)
            info["haPush2SlaveMaxOffset"] = str(c.ha.push2slave_max_offset)
            if c.ha.listening:
                host = c.config.broker_ip2 or c.config.broker_ip1
                info["haServerAddr"] = f"{host}:{c.ha.port}"
        else:
            info["haMasterAddress"] = c.ha_client.master_address or ""
            info["haMasterConnected"] = "true" if c.ha_client.connected else "false"
        r = c.replicas
        if r is not None:  # controller mode: what the controllers agreed
            info["controllerBrokerId"] = str(r.broker_id if r.broker_id is not None else -1)
            info["masterEpoch"] = str(r.master_epoch)
            master = r.master_broker_id
            info["masterBrokerId"] = str(master if master is not None else -1)
            info["syncStateSet"] = ",".join(str(i) for i in sorted(r.sync_state_set))
            info["syncStateSetEpoch"] = str(r.sync_state_set_epoch)
        return info

    def _earliest_readable(self) -> bool:
        """4.9.8's ``getEarliestMessageTime`` reads ``2 * maxMessageSize`` bytes at the
        minimum offset and answers -1 when its file holds fewer after it (so on most
        young brokers: mqadmin clusterList then shows the hours since 1970)."""
        store = self.ctx.store
        first = store.commit_log.queue.first_file
        if first is None:
            return False
        position = store.min_phy_offset - first.file_from_offset
        return position + 2 * store.config.max_message_size <= first.wrote_position

    def _earliest_message_time(self) -> int:
        store = self.ctx.store
        if store.max_phy_offset <= store.min_phy_offset:
            return -1
        try:
            ts = store.get_store_time(store.min_phy_offset)
        except Exception:  # a file being deleted under us: no answer rather than an error
            return -1
        return ts if ts is not None else -1

    def _disk_info(self) -> dict[str, str]:
        """4.9.8's disk keys: ``commitLogDiskRatio_<path>`` per commit log path and the
        least of them as ``commitLogDiskRatio``, ``consumeQueueDiskRatio`` (-1.0 for a
        path that does not exist), ``commitLogDirCapacity`` of the store root."""
        store_config = self.ctx.store_config
        if store_config.store_path_commit_log:
            commit_log_dir = store_config.store_path_commit_log
        else:
            commit_log_dir = f"{store_config.store_path_root_dir}{os.sep}commitlog"
        ratio = disk_used_ratio(commit_log_dir)
        out = {
            f"commitLogDiskRatio_{commit_log_dir}": repr(ratio),
            "commitLogDiskRatio": repr(ratio),
            "consumeQueueDiskRatio": repr(
                disk_used_ratio(f"{store_config.store_path_root_dir}{os.sep}consumequeue")
            ),
        }
        try:
            usage = shutil.disk_usage(store_config.root)
        except OSError:
            return out
        total, usable = human_bytes(usage.total), human_bytes(usage.free)
        out["commitLogDirCapacity"] = f"Total : {total}, Free : {usable}."
        return out

    def _schedule_offsets(self) -> dict[str, str]:
        """``scheduleMessageOffset_<level>`` = ``"<delivered>,<max>"`` for every level, and
        mq's per-level head due time and delivery rate (see :mod:`mqcore.broker.schedule`)."""
        return self.ctx.schedule_service.runtime_info()
