"""What the server commands do to their process once a server has started."""

from __future__ import annotations

import gc
import sys

from mqcli.serving import SERVER_SWITCH_INTERVAL, freeze_startup_heap, shorten_gil_switch_interval


def test_the_startup_heap_is_left_out_of_later_collections() -> None:
    """`mq broker` freezes what it loaded to start (its tables), so a full collection
    walks only what was made since; the test process thaws it again."""
    kept = [[n] for n in range(1000)]  # stands for the loaded tables (lists are tracked)
    before = gc.get_freeze_count()
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() >= before + len(kept)
        assert all(gc.is_tracked(t) for t in kept)
    finally:
        gc.unfreeze()


def test_a_server_takes_the_gil_back_within_a_millisecond() -> None:
    """`mq broker` shortens CPython's 5 ms switch interval: its event loop waits at most
    1 ms behind a helper thread running Python (the persister rendering topics.json)."""
    before = sys.getswitchinterval()
    try:
        shorten_gil_switch_interval()
        assert sys.getswitchinterval() == SERVER_SWITCH_INTERVAL == 0.001
    finally:
        sys.setswitchinterval(before)
