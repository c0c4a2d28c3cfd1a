"""Receipt handles the access point renews for push consumers (RocketMQ 5's
``DefaultReceiptHandleManager``, ``enableProxyAutoRenew``).

A push consumer receives with ``auto_renew``: its messages are popped invisible for the
proxy's default time (60 s) and the proxy, not the client, keeps them invisible while the
client consumes: every ``renew_period_ms`` it extends each handle due within
``renew_ahead_ms`` by the next step of 5.x's renew policy (1, 3, 5, 10, 30 min, then 1 h),
for at most ``renew_max_ms`` after the receive. The client acks (or changes, or forwards)
with the handle it was given; the access point answers for the one it holds now. When
the client is gone, its messages are made visible again within
``invisible_when_clear_ms`` (1 s) rather than after their invisible time.

State lives here only: a restarted broker or access point forgets the handles, and the
messages come back when their current invisible time ends, as in RocketMQ 5.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from mqcore.protocol import RemotingCommand, ResponseCode
from mqcore.proxy.context import CallContext
from mqcore.proxy.receipts import ReceiptHandle, renewed_handle

__all__ = ["RENEW_POLICY_MS", "ReceiptHandleRenewer", "RenewTimings"]

log = logging.getLogger("mq.proxy")

RENEW_POLICY_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
"""5.x's ``RenewStrategyPolicy``: the n-th renewal extends by the n-th step (the last on)."""
_MAX_RENEW_RETRY_TIMES = 3

Change = Callable[[CallContext, str, str, ReceiptHandle, int], Awaitable[RemotingCommand]]
"""CHANGE_MESSAGE_INVISIBLETIME of (call, group, topic, handle, invisible ms)."""


@dataclass(frozen=True, slots=True)
class RenewTimings:
    """RocketMQ 5's ``ProxyConfig`` defaults; tests shorten them."""

    period_ms: int = 5_000
    """``renewSchedulePeriodMillis``."""
    ahead_ms: int = 10_000
    """``renewAheadTimeMillis``: renew a handle due within this."""
    max_ms: int = 3 * 3600 * 1000
    """``renewMaxTimeMillis``: no renewal this long after the receive."""
    invisible_when_clear_ms: int = 1_000
    """``invisibleTimeMillisWhenClear``: a gone client's messages come back this soon."""
    policy_ms: tuple[int, ...] = RENEW_POLICY_MS


@dataclass(slots=True)
class _Tracked:
    call: CallContext
    group: str
    topic: str
    given: str
    """The handle text the client holds (what it acks with)."""
    current: ReceiptHandle
    received_at: int
    renew_times: int = 0
    retries: int = 0
    renewing: asyncio.Future[None] | None = field(default=None)


def _now() -> int:
    return int(time.time() * 1000)


class ReceiptHandleRenewer:
    """The handles of auto-renewed receives, by client and (group, message id).
    ``alive(client_id)``: whether the client is still connected."""

    def __init__(self, change: Change, alive: Callable[[str], bool], timings: RenewTimings) -> None:
        self._change = change
        self._alive = alive
        self.timings = timings
        self._handles: dict[str, dict[tuple[str, str], _Tracked]] = {}
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return sum(len(handles) for handles in self._handles.values())

    def add(
        self, call: CallContext, group: str, topic: str, message_id: str, handle: ReceiptHandle
    ) -> None:
        """Keep ``handle`` invisible while the client consumes (starts the renewal task)."""
        handles = self._handles.setdefault(call.client_id, {})
        handles[(group, message_id)] = _Tracked(call, group, topic, handle.text, handle, _now())
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def take(
        self, client_id: str, group: str, message_id: str, given: str
    ) -> ReceiptHandle | None:
        """Stop renewing the message the client names by ``given``; the handle that is
        current now (after a renewal in flight), or None when it is not tracked."""
        handles = self._handles.get(client_id, {})
        tracked = handles.get((group, message_id))
        if tracked is None or tracked.given != given:
            return None
        del handles[(group, message_id)]
        if not handles:
            self._handles.pop(client_id, None)
        if tracked.renewing is not None:
            await asyncio.shield(tracked.renewing)
        return tracked.current

    # -- the renewal task -----------------------------------------------------------------
    async def _run(self) -> None:
        while self._handles:
            await asyncio.sleep(self.timings.period_ms / 1000)
            try:
                await self.renew_once()
            except Exception:  # keep renewing the others
                log.exception("renewing receipt handles failed")

    async def renew_once(self, now: int | None = None) -> None:
        """One scan: clear the handles of clients gone, renew those due."""
        now = _now() if now is None else now
        work = []
        for client_id in list(self._handles):
            if not self._alive(client_id):
                work += [self._clear(t, now) for t in self._handles.pop(client_id).values()]
                continue
            for key, tracked in list(self._handles[client_id].items()):
                if tracked.renewing is None and (
                    tracked.current.next_visible_time - now <= self.timings.ahead_ms
                ):
                    work.append(self._renew(client_id, key, tracked, now))
        await asyncio.gather(*work)

    async def _clear(self, tracked: _Tracked, now: int) -> None:
        """The client is gone: its message visible again soon (unless it is already)."""
        if tracked.current.next_visible_time <= now:
            return
        invisible = self.timings.invisible_when_clear_ms
        call, handle = tracked.call, tracked.current
        try:
            await self._change(call, tracked.group, tracked.topic, handle, invisible)
        except Exception as exc:
            log.info("clearing the handle of %s failed: %s", tracked.call.client_id, exc)

    async def _renew(
        self, client_id: str, key: tuple[str, str], tracked: _Tracked, now: int
    ) -> None:
        handles = self._handles.get(client_id, {})
        if now - tracked.received_at >= self.timings.max_ms:
            handles.pop(key, None)  # renewed long enough: it comes back when its time ends
            return
        policy = self.timings.policy_ms
        invisible = policy[min(tracked.renew_times, len(policy) - 1)]
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        tracked.renewing = done
        try:
            response = await self._change(
                tracked.call, tracked.group, tracked.topic, tracked.current, invisible
            )
            if response.code == ResponseCode.SUCCESS:
                tracked.current = renewed_handle(tracked.current, response)
                tracked.renew_times += 1
                tracked.retries = 0
            else:
                log.warning("renewal refused: %s %s", response.code, response.remark)
                handles.pop(key, None)
        except Exception as exc:
            tracked.retries += 1
            if tracked.retries >= _MAX_RENEW_RETRY_TIMES:
                handles.pop(key, None)
            log.info("renewing a handle of %s failed: %s", client_id, exc)
        finally:
            tracked.renewing = None
            done.set_result(None)

    def close(self) -> None:
        """Stop renewing; every handle's message comes back when its time ends."""
        task, self._task = self._task, None
        self._handles.clear()
        if task is not None:
            task.cancel()
