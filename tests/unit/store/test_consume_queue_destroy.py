"""ConsumeQueue.last_offset / destroy and ConsumeQueueTable.remove: what
cleanExpiredConsumerQueue and cleanUnusedTopic rely on."""

from __future__ import annotations

from pathlib import Path

from mqcore.store.consume_queue import ConsumeQueue
from mqcore.store.dispatcher import ConsumeQueueTable

SIZE = 10 * 20  # ten entries per file


def test_last_offset_is_where_the_last_record_ends(tmp_path: Path) -> None:
    cq = ConsumeQueue("T", 0, tmp_path, SIZE)
    assert cq.last_offset() == -1
    for i in range(12):  # into the second file
        cq.put(1000 + i * 50, 40, 0, i)
    assert cq.last_offset() == 1000 + 11 * 50 + 40
    cq.close()


def test_destroy_removes_files_and_directory(tmp_path: Path) -> None:
    cq = ConsumeQueue("T", 3, tmp_path, SIZE)
    for i in range(15):
        cq.put(i * 10, 10, 0, i)
    assert len(list((tmp_path / "T" / "3").iterdir())) == 2
    cq.destroy()
    assert not (tmp_path / "T" / "3").exists()
    assert (cq.min_offset, cq.max_offset, cq.last_offset()) == (0, 0, -1)


def test_table_remove_forgets_the_queue_and_an_empty_topic(tmp_path: Path) -> None:
    table = ConsumeQueueTable(tmp_path, SIZE)
    a0, a1 = table.find("A", 0), table.find("A", 1)
    assert a0 is not None and a1 is not None
    assert table.remove("A", 0) is a0
    assert table.find("A", 0, create=False) is None and "A" in table.queues
    assert table.remove("A", 1) is a1 and "A" not in table.queues
    assert table.remove("A", 1) is None and table.remove("Nope", 0) is None
    table.close()
