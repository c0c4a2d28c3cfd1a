"""The official RocketMQ 5 Python SDK (PyPI ``rocketmq-python-client``) against mq's gRPC
access point: the producer examples of apache/rocketmq-clients' ``python/example/``
(normal, FIFO, delay, transaction) and consumer examples (simple, push) with their logic
kept and only the endpoint and the credentials changed. Run by the SDK's own
virtualenv's Python (its top-level package ``rocketmq`` is not the dev venv's
``rocketmq`` 0.4.4), never imported by the tests.

    rmq5_clients.py normal ENDPOINT TOPIC
    rmq5_clients.py fifo ENDPOINT TOPIC
    rmq5_clients.py delay ENDPOINT TOPIC SECONDS [recall]
    rmq5_clients.py transaction ENDPOINT TOPIC commit|rollback|check
    rmq5_clients.py simple ENDPOINT TOPIC GROUP COUNT [INVISIBLE_SECONDS [skip-first]]
    rmq5_clients.py push ENDPOINT TOPIC GROUP [fail-first|fail-once|fail-always]

Credentials come from ``MQ_ACCESS_KEY``/``MQ_SECRET_KEY`` when set. One JSON object per
stdout line for each send receipt (and ``{"checked": id, ...}`` when the broker's
check-back reached the checker); any failure ends the process with a non-zero exit code, the
SDK's exception on stderr (the examples print and go on; a judge must not). The consumers
print ``{"received"|"acked"|"consumed": id, ...}`` lines; the examples consume forever, so
the simple consumer stops once COUNT messages are acknowledged, and the push consumer, as
its example waits for Enter, runs until stdin closes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)

_EMITTING = threading.Lock()


def emit(**fields: object) -> None:
    """One JSON line, whole (a push consumer's listener runs on many threads)."""
    line = json.dumps(fields) + "\n"
    with _EMITTING:
        sys.stdout.write(line)
        sys.stdout.flush()


def receipt(res: object) -> None:
    emit(
        message_id=res.message_id,  # type: ignore[attr-defined]
        offset=res.offset,  # type: ignore[attr-defined]
        transaction_id=res.transaction_id,  # type: ignore[attr-defined]
    )


def config(endpoints: str) -> ClientConfiguration:
    access_key = os.environ.get("MQ_ACCESS_KEY")
    credentials = (
        Credentials(access_key, os.environ["MQ_SECRET_KEY"]) if access_key else Credentials()
    )
    return ClientConfiguration(endpoints, credentials)


def normal(endpoints: str, topic: str) -> None:
    """normal_producer_example.py: one message, ten sends."""
    producer = Producer(config(endpoints), (topic,))
    producer.startup()
    try:
        msg = Message()
        msg.topic = topic
        msg.body = b"hello, rocketmq."
        msg.tag = "tag"
        msg.keys = "keys"
        msg.add_property("key", "value")
        for _ in range(10):
            receipt(producer.send(msg))
    finally:
        producer.shutdown()


def fifo(endpoints: str, topic: str) -> None:
    """fifo_producer_example.py: nine messages, groups "1" and "2" in turn."""
    producer = Producer(config(endpoints), (topic,))
    producer.startup()
    try:
        for i in range(1, 10):
            msg = Message()
            msg.topic = topic
            msg.body = b"hello, rocketmq."
            msg.tag = "rocketmq-send-fifo-message"
            if i % 2 != 0:
                msg.message_group = "1"
            else:
                msg.message_group = "2"
            receipt(producer.send(msg))
    finally:
        producer.shutdown()


def delay(endpoints: str, topic: str, seconds: str, then: str = "") -> None:
    """delay_producer_example.py: one message due ``seconds`` from now (the example: 10);
    with ``recall``, the producer then recalls it with its receipt's recall handle
    (``Producer.recall_message``) and says ``{"recalled": id}``."""
    producer = Producer(config(endpoints), (topic,))
    producer.startup()
    try:
        msg = Message()
        msg.topic = topic
        msg.body = b"hello, rocketmq."
        msg.tag = "rocketmq-send-delay-message"
        msg.delivery_timestamp = int(time.time()) + int(seconds)
        res = producer.send(msg)
        receipt(res)
        emit(delivery_timestamp=msg.delivery_timestamp)
        if then == "recall":
            emit(recalled=producer.recall_message(topic, res.recall_handle))
    finally:
        producer.shutdown()


class CommitChecker(TransactionChecker):
    """The example's checker: commit, saying which message the broker asked about."""

    def check(self, message: Message) -> TransactionResolution:
        emit(checked=message.message_id, tag=message.tag, topic=message.topic)
        return TransactionResolution.COMMIT


def transaction(endpoints: str, topic: str, how: str) -> None:
    """transaction_producer_example.py: one half message, ended by the producer (commit or
    rollback) or, with ``check``, by the checker when the broker's check-back comes."""
    checker = CommitChecker()
    producer = Producer(config(endpoints), (topic,), checker=checker)
    producer.startup()
    try:
        transaction = producer.begin_transaction()
        msg = Message()
        msg.topic = topic
        msg.body = b"hello, rocketmq."
        msg.tag = "rocketmq-send-transaction-message"
        receipt(producer.send(msg, transaction))
        if how == "check":
            # as the example waits for Enter: the test closes stdin once the broker's
            # check-back has reached the checker and its commit has been stored
            sys.stdin.read()
        elif how == "commit":
            transaction.commit()
        else:
            transaction.rollback()
    finally:
        producer.shutdown()


def described(msg: Message) -> dict[str, object]:
    return {
        "topic": msg.topic,
        "tag": msg.tag,
        "body": msg.body.decode(),
        "message_group": msg.message_group,
        "delivery_attempt": msg.delivery_attempt,
    }


def simple(endpoints: str, topic: str, group: str, count: str, *rest: str) -> None:
    """simple_consumer_example.py: receive up to 32 messages invisible for 15 s (or
    INVISIBLE_SECONDS), ack each, until COUNT are acknowledged. ``skip-first`` leaves
    each message's first delivery unacknowledged, so it must come again."""
    invisible = int(rest[0]) if rest else 15
    skip_first = rest[1:] == ("skip-first",)
    simple_consumer = SimpleConsumer(config(endpoints), group, {topic: FilterExpression()})
    simple_consumer.startup()
    try:
        acked: set[str] = set()
        seen: set[str] = set()
        while len(acked) < int(count):
            messages = simple_consumer.receive(32, invisible)
            for msg in messages or ():
                emit(received=msg.message_id, **described(msg))
                if skip_first and msg.message_id not in seen:
                    seen.add(msg.message_id)
                    continue
                simple_consumer.ack(msg)
                acked.add(msg.message_id)
                emit(acked=msg.message_id)
    finally:
        simple_consumer.shutdown()


class EmittingListener(MessageListener):
    """The example's listener: SUCCESS, saying what it consumed. ``fail-first``: the first
    delivery of each message is a FAILURE (the SDK then makes it visible again after its
    retry policy's delay); ``fail-once``: only the very first message's is;
    ``fail-always``: every delivery is."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.failed: set[str] = set()

    def consume(self, message: Message) -> ConsumeResult:
        if self.how == "fail-always":
            emit(failed=message.message_id, **described(message))
            return ConsumeResult.FAILURE
        fails = self.how == "fail-first" or (self.how == "fail-once" and not self.failed)
        if fails and message.message_id not in self.failed:
            self.failed.add(message.message_id)
            emit(failed=message.message_id, **described(message))
            return ConsumeResult.FAILURE
        emit(consumed=message.message_id, **described(message))
        return ConsumeResult.SUCCESS


def push(endpoints: str, topic: str, group: str, *rest: str) -> None:
    """push_consumer_example.py: a push consumer of ``topic`` until stdin closes."""
    listener = EmittingListener(rest[0] if rest else "")
    push_consumer = PushConsumer(config(endpoints), group, listener, {topic: FilterExpression()})
    push_consumer.startup()
    try:
        emit(started=group)
        sys.stdin.read()
    finally:
        push_consumer.shutdown()


def main() -> None:
    command, endpoints, topic, *rest = sys.argv[1:]
    if command == "normal":
        normal(endpoints, topic)
    elif command == "fifo":
        fifo(endpoints, topic)
    elif command == "delay":
        delay(endpoints, topic, *rest)
    elif command == "transaction":
        transaction(endpoints, topic, rest[0])
    elif command == "simple":
        simple(endpoints, topic, *rest)
    elif command == "push":
        push(endpoints, topic, *rest)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
