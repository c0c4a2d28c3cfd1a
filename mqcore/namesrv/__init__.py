"""The name server: route registry (RouteInfoManager), KV config, processors, controller."""

from __future__ import annotations

from mqcore.namesrv.config import NamesrvConfig, parse_properties
from mqcore.namesrv.controller import NamesrvController
from mqcore.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from mqcore.namesrv.processor import NamesrvProcessor
from mqcore.namesrv.routeinfo import BrokerLiveInfo, RegisterBrokerResult, RouteInfoManager

__all__ = [
    "NAMESPACE_ORDER_TOPIC_CONFIG",
    "BrokerLiveInfo",
    "KVConfigManager",
    "NamesrvConfig",
    "NamesrvController",
    "NamesrvProcessor",
    "RegisterBrokerResult",
    "RouteInfoManager",
    "parse_properties",
]
