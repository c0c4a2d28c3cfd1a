"""Timer messages in the broker (RocketMQ 5): the send rewrite and the delivery service
over the store's :mod:`mqcore.store.timer`."""

from mqcore.broker.timer.rewrite import TimerRewrite, is_timer_message
from mqcore.broker.timer.service import TimerMessageService

__all__ = ["TimerMessageService", "TimerRewrite", "is_timer_message"]
