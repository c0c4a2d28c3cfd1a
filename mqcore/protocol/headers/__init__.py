"""Typed custom headers (``extFields``) of every request the name server and broker handle.

Each class is a frozen dataclass with ``from_ext_fields`` / ``from_command`` and
``to_ext_fields``; see :mod:`mqcore.protocol.headers.base` for the conversion rules.
The submodules' names are re-exported lazily (:mod:`mqcore.common.lazy`): a command that
only sends builds the send and route headers, not all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqcore.protocol.headers.base import CommandHeader, HeaderError, camel, wire

if TYPE_CHECKING:
    from mqcore.protocol.headers.admin import *  # noqa: F403
    from mqcore.protocol.headers.admin import __all__ as _admin
    from mqcore.protocol.headers.consume import *  # noqa: F403
    from mqcore.protocol.headers.consume import __all__ as _consume
    from mqcore.protocol.headers.controller import *  # noqa: F403
    from mqcore.protocol.headers.controller import __all__ as _controller
    from mqcore.protocol.headers.namesrv import *  # noqa: F403
    from mqcore.protocol.headers.namesrv import __all__ as _namesrv
    from mqcore.protocol.headers.pop import *  # noqa: F403
    from mqcore.protocol.headers.pop import __all__ as _pop
    from mqcore.protocol.headers.send import *  # noqa: F403
    from mqcore.protocol.headers.send import __all__ as _send

    __all__ = [
        "CommandHeader",
        "HeaderError",
        "camel",
        "wire",
        *_admin,
        *_consume,
        *_controller,
        *_namesrv,
        *_pop,
        *_send,
    ]
else:
    from mqcore.common.lazy import lazy_reexports

    __getattr__, __dir__ = lazy_reexports(
        globals(),
        ("send", "namesrv", "consume", "admin", "controller", "pop"),
        eager=("CommandHeader", "HeaderError", "camel", "wire"),
    )
