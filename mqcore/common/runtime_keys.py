"""Which broker config keys UPDATE_BROKER_CONFIG changes at run time, and which it refuses.

4.9.8 applies any key it is sent to its in-memory Configuration and saves it to the
config file, but most of its components read their settings once, at start: a changed
port, path, name, role or timer period takes effect when the broker restarts. The keys
below are those read where they are used, so a change counts at once; mq's broker
applies exactly these and saves the rest for the next start. The broker's admin
processor and the CLI (`mq broker config set`, which says which keys take effect now)
share them, so this module imports nothing.
"""

from __future__ import annotations

__all__ = ["BROKER_CONFIG_BLACK_LIST", "BROKER_RUNTIME_KEYS", "RUNTIME_KEYS", "STORE_RUNTIME_KEYS"]

BROKER_RUNTIME_KEYS = frozenset(
    {
        "autoCreateTopicEnable",
        "autoCreateSubscriptionGroup",
        "brokerPermission",
        "defaultTopicQueueNums",
        "channelExpiredTimeout",
        "longPollingEnable",
        "shortPollingTimeMills",
        "maxBatchBodySize",
        "enablePropertyFilter",
        "filterSupportRetry",
        "transactionTimeOut",
        "transactionCheckMax",
        "transactionCheckInterval",
        "traceOn",
        "maxReconsumeTimes",
        "rebalanceLockMaxLiveTime",
        "logLevel",
        "recallMessageEnable",
        "allowRecallWhenBrokerNotWriteable",
    }
)
"""BrokerConfig keys UPDATE_BROKER_CONFIG applies at once: each is read where it is
used. Others (ports, names, paths, roles, timer periods) are saved in the config file
and take effect at the next start, as in 4.9.8 (whose components read most keys once)."""

STORE_RUNTIME_KEYS = frozenset(
    {
        "fileReservedTime",
        "deleteWhen",
        "diskMaxUsedSpaceRatio",
        "cleanFileForciblyEnable",
        "cleanResourceInterval",
        "syncFlushTimeout",
        "maxMessageSize",
        "maxTransferBytesOnMessageInMemory",
        "maxTransferCountOnMessageInMemory",
        "defaultQueryMaxNum",
        "maxMsgsNumBatch",
        "diskSpaceWarningLevelRatio",
        "diskSpaceCleanForciblyRatio",
        # RocketMQ 5's timer switches, read at each pass or send (store/timer, broker/timer)
        "timerStopEnqueue",
        "timerStopDequeue",
        "timerMaxDelaySec",
        "timerCongestNumEachSlot",
        "timerEnableRetryUntilSuccess",
        "timerProgressLogIntervalMs",
    }
)
"""Store keys UPDATE_BROKER_CONFIG may change (read per operation by the store)."""

RUNTIME_KEYS = BROKER_RUNTIME_KEYS | STORE_RUNTIME_KEYS
"""Every key a running broker applies at once."""

BROKER_CONFIG_BLACK_LIST = frozenset({"brokerConfigPath", "rocketmqHome", "configBlackList"})
"""Keys UPDATE_BROKER_CONFIG refuses (4.9.8's AdminBrokerProcessor ``configBlackList``)."""
