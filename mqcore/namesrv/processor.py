"""The name server's request processors (RocketMQ's ``DefaultRequestProcessor``).

All are synchronous: they only touch in-memory tables (KV writes fsync a small file), so
they answer without a task switch; the one exception is the decoding of a large
REGISTER_BROKER body, made on a worker thread (the tables are still changed on the loop).
Unknown codes get REQUEST_CODE_NOT_SUPPORTED from the dispatcher, unlike the Java name
server which stays silent (spec §13.11).
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Awaitable

from mqcore.common.properties import parse_properties
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from mqcore.namesrv.routeinfo import RouteInfoManager
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    BodyError,
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
)
from mqcore.protocol.bodies.register_compressed import decode_compressed
from mqcore.protocol.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from mqcore.remoting import Channel, RequestDispatcher

__all__ = ["NamesrvProcessor"]

log = logging.getLogger("mq.namesrv")

_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
# RegisterBrokerBody exists from MQVersion V3_0_11 (ordinal 37); older brokers send the
# bare topic config wrapper.
_V3_0_11 = 37

SUCCESS = ResponseCode.SUCCESS

DECODE_ON_LOOP_MAX = 64 * 1024
"""REGISTER_BROKER bodies up to this size (about 400 topics in JSON) are decoded on the
event loop; larger ones on a worker thread."""


def _ok(request: RemotingCommand, **kwargs: object) -> RemotingCommand:
    return RemotingCommand.response_to(request, SUCCESS, **kwargs)  # type: ignore[arg-type]


def _decode_register_body(body: bytes, compressed: bool, version: int) -> RegisterBrokerBody | None:
    """The body of REGISTER_BROKER (None when empty); raises BodyError."""
    if not body:
        return None
    if compressed:
        return decode_compressed(body, version)
    if version >= _V3_0_11:
        return RegisterBrokerBody.decode(body)
    return RegisterBrokerBody(TopicConfigSerializeWrapper.decode(body))


def _bad_register_body(
    channel: Channel, request: RemotingCommand, exc: BodyError
) -> RemotingCommand:
    log.warning("REGISTER_BROKER from %s: %s", channel.remote_address, exc)
    return RemotingCommand.response_to(
        request, ResponseCode.SYSTEM_ERROR, f"Failed to decode RegisterBrokerBody: {exc}"
    )


class NamesrvProcessor:
    """Binds the route and KV managers to request codes."""

    def __init__(
        self, config: NamesrvConfig, routes: RouteInfoManager, kv: KVConfigManager
    ) -> None:
        self.config = config
        self.routes = routes
        self.kv = kv

    def register_to(self, dispatcher: RequestDispatcher) -> None:
        table = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kvlist_by_namespace,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_list,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
        }
        for code, processor in table.items():
            dispatcher.register(code, processor)

    # -- KV config ------------------------------------------------------------------------

    def put_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = PutKVConfigRequestHeader.from_command(request)
        if not h.namespace or not h.key:
            return RemotingCommand.response_to(
                request, ResponseCode.SYSTEM_ERROR, "namespace or key is null"
            )
        self.kv.put(h.namespace, h.key, h.value)
        return _ok(request)

    def get_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = GetKVConfigRequestHeader.from_command(request)
        value = self.kv.get(h.namespace, h.key)
        if value is None:
            return RemotingCommand.response_to(
                request,
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {h.namespace} Key: {h.key}",
            )
        return _ok(request, ext_fields=GetKVConfigResponseHeader(value).to_ext_fields())

    def delete_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = DeleteKVConfigRequestHeader.from_command(request)
        self.kv.delete(h.namespace, h.key)
        return _ok(request)

    def get_kvlist_by_namespace(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = GetKVListByNamespaceRequestHeader.from_command(request)
        table = self.kv.namespace(h.namespace)
        if table is None:
            return RemotingCommand.response_to(
                request, ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}"
            )
        return _ok(request, body=KVTable(table).encode())

    # -- brokers ----------------------------------------------------------------------------

    def register_broker(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """REGISTER_BROKER, plain JSON or compressed (``compressed=true``: 4.9.8 and
        RocketMQ 5 brokers with ``compressedRegister``). A body of more than
        :data:`DECODE_ON_LOOP_MAX` bytes is decoded on a worker thread, so a broker of
        10,000 topics does not hold every other request up for the decode."""
        h = RegisterBrokerRequestHeader.from_command(request)
        body = bytes(request.body)
        if h.body_crc32 and (zlib.crc32(body) & 0x7FFFFFFF) != h.body_crc32:
            log.warning("REGISTER_BROKER from %s: crc32 mismatch", channel.remote_address)
            return RemotingCommand.response_to(
                request, ResponseCode.SYSTEM_ERROR, "crc32 not match"
            )
        if len(body) > DECODE_ON_LOOP_MAX:
            return self._register_decoded_off_loop(channel, request, h, body)
        try:
            parsed = _decode_register_body(body, h.compressed, request.version)
        except BodyError as exc:
            return _bad_register_body(channel, request, exc)
        return self._register(channel, request, h, parsed)

    async def _register_decoded_off_loop(
        self,
        channel: Channel,
        request: RemotingCommand,
        h: RegisterBrokerRequestHeader,
        body: bytes,
    ) -> RemotingCommand:
        try:
            parsed = await asyncio.to_thread(
                _decode_register_body, body, h.compressed, request.version
            )
        except BodyError as exc:
            return _bad_register_body(channel, request, exc)
        return self._register(channel, request, h, parsed)

    def _register(
        self,
        channel: Channel,
        request: RemotingCommand,
        h: RegisterBrokerRequestHeader,
        parsed: RegisterBrokerBody | None,
    ) -> RemotingCommand:
        result = self.routes.register_broker(
            h.cluster_name,
            h.broker_addr,
            h.broker_name,
            h.broker_id,
            h.ha_server_addr,
            parsed.topic_config_serialize_wrapper if parsed else None,
            parsed.filter_server_list if parsed else [],
            channel,
        )
        order = self.kv.namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return _ok(
            request,
            ext_fields=RegisterBrokerResponseHeader(
                result.ha_server_addr, result.master_addr
            ).to_ext_fields(),
            body=KVTable(order).encode() if order else b"",
        )

    def unregister_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = UnregisterBrokerRequestHeader.from_command(request)
        self.routes.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, h.broker_id)
        return _ok(request)

    def query_data_version(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = QueryDataVersionRequestHeader.from_command(request)
        version = DataVersion.decode(request.body) if request.body else DataVersion()
        changed = self.routes.is_broker_topic_config_changed(h.broker_addr, version)
        if not changed:
            self.routes.touch(h.broker_addr)
        ours = self.routes.query_data_version(h.broker_addr)
        return _ok(
            request,
            ext_fields=QueryDataVersionResponseHeader(changed).to_ext_fields(),
            body=ours.encode() if ours is not None else b"",
        )

    def wipe_write_perm_of_broker(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = WipeWritePermOfBrokerRequestHeader.from_command(request)
        count = self.routes.wipe_write_perm_of_broker(h.broker_name)
        log.info("wiped write perm of broker %s on %d topics", h.broker_name, count)
        return _ok(request, ext_fields=WipeWritePermOfBrokerResponseHeader(count).to_ext_fields())

    def add_write_perm_of_broker(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = AddWritePermOfBrokerRequestHeader.from_command(request)
        count = self.routes.add_write_perm_of_broker(h.broker_name)
        return _ok(request, ext_fields=AddWritePermOfBrokerResponseHeader(count).to_ext_fields())

    # -- routes and lists -----------------------------------------------------------------

    def get_route_info_by_topic(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = GetRouteInfoRequestHeader.from_command(request)
        route = self.routes.pick_topic_route_data(h.topic)
        if route is None:
            return RemotingCommand.response_to(
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {h.topic}{_FAQ}",
            )
        if self.config.order_message_enable:
            route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, h.topic)
        # Always the standard (quoted-key) form: Java and ali-ons both parse it (spec §6.4).
        return _ok(request, body=route.encode())

    def get_broker_cluster_info(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        return _ok(request, body=self.routes.get_all_cluster_info().encode())

    def get_all_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_all_topic_list().encode())

    def delete_topic_in_namesrv(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = DeleteTopicFromNamesrvRequestHeader.from_command(request)
        self.routes.delete_topic(h.topic, h.cluster_name)
        return _ok(request)

    def get_topics_by_cluster(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = GetTopicsByClusterRequestHeader.from_command(request)
        return _ok(request, body=self.routes.get_topics_by_cluster(h.cluster).encode())

    def get_system_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_system_topic_list().encode())

    def get_unit_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_unit_topics(unit=True, unit_sub=None).encode())

    def get_has_unit_sub_topic_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        topics = self.routes.get_unit_topics(unit=True, unit_sub=True)
        return _ok(request, body=topics.encode())

    def get_has_unit_sub_ununit_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        topics = self.routes.get_unit_topics(unit=False, unit_sub=True)
        return _ok(request, body=topics.encode())

    # -- configuration ----------------------------------------------------------------------

    def update_namesrv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        try:
            text = bytes(request.body).decode("utf-8")
        except UnicodeDecodeError:
            return RemotingCommand.response_to(
                request, ResponseCode.SYSTEM_ERROR, "config body is not UTF-8"
            )
        props = parse_properties(text)
        for fixed in ("listenPort", "bindAddress", "kvConfigPath", "logDir"):
            if fixed in props:
                return RemotingCommand.response_to(
                    request, ResponseCode.NO_PERMISSION, f"Can not update config path {fixed}"
                )
        self.config.update(props, source=f"UPDATE_NAMESRV_CONFIG from {channel.remote_address}")
        self.routes.expired = self.config.broker_channel_expired_time / 1000
        return _ok(request)

    def get_namesrv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.config.to_properties_text().encode())
