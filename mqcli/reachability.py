"""Say on stderr when a consumer's broker stops answering and when it is back.

A push consumer retries failed pulls quietly (its library logs stay below the CLI's log
level), so a broker that went away looked like a topic with no traffic. The CLI watches
the pulls of its own consumer: the first failure per broker is one line (the error and
that it retries), the first success after that another.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mqcore.errors import MQError

if TYPE_CHECKING:
    from rich.console import Console

    from mqcore.client.api import MQClientAPI

__all__ = ["BrokerReachability"]


class BrokerReachability:
    """Tracks, per broker name, whether its last pull failed; prints the changes."""

    def __init__(self, console: Console, retry_seconds: float) -> None:
        self._console = console
        self._retry = retry_seconds
        self._down: set[str] = set()

    def failed(self, broker: str, error: BaseException) -> None:
        if broker in self._down:
            return
        self._down.add(broker)
        self._say(f"broker {broker} unreachable ({error}); retrying every {self._retry:g} s")

    def succeeded(self, broker: str) -> None:
        if broker not in self._down:
            return
        self._down.discard(broker)
        self._say(f"broker {broker} is reachable again; consuming")

    @property
    def down(self) -> frozenset[str]:
        return frozenset(self._down)

    def _say(self, text: str) -> None:
        self._console.print(text, style="yellow", markup=False, highlight=False)

    def observe(self, api: MQClientAPI) -> None:
        """Route ``api``'s pulls through this tracker (the consumer's own API object)."""
        pull: Callable[..., Awaitable[Any]] = api.pull

        async def observed(mq: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                result = await pull(mq, *args, **kwargs)
            except MQError as exc:
                self.failed(mq.broker_name, exc)
                raise
            self.succeeded(mq.broker_name)
            return result

        api.pull = observed  # type: ignore[method-assign]
