"""`TopicService`: the broker's topic logic over ``config/topics.json``.

RocketMQ's broker-side ``TopicConfigManager``: the built-in topics at start (``TBW102``
with perm 7 when ``autoCreateTopicEnable``), auto-creation on send from a template topic
(``createTopicInSendMessageMethod``), ``%RETRY%`` topics, and create/update/delete for
the admin codes.

Admin changes are on disk before the answer, as in RocketMQ, but the write is a group
commit on the persister's thread (concurrent creates share one write, and the event loop
never encodes nor fsyncs the table); topics that sends create are written soon after,
coalesced. Every change re-registers with the name servers soon, so routes show new
topics without waiting for the 30 s heartbeat; a created or changed topic is registered
alone (4.9.8's ``registerIncrementBrokerData``), so a create costs the same with ten
topics or ten thousand.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from mqcore.errors import MQError
from mqcore.message.const import AUTO_CREATE_TOPIC_KEY_TOPIC
from mqcore.store.metadata import (
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    TopicConfig,
    system_topic_configs,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqcore.broker.config import BrokerConfig
    from mqcore.store.metadata import ConsumerOffsetManager, TopicConfigManager
    from mqcore.store.metadata.persister import ConfigPersister

__all__ = ["TopicCreateError", "TopicService"]

log = logging.getLogger("mq.broker.topics")


class TopicCreateError(MQError, ValueError):
    """A send asked for a topic that cannot be made as asked (e.g. with no queue); the
    request is answered SYSTEM_ERROR with this message and nothing is created."""


class TopicService:
    """Reads go straight to the table; writes persist and re-register."""

    def __init__(
        self,
        manager: TopicConfigManager,
        config: BrokerConfig,
        *,
        offsets: ConsumerOffsetManager,
        persister: ConfigPersister,
        request_register: Callable[..., None],
        register_topics: Callable[[Iterable[str]], None] | None = None,
    ) -> None:
        self.manager = manager
        self.config = config
        self.offsets = offsets
        self.persister = persister
        self.unwritten: dict[str, Future[None]] = {}
        """Topics sends created whose ``topics.json`` write is still under way."""
        self.request_register = request_register
        """Re-register the whole table with the name servers (``force=True``)."""
        self.register_topics = register_topics or (lambda _: request_register(force=True))
        """Register some created or changed topics alone with the name servers."""

    def init_system_topics(self) -> None:
        """The built-in topics a 4.9.8 broker always has (added where absent, no bump)."""
        cfg = self.config
        self.manager.ensure_topics(
            system_topic_configs(
                cfg.broker_cluster_name,
                cfg.broker_name,
                auto_create_topic_enable=cfg.auto_create_topic_enable,
                default_topic_queue_nums=cfg.default_topic_queue_nums,
                cluster_topic_enable=cfg.cluster_topic_enable,
                broker_topic_enable=cfg.broker_topic_enable,
                trace_topic_enable=cfg.trace_topic_enable,
                trace_topic_name=cfg.msg_trace_topic_name,
            )
        )

    def select(self, topic: str) -> TopicConfig | None:
        return self.manager.table.get(topic)

    @property
    def table(self) -> dict[str, TopicConfig]:
        return self.manager.table

    # -- creation on send -----------------------------------------------------------------
    def create_in_send(
        self, topic: str, default_topic: str, client_queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """Create ``topic`` from the template ``default_topic`` if it may be inherited.

        Queue count is ``min(client default, template writeQueueNums)``, perm the
        template's minus INHERIT; None when there is no usable template. Raises
        TopicCreateError when that count is not positive: RocketMQ makes a topic of 0
        queues then, which no send can ever use."""
        existing = self.select(topic)
        if existing is not None:
            return existing
        template = self.select(default_topic)
        if template is None:
            log.warning("send to unknown topic %s: template topic %s missing", topic, default_topic)
            return None
        perm = template.perm
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and (
            not self.config.auto_create_topic_enable
        ):
            perm = PERM_READ | PERM_WRITE  # RocketMQ drops INHERIT: no auto-creation
        if not perm & PERM_INHERIT:
            log.warning(
                "send to unknown topic %s: template %s not inheritable", topic, default_topic
            )
            return None
        queue_nums = min(client_queue_nums, template.write_queue_nums)
        if queue_nums <= 0:
            raise TopicCreateError(
                f"cannot create topic[{topic}] with {queue_nums} queues: the send asks for "
                f"defaultTopicQueueNums={client_queue_nums}, template {default_topic} has "
                f"{template.write_queue_nums} write queues"
            )
        config = TopicConfig(
            topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm & ~PERM_INHERIT,
            topic_filter_type=template.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("auto-created topic %s from %s: %s", topic, default_topic, config)
        self._changed(config, durable=True)
        return config

    def create_in_send_back(
        self,
        topic: str,
        queue_nums: int,
        perm: int,
        topic_sys_flag: int = 0,
        *,
        durable: bool = False,
    ) -> TopicConfig:
        """``%RETRY%``/``%DLQ%`` topics, created without a template. ``durable``: a
        message about to be stored and acknowledged goes under it, so it waits in
        :attr:`unwritten` until ``topics.json`` holds it (a heartbeat's retry topics, a
        thousand at a time, are only written soon)."""
        existing = self.select(topic)
        if existing is not None:
            return existing
        config = TopicConfig(
            topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("created topic %s: %s", topic, config)
        self._changed(config, durable=durable)
        return config

    # -- a slave's own knowledge --------------------------------------------------------
    def learn_replicated(self, topic: str, queues: int) -> bool:
        """A slave holds records of ``topic`` in ``queues`` queues (its dispatcher built
        them from what it replicated): make sure it serves them, whatever the metadata
        sync has copied so far. A topic it lacks is added readable and writable with that
        many queues; one with fewer read queues grows. True when the table changed.

        The master's table replaces this one at the next sync that finds it changed, so
        what is learned here only fills the window in which the master made a topic the
        slave has not copied yet (and a master that died in it)."""
        config = self.manager.table.get(topic)
        if config is not None and config.read_queue_nums >= queues:
            return False
        if config is None:
            config = TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues)
        else:
            write = max(config.write_queue_nums, queues)
            config = dataclasses.replace(config, read_queue_nums=queues, write_queue_nums=write)
        log.info("learnt topic %s from replicated records: %s", topic, config)
        self.manager.update(config)
        self.persister.request(self.manager)
        return True

    def stamp_epoch(self, epoch: int) -> None:
        """Controller mode, a role change at ``epoch``: stamped into the data version
        (RocketMQ 5's ``nextVersion(masterEpoch)``) and written soon."""
        self.manager.stamp_epoch(epoch)
        self.persister.request(self.manager)

    def learn_queues(self, queues: Iterable[tuple[str, int]]) -> None:
        """:meth:`learn_replicated` for every topic of ``(topic, queue id)`` pairs."""
        counts: dict[str, int] = {}
        for topic, queue_id in queues:
            counts[topic] = max(counts.get(topic, 0), queue_id + 1)
        for topic, count in counts.items():
            self.learn_replicated(topic, count)

    # -- admin ----------------------------------------------------------------------------
    def update(self, *configs: TopicConfig) -> Future[None]:
        """Create or replace topics (UPDATE_AND_CREATE_TOPIC, and _LIST): in memory at
        once, registered alone with the name servers soon, and written by the persister's
        next group commit; the future completes when ``topics.json`` holds them (an admin
        answers only then)."""
        for config in configs:
            self.manager.update(config)
        written = self.persister.request_durable(self.manager)
        self.register_topics([c.topic_name for c in configs])
        return written

    def delete(self, topic: str) -> Future[None] | None:
        """Forget a topic and its consumer offsets (DELETE_TOPIC_IN_BROKER); the future
        completes when ``topics.json`` no longer holds it (None: there was no such
        topic). The whole table is registered again; name servers keep a topic a broker
        stops reporting, so routes change with DELETE_TOPIC_IN_NAMESRV, as in 4.9.8."""
        if self.manager.delete(topic) is None:
            return None
        self.offsets.remove_topic(topic)
        written = self.persister.request_durable(self.manager)
        self.request_register(force=True)
        return written

    def _changed(self, config: TopicConfig, *, durable: bool) -> None:
        """A topic a send (or a retry, a DLQ, a transaction, a heartbeat) creates, written
        off the loop and registered alone. ``durable`` (a message is stored under it and
        answered): by the persister's next group commit, started at once whatever the
        persist interval, the topic in :attr:`unwritten` until it is done, so the answer
        waits for it (4.9.8 writes the table before it stores the message that made the
        topic; a kill -9 right after the answer would otherwise leave an acknowledged
        message under a topic the restarted broker does not know). Otherwise coalesced
        with the persister's interval (a burst of new topics is one write)."""
        self.manager.update(config)
        if durable:
            self._write(config.topic_name)
        else:
            self.persister.request(self.manager)
        self.register_topics([config.topic_name])

    def _write(self, topic: str) -> Future[None]:
        """A group-commit write of the table that ``topic`` waits in :attr:`unwritten`
        for; it leaves once a write holding it succeeded."""
        written = self.persister.request_durable(self.manager)
        unwritten = self.unwritten
        unwritten[topic] = written

        def settled(done: Future[None]) -> None:  # on the persister's thread
            if done.exception() is None and unwritten.get(topic) is done:
                unwritten.pop(topic, None)

        written.add_done_callback(settled)
        return written

    @staticmethod
    async def written_or_why(written: Future[None], topic: str) -> str | None:
        """Wait for ``written`` (from :meth:`unwritten_of`); None once ``topic`` is on
        disk, else the remark to answer with (logged): the message is stored, but a
        crash would leave it under a topic the broker does not know, so the client
        retries and the next send tries the write again."""
        try:
            await asyncio.wrap_future(written)
        except Exception as exc:
            log.error("topic %s could not be written to topics.json: %s", topic, exc)
            return f"topic[{topic}] could not be written to topics.json: {exc}"
        return None

    def unwritten_of(self, *topics: str) -> Future[None] | None:
        """The write a message under one of ``topics`` must wait for before it is
        acknowledged, or None (the usual case: one dict test). A write that failed is
        tried again for this message (sends drive the retries, not a loop)."""
        unwritten = self.unwritten
        if not unwritten:
            return None
        for topic in topics:
            written = unwritten.get(topic)
            if written is None:
                continue
            if not written.done():
                return written
            if written.exception() is not None:
                return self._write(topic)
        return None
