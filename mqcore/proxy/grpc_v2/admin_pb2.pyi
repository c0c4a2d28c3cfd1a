import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from . import definition_pb2 as _definition_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageModel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MESSAGE_MODEL_UNSPECIFIED: _ClassVar[MessageModel]
    CLUSTERING: _ClassVar[MessageModel]
    BROADCASTING: _ClassVar[MessageModel]
    LITE_SELECTIVE: _ClassVar[MessageModel]
MESSAGE_MODEL_UNSPECIFIED: MessageModel
CLUSTERING: MessageModel
BROADCASTING: MessageModel
LITE_SELECTIVE: MessageModel

class ChangeLogLevelRequest(_message.Message):
    __slots__ = ("level",)
    class Level(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TRACE: _ClassVar[ChangeLogLevelRequest.Level]
        DEBUG: _ClassVar[ChangeLogLevelRequest.Level]
        INFO: _ClassVar[ChangeLogLevelRequest.Level]
        WARN: _ClassVar[ChangeLogLevelRequest.Level]
        ERROR: _ClassVar[ChangeLogLevelRequest.Level]
    TRACE: ChangeLogLevelRequest.Level
    DEBUG: ChangeLogLevelRequest.Level
    INFO: ChangeLogLevelRequest.Level
    WARN: ChangeLogLevelRequest.Level
    ERROR: ChangeLogLevelRequest.Level
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    level: ChangeLogLevelRequest.Level
    def __init__(self, level: _Optional[_Union[ChangeLogLevelRequest.Level, str]] = ...) -> None: ...

class ChangeLogLevelResponse(_message.Message):
    __slots__ = ("remark",)
    REMARK_FIELD_NUMBER: _ClassVar[int]
    remark: str
    def __init__(self, remark: _Optional[str] = ...) -> None: ...

class DescribeTopicStatusRequest(_message.Message):
    __slots__ = ("deployment_name", "topic")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    topic: _definition_pb2.Resource
    def __init__(self, deployment_name: _Optional[str] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ...) -> None: ...

class DescribeTopicStatusResponse(_message.Message):
    __slots__ = ("status", "topic_message_type", "description", "create_timestamp", "tags")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_MESSAGE_TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    topic_message_type: _definition_pb2.MessageType
    description: str
    create_timestamp: _timestamp_pb2.Timestamp
    tags: _containers.ScalarMap[str, str]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., topic_message_type: _Optional[_Union[_definition_pb2.MessageType, str]] = ..., description: _Optional[str] = ..., create_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tags: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListSubscriptionRequest(_message.Message):
    __slots__ = ("deployment_name", "topic", "group")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    topic: _definition_pb2.Resource
    group: _definition_pb2.Resource
    def __init__(self, deployment_name: _Optional[str] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ...) -> None: ...

class SubscriptionInfo(_message.Message):
    __slots__ = ("group", "topic", "expression", "online", "last_update_timestamp", "message_model", "subscription_consistency")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    ONLINE_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_MODEL_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_CONSISTENCY_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    topic: _definition_pb2.Resource
    expression: _definition_pb2.FilterExpression
    online: bool
    last_update_timestamp: _timestamp_pb2.Timestamp
    message_model: MessageModel
    subscription_consistency: bool
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., expression: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ..., online: _Optional[bool] = ..., last_update_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., message_model: _Optional[_Union[MessageModel, str]] = ..., subscription_consistency: _Optional[bool] = ...) -> None: ...

class ListSubscriptionResponse(_message.Message):
    __slots__ = ("status", "subscription_info")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_INFO_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    subscription_info: _containers.RepeatedCompositeFieldContainer[SubscriptionInfo]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., subscription_info: _Optional[_Iterable[_Union[SubscriptionInfo, _Mapping]]] = ...) -> None: ...

