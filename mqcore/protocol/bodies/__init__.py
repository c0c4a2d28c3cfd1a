"""RocketMQ's JSON bodies as dataclasses: ``Cls.decode(bytes)`` and ``obj.encode()``.

Decoding accepts fastjson's dialect (bare integer keys, object keys); encoding writes
strict JSON that both Java 4.x and ali-ons accept.
"""

from __future__ import annotations

from mqcore.protocol.bodies.base import BodyError, MessageQueue, RemotingBody, decode_json
from mqcore.protocol.bodies.client import *  # noqa: F403
from mqcore.protocol.bodies.client import __all__ as _client
from mqcore.protocol.bodies.route import *  # noqa: F403
from mqcore.protocol.bodies.route import __all__ as _route
from mqcore.protocol.bodies.stats import *  # noqa: F403
from mqcore.protocol.bodies.stats import __all__ as _stats

__all__ = ["BodyError", "MessageQueue", "RemotingBody", "decode_json", *_client, *_route, *_stats]
