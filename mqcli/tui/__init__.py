"""`mq tui`: a live Textual dashboard of a cluster (issue 7).

Layout, like Textual's own apps and frogmouth: :mod:`.app` (the App: modes, keys, the
poll loop), :mod:`.poller` (async snapshots through the ``Admin`` client), :mod:`.model`
(plain dataclasses the views render), ``screens/`` (one Screen per view), ``widgets/``
(small reusable widgets) and ``dialogs/`` (one ModalScreen per file). Styles live in
``mq.tcss``.
"""

from __future__ import annotations

__all__ = ["MQApp"]


def __getattr__(name: str) -> object:
    # Lazy, so `import mqcli.tui.model` does not pull in Textual.
    if name == "MQApp":
        from mqcli.tui.app import MQApp

        return MQApp
    raise AttributeError(name)