class DescribeSubscriptionRequest(_message.Message):
    __slots__ = ("deployment_name", "topic", "group")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    topic: _definition_pb2.Resource
    group: _definition_pb2.Resource
    def __init__(self, deployment_name: _Optional[str] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ...) -> None: ...

class DescribeSubscriptionResponse(_message.Message):
    __slots__ = ("status", "client_subscription_info")
    class ClientSubscriptionInfo(_message.Message):
        __slots__ = ("client_info", "subscription_info")
        CLIENT_INFO_FIELD_NUMBER: _ClassVar[int]
        SUBSCRIPTION_INFO_FIELD_NUMBER: _ClassVar[int]
        client_info: ClientInfo
        subscription_info: SubscriptionInfo
        def __init__(self, client_info: _Optional[_Union[ClientInfo, _Mapping]] = ..., subscription_info: _Optional[_Union[SubscriptionInfo, _Mapping]] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SUBSCRIPTION_INFO_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    client_subscription_info: _containers.RepeatedCompositeFieldContainer[DescribeSubscriptionResponse.ClientSubscriptionInfo]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., client_subscription_info: _Optional[_Iterable[_Union[DescribeSubscriptionResponse.ClientSubscriptionInfo, _Mapping]]] = ...) -> None: ...

class DeleteSubscriptionRequest(_message.Message):
    __slots__ = ("deployment_name", "topic", "group", "expression")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    topic: _definition_pb2.Resource
    group: _definition_pb2.Resource
    expression: _definition_pb2.FilterExpression
    def __init__(self, deployment_name: _Optional[str] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., expression: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ...) -> None: ...

class DeleteSubscriptionResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ...) -> None: ...

class ClientInfo(_message.Message):
    __slots__ = ("client_id", "version", "language", "hostname", "egress_ip", "message_model")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    EGRESS_IP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_MODEL_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    version: str
    language: str
    hostname: str
    egress_ip: str
    message_model: MessageModel
    def __init__(self, client_id: _Optional[str] = ..., version: _Optional[str] = ..., language: _Optional[str] = ..., hostname: _Optional[str] = ..., egress_ip: _Optional[str] = ..., message_model: _Optional[_Union[MessageModel, str]] = ...) -> None: ...

class MessageQueueItem(_message.Message):
    __slots__ = ("message_queue", "process_queue_info")
    MESSAGE_QUEUE_FIELD_NUMBER: _ClassVar[int]
    PROCESS_QUEUE_INFO_FIELD_NUMBER: _ClassVar[int]
    message_queue: _definition_pb2.MessageQueue
    process_queue_info: ProcessQueueInfo
    def __init__(self, message_queue: _Optional[_Union[_definition_pb2.MessageQueue, _Mapping]] = ..., process_queue_info: _Optional[_Union[ProcessQueueInfo, _Mapping]] = ...) -> None: ...

class ProcessQueueInfo(_message.Message):
    __slots__ = ("commit_offset", "cached_msg_min_offset", "cached_msg_max_offset", "cached_msg_count", "cached_msg_size_in_mib", "transaction_msg_min_offset", "transaction_msg_max_offset", "transaction_msg_count", "locked", "try_unlock_times", "last_lock_timestamp", "dropped", "last_pull_timestamp", "last_consume_timestamp")
    COMMIT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CACHED_MSG_MIN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CACHED_MSG_MAX_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CACHED_MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    CACHED_MSG_SIZE_IN_MIB_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_MSG_MIN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_MSG_MAX_OFFSET_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    LOCKED_FIELD_NUMBER: _ClassVar[int]
    TRY_UNLOCK_TIMES_FIELD_NUMBER: _ClassVar[int]
    LAST_LOCK_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    LAST_PULL_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    LAST_CONSUME_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    commit_offset: int
    cached_msg_min_offset: int
    cached_msg_max_offset: int
    cached_msg_count: int
    cached_msg_size_in_mib: int
    transaction_msg_min_offset: int
    transaction_msg_max_offset: int
    transaction_msg_count: int
    locked: bool
    try_unlock_times: int
    last_lock_timestamp: int
    dropped: bool
    last_pull_timestamp: int
    last_consume_timestamp: int
    def __init__(self, commit_offset: _Optional[int] = ..., cached_msg_min_offset: _Optional[int] = ..., cached_msg_max_offset: _Optional[int] = ..., cached_msg_count: _Optional[int] = ..., cached_msg_size_in_mib: _Optional[int] = ..., transaction_msg_min_offset: _Optional[int] = ..., transaction_msg_max_offset: _Optional[int] = ..., transaction_msg_count: _Optional[int] = ..., locked: _Optional[bool] = ..., try_unlock_times: _Optional[int] = ..., last_lock_timestamp: _Optional[int] = ..., dropped: _Optional[bool] = ..., last_pull_timestamp: _Optional[int] = ..., last_consume_timestamp: _Optional[int] = ...) -> None: ...

