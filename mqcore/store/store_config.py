"""MessageStoreConfig: the store's settings, keyed by RocketMQ's own property names.

Byte layout: none (this module owns no file). It maps ``broker.conf`` keys such as
``storePathRootDir`` or ``mappedFileSizeCommitLog`` onto typed dataclass fields, so a
RocketMQ user's configuration keeps working. Unknown keys are left to the caller (the
broker's own config owns the rest of ``broker.conf``).
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from mqcore.common.properties import PropertiesConfig, read_properties_file
from mqcore.errors import ConfigError

__all__ = [
    "MESSAGE_STORE_CONFIG_FIELDS",
    "BrokerRole",
    "FlushDiskType",
    "MessageStoreConfig",
    "parse_delay_levels",
    "read_properties_file",
]

CQ_STORE_UNIT_SIZE = 20
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_TIME_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


def _key(name: str) -> dict[str, str]:
    return {"key": name}


MESSAGE_STORE_CONFIG_FIELDS: tuple[tuple[str, str | int | bool | None], ...] = (
    ("storePathRootDir", None),
    ("storePathCommitLog", None),
    ("storePathDLedgerCommitLog", None),
    ("readOnlyCommitLogStorePaths", None),
    ("mappedFileSizeCommitLog", 1024 * 1024 * 1024),
    ("mappedFileSizeConsumeQueue", 300_000 * CQ_STORE_UNIT_SIZE),
    ("enableConsumeQueueExt", False),
    ("mappedFileSizeConsumeQueueExt", 48 * 1024 * 1024),
    ("bitMapLengthConsumeQueueExt", 112),
    ("flushIntervalCommitLog", 500),
    ("commitIntervalCommitLog", 200),
    ("useReentrantLockWhenPutMessage", True),
    ("flushCommitLogTimed", True),
    ("flushIntervalConsumeQueue", 1000),
    ("cleanResourceInterval", 10_000),
    ("deleteCommitLogFilesInterval", 100),
    ("deleteConsumeQueueFilesInterval", 100),
    ("destroyMapedFileIntervalForcibly", 120_000),
    ("redeleteHangedFileInterval", 120_000),
    ("deleteWhen", "04"),
    ("diskMaxUsedSpaceRatio", 75),
    ("fileReservedTime", 72),
    ("putMsgIndexHightWater", 600_000),
    ("maxMessageSize", 4 * 1024 * 1024),
    ("checkCRCOnRecover", True),
    ("flushCommitLogLeastPages", 4),
    ("commitCommitLogLeastPages", 4),
    ("flushLeastPagesWhenWarmMapedFile", 4096),
    ("flushConsumeQueueLeastPages", 2),
    ("flushCommitLogThoroughInterval", 10_000),
    ("commitCommitLogThoroughInterval", 200),
    ("flushConsumeQueueThoroughInterval", 60_000),
    ("maxTransferBytesOnMessageInMemory", 256 * 1024),
    ("maxTransferCountOnMessageInMemory", 32),
    ("maxTransferBytesOnMessageInDisk", 64 * 1024),
    ("maxTransferCountOnMessageInDisk", 8),
    ("accessMessageInMemoryMaxRatio", 40),
    ("messageIndexEnable", True),
    ("maxHashSlotNum", 5_000_000),
    ("maxIndexNum", 20_000_000),
    ("maxMsgsNumBatch", 64),
    ("messageIndexSafe", False),
    ("haListenPort", 10912),
    ("haSendHeartbeatInterval", 5000),
    ("haHousekeepingInterval", 20_000),
    ("haTransferBatchSize", 32 * 1024),
    ("haMasterAddress", None),
    ("haSlaveFallbehindMax", 256 * 1024 * 1024),
    ("brokerRole", "ASYNC_MASTER"),
    ("flushDiskType", "ASYNC_FLUSH"),
    ("syncFlushTimeout", 5000),
    ("slaveTimeout", 3000),
    ("messageDelayLevel", DEFAULT_DELAY_LEVELS),
    ("flushDelayOffsetInterval", 10_000),
    ("cleanFileForciblyEnable", True),
    ("warmMapedFileEnable", False),
    ("offsetCheckInSlave", False),
    ("debugLockEnable", False),
    ("duplicationEnable", False),
    ("diskFallRecorded", True),
    ("osPageCacheBusyTimeOutMills", 1000),
    ("defaultQueryMaxNum", 32),
    ("transientStorePoolEnable", False),
    ("transientStorePoolSize", 5),
    ("fastFailIfNoBufferInStorePool", False),
    ("enableDLegerCommitLog", False),
    ("dLegerGroup", None),
    ("dLegerPeers", None),
    ("dLegerSelfId", None),
    ("preferredLeaderId", None),
    ("isEnableBatchPush", False),
    ("enableScheduleMessageStats", True),
    ("enableLmq", False),
    ("enableMultiDispatch", False),
    ("maxLmqConsumeQueueNum", 20_000),
    ("enableScheduleAsyncDeliver", False),
    ("scheduleAsyncDeliverMaxPendingLimit", 2000),
    ("scheduleAsyncDeliverMaxResendNum2Blocked", 3),
)
"""4.9.8's ``MessageStoreConfig`` fields in declaration order with their defaults as a
running 4.9.8 broker shows them (``bitMapLengthConsumeQueueExt`` is 112 there: its
ConsumerFilterManager sizes it from the bloom filter settings). None: Java null, not
printed."""


@dataclass
class MessageStoreConfig(PropertiesConfig):
    """Store settings; field metadata ``key`` is the RocketMQ property name."""

    ALIASES: ClassVar[Mapping[str, str]] = {
        "mapedFileSizeCommitLog": "mappedFileSizeCommitLog",
        "mapedFileSizeConsumeQueue": "mappedFileSizeConsumeQueue",
    }

    store_path_root_dir: str = field(
        default_factory=lambda: os.path.join(os.path.expanduser("~"), "store"),
        metadata=_key("storePathRootDir"),
    )
    store_path_commit_log: str | None = field(default=None, metadata=_key("storePathCommitLog"))
    mapped_file_size_commit_log: int = field(
        default=1024 * 1024 * 1024, metadata=_key("mappedFileSizeCommitLog")
    )
    mapped_file_size_consume_queue: int = field(
        default=300_000 * CQ_STORE_UNIT_SIZE, metadata=_key("mappedFileSizeConsumeQueue")
    )
    flush_disk_type: FlushDiskType = field(
        default=FlushDiskType.ASYNC_FLUSH, metadata=_key("flushDiskType")
    )
    broker_role: BrokerRole = field(default=BrokerRole.ASYNC_MASTER, metadata=_key("brokerRole"))
    flush_interval_commit_log: int = field(default=500, metadata=_key("flushIntervalCommitLog"))
    flush_commit_log_least_pages: int = field(default=4, metadata=_key("flushCommitLogLeastPages"))
    flush_commit_log_thorough_interval: int = field(
        default=10_000, metadata=_key("flushCommitLogThoroughInterval")
    )
    flush_interval_consume_queue: int = field(
        default=1000, metadata=_key("flushIntervalConsumeQueue")
    )
    flush_consume_queue_least_pages: int = field(
        default=2, metadata=_key("flushConsumeQueueLeastPages")
    )
    flush_consume_queue_thorough_interval: int = field(
        default=60_000, metadata=_key("flushConsumeQueueThoroughInterval")
    )
    sync_flush_timeout: int = field(default=5000, metadata=_key("syncFlushTimeout"))
    file_reserved_time: int = field(default=72, metadata=_key("fileReservedTime"))
    delete_when: str = field(default="04", metadata=_key("deleteWhen"))
    disk_max_used_space_ratio: int = field(default=75, metadata=_key("diskMaxUsedSpaceRatio"))
    clean_resource_interval: int = field(default=10_000, metadata=_key("cleanResourceInterval"))
    delete_commit_log_files_interval: int = field(
        default=100, metadata=_key("deleteCommitLogFilesInterval")
    )
    delete_consume_queue_files_interval: int = field(
        default=100, metadata=_key("deleteConsumeQueueFilesInterval")
    )
    destroy_mapped_file_interval_forcibly: int = field(
        default=120_000, metadata=_key("destroyMapedFileIntervalForcibly")
    )
    clean_file_forcibly_enable: bool = field(default=True, metadata=_key("cleanFileForciblyEnable"))
    max_message_size: int = field(default=4 * 1024 * 1024, metadata=_key("maxMessageSize"))
    max_hash_slot_num: int = field(default=5_000_000, metadata=_key("maxHashSlotNum"))
    max_index_num: int = field(default=20_000_000, metadata=_key("maxIndexNum"))
    max_msgs_num_batch: int = field(default=64, metadata=_key("maxMsgsNumBatch"))
    default_query_max_num: int = field(default=32, metadata=_key("defaultQueryMaxNum"))
    message_index_enable: bool = field(default=True, metadata=_key("messageIndexEnable"))
    message_index_safe: bool = field(default=False, metadata=_key("messageIndexSafe"))
    """Read for 4.9.8's sake; mq's recovery always starts no later than the index's
    checkpoint time, as 4.9.8 does with this key true (the index files are kept)."""
    check_crc_on_recover: bool = field(default=True, metadata=_key("checkCRCOnRecover"))
    message_delay_level: str = field(
        default=DEFAULT_DELAY_LEVELS, metadata=_key("messageDelayLevel")
    )
    flush_delay_offset_interval: int = field(
        default=10_000, metadata=_key("flushDelayOffsetInterval")
    )
    max_transfer_bytes_on_message_in_memory: int = field(
        default=256 * 1024, metadata=_key("maxTransferBytesOnMessageInMemory")
    )
    max_transfer_count_on_message_in_memory: int = field(
        default=32, metadata=_key("maxTransferCountOnMessageInMemory")
    )
    transient_store_pool_enable: bool = field(
        default=False, metadata=_key("transientStorePoolEnable")
    )
    # -- master/slave replication (RocketMQ's HAService) --
    ha_listen_port: int | None = field(default=None, metadata=_key("haListenPort"))
    """None: ``listenPort + 1``, as RocketMQ's BrokerStartup sets it."""
    ha_send_heartbeat_interval: int = field(default=5000, metadata=_key("haSendHeartbeatInterval"))
    ha_housekeeping_interval: int = field(default=20_000, metadata=_key("haHousekeepingInterval"))
    ha_transfer_batch_size: int = field(default=32 * 1024, metadata=_key("haTransferBatchSize"))
    ha_master_address: str | None = field(default=None, metadata=_key("haMasterAddress"))
    """A slave's fixed master HA address; else learnt from the name server."""
    ha_slave_fallbehind_max: int = field(
        default=256 * 1024 * 1024, metadata=_key("haSlaveFallbehindMax")
    )
    # -- controller mode: the in-sync set (RocketMQ 5's keys and defaults) --
    ha_max_time_slave_not_catchup: int = field(
        default=15_000, metadata=_key("haMaxTimeSlaveNotCatchup")
    )
    """A slave that has not caught up with the master for this long leaves the in-sync
    set."""
    all_ack_in_sync_state_set: bool = field(default=False, metadata=_key("allAckInSyncStateSet"))
    """SYNC_MASTER answers once every in-sync replica has a message."""
    min_in_sync_replicas: int = field(default=1, metadata=_key("minInSyncReplicas"))
    access_message_in_memory_max_ratio: int = field(
        default=40, metadata=_key("accessMessageInMemoryMaxRatio")
    )
    # RocketMQ reads these two from system properties; exposed here as plain settings.
    disk_space_warning_level_ratio: float = field(
        default=0.90, metadata=_key("diskSpaceWarningLevelRatio")
    )
    disk_space_clean_forcibly_ratio: float = field(
        default=0.85, metadata=_key("diskSpaceCleanForciblyRatio")
    )
    # -- timer messages at any time (RocketMQ 5's keys and defaults; store/timer/) --
    timer_wheel_enable: bool = field(default=True, metadata=_key("timerWheelEnable"))
    mapped_file_size_timer_log: int = field(
        default=100 * 1024 * 1024, metadata=_key("mappedFileSizeTimerLog")
    )
    timer_precision_ms: int = field(default=1000, metadata=_key("timerPrecisionMs"))
    """Rounded down to 100, 200, 500 or 1000 as RocketMQ 5's setter does."""
    timer_roll_window_slot: int = field(default=3600 * 24 * 2, metadata=_key("timerRollWindowSlot"))
    timer_flush_interval_ms: int = field(default=1000, metadata=_key("timerFlushIntervalMs"))
    timer_max_delay_sec: int = field(default=3600 * 24 * 3, metadata=_key("timerMaxDelaySec"))
    timer_congest_num_each_slot: int = field(
        default=2**31 - 1, metadata=_key("timerCongestNumEachSlot")
    )
    timer_stop_enqueue: bool = field(default=False, metadata=_key("timerStopEnqueue"))
    timer_stop_dequeue: bool = field(default=False, metadata=_key("timerStopDequeue"))
    timer_skip_unknown_error: bool = field(default=False, metadata=_key("timerSkipUnknownError"))
    timer_enable_retry_until_success: bool = field(
        default=False, metadata=_key("timerEnableRetryUntilSuccess")
    )
    timer_progress_log_interval_ms: int = field(
        default=10_000, metadata=_key("timerProgressLogIntervalMs")
    )

    def __post_init__(self) -> None:
        self.validate()

    # -- derived paths ---------------------------------------------------------------
    @property
    def root(self) -> Path:
        return Path(os.path.expanduser(self.store_path_root_dir))

    @property
    def commit_log_path(self) -> Path:
        if self.store_path_commit_log:
            return Path(os.path.expanduser(self.store_path_commit_log))
        return self.root / "commitlog"

    @property
    def consume_queue_path(self) -> Path:
        return self.root / "consumequeue"

    @property
    def index_path(self) -> Path:
        return self.root / "index"

    @property
    def checkpoint_path(self) -> Path:
        return self.root / "checkpoint"

    @property
    def abort_path(self) -> Path:
        return self.root / "abort"

    @property
    def lock_path(self) -> Path:
        return self.root / "lock"

    @property
    def config_path(self) -> Path:
        return self.root / "config"

    # -- delay levels ----------------------------------------------------------------
    def delay_level_table(self) -> dict[int, int]:
        """Delay level (1-based) -> delay in ms, parsed from ``messageDelayLevel``."""
        return parse_delay_levels(self.message_delay_level)

    # -- validation and parsing ------------------------------------------------------
    def validate(self) -> None:
        """Reject values the store cannot work with; round the CQ file size up to 20."""
        if self.mapped_file_size_commit_log < 4096:
            raise ConfigError(
                f"mappedFileSizeCommitLog must be >= 4096, got {self.mapped_file_size_commit_log}"
            )
        if self.mapped_file_size_consume_queue < CQ_STORE_UNIT_SIZE:
            raise ConfigError(
                "mappedFileSizeConsumeQueue must be >= 20, "
                f"got {self.mapped_file_size_consume_queue}"
            )
        rem = self.mapped_file_size_consume_queue % CQ_STORE_UNIT_SIZE
        if rem:
            self.mapped_file_size_consume_queue += CQ_STORE_UNIT_SIZE - rem
        for name in (
            "flush_interval_commit_log",
            "flush_interval_consume_queue",
            "sync_flush_timeout",
            "max_message_size",
            "max_hash_slot_num",
            "max_index_num",
            "clean_resource_interval",
            "flush_delay_offset_interval",
            "ha_send_heartbeat_interval",
            "ha_housekeeping_interval",
            "ha_transfer_batch_size",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_field_key(name)} must be > 0, got {getattr(self, name)}")
        for name in ("flush_commit_log_least_pages", "file_reserved_time"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{_field_key(name)} must be >= 0, got {getattr(self, name)}")
        if not 10 <= self.disk_max_used_space_ratio <= 95:
            raise ConfigError(
                f"diskMaxUsedSpaceRatio must be in 10..95, got {self.disk_max_used_space_ratio}"
            )
        for hour in self.delete_when.split(";"):
            if not hour.strip().isdigit() or not 0 <= int(hour) <= 23:
                raise ConfigError(f"deleteWhen must be hours 00..23 separated by ';': {hour!r}")
        if self.ha_listen_port is not None and not 0 <= self.ha_listen_port <= 65535:
            raise ConfigError(f"haListenPort must be 0..65535, got {self.ha_listen_port}")
        if not 0 <= self.access_message_in_memory_max_ratio <= 100:
            raise ConfigError(
                "accessMessageInMemoryMaxRatio must be 0..100, "
                f"got {self.access_message_in_memory_max_ratio}"
            )
        parse_delay_levels(self.message_delay_level)
        self.timer_precision_ms = timer_precision(self.timer_precision_ms)
        if self.timer_flush_interval_ms <= 0 or self.timer_max_delay_sec <= 0:
            raise ConfigError("timerFlushIntervalMs and timerMaxDelaySec must be > 0")

    @property
    def timer_check_path(self) -> Path:
        """RocketMQ 5's ``config/timercheck`` (``BrokerPathConfigHelper.getTimerCheckPath``)."""
        return self.config_path / "timercheck"


def timer_precision(ms: int) -> int:
    """``setTimerPrecisionMs``: the largest of 100, 200, 500, 1000 not above ``ms`` (100
    below it)."""
    candidates = (100, 200, 500, 1000)
    for low, high in itertools.pairwise(candidates):
        if ms < high:
            return low
    return candidates[-1]


def _field_key(name: str) -> str:
    for f in dataclasses.fields(MessageStoreConfig):
        if f.name == name:
            return str(f.metadata["key"])
    return name


def parse_delay_levels(text: str) -> dict[int, int]:
    """Parse ``"1s 5s 10s ..."`` into {level: ms}; raises ConfigError on a bad token."""
    table: dict[int, int] = {}
    for i, token in enumerate(text.split(), start=1):
        m = re.fullmatch(r"(\d+)([smhd])", token)
        if not m:
            raise ConfigError(f"bad messageDelayLevel entry {token!r}")
        table[i] = int(m.group(1)) * _TIME_UNITS_MS[m.group(2)]
    if not table:
        raise ConfigError("messageDelayLevel is empty")
    return table
