"""The Apache RocketMQ Python client over its C++ core (PyPI ``rocketmq`` 0.4.4, with
``librocketmq.so`` from rocketmq-client-cpp 1.2.3 inside the wheel) as a producer, a push
consumer or a pull consumer, one JSON line per result. Run in its own process: the native
library keeps threads of its own (and can crash or hang: callers use timeouts).

    python cpp_clients.py produce-try NAMESRV TOPIC COUNT   (a failed send is a JSON line)
    python cpp_clients.py consume NAMESRV TOPIC GROUP COUNT [TIMEOUT_S]
    python cpp_clients.py send NAMESRV GROUP SPEC_JSON      (one line per send, see send())
    python cpp_clients.py listen NAMESRV TOPIC GROUP [--expression E] [--broadcasting]
                          [--orderly] [--instance NAME] [--fail-below N] [--props A,B]
                          [--timeout S]
    python cpp_clients.py pull NAMESRV TOPIC GROUP [EXPRESSION]  (with UNIQ_KEY, color)

``listen`` prints each message as it is consumed and stops when stdin closes (or at the
timeout). CPP_ACCESS_KEY / CPP_SECRET_KEY: sign requests (plain ACL) via
set_session_credentials. The C++ core writes its logs and local offsets under $HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

from rocketmq.client import Message, Producer, PullConsumer, PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import MSG_CALLBACK_FUNC, MessageModel, _CConsumeStatus, dll

SUCCESS: int = _CConsumeStatus.CONSUME_SUCCESS.value
RECONSUME_LATER: int = _CConsumeStatus.RECONSUME_LATER.value


def out(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def sign(client: Producer | PushConsumer | PullConsumer) -> None:
    access_key = os.environ.get("CPP_ACCESS_KEY")
    if access_key:
        client.set_session_credentials(access_key, os.environ.get("CPP_SECRET_KEY", ""), "ALIYUN")


def text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def as_dict(msg: RecvMessage, props: list[str]) -> dict[str, Any]:
    found = {name: text(msg.get_property(name)) for name in props}
    return {
        "topic": msg.topic,
        "body": msg.body.decode(),
        "tags": text(msg.tags),
        "keys": text(msg.keys),
        "msgId": msg.id,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "reconsumeTimes": msg.reconsume_times,
        "storeTimestamp": msg.store_timestamp,
        "props": {k: v for k, v in found.items() if v},
    }


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


def make(spec: dict[str, Any]) -> Message:
    msg = Message(spec["topic"])
    msg.set_body(spec["body"])
    if spec.get("tags"):
        msg.set_tags(spec["tags"])
    if spec.get("keys"):
        msg.set_keys(spec["keys"])
    for name, value in spec.get("props", {}).items():
        msg.set_property(name, value)
    if spec.get("delay"):
        msg.set_delay_time_level(spec["delay"])
    return msg


def send(namesrv: str, group: str, sends: list[dict[str, Any]]) -> None:
    """Each send is {"how": sync|async|oneway|orderly|oneway-orderly|batch, "arg": int
    (the orderly sharding argument: queue = arg % queue count), "messages": [message
    spec]}. An async send is awaited (its callback) before the next one."""
    producer = Producer(group)
    producer.set_namesrv_addr(namesrv)
    sign(producer)
    producer.start()
    try:
        for item in sends:
            how = item["how"]
            msgs = [make(m) for m in item["messages"]]
            try:
                if how == "sync":
                    r = producer.send_sync(msgs[0])
                elif how == "orderly":
                    r = producer.send_orderly(msgs[0], item["arg"])
                elif how == "batch":
                    r = producer.send_batch(msgs)
                elif how == "async":
                    r = send_async(producer, msgs[0])
                elif how == "oneway":
                    producer.send_oneway(msgs[0])
                    out({"how": how})
                    continue
                else:
                    producer.send_oneway_orderly(msgs[0], item["arg"])
                    out({"how": how})
                    continue
                out({"how": how, "status": int(r.status), "msgId": r.msg_id, "offset": r.offset})
            except Exception as exc:  # the client raises on a refused send
                out({"how": how, "error": str(exc)})
    finally:
        producer.shutdown()


def send_async(producer: Producer, msg: Message) -> Any:
    done = threading.Event()
    outcome: list[Any] = []

    def finish(value: object) -> None:
        outcome.append(value)
        done.set()

    producer.send_async(msg, finish, finish)
    if not done.wait(10):
        raise TimeoutError("no send callback within 10 s")
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def consume(namesrv: str, topic: str, group: str, count: int, timeout: float) -> None:
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    def on_message(msg: RecvMessage) -> None:
        with lock:
            seen.append(as_dict(msg, []))

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


def listen(namesrv: str, args: argparse.Namespace) -> None:
    """A push consumer that prints as it goes. The listener answers RECONSUME_LATER while
    the message's reconsume times are below ``--fail-below``. It is registered through
    the package's ffi: the 0.4.4 wrapper's subscribe() re-raises a listener's exception
    in its ``finally`` inside the ctypes callback, so ctypes prints it and the int the
    C++ core gets back is undefined (CONSUME_SUCCESS when it happens to be 0)."""
    props = [p for p in args.props.split(",") if p]
    lock = threading.Lock()

    def on_message(_consumer: object, handle: int) -> int:
        msg = RecvMessage(handle)
        fail = msg.reconsume_times < args.fail_below
        with lock:
            out({**as_dict(msg, props), "failed": fail})
        return RECONSUME_LATER if fail else SUCCESS

    model = MessageModel.BROADCASTING if args.broadcasting else MessageModel.CLUSTERING
    consumer = PushConsumer(args.group, orderly=args.orderly, message_model=model)
    consumer.set_namesrv_addr(namesrv)
    if args.instance:
        consumer.set_instance_name(args.instance)
    sign(consumer)
    ffi_check(dll.Subscribe(consumer._handle, args.topic.encode(), args.expression.encode()))
    callback = MSG_CALLBACK_FUNC(on_message)
    register = dll.RegisterMessageCallbackOrderly if args.orderly else dll.RegisterMessageCallback
    ffi_check(register(consumer._handle, callback))
    consumer.start()
    out({"started": True})
    closed = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        closed.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    try:
        closed.wait(args.timeout)
    finally:
        consumer.shutdown()
    out({"stopped": True})


def pull(namesrv: str, topic: str, group: str, expression: str) -> None:
    """Every queue from offset 0 until NO_NEW_MSG (the 0.4.4 PullConsumer.pull loop)."""
    consumer = PullConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    sign(consumer)
    consumer.start()
    try:
        for msg in consumer.pull(topic, expression):
            out(as_dict(msg, ["UNIQ_KEY", "color"]))
    finally:
        consumer.shutdown()


def main() -> None:
    mode, namesrv, *rest = sys.argv[1:]
    if mode == "produce-try":
        produce_try(namesrv, rest[0], int(rest[1]))
    elif mode == "consume":
        timeout = float(rest[3]) if len(rest) > 3 else 60.0
        consume(namesrv, rest[0], rest[1], int(rest[2]), timeout)
    elif mode == "send":
        send(namesrv, rest[0], json.loads(rest[1]))
    elif mode == "pull":
        pull(namesrv, rest[0], rest[1], rest[2] if len(rest) > 2 else "*")
    else:
        parser = argparse.ArgumentParser(prog="cpp_clients.py listen NAMESRV")
        parser.add_argument("topic")
        parser.add_argument("group")
        parser.add_argument("--expression", default="*")
        parser.add_argument("--broadcasting", action="store_true")
        parser.add_argument("--orderly", action="store_true")
        parser.add_argument("--instance", default="")
        parser.add_argument("--fail-below", type=int, default=0)
        parser.add_argument("--props", default="")
        parser.add_argument("--timeout", type=float, default=60.0)
        listen(namesrv, parser.parse_args(rest))


if __name__ == "__main__":
    main()