class ConsumeStatus(_message.Message):
    __slots__ = ("receive_rt", "receive_tps", "consume_rt", "consume_ok_tps", "consume_failed_tps", "consume_failed_msgs")
    RECEIVE_RT_FIELD_NUMBER: _ClassVar[int]
    RECEIVE_TPS_FIELD_NUMBER: _ClassVar[int]
    CONSUME_RT_FIELD_NUMBER: _ClassVar[int]
    CONSUME_OK_TPS_FIELD_NUMBER: _ClassVar[int]
    CONSUME_FAILED_TPS_FIELD_NUMBER: _ClassVar[int]
    CONSUME_FAILED_MSGS_FIELD_NUMBER: _ClassVar[int]
    receive_rt: float
    receive_tps: float
    consume_rt: float
    consume_ok_tps: float
    consume_failed_tps: float
    consume_failed_msgs: int
    def __init__(self, receive_rt: _Optional[float] = ..., receive_tps: _Optional[float] = ..., consume_rt: _Optional[float] = ..., consume_ok_tps: _Optional[float] = ..., consume_failed_tps: _Optional[float] = ..., consume_failed_msgs: _Optional[int] = ...) -> None: ...

class ConsumerRunningInfo(_message.Message):
    __slots__ = ("properties", "subscriptions", "message_queue_table", "consume_status_table")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class SubscriptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _definition_pb2.FilterExpression
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ...) -> None: ...
    class ConsumeStatusTableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ConsumeStatus
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ConsumeStatus, _Mapping]] = ...) -> None: ...
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_QUEUE_TABLE_FIELD_NUMBER: _ClassVar[int]
    CONSUME_STATUS_TABLE_FIELD_NUMBER: _ClassVar[int]
    properties: _containers.ScalarMap[str, str]
    subscriptions: _containers.MessageMap[str, _definition_pb2.FilterExpression]
    message_queue_table: _containers.RepeatedCompositeFieldContainer[MessageQueueItem]
    consume_status_table: _containers.MessageMap[str, ConsumeStatus]
    def __init__(self, properties: _Optional[_Mapping[str, str]] = ..., subscriptions: _Optional[_Mapping[str, _definition_pb2.FilterExpression]] = ..., message_queue_table: _Optional[_Iterable[_Union[MessageQueueItem, _Mapping]]] = ..., consume_status_table: _Optional[_Mapping[str, ConsumeStatus]] = ...) -> None: ...

class DescribeGroupAccumulationRequest(_message.Message):
    __slots__ = ("deployment_name", "group", "topics", "lite_topic")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    LITE_TOPIC_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    group: _definition_pb2.Resource
    topics: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Resource]
    lite_topic: str
    def __init__(self, deployment_name: _Optional[str] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[_definition_pb2.Resource, _Mapping]]] = ..., lite_topic: _Optional[str] = ...) -> None: ...

