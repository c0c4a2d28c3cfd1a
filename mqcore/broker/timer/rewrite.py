"""The timer rewrite of a send: RocketMQ 5's ``HookUtils`` (``checkIfTimerMessage``,
``transformTimerMessage``).

A NOT/COMMIT message with ``TIMER_DELAY_SEC``, ``TIMER_DELAY_MS`` or ``TIMER_DELIVER_MS``
(in that order of precedence) whose deliver time lies ahead is stored in
``rmq_sys_wheel_timer`` queue 0 with ``TIMER_OUT_MS`` (the deliver time rounded down to
a precision tick, one tick lower when it falls on one: the slot of tick ``t`` holds the
times in ``(t, t + precision]`` and is delivered as ``t + precision`` begins) and the
real topic and queue in ``REAL_TOPIC``/``REAL_QID``. A deliver time already past leaves
the message as it is: it is stored to its topic at once. The refusals and their answers
are RocketMQ 5's:

- a value that is not a number: MESSAGE_ILLEGAL (WHEEL_TIMER_MSG_ILLEGAL's remark);
- more than ``timerMaxDelaySec`` ahead: the same;
- a delete marker (``TIMER_DEL_UNIQKEY``) whose time is past: the same;
- ``timerWheelEnable=false``: SYSTEM_ERROR (WHEEL_TIMER_NOT_ENABLE);
- a slot over ``timerCongestNumEachSlot``: SYSTEM_ERROR (WHEEL_TIMER_FLOW_CONTROL).

A message with a delay level keeps its level and loses the timer properties, as in 5.x;
one already carrying ``TIMER_OUT_MS`` (a delivered timer message sent again, e.g. back
for a retry) is not a timer message any more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mqcore.broker.java_order import rewrite_properties
from mqcore.broker.send_checks import SendRefused
from mqcore.message.const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    TIMER_TOPIC,
    SysFlag,
)
from mqcore.protocol import ResponseCode

if TYPE_CHECKING:
    from mqcore.message.model import MessageExt
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["TIMER_PROPERTIES", "TimerRewrite", "is_timer_message"]

TIMER_PROPERTIES = (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_SEC, PROPERTY_TIMER_DELAY_MS)
_TIMEABLE = (SysFlag.TRANSACTION_NOT_TYPE, SysFlag.TRANSACTION_COMMIT_TYPE)


def _delay_level(props: dict[str, str]) -> int:
    try:
        return int(props.get(PROPERTY_DELAY_TIME_LEVEL, "0"))
    except ValueError:
        return 0


def is_timer_message(msg: MessageExt) -> bool:
    """``checkIfTimerMessage``; drops the timer properties of a delay-level message."""
    props = msg.properties
    if _delay_level(props) > 0:
        for name in TIMER_PROPERTIES:
            props.pop(name, None)
        return False
    if msg.topic == TIMER_TOPIC or PROPERTY_TIMER_OUT_MS in props:
        return False
    return any(name in props for name in TIMER_PROPERTIES)


class TimerRewrite:
    """The rewrite with its config, clock and flow control."""

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        clock: Callable[[], int],
        is_reject: Callable[[int], bool],
        on_rewrite: Callable[[], None],
    ) -> None:
        self.config = config
        self.clock = clock
        self.is_reject = is_reject
        self.on_rewrite = on_rewrite
        """Told after each message parked in the timer topic (wakes the delivery)."""

    def _illegal(self) -> SendRefused:
        max_ms = self.config.timer_max_delay_sec * 1000
        return SendRefused(
            ResponseCode.MESSAGE_ILLEGAL,
            f"timer message illegal, the delay time should not be bigger than the max delay "
            f"{max_ms}ms; or if set del msg, the delay time should be bigger than the "
            "current time",
        )

    def rewrite(self, msg: MessageExt) -> MessageExt:
        """Park ``msg`` in the timer topic when it is a timer message due later; returns
        it. Raises SendRefused with RocketMQ 5's code and remark."""
        props = msg.properties
        if (
            PROPERTY_TIMER_DELIVER_MS not in props
            and PROPERTY_TIMER_DELAY_SEC not in props
            and PROPERTY_TIMER_DELAY_MS not in props
        ):
            return msg  # every send passes here: three dict lookups for the others
        if msg.sys_flag & SysFlag.TRANSACTION_MASK not in _TIMEABLE or not is_timer_message(msg):
            return msg
        config = self.config
        if not config.timer_wheel_enable:
            raise SendRefused(
                ResponseCode.SYSTEM_ERROR,
                "accurate timer message is not enabled, timerWheelEnable is false",
            )
        now = self.clock()
        try:
            if PROPERTY_TIMER_DELAY_SEC in props:
                deliver = now + int(props[PROPERTY_TIMER_DELAY_SEC]) * 1000
            elif PROPERTY_TIMER_DELAY_MS in props:
                deliver = now + int(props[PROPERTY_TIMER_DELAY_MS])
            else:
                deliver = int(props[PROPERTY_TIMER_DELIVER_MS])
        except ValueError:
            raise self._illegal() from None
        if deliver <= now:
            if PROPERTY_TIMER_DEL_UNIQKEY in props:
                raise self._illegal()
            return msg
        if deliver - now > config.timer_max_delay_sec * 1000:
            raise self._illegal()
        precision = config.timer_precision_ms
        if deliver % precision == 0:
            deliver -= precision
        else:
            deliver = deliver // precision * precision
        if self.is_reject(deliver):
            limit = config.timer_congest_num_each_slot
            raise SendRefused(
                ResponseCode.SYSTEM_ERROR,
                f"timer message is under flow control, max num limit is {limit * 2} or the "
                f"current value is greater than {limit} and less than {limit * 2}, trigger "
                "random flow control",
            )
        rewrite_properties(
            props,
            {
                PROPERTY_TIMER_OUT_MS: str(deliver),
                PROPERTY_REAL_TOPIC: msg.topic,
                PROPERTY_REAL_QUEUE_ID: str(msg.queue_id),
            },
        )
        msg.topic = TIMER_TOPIC
        msg.queue_id = 0
        self.on_rewrite()
        return msg
