"""Where half messages are, for END_TRANSACTION: handed out once, forgotten when old."""

from __future__ import annotations

from mqcore.proxy.transactions import TransactionDataStore


def test_an_entry_is_taken_once() -> None:
    store = TransactionDataStore()
    store.add("topic", "tx1", 7, 4096)
    data = store.take("topic", "tx1")
    assert data is not None
    assert (data.tran_state_table_offset, data.commit_log_offset) == (7, 4096)
    assert store.take("topic", "tx1") is None
    assert store.take("other-group", "tx1") is None


def test_an_expired_entry_is_not_handed_out_and_is_dropped() -> None:
    now = [1000]
    store = TransactionDataStore(expire_ms=100, clock_ms=lambda: now[0])
    store.add("g", "old", 1, 1)
    now[0] += 101
    assert store.take("g", "old") is None
    store.add("g", "a", 1, 1)
    now[0] += 101
    store.add("g", "b", 2, 2)  # adding drops what expired before it
    assert len(store) == 1
    assert store.take("g", "b") is not None


def test_the_oldest_entries_go_beyond_the_bound() -> None:
    store = TransactionDataStore(max_entries=2)
    for n in range(3):
        store.add("g", f"tx{n}", n, n)
    assert store.take("g", "tx0") is None
    assert store.take("g", "tx2") is not None
