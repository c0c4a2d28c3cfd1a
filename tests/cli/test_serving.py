"""What the server commands do to their process once a server has started."""

from __future__ import annotations

import gc

from mqcli.serving import freeze_startup_heap


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
