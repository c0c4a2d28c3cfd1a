"""`BrokerConfig`: the broker's own settings under RocketMQ's property names.

One ``broker.conf`` holds broker and store keys side by side (as in RocketMQ); each
config class takes the keys it knows. Durations are milliseconds, as in RocketMQ.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from mqcore.common.net import local_ip
from mqcore.common.properties import PropertiesConfig, prop
from mqcore.common.receive_settings import ReceiveSettings
from mqcore.common.runtime_keys import BROKER_CONFIG_BLACK_LIST
from mqcore.errors import ConfigError
from mqcore.metrics.names import DEFAULT_PROM_PORT, MetricsExporterType
from mqcore.remoting.settings import JavaDefault, ServerSettings, available_processors

__all__ = ["BROKER_CONFIG_BLACK_LIST", "BROKER_CONFIG_FIELDS", "BrokerConfig", "local_ip"]


def _cpus(scale: int = 1, add: int = 0, high: int = 1 << 30) -> JavaDefault:
    """``min(high, add + scale * availableProcessors())``, computed when asked."""
    return lambda: min(high, add + scale * available_processors())


def _end_transaction_threads() -> int:
    cpus = available_processors()
    return max(8 + 2 * cpus, min(cpus, 4) * 4)


BROKER_CONFIG_FIELDS: tuple[tuple[str, JavaDefault], ...] = (
    ("rocketmqHome", lambda: os.environ.get("ROCKETMQ_HOME")),
    ("namesrvAddr", None),
    ("brokerIP1", None),
    ("brokerIP2", None),
    ("brokerName", None),
    ("brokerClusterName", "DefaultCluster"),
    ("brokerId", 0),
    ("brokerPermission", 6),
    ("defaultTopicQueueNums", 8),
    ("autoCreateTopicEnable", True),
    ("clusterTopicEnable", True),
    ("brokerTopicEnable", True),
    ("autoCreateSubscriptionGroup", True),
    ("messageStorePlugIn", ""),
    ("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC"),
    ("traceTopicEnable", False),
    ("sendMessageThreadPoolNums", _cpus(high=4)),
    ("putMessageFutureThreadPoolNums", _cpus(high=4)),
    ("pullMessageThreadPoolNums", _cpus(2, 16)),
    ("processReplyMessageThreadPoolNums", _cpus(2, 16)),
    ("queryMessageThreadPoolNums", _cpus(1, 8)),
    ("adminBrokerThreadPoolNums", 16),
    ("clientManageThreadPoolNums", 32),
    ("consumerManageThreadPoolNums", 32),
    ("heartbeatThreadPoolNums", _cpus(high=32)),
    ("endTransactionThreadPoolNums", _end_transaction_threads),
    ("flushConsumerOffsetInterval", 5000),
    ("flushConsumerOffsetHistoryInterval", 60_000),
    ("rejectTransactionMessage", False),
    ("fetchNamesrvAddrByAddressServer", False),
    ("sendThreadPoolQueueCapacity", 10_000),
    ("putThreadPoolQueueCapacity", 10_000),
    ("pullThreadPoolQueueCapacity", 100_000),
    ("replyThreadPoolQueueCapacity", 10_000),
    ("queryThreadPoolQueueCapacity", 20_000),
    ("clientManagerThreadPoolQueueCapacity", 1_000_000),
    ("consumerManagerThreadPoolQueueCapacity", 1_000_000),
    ("heartbeatThreadPoolQueueCapacity", 50_000),
    ("endTransactionPoolQueueCapacity", 100_000),
    ("filterServerNums", 0),
    ("longPollingEnable", True),
    ("shortPollingTimeMills", 1000),
    ("notifyConsumerIdsChangedEnable", True),
    ("highSpeedMode", False),
    ("commercialEnable", True),
    ("commercialTimerCount", 1),
    ("commercialTransCount", 1),
    ("commercialBigCount", 1),
    ("commercialBaseCount", 1),
    ("transferMsgByHeap", True),
    ("maxDelayTime", 40),
    ("regionId", "DefaultRegion"),
    ("registerBrokerTimeoutMills", 6000),
    ("slaveReadEnable", False),
    ("disableConsumeIfConsumerReadSlowly", False),
    ("consumerFallbehindThreshold", 16 * 1024 * 1024 * 1024),
    ("brokerFastFailureEnable", True),
    ("waitTimeMillsInSendQueue", 200),
    ("waitTimeMillsInPullQueue", 5000),
    ("waitTimeMillsInHeartbeatQueue", 31_000),
    ("waitTimeMillsInTransactionQueue", 3000),
    ("startAcceptSendRequestTimeStamp", 0),
    ("traceOn", True),
    ("enableCalcFilterBitMap", False),
    ("expectConsumerNumUseFilter", 32),
    ("maxErrorRateOfBloomFilter", 20),
    ("filterDataCleanTimeSpan", 24 * 3600 * 1000),
    ("filterSupportRetry", False),
    ("enablePropertyFilter", False),
    ("compressedRegister", False),
    ("forceRegister", True),
    ("registerNameServerPeriod", 30_000),
    ("transactionTimeOut", 6000),
    ("transactionCheckMax", 15),
    ("transactionCheckInterval", 60_000),
    ("aclEnable", False),
    ("storeReplyMessageEnable", True),
    ("enableDetailStat", True),
    ("autoDeleteUnusedStats", False),
    ("isolateLogEnable", False),
    ("configBlackList", "configBlackList;brokerConfigPath"),
)
"""4.9.8's ``BrokerConfig`` fields in declaration order with their defaults (the ones
computed from the processor count as 4.9.8 computes them)."""


@dataclass
class BrokerConfig(ServerSettings, ReceiveSettings, PropertiesConfig):
    """Broker settings; field names map to RocketMQ's camelCase keys."""

    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = field(default_factory=socket.gethostname)
    broker_id: int = 0
    """0 is the master; any other id is a slave of the master with the same name."""
    broker_ip1: str = prop("brokerIP1", default_factory=local_ip)
    broker_ip2: str | None = prop("brokerIP2", None)
    listen_port: int = 10911
    bind_address: str = "0.0.0.0"
    """Interface to listen on (RocketMQ always binds every interface)."""
    namesrv_addr: str | None = field(default_factory=lambda: os.environ.get("NAMESRV_ADDR"))
    """Name servers, ``host:port`` separated by ``;``."""
    broker_permission: int = 6
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    flush_consumer_offset_interval: int = 5000
    register_name_server_period: int = 30_000
    register_broker_timeout_mills: int = 6000
    force_register: bool = True
    """The periodic registration sends the whole table even where the name server holds
    its current data version (4.9.8's default); false asks QUERY_DATA_VERSION first."""
    compressed_register: bool = False
    """Registration bodies are zlib-compressed (4.9.8 and RocketMQ 5 name servers read
    them; topicSysFlag and order do not travel in that form, as in RocketMQ)."""
    enable_split_registration: bool = False
    """RocketMQ 5: a table of ``splitRegistrationSize`` topics or more registers in parts
    of that many. Needs mq's or RocketMQ 5's name server: 4.9.8's keeps the first part
    only (the parts share one data version)."""
    split_registration_size: int = 800
    channel_expired_timeout: int = 120_000
    """A client silent this long (no heartbeat) is dropped."""
    client_scan_interval: int = 10_000
    long_polling_enable: bool = True
    slave_read_enable: bool = False
    """Let pulls be steered to slaves (``suggestWhichBrokerId``), as RocketMQ's key."""
    short_polling_time_mills: int = 1000
    max_batch_body_size: int = 4 * 1024 * 1024
    enable_property_filter: bool = False
    filter_support_retry: bool = False
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60_000
    reject_transaction_message: bool = False
    """Refuse half messages (TRAN_MSG=true) with NO_PERMISSION."""
    store_reply_message_enable: bool = True
    """Also store replies (request/reply) in ``<cluster>_REPLY_TOPIC`` after pushing them."""
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    trace_topic_enable: bool = False
    """Create ``msg_trace_topic_name`` (one queue) at start, for clients' message traces."""
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    max_reconsume_times: int = 16
    rebalance_lock_max_live_time: int = 60_000
    acl_enable: bool = False
    """Check every request against the plain ACL file (RocketMQ's ``aclEnable``)."""
    plain_acl_file: str | None = None
    """The ACL file; default ``$ROCKETMQ_HOME/conf/plain_acl.yml``, else
    ``<storePathRootDir>/config/plain_acl.yml``."""
    tls_enable: bool = prop("tls.enable", False)
    """This broker's own connections (to name servers, a slave's to its master) use TLS."""
    tls_client_cert_path: str | None = prop("tls.client.certPath", None)
    tls_client_key_path: str | None = prop("tls.client.keyPath", None)
    tls_client_key_password: str | None = prop("tls.client.keyPassword", None)
    tls_client_trust_cert_path: str | None = prop("tls.client.trustCertPath", None)
    """The CA the servers' certificates must chain to (else the system's CAs)."""
    tls_test_mode_enable: bool = prop("tls.test.mode.enable", False)
    """Accept any server certificate (RocketMQ defaults to true; we do not)."""
    # -- controller mode (RocketMQ 5's keys and defaults) --
    enable_controller_mode: bool = False
    """Masters are elected by the controllers of ``controllerAddr``, not configured."""
    controller_addr: str = ""
    """The controllers, ``host:port`` separated by ``;``."""
    sync_broker_metadata_period: int = 5000
    check_sync_state_set_period: int = 5000
    sync_controller_metadata_period: int = 10_000
    controller_heart_beat_timeout_mills: int = 10_000
    """A broker silent this long to the controllers counts as dead (its master role is
    given to an in-sync replica)."""
    broker_heartbeat_interval: int = 1000
    broker_election_priority: int = (1 << 31) - 1
    """The lower, the likelier this broker is elected master among equals."""
    # -- POP consumption (RocketMQ 5's keys and defaults; mqcore/broker/pop) --
    revive_queue_num: int = 8
    """Queues of the revive topic ``rmq_sys_REVIVE_LOG_<cluster>`` (checkpoints, acks)."""
    revive_interval: int = 1000
    """How often (ms) the revive service reads the revive topic and revives what is due."""
    enable_retry_topic_v2: bool = False
    """Pop retry topics are ``%RETRY%<group>+<topic>`` instead of ``..._<topic>``."""
    retrieve_message_from_pop_retry_topic_v1: bool = True
    """With v2 retry topics, also pop from the v1 ones (messages revived before a switch)."""
    pop_from_retry_probability: int = 20
    """Percent of pops that read the retry topic first (so retries are not starved)."""
    pop_polling_size: int = 1024
    """Held POP requests per topic/queue before POLLING_FULL."""
    max_pop_polling_size: int = 100_000
    """Held POP requests in all before POLLING_FULL."""
    enable_pop_buffer_merge: bool = False
    """Keep checkpoints in memory a while so quick acks write nothing (PopBufferMergeService)."""
    pop_ck_stay_buffer_time: int = 10_000
    """How long (ms) a buffered checkpoint waits for its acks before it is written."""
    pop_ck_stay_buffer_time_out: int = 3000
    """A buffered checkpoint is written at the latest this long (ms) before its revive time."""
    pop_ck_max_buffer_size: int = 200_000
    """Checkpoints buffered at most; more are written at once."""
    pop_response_return_actual_retry_topic: bool = False
    """Answer a message from a pop retry topic under that topic, not rewritten to the
    original topic with its receipt in ``POP_CK`` (5.x's default rewrites)."""
    # -- recalling timer messages (RocketMQ 5's keys and defaults) --
    recall_message_enable: bool = False
    """RECALL_MESSAGE is served (refused with NO_PERMISSION otherwise)."""
    allow_recall_when_broker_not_writeable: bool = True
    # -- metrics (RocketMQ 5's keys and defaults; docs/operations.md) --
    metrics_exporter_type: MetricsExporterType = MetricsExporterType.DISABLE
    """PROM serves Prometheus metrics on ``metricsPromExporterPort``."""
    metrics_prom_exporter_port: int = DEFAULT_PROM_PORT
    """0: any free port (the broker's log and `mq broker` say which)."""
    metrics_prom_exporter_host: str = ""
    """Where the metrics port listens; blank: ``brokerIP1``, as RocketMQ 5."""
    metrics_label: str = ""
    """Labels added to every sample, ``"k1:v1,k2:v2"``."""
    # -- the gRPC access point of RocketMQ 5 (its proxy's key; docs/rocketmq5.md) --
    grpc_server_port: int | None = None
    """Serve ``apache.rocketmq.v2.MessagingService`` (the 5.x SDKs) on this port, as
    RocketMQ 5 runs its proxy in the broker (local mode); 0: any free port; unset: no
    gRPC access point (RocketMQ 5's proxy default is 8081)."""
    enable_stats_metrics: bool = True
    enable_request_metrics: bool = True
    enable_connection_metrics: bool = True
    enable_lag_and_dlq_metrics: bool = True
    enable_remoting_metrics: bool = True
    enable_message_store_metrics: bool = True
    log_dir: str = field(
        default_factory=lambda: os.path.join(os.path.expanduser("~"), "logs", "mqlogs")
    )
    log_level: str = "INFO"
    broker_config_path: str | None = None
    """The ``-c`` file: where UPDATE_BROKER_CONFIG saves what it changes (RocketMQ's
    ``BrokerPathConfigHelper``); None: ``<storePathRootDir>/config/broker.properties``."""

    def __post_init__(self) -> None:
        if not 0 <= self.listen_port <= 65535:
            raise ConfigError(f"listenPort must be 0..65535, got {self.listen_port}")
        if self.broker_id < 0:
            raise ConfigError(f"brokerId must be >= 0, got {self.broker_id}")
        if self.broker_permission & ~0xF:
            raise ConfigError(
                f"brokerPermission must be a 0..15 bit set, got {self.broker_permission}"
            )
        if self.default_topic_queue_nums <= 0:
            raise ConfigError("defaultTopicQueueNums must be > 0")
        if self.grpc_server_port is not None and not 0 <= self.grpc_server_port <= 65535:
            raise ConfigError(f"grpcServerPort must be 0..65535, got {self.grpc_server_port}")
        self.check_receive_settings()
        if not 0 <= self.metrics_prom_exporter_port <= 65535:
            raise ConfigError(
                f"metricsPromExporterPort must be 0..65535, got {self.metrics_prom_exporter_port}"
            )

    @property
    def broker_addr(self) -> str:
        """``brokerIP1:listenPort``, what the broker registers and stores as store host."""
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def ha_server_addr(self) -> str:
        return f"{self.broker_ip2 or self.broker_ip1}:{self.listen_port + 1}"

    @property
    def controller_addrs(self) -> list[str]:
        return [a.strip() for a in self.controller_addr.split(";") if a.strip()]

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in (self.namesrv_addr or "").split(";") if a.strip()]
