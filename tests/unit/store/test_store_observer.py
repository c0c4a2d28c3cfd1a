"""The store tells its observer (the broker's put/get timing) of each put's result and
each get, and works the same without one."""

from __future__ import annotations

from pathlib import Path

from storetest_util import make_msg, open_store

from mqcore.store.results import PutResult, PutStatus


def test_the_store_tells_its_observer(tmp_path: Path) -> None:
    seen: list[object] = []

    class Observer:
        def on_put(self, result: PutResult, started: float) -> None:
            seen.append(result.status)

        def on_get(self, started: float) -> None:
            seen.append("get")

    store = open_store(tmp_path)
    try:
        assert store.put_messages([make_msg()]).status is PutStatus.PUT_OK  # no observer
        store.observer = Observer()
        store.put_messages([make_msg()])
        store.put_messages([])  # refused: told too
        store.dispatch_pending()
        assert len(store.get_messages(make_msg().topic, 0, 0, 8).buffers) == 2
    finally:
        store.shutdown()
    assert seen == [PutStatus.PUT_OK, PutStatus.MESSAGE_ILLEGAL, "get"]