class DescribeGroupAccumulationResponse(_message.Message):
    __slots__ = ("status", "accumulation", "topic_accumulation", "lite_topic_accumulation")
    class GroupAccumulation(_message.Message):
        __slots__ = ("inflight_messages", "ready_messages", "accumulation", "deliver_delay_time", "last_consume_timestamp")
        INFLIGHT_MESSAGES_FIELD_NUMBER: _ClassVar[int]
        READY_MESSAGES_FIELD_NUMBER: _ClassVar[int]
        ACCUMULATION_FIELD_NUMBER: _ClassVar[int]
        DELIVER_DELAY_TIME_FIELD_NUMBER: _ClassVar[int]
        LAST_CONSUME_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        inflight_messages: int
        ready_messages: int
        accumulation: int
        deliver_delay_time: _duration_pb2.Duration
        last_consume_timestamp: int
        def __init__(self, inflight_messages: _Optional[int] = ..., ready_messages: _Optional[int] = ..., accumulation: _Optional[int] = ..., deliver_delay_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., last_consume_timestamp: _Optional[int] = ...) -> None: ...
    class TopicAccumulationEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DescribeGroupAccumulationResponse.GroupAccumulation
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DescribeGroupAccumulationResponse.GroupAccumulation, _Mapping]] = ...) -> None: ...
    class LiteTopicAccumulationEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DescribeGroupAccumulationResponse.GroupAccumulation
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DescribeGroupAccumulationResponse.GroupAccumulation, _Mapping]] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ACCUMULATION_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ACCUMULATION_FIELD_NUMBER: _ClassVar[int]
    LITE_TOPIC_ACCUMULATION_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    accumulation: DescribeGroupAccumulationResponse.GroupAccumulation
    topic_accumulation: _containers.MessageMap[str, DescribeGroupAccumulationResponse.GroupAccumulation]
    lite_topic_accumulation: _containers.MessageMap[str, DescribeGroupAccumulationResponse.GroupAccumulation]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., accumulation: _Optional[_Union[DescribeGroupAccumulationResponse.GroupAccumulation, _Mapping]] = ..., topic_accumulation: _Optional[_Mapping[str, DescribeGroupAccumulationResponse.GroupAccumulation]] = ..., lite_topic_accumulation: _Optional[_Mapping[str, DescribeGroupAccumulationResponse.GroupAccumulation]] = ...) -> None: ...

class QueryTimeSpanRequest(_message.Message):
    __slots__ = ("deployment_name", "group", "topics")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    group: _definition_pb2.Resource
    topics: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Resource]
    def __init__(self, deployment_name: _Optional[str] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[_definition_pb2.Resource, _Mapping]]] = ...) -> None: ...

class QueryTimeSpanResponse(_message.Message):
    __slots__ = ("status", "queue_time_span_list")
    class QueueTimeSpan(_message.Message):
        __slots__ = ("message_queue", "min_timestamp", "max_timestamp", "consume_timestamp", "delay_time_ms")
        MESSAGE_QUEUE_FIELD_NUMBER: _ClassVar[int]
        MIN_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        MAX_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        CONSUME_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        DELAY_TIME_MS_FIELD_NUMBER: _ClassVar[int]
        message_queue: _definition_pb2.MessageQueue
        min_timestamp: int
        max_timestamp: int
        consume_timestamp: int
        delay_time_ms: int
        def __init__(self, message_queue: _Optional[_Union[_definition_pb2.MessageQueue, _Mapping]] = ..., min_timestamp: _Optional[int] = ..., max_timestamp: _Optional[int] = ..., consume_timestamp: _Optional[int] = ..., delay_time_ms: _Optional[int] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_TIME_SPAN_LIST_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    queue_time_span_list: _containers.RepeatedCompositeFieldContainer[QueryTimeSpanResponse.QueueTimeSpan]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., queue_time_span_list: _Optional[_Iterable[_Union[QueryTimeSpanResponse.QueueTimeSpan, _Mapping]]] = ...) -> None: ...

