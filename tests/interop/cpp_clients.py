"""The Apache RocketMQ Python client over its C++ core (PyPI ``rocketmq`` 0.4.4, with
``librocketmq.so`` inside the wheel) as a producer or a push consumer, one JSON line per
result. Run in its own process: the native library keeps threads of its own.

    python cpp_clients.py consume NAMESRV TOPIC GROUP COUNT [TIMEOUT_S]
    python cpp_clients.py produce-try NAMESRV TOPIC COUNT   (a failed send is a JSON line)

CPP_ACCESS_KEY / CPP_SECRET_KEY: sign requests (plain ACL) via set_session_credentials.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from rocketmq.client import Message, Producer, PushConsumer


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def sign(client: Producer | PushConsumer) -> None:
    access_key = os.environ.get("CPP_ACCESS_KEY")
    if access_key:
        client.set_session_credentials(access_key, os.environ.get("CPP_SECRET_KEY", ""), "ALIYUN")


def produce_try(namesrv: str, topic: str, count: int) -> None:
    producer = Producer("cpp-pg")
    producer.set_namesrv_addr(namesrv)
    sign(producer)
    producer.start()
    try:
        for i in range(count):
            msg = Message(topic)
            msg.set_tags("TagA")
            msg.set_body(f"cpp-body-{i}")
            try:
                r = producer.send_sync(msg)
                out({"status": int(r.status), "offset": r.offset})
            except Exception as exc:  # the client raises on a refused send
                out({"error": str(exc)})
    finally:
        producer.shutdown()


def consume(namesrv: str, topic: str, group: str, count: int, timeout: float) -> None:
    seen: list[dict[str, object]] = []
    lock = threading.Lock()

    def on_message(msg: object) -> None:  # returning is success; raising, RECONSUME_LATER
        with lock:
            seen.append(
                {
                    "body": msg.body.decode(),  # type: ignore[attr-defined]
                    "queueId": msg.queue_id,  # type: ignore[attr-defined]
                    "queueOffset": msg.queue_offset,  # type: ignore[attr-defined]
                }
            )

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    sign(consumer)
    consumer.subscribe(topic, on_message)
    consumer.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with lock:
                if len(seen) >= count:
                    break
            time.sleep(0.05)
    finally:
        consumer.shutdown()
    for item in seen:
        out(item)


def main() -> None:
    mode, namesrv, topic, *rest = sys.argv[1:]
    if mode == "produce-try":
        produce_try(namesrv, topic, int(rest[0]))
    else:
        timeout = float(rest[2]) if len(rest) > 2 else 60.0
        consume(namesrv, topic, rest[0], int(rest[1]), timeout)


if __name__ == "__main__":
    main()
