"""Timer messages at any delivery time: RocketMQ 5's wheel, timer log and checkpoint.

``wheel.py`` (``timerwheel``), ``timer_log.py`` (``timerlog/``), ``checkpoint.py``
(``config/timercheck``) are the byte layouts; ``timer_store.py`` is the
TimerMessageStore that moves messages through them. Synchronous, as all of the store.
"""

from mqcore.store.timer.checkpoint import TimerCheckpoint, TimerCheckpointValues
from mqcore.store.timer.timer_log import TimerLog, TimerUnit
from mqcore.store.timer.timer_store import TimerMessageStore, build_delete_key
from mqcore.store.timer.wheel import Slot, TimerWheel

__all__ = [
    "Slot",
    "TimerCheckpoint",
    "TimerCheckpointValues",
    "TimerLog",
    "TimerMessageStore",
    "TimerUnit",
    "TimerWheel",
    "build_delete_key",
]
