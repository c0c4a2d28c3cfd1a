"""`mq store generate`: write a store with sample messages through the real store engine.

It gives a new user something to point the offline tools at before a broker exists, and
gives tests a store written by our engine rather than by hand.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import typer
from rich.progress import Progress

from mqcli.output import console, err_console, fail
from mqcore.errors import MQError
from mqcore.message import MessageExt, create_uniq_key
from mqcore.store.message_store import MessageStore
from mqcore.store.metadata.topic import TopicConfig, TopicConfigManager, validate_topic_name
from mqcore.store.store_config import MessageStoreConfig

TAGS = ("TagA", "TagB", "TagC")


def generate(
    directory: Path = typer.Argument(..., help="Store root to create."),
    count: int = typer.Option(1000, "--count", "-c", help="Messages to write.", min=1),
    topic: list[str] = typer.Option(["DemoTopic"], "--topic", "-t", help="Topic(s), round robin."),
    queues: int = typer.Option(4, "--queues", "-q", help="Queues per topic.", min=1, max=1024),
    body_size: int = typer.Option(64, "--body-size", help="Body bytes per message.", min=1),
    file_size: int = typer.Option(
        1024 * 1024 * 1024, "--commitlog-file-size", help="Commit log file size in bytes.", min=4096
    ),
    force: bool = typer.Option(False, "--force", "-f", help="Replace DIR if it exists."),
) -> None:
    """Write COUNT sample messages (tags, keys, properties) into a new store at DIR.

    Examples:
      mq store generate /tmp/demo-store
      mq store generate /tmp/demo-store --count 10000 -t Orders -t Audit
    """
    for name in topic:
        try:
            validate_topic_name(name)
        except MQError as exc:
            fail(str(exc))
    root = directory.expanduser()
    if root.exists() and any(root.iterdir()):
        if not force:
            fail(f"{root} exists and is not empty", hint="use --force to replace it")
        shutil.rmtree(root)
    cfg = MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=file_size)
    store = MessageStore(cfg)
    store.load()
    store.start()
    topics = TopicConfigManager(root)
    topics.load()
    for name in topic:
        topics.update(TopicConfig(name, read_queue_nums=queues, write_queue_nums=queues))
    topics.persist()
    host = ("127.0.0.1", 10911)
    filler = (b"x" * body_size)[:body_size]
    started = time.perf_counter()
    try:
        with Progress(console=err_console, transient=True) as bar:
            task = bar.add_task("writing", total=count)
            for i in range(count):
                name = topic[i % len(topic)]
                body = f"message-{i} ".encode() + filler
                msg = MessageExt(
                    topic=name,
                    body=body[: max(body_size, len(f"message-{i}"))],
                    properties={
                        "TAGS": TAGS[i % len(TAGS)],
                        "KEYS": f"key-{i} order-{i // 10}",
                        "UNIQ_KEY": create_uniq_key(),
                        "seq": str(i),
                    },
                    queue_id=(i // len(topic)) % queues,
                    born_timestamp=int(time.time() * 1000),
                    born_host=("127.0.0.1", 50000),
                    store_host=host,
                )
                result = store.put_message(msg)
                if not result.ok:
                    fail(f"append {i} failed: {result.status.name} {result.remark}")
                if i % 256 == 0:
                    bar.update(task, completed=i + 1)
    finally:
        store.shutdown()
    elapsed = time.perf_counter() - started
    console.print(f"wrote {count} messages to {root} in {elapsed:.2f}s ({', '.join(topic)})")


def register(store_app: typer.Typer) -> None:
    store_app.command("generate")(generate)