class ListConsumerConnectionRequest(_message.Message):
    __slots__ = ("deployment_name", "group", "topic", "liteTopic")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    LITETOPIC_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    group: _definition_pb2.Resource
    topic: _definition_pb2.Resource
    liteTopic: str
    def __init__(self, deployment_name: _Optional[str] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., liteTopic: _Optional[str] = ...) -> None: ...

class ListConsumerConnectionResponse(_message.Message):
    __slots__ = ("status", "client_info")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_INFO_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    client_info: _containers.RepeatedCompositeFieldContainer[ClientInfo]
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., client_info: _Optional[_Iterable[_Union[ClientInfo, _Mapping]]] = ...) -> None: ...

class ResetGroupOffsetRequest(_message.Message):
    __slots__ = ("deployment_name", "group", "topic", "reset_timestamp")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    RESET_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    group: _definition_pb2.Resource
    topic: _definition_pb2.Resource
    reset_timestamp: _timestamp_pb2.Timestamp
    def __init__(self, deployment_name: _Optional[str] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., reset_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ResetGroupOffsetResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ...) -> None: ...

class ListMessageRequest(_message.Message):
    __slots__ = ("deployment_name", "topic", "max_message_nums", "begin_timestamp", "end_timestamp", "message_id", "message_key", "subscription", "lite_topic", "scroll_id", "page_num", "page_size", "broker_name", "queue_id")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_NUMS_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    END_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_KEY_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    LITE_TOPIC_FIELD_NUMBER: _ClassVar[int]
    SCROLL_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_NUM_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    BROKER_NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    topic: _definition_pb2.Resource
    max_message_nums: int
    begin_timestamp: _timestamp_pb2.Timestamp
    end_timestamp: _timestamp_pb2.Timestamp
    message_id: str
    message_key: str
    subscription: str
    lite_topic: str
    scroll_id: str
    page_num: int
    page_size: int
    broker_name: str
    queue_id: int
    def __init__(self, deployment_name: _Optional[str] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., max_message_nums: _Optional[int] = ..., begin_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., message_id: _Optional[str] = ..., message_key: _Optional[str] = ..., subscription: _Optional[str] = ..., lite_topic: _Optional[str] = ..., scroll_id: _Optional[str] = ..., page_num: _Optional[int] = ..., page_size: _Optional[int] = ..., broker_name: _Optional[str] = ..., queue_id: _Optional[int] = ...) -> None: ...

class ListMessageResponse(_message.Message):
    __slots__ = ("status", "messages", "scroll_id")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SCROLL_ID_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    messages: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Message]
    scroll_id: str
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[_definition_pb2.Message, _Mapping]]] = ..., scroll_id: _Optional[str] = ...) -> None: ...

class PrintThreadStackTraceRequest(_message.Message):
    __slots__ = ("deployment_name", "client_id", "group")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    client_id: str
    group: _definition_pb2.Resource
    def __init__(self, deployment_name: _Optional[str] = ..., client_id: _Optional[str] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ...) -> None: ...

class PrintThreadStackTraceResponse(_message.Message):
    __slots__ = ("status", "thread_stack_trace")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    THREAD_STACK_TRACE_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    thread_stack_trace: str
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., thread_stack_trace: _Optional[str] = ...) -> None: ...

class VerifyMessageRequest(_message.Message):
    __slots__ = ("deployment_name", "client_id", "group", "topic", "message_id")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    client_id: str
    group: _definition_pb2.Resource
    topic: _definition_pb2.Resource
    message_id: str
    def __init__(self, deployment_name: _Optional[str] = ..., client_id: _Optional[str] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., message_id: _Optional[str] = ...) -> None: ...

class VerifyMessageResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ...) -> None: ...

