"""Broker-level admin requests (RocketMQ's AdminBrokerProcessor, topic and broker half):
topics, broker config, runtime info, topic statistics (spec §9.4).

Consumer-group, offset and connection requests live in :mod:`.admin_group`. Topic
changes go through the context's ``topics`` so ``topics.json`` is persisted and the
broker re-registers with the name servers at once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqcore.broker.config import BROKER_CONFIG_FIELDS
from mqcore.broker.config_file import save_properties
from mqcore.broker.processor import reply, reply_when_written
from mqcore.broker.runtime_info import RuntimeInfo
from mqcore.common.properties import PropertiesConfig, camel, parse_properties
from mqcore.common.runtime_keys import (
    BROKER_CONFIG_BLACK_LIST,
    BROKER_RUNTIME_KEYS,
    RUNTIME_KEYS,
    STORE_RUNTIME_KEYS,
)
from mqcore.errors import ConfigError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    BodyError,
    DataVersion,
    KVTable,
    MessageQueue,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicOffset,
    TopicStatsTable,
)
from mqcore.protocol.bodies.topic_admin import CreateTopicListRequestBody
from mqcore.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetTopicStatsInfoRequestHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.remoting.settings import (
    NETTY_CLIENT_FIELDS,
    NETTY_SERVER_FIELDS,
    JavaDefault,
    java_text,
    rocketmq_config_items,
    rocketmq_config_text,
)
from mqcore.store.metadata import (
    TopicConfig,
    TopicFilterType,
    TopicNameError,
    is_system_topic,
    validate_topic_name,
)
from mqcore.store.metadata.topic import SYSTEM_TOPICS
from mqcore.store.store_config import MESSAGE_STORE_CONFIG_FIELDS, BrokerRole

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = [
    "BROKER_RUNTIME_KEYS",
    "STORE_RUNTIME_KEYS",
    "AdminProcessor",
    "handlers",
]

log = logging.getLogger("mq.broker.admin")

BROKER_PROPERTIES_FILE = "broker.properties"
"""Where a broker started without ``-c`` saves updated keys (``BrokerPathConfigHelper``'s
default name), here under the store's ``config`` directory."""

ROCKETMQ_CONFIG_TABLES: tuple[Sequence[tuple[str, JavaDefault]], ...] = (
    BROKER_CONFIG_FIELDS,
    NETTY_SERVER_FIELDS,
    NETTY_CLIENT_FIELDS,
    MESSAGE_STORE_CONFIG_FIELDS,
)
"""The config objects of a 4.9.8 broker's ``Configuration``, in its registration order."""

ROCKETMQ_DEFAULTS: dict[str, JavaDefault] = {
    key: default for table in ROCKETMQ_CONFIG_TABLES for key, default in table
}


class AdminProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.config_version = DataVersion(timestamp=int(time.time() * 1000))
        self.runtime = RuntimeInfo(ctx)

    # -- topics -------------------------------------------------------------------------

    def _refusal(self, topic: str) -> str | None:
        """Why ``topic`` may not be created or changed by an admin (None: it may)."""
        c = self.ctx
        if topic == c.config.broker_cluster_name:
            return f"The topic[{topic}] is conflict with system reserved words."
        try:
            validate_topic_name(topic)
        except TopicNameError as exc:
            return str(exc)
        if is_system_topic(topic):
            return f"The topic[{topic}] is conflict with system topic."
        return None

    async def update_and_create_topic(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = CreateTopicRequestHeader.from_command(request)
        c = self.ctx
        topic = header.topic
        if c.store_config.broker_role is BrokerRole.SLAVE:
            return reply(request, ResponseCode.SYSTEM_ERROR, "a slave broker cannot create topics")
        refusal = self._refusal(topic)
        if refusal is not None:
            return reply(request, ResponseCode.SYSTEM_ERROR, refusal)
        if header.read_queue_nums < 0 or header.write_queue_nums < 0:
            return reply(request, ResponseCode.SYSTEM_ERROR, "queue numbers must not be negative")
        try:
            filter_type = TopicFilterType(header.topic_filter_type or "SINGLE_TAG")
        except ValueError:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"unknown topicFilterType {header.topic_filter_type!r}",
            )
        config = TopicConfig(
            topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=filter_type,
            topic_sys_flag=header.topic_sys_flag or 0,
            order=header.order,
        )
        log.info("updateAndCreateTopic %s from %s", config, channel.remote_address)
        return await reply_when_written(request, c.topics.update(config))

    async def update_and_create_topic_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """RocketMQ 5's UPDATE_AND_CREATE_TOPIC_LIST: every topic is checked first (one
        bad name refuses the whole list with INVALID_PARAMETER, nothing created), then
        the topics that differ from what the broker has are made in one go: one write
        and one registration for the lot. (RocketMQ 5 stops at the first unchanged topic
        and answers SUCCESS without making the rest; here the rest are made.)"""
        c = self.ctx
        if c.store_config.broker_role is BrokerRole.SLAVE:
            return reply(request, ResponseCode.SYSTEM_ERROR, "a slave broker cannot create topics")
        try:
            configs = CreateTopicListRequestBody.decode(request.body).topic_config_list
        except BodyError as exc:
            return reply(request, ResponseCode.INVALID_PARAMETER, str(exc))
        for config in configs:
            refusal = self._refusal(config.topic_name)
            if refusal is None and (config.read_queue_nums < 0 or config.write_queue_nums < 0):
                refusal = f"topic[{config.topic_name}]: queue numbers must not be negative"
            if refusal is not None:
                return reply(request, ResponseCode.INVALID_PARAMETER, refusal)
        changed = [tc for tc in configs if c.topics.select(tc.topic_name) != tc]
        log.info(
            "updateAndCreateTopicList %d topic(s), %d changed, from %s: %s",
            len(configs),
            len(changed),
            channel.remote_address,
            ";".join(tc.topic_name for tc in configs[:20]) + (";..." if len(configs) > 20 else ""),
        )
        if not changed:
            return reply(request)
        return await reply_when_written(request, c.topics.update(*changed))

    async def delete_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = DeleteTopicRequestHeader.from_command(request)
        topic = header.topic
        if not topic.strip():
            return reply(request, ResponseCode.SYSTEM_ERROR, "The specified topic is blank.")
        if is_system_topic(topic):
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The topic[{topic}] is conflict with system topic.",
            )
        log.info("deleteTopic %s from %s", topic, channel.remote_address)
        written = self.ctx.topics.delete(topic)
        self.ctx.stats.remove_topic(topic)
        if written is None:
            return reply(request)
        return await reply_when_written(request, written)

    def get_all_topic_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """The full table with each topic's own perm (slaves copy it from here)."""
        manager = self.ctx.topic_configs
        wrapper = TopicConfigSerializeWrapper(dict(manager.table), manager.data_version)
        return reply(request, body=wrapper.encode())

    def get_system_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """GET_SYSTEM_TOPIC_LIST_FROM_BROKER: the built-in topics this broker has."""
        c = self.ctx
        names = {t for t in c.topic_configs.table if t in SYSTEM_TOPICS or is_system_topic(t)}
        names |= {c.config.broker_cluster_name, c.config.broker_name} & set(c.topic_configs.table)
        return reply(request, body=TopicList(names).encode())

    def get_topic_stats_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = GetTopicStatsInfoRequestHeader.from_command(request)
        c = self.ctx
        config = c.topics.select(header.topic)
        if config is None:
            return reply(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        store = c.store
        table: dict[MessageQueue, TopicOffset] = {}
        for qid in range(config.write_queue_nums):
            mq = MessageQueue(header.topic, c.config.broker_name, qid)
            min_offset = max(0, store.get_min_offset_in_queue(header.topic, qid))
            max_offset = max(0, store.get_max_offset_in_queue(header.topic, qid))
            last = 0
            if max_offset > 0:
                last = max(0, store.get_message_store_timestamp(header.topic, qid, max_offset - 1))
            table[mq] = TopicOffset(min_offset, max_offset, last)
        return reply(request, body=TopicStatsTable(table).encode())

    # -- runtime info -------------------------------------------------------------------

    def get_broker_runtime_info(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        return reply(request, body=KVTable(self.runtime.table()).encode())

    # -- broker config ------------------------------------------------------------------

    def config_text(self) -> str:
        """Every 4.9.8 key (``Configuration.getAllConfigsFormatString``), mq's values where
        it has the setting (the ports and addresses really in use), then mq's own keys."""
        c = self.ctx
        ha_port = c.store_config.ha_listen_port
        overrides = {
            "listenPort": c.config.listen_port,
            "brokerIP2": c.config.broker_ip2 or c.config.broker_ip1,
            "haListenPort": ha_port if ha_port is not None else c.config.listen_port + 1,
            "useTLS": c.config.tls_enable,
        }
        items = rocketmq_config_items(ROCKETMQ_CONFIG_TABLES, (c.config, c.store_config), overrides)
        return rocketmq_config_text(items)

    def config_file(self) -> Path:
        c = self.ctx
        if c.config.broker_config_path:
            return Path(c.config.broker_config_path)
        return c.store_config.config_path / BROKER_PROPERTIES_FILE

    def get_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = GetBrokerConfigResponseHeader(self.config_version.encode().decode())
        return reply(request, header=header, body=self.config_text().encode())

    def update_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """Save the keys in the config file (all or nothing) and apply the ones read at
        use at once; the others take effect at the next start (the remark says which)."""
        try:
            props = parse_properties(bytes(request.body).decode("utf-8"))
        except UnicodeDecodeError:
            return reply(request, ResponseCode.SYSTEM_ERROR, "config body is not UTF-8")
        if not props:
            return reply(request, ResponseCode.SYSTEM_ERROR, "string2Properties error")
        if any(k in BROKER_CONFIG_BLACK_LIST for k in props):
            return reply(
                request, ResponseCode.NO_PERMISSION, "Can not update config in black list."
            )
        level = props.get("logLevel")
        if level is not None and not isinstance(logging.getLevelName(level.upper()), int):
            return reply(request, ResponseCode.SYSTEM_ERROR, f"bad value for logLevel: {level!r}")
        c = self.ctx
        broker_keys = set(type(c.config).property_fields())
        store_keys = set(type(c.store_config).property_fields())
        broker_props = {k: v for k, v in props.items() if k in broker_keys}
        store_props = {k: v for k, v in props.items() if k in store_keys}
        foreign = {
            k: v
            for k, v in props.items()
            if k in ROCKETMQ_DEFAULTS and k not in broker_keys | store_keys
        }
        ignored = sorted(k for k in props if k not in broker_keys | store_keys | foreign.keys())
        try:
            broker_values = _checked_values(c.config, broker_props)
            store_values = _checked_values(c.store_config, store_props)
            for key, raw in foreign.items():
                _check_java_value(key, raw, ROCKETMQ_DEFAULTS[key])
        except ConfigError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        changes = {
            **{k: java_text(broker_values[_field(c.config, k)]) or "" for k in broker_props},
            **{k: java_text(store_values[_field(c.store_config, k)]) or "" for k in store_props},
            **{k: v.strip() for k, v in foreign.items()},
        }
        path = self.config_file()
        if changes:
            try:
                save_properties(path, changes)
            except OSError as exc:
                log.warning("cannot save the broker config in %s: %s", path, exc)
                return reply(
                    request, ResponseCode.SYSTEM_ERROR, f"cannot save the config in {path}: {exc}"
                )
        old_perm = c.config.broker_permission
        for name, value in broker_values.items():
            if _key(c.config, name) in BROKER_RUNTIME_KEYS:
                setattr(c.config, name, value)
        for name, value in store_values.items():
            if _key(c.store_config, name) in STORE_RUNTIME_KEYS:
                setattr(c.store_config, name, value)
        log.info(
            "updateBrokerConfig from %s: %s (saved in %s)", channel.remote_address, props, path
        )
        self.config_version = DataVersion(
            timestamp=int(time.time() * 1000), counter=self.config_version.counter + 1
        )
        self._apply_side_effects(old_perm, "logLevel" in props)
        restart = sorted(k for k in {**broker_props, **store_props} if k not in RUNTIME_KEYS)
        notes = []
        if restart:
            notes.append(
                f"{', '.join(restart)} saved in {path}: takes effect when the broker restarts"
            )
        if foreign:
            notes.append(f"{', '.join(sorted(foreign))} saved in {path}: no effect in mq")
        if ignored:
            notes.append(f"unknown keys ignored: {', '.join(ignored)}")
        return reply(request, remark="; ".join(notes) or None)

    def _apply_side_effects(self, old_perm: int, log_level_changed: bool) -> None:
        c = self.ctx
        c.locks.max_live = c.config.rebalance_lock_max_live_time / 1000
        if c.config.broker_permission != old_perm:
            # routes must show the new permission: bump the version, register now
            c.topic_configs.data_version.next_version()
            c.request_register(True)
        if log_level_changed:
            logging.getLogger("mq").setLevel(c.config.log_level.upper())


def _field(config: PropertiesConfig, key: str) -> str:
    """The dataclass field behind a property key (aliases included)."""
    return type(config).property_fields()[key].name


def _key(config: PropertiesConfig, name: str) -> str:
    """The canonical property key of a dataclass field."""
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        if f.name == name:
            return str(f.metadata.get("key") or camel(name))
    return name


def _check_java_value(key: str, raw: str, default: JavaDefault) -> None:
    """A value for a 4.9.8 key mq has no setting for must still fit the Java field."""
    sample = default() if callable(default) else default
    text = raw.strip()
    if isinstance(sample, bool):
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"bad value for {key}: {raw!r} (expected true or false)")
    elif isinstance(sample, int):
        try:
            int(text)
        except ValueError:
            raise ConfigError(f"bad value for {key}: {raw!r} (expected an integer)") from None


def _checked_values(config: PropertiesConfig, props: dict[str, str]) -> dict[str, Any]:
    """Converted values, validated by building a copy with them (ConfigError if bad)."""
    if not props:
        return {}
    values = type(config).parse_values(props)
    try:
        dataclasses.replace(config, **values)  # type: ignore[type-var]
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc
    return values


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    proc = AdminProcessor(ctx)
    return {
        RequestCode.UPDATE_AND_CREATE_TOPIC: proc.update_and_create_topic,
        RequestCode.UPDATE_AND_CREATE_TOPIC_LIST: proc.update_and_create_topic_list,
        RequestCode.DELETE_TOPIC_IN_BROKER: proc.delete_topic,
        RequestCode.GET_ALL_TOPIC_CONFIG: proc.get_all_topic_config,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: proc.get_system_topic_list,
        RequestCode.GET_TOPIC_STATS_INFO: proc.get_topic_stats_info,
        RequestCode.GET_BROKER_RUNTIME_INFO: proc.get_broker_runtime_info,
        RequestCode.GET_BROKER_CONFIG: proc.get_broker_config,
        RequestCode.UPDATE_BROKER_CONFIG: proc.update_broker_config,
    }
