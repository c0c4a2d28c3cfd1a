"""RocketMQ's JSON bodies as dataclasses: ``Cls.decode(bytes)`` and ``obj.encode()``.

Decoding accepts fastjson's dialect (bare integer keys, object keys); encoding writes
strict JSON that both Java 4.x and ali-ons accept. The submodules' names are re-exported
lazily (:mod:`mqcore.common.lazy`), route data first: that is what a producer needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqcore.protocol.bodies.base import BodyError, MessageQueue, RemotingBody, decode_json

if TYPE_CHECKING:
    from mqcore.protocol.bodies.client import *  # noqa: F403
    from mqcore.protocol.bodies.client import __all__ as _client
    from mqcore.protocol.bodies.controller import *  # noqa: F403
    from mqcore.protocol.bodies.controller import __all__ as _controller
    from mqcore.protocol.bodies.route import *  # noqa: F403
    from mqcore.protocol.bodies.route import __all__ as _route
    from mqcore.protocol.bodies.stats import *  # noqa: F403
    from mqcore.protocol.bodies.stats import __all__ as _stats

    __all__ = [
        "BodyError",
        "MessageQueue",
        "RemotingBody",
        "decode_json",
        *_client,
        *_controller,
        *_route,
        *_stats,
    ]
else:
    from mqcore.common.lazy import lazy_reexports

    __getattr__, __dir__ = lazy_reexports(
        globals(),
        ("route", "client", "stats", "controller"),
        eager=("BodyError", "MessageQueue", "RemotingBody", "decode_json"),
    )