class AdminSendMessageRequest(_message.Message):
    __slots__ = ("deployment_name", "topic", "tag", "key", "body", "user_properties", "system_properties", "ext_info")
    class UserPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ExtInfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    USER_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    EXT_INFO_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    topic: _definition_pb2.Resource
    tag: str
    key: str
    body: bytes
    user_properties: _containers.ScalarMap[str, str]
    system_properties: _definition_pb2.SystemProperties
    ext_info: _containers.ScalarMap[str, str]
    def __init__(self, deployment_name: _Optional[str] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., tag: _Optional[str] = ..., key: _Optional[str] = ..., body: _Optional[bytes] = ..., user_properties: _Optional[_Mapping[str, str]] = ..., system_properties: _Optional[_Union[_definition_pb2.SystemProperties, _Mapping]] = ..., ext_info: _Optional[_Mapping[str, str]] = ...) -> None: ...

class AdminSendMessageResponse(_message.Message):
    __slots__ = ("status", "message_id")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    message_id: str
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., message_id: _Optional[str] = ...) -> None: ...

class GetConsumerRunningInfoRequest(_message.Message):
    __slots__ = ("deployment_name", "group", "client_id")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    group: _definition_pb2.Resource
    client_id: str
    def __init__(self, deployment_name: _Optional[str] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_id: _Optional[str] = ...) -> None: ...

class GetConsumerRunningInfoResponse(_message.Message):
    __slots__ = ("status", "consumer_running_info")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_RUNNING_INFO_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    consumer_running_info: ConsumerRunningInfo
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., consumer_running_info: _Optional[_Union[ConsumerRunningInfo, _Mapping]] = ...) -> None: ...

class GetTopicRouteRequest(_message.Message):
    __slots__ = ("deployment_name", "topic", "network_type", "protocol_type", "stream_request_type", "client_address")
    class NetworkType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        INTERNAL: _ClassVar[GetTopicRouteRequest.NetworkType]
        INTERNET: _ClassVar[GetTopicRouteRequest.NetworkType]
        INTRANET: _ClassVar[GetTopicRouteRequest.NetworkType]
    INTERNAL: GetTopicRouteRequest.NetworkType
    INTERNET: GetTopicRouteRequest.NetworkType
    INTRANET: GetTopicRouteRequest.NetworkType
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    NETWORK_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    STREAM_REQUEST_TYPE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    topic: _definition_pb2.Resource
    network_type: GetTopicRouteRequest.NetworkType
    protocol_type: str
    stream_request_type: bool
    client_address: str
    def __init__(self, deployment_name: _Optional[str] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., network_type: _Optional[_Union[GetTopicRouteRequest.NetworkType, str]] = ..., protocol_type: _Optional[str] = ..., stream_request_type: _Optional[bool] = ..., client_address: _Optional[str] = ...) -> None: ...

class GetTopicRouteResponse(_message.Message):
    __slots__ = ("status", "topic_route_data")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ROUTE_DATA_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    topic_route_data: str
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., topic_route_data: _Optional[str] = ...) -> None: ...

class GetProxyRuntimeStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetProxyRuntimeStatsResponse(_message.Message):
    __slots__ = ("status", "proxy_name", "version", "in_tps", "out_tps", "connections", "producers", "consumers")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PROXY_NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    IN_TPS_FIELD_NUMBER: _ClassVar[int]
    OUT_TPS_FIELD_NUMBER: _ClassVar[int]
    CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    PRODUCERS_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    status: _definition_pb2.Status
    proxy_name: str
    version: str
    in_tps: float
    out_tps: float
    connections: int
    producers: int
    consumers: int
    def __init__(self, status: _Optional[_Union[_definition_pb2.Status, _Mapping]] = ..., proxy_name: _Optional[str] = ..., version: _Optional[str] = ..., in_tps: _Optional[float] = ..., out_tps: _Optional[float] = ..., connections: _Optional[int] = ..., producers: _Optional[int] = ..., consumers: _Optional[int] = ...) -> None: ...
