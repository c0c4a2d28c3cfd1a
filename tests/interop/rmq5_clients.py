"""The official RocketMQ 5 Python SDK (PyPI ``rocketmq-python-client``) against mq's gRPC
access point: the producer examples of apache/rocketmq-clients' ``python/example/``
(normal, FIFO, delay, transaction) with their logic kept and only the endpoint and the
credentials changed. Run by the SDK's own virtualenv's Python (its top-level package
``rocketmq`` is not the dev venv's ``rocketmq`` 0.4.4), never imported by the tests.

    rmq5_clients.py normal ENDPOINT TOPIC
    rmq5_clients.py fifo ENDPOINT TOPIC
    rmq5_clients.py delay ENDPOINT TOPIC SECONDS
    rmq5_clients.py transaction ENDPOINT TOPIC commit|rollback|check

Credentials come from ``MQ_ACCESS_KEY``/``MQ_SECRET_KEY`` when set. One JSON object per
stdout line for each send receipt (and ``{"checked": id, ...}`` when the broker's
check-back reached the checker); any failure ends the process with a non-zero exit code, the
SDK's exception on stderr (the examples print and go on; a judge must not).
"""

from __future__ import annotations

import json
import os
import sys
import time

from rocketmq import (
    ClientConfiguration,
    Credentials,
    Message,
    Producer,
    TransactionChecker,
    TransactionResolution,
)


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


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


def delay(endpoints: str, topic: str, seconds: str) -> None:
    """delay_producer_example.py: one message due ``seconds`` from now (the example: 10)."""
    producer = Producer(config(endpoints), (topic,))
    producer.startup()
    try:
        msg = Message()
        msg.topic = topic
        msg.body = b"hello, rocketmq."
        msg.tag = "rocketmq-send-delay-message"
        msg.delivery_timestamp = int(time.time()) + int(seconds)
        receipt(producer.send(msg))
        emit(delivery_timestamp=msg.delivery_timestamp)
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


def main() -> None:
    command, endpoints, topic, *rest = sys.argv[1:]
    if command == "normal":
        normal(endpoints, topic)
    elif command == "fifo":
        fifo(endpoints, topic)
    elif command == "delay":
        delay(endpoints, topic, rest[0])
    elif command == "transaction":
        transaction(endpoints, topic, rest[0])
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
