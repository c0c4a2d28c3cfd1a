"""`ConfigPersister`'s group commit: a durable request is answered once a write that read
the table after it is done, and requests made while a write runs share the next one."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path

import pytest

from mqcore.common import fastjson
from mqcore.errors import ConfigError
from mqcore.store.metadata import TopicConfig, TopicConfigManager
from mqcore.store.metadata.persister import ConfigPersister


class HeldManager(TopicConfigManager):
    """Its first write waits until released, so that requests pile up behind it."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.writing = threading.Event()
        self.release = threading.Event()

    def persist(self) -> None:
        if not self.writing.is_set():
            self.writing.set()
            assert self.release.wait(10)
        super().persist()


def test_concurrent_durable_requests_share_one_write(tmp_path: Path) -> None:
    manager = HeldManager(tmp_path)
    persister = ConfigPersister(interval=60)  # the interval never delays durable requests
    persister.start()
    try:
        manager.update(TopicConfig("First", 1, 1))
        first = persister.request_durable(manager)
        assert manager.writing.wait(10)
        later: list[Future[None]] = []
        for i in range(20):  # made while the first write is held
            manager.update(TopicConfig(f"T{i}", 1, 1))
            later.append(persister.request_durable(manager))
        assert not any(f.done() for f in later)
        manager.release.set()
        first.result(10)
        for future in later:
            future.result(10)
    finally:
        persister.close()
    assert manager.writes == 2  # 21 acknowledged creates, two writes
    reread = TopicConfigManager(tmp_path)
    reread.load()
    assert {"First", *(f"T{i}" for i in range(20))} <= reread.table.keys()


def test_a_durable_request_is_not_answered_by_a_write_that_began_before_it(
    tmp_path: Path,
) -> None:
    manager = HeldManager(tmp_path)
    persister = ConfigPersister(interval=60)
    persister.start()
    try:
        persister.request(manager)  # a lazy write, under way (and held) before the create
        assert manager.writing.wait(10)
        manager.update(TopicConfig("Late", 1, 1))
        late = persister.request_durable(manager)
        manager.release.set()
        late.result(10)
        reread = TopicConfigManager(tmp_path)
        reread.load()
        assert "Late" in reread.table
    finally:
        persister.close()


def test_without_a_thread_the_write_is_made_at_once(tmp_path: Path) -> None:
    manager = TopicConfigManager(tmp_path)
    manager.update(TopicConfig("Now", 1, 1))
    done = ConfigPersister().request_durable(manager)  # never started
    assert done.done() and done.result() is None
    assert manager.writes == 1


def test_a_failed_write_fails_its_waiters(tmp_path: Path) -> None:
    manager = TopicConfigManager(tmp_path, readonly=True)
    persister = ConfigPersister()
    persister.start()
    try:
        with pytest.raises(ConfigError, match="read-only"):
            persister.request_durable(manager).result(10)
    finally:
        persister.close()


def test_an_acknowledged_change_is_in_the_file_a_restart_reads(tmp_path: Path) -> None:
    """Creates and deletes from several threads, each waiting for its group commit: once
    one is answered, the file on disk (read as a broker restarted after a crash reads it,
    nothing flushed or closed) has it, whatever the other threads changed meanwhile."""
    manager = TopicConfigManager(tmp_path)
    for i in range(300):  # several segments of kept text
        manager.update(TopicConfig(f"Old{i}", 4, 4))
    manager.persist()
    persister = ConfigPersister(interval=60)
    persister.start()
    failures: list[str] = []

    def on_disk() -> dict[str, TopicConfig]:
        reread = TopicConfigManager(tmp_path)
        reread.load()
        return reread.table

    def creator(t: int) -> None:
        for i in range(30):
            name = f"T{t}-{i}"
            manager.update(TopicConfig(name, 1 + i % 3, 4))
            persister.request_durable(manager).result(10)
            if on_disk().get(name) != TopicConfig(name, 1 + i % 3, 4):
                failures.append(f"{name} acknowledged, not on disk")

    def deleter() -> None:
        for i in range(0, 300, 10):
            manager.delete(f"Old{i}")
            persister.request_durable(manager).result(10)
            if f"Old{i}" in on_disk():
                failures.append(f"Old{i} deleted, still on disk")

    threads = [threading.Thread(target=creator, args=(t,)) for t in range(3)]
    threads.append(threading.Thread(target=deleter))
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        persister.close()
    assert not failures
    assert on_disk() == manager.table
    assert manager.path.read_text() == fastjson.dumps_pretty(manager.to_json())
