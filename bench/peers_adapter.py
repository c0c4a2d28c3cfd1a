"""mq adapter for the peer-broker harness (``bench.py`` of the peers benchmark).

Usage (the harness directory holds ``bench.py``; this file's directory goes on
PYTHONPATH, not the repo root, because the harness itself is a module named ``bench``)::

    REPO=/path/to/this/repo; cd /tmp/peers
    PYTHONPATH=$REPO/bench:$REPO $REPO/.venv/bin/python bench.py run \\
        --system mq --adapter peers_adapter:MqAdapter --out results/mq.jsonl

``connect()`` starts ``mq namesrv`` and ``mq broker`` (this repo, 127.0.0.1, ephemeral
ports, a temporary store, ``mappedFileSizeCommitLog`` 256 MiB, ASYNC_FLUSH; pass
``--opt mq_flush=SYNC_FLUSH`` for synchronous flush) and ``close()`` stops them. A
process forked by the harness (the W4 consumer) reuses the servers of its parent and
never stops them.

Options (``--opt key=value``): ``mq_flush`` (ASYNC_FLUSH | SYNC_FLUSH), ``mq_queues``
(queues of the topic, 8), ``mq_batch`` (messages per ``send_batch`` call, 64),
``mq_pull_batch`` (pull batch size, 32), ``mq_inflight_paced`` (W4 sends in flight, 64),
``mq_loop`` (``caller``: the client's loop runs in the harness thread during each call,
as ``SyncProducer(background=False)`` does; ``thread``: a loop thread and two hand-offs
per call, the facade's default).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from procs import stop_processes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(REPO, ".venv", "bin", "python")


def _harness_base() -> type:
    """The harness's ``Adapter``: from the running harness (``__main__``) when it is
    the one that imports us, else ``bench`` from $PEERS_DIR (default /tmp/peers)."""
    main = sys.modules.get("__main__")
    if main is not None and isinstance(getattr(main, "Adapter", None), type):
        return main.Adapter
    peers = os.environ.get("PEERS_DIR", "/tmp/peers")
    if peers not in sys.path:
        sys.path.insert(0, peers)
    try:
        import bench  # the harness module, not this repo's bench/ folder

        return bench.Adapter
    except Exception:  # importable without the harness (e.g. for linting)
        return object


Adapter: Any = _harness_base()


class _Servers:
    """namesrv + broker child processes, owned by the process that started them."""

    def __init__(self, flush: str) -> None:
        self.owner = os.getpid()
        self.dir = tempfile.mkdtemp(prefix="mq-peers-")
        self.procs: list[subprocess.Popen[str]] = []
        env = {**os.environ, "HOME": self.dir, "PYTHONPATH": REPO}
        env.pop("NAMESRV_ADDR", None)
        env.pop("MQ_NAMESRV_ADDR", None)
        try:
            ns = self._spawn(["namesrv", "--listen", "127.0.0.1:0"], env, "namesrv")
            self.namesrv = self._addr(ns, "namesrv")
            conf = os.path.join(self.dir, "broker.conf")
            with open(conf, "w") as f:
                f.write(
                    "brokerClusterName=PeersCluster\nbrokerName=peers-broker\n"
                    "brokerIP1=127.0.0.1\n"
                    f"storePathRootDir={os.path.join(self.dir, 'store')}\n"
                    f"logDir={os.path.join(self.dir, 'logs')}\n"
                    f"flushDiskType={flush}\n"
                    f"mappedFileSizeCommitLog={256 * 1024 * 1024}\n"
                )
            br = self._spawn(
                ["broker", "-c", conf, "-n", self.namesrv, "--listen", "127.0.0.1:0"],
                env,
                "broker",
            )
            self.broker = self._addr(br, "broker")
            self.broker_pid = br.pid
            self.pidfile = os.path.join(self.dir, "broker.pid")
            with open(self.pidfile, "w") as f:
                f.write(str(br.pid))
        except BaseException:
            self.stop()
            raise

    def _spawn(self, args: list[str], env: dict, label: str) -> subprocess.Popen[str]:
        with open(os.path.join(self.dir, f"{label}.stderr"), "w") as log:  # child keeps a dup
            p = subprocess.Popen(
                [PYTHON, "-m", "mqcli.main", *args],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=env,
                cwd=self.dir,
                start_new_session=True,
            )
        self.procs.append(p)
        return p

    @staticmethod
    def _addr(p: subprocess.Popen[str], label: str) -> str:
        assert p.stdout is not None
        line = p.stdout.readline()  # the first line announces the address
        m = re.search(r"listening on (\S+:\d+)", line)
        if m is None:
            raise RuntimeError(f"mq {label} did not start: {line!r} (rc={p.poll()})")
        return m.group(1)

    def stop(self) -> None:
        if os.getpid() != self.owner:
            return
        stop_processes(reversed(self.procs), grace=15)
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)


class MqAdapter(Adapter):
    name = "mq"
    server_pidfile: str | None = None
    retains_consumed = True

    #: servers and the current topic/group, shared with processes forked by the harness
    _servers: _Servers | None = None
    _current: dict = {}
    _seq = itertools.count(1)

    def __init__(self, dest: str, opts: dict):
        self.dest = dest
        self.opts = opts
        self.flush = str(opts.get("mq_flush", "ASYNC_FLUSH")).upper()
        self.queues = int(opts.get("mq_queues", 8))
        self.batch = int(opts.get("mq_batch", 64))
        self.pull_batch = int(opts.get("mq_pull_batch", 32))
        self.inflight_paced = int(opts.get("mq_inflight_paced", 64))
        self.loop_mode = str(opts.get("mq_loop", "caller"))
        self.lt: Any = None
        self.producer: Any = None
        self.admin: Any = None

    # -- lifecycle ---------------------------------------------------------------------
    def connect(self) -> None:
        cls = MqAdapter
        if cls._servers is None:  # a forked W4 consumer reuses its parent's servers
            cls._servers = _Servers(self.flush)
        self.srv = cls._servers
        self.server_pidfile = self.srv.pidfile  # absolute: os.path.join keeps it
        from mqcore.client.sync import CallerLoop, LoopThread

        self.lt = CallerLoop() if self.loop_mode == "caller" else LoopThread()
        self.lt.run(self._connect(), 60)
        if os.getpid() == self.srv.owner:
            self._wait_broker()

    async def _connect(self) -> None:
        from mqcore.client import Admin, Producer

        self.producer = Producer("peers_producer", self.srv.namesrv, send_timeout=10.0)
        await self.producer.start()
        self.admin = Admin(self.srv.namesrv)
        await self.admin.start()

    def _wait_broker(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.lt.run(self.admin.master_addrs(), 10):
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError("mq broker did not register with the name server in 60s")

    def close(self) -> None:
        if self.lt is not None:
            try:
                self.lt.run(self.producer.shutdown(), 15)
                self.lt.run(self.admin.shutdown(), 15)
            except Exception:
                pass
            self.lt.stop()
            self.lt = None
        srv = MqAdapter._servers
        if srv is not None and os.getpid() == srv.owner:
            srv.stop()
            MqAdapter._servers = None

    def reset(self) -> None:
        """A fresh topic and consumer group (a log cannot be emptied in place)."""
        k = next(MqAdapter._seq)
        topic = f"{self.dest}_{os.getpid()}_{k}"
        MqAdapter._current = {"topic": topic, "group": f"{topic}_cg"}
        self.lt.run(self._create(topic), 60)

    async def _create(self, topic: str) -> None:
        await self.admin.create_topic(topic, queues=self.queues)
        deadline = time.monotonic() + 30
        while True:
            try:
                qs = await self.producer.fetch_publish_queues(topic)
                if len(qs) >= self.queues:
                    self.mqs = sorted(qs)
                    return
            except Exception:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic}: route not visible in 30s")
            await asyncio.sleep(0.05)

    @property
    def topic(self) -> str:
        return MqAdapter._current["topic"]

    @property
    def group(self) -> str:
        return MqAdapter._current["group"]

    # -- produce -----------------------------------------------------------------------
    @staticmethod
    def _fail(msg: str) -> Exception:
        base = sys.modules.get("__main__")
        err = getattr(base, "VerificationError", AssertionError)
        return err(msg)

    def produce_batch(self, payloads: Sequence[bytes], timeout_s: float) -> int:
        """Chunks of ``mq_batch`` messages via ``send_batch``; chunk k goes to queue
        k % queues and each queue has one chunk in flight (so order per queue holds and
        ``queues`` batches are outstanding)."""
        return self.lt.run(asyncio.wait_for(self._produce_batch(payloads), timeout_s))

    async def _produce_batch(self, payloads: Sequence[bytes]) -> int:
        from mqcore.client.producer import make_message

        topic, b, mqs = self.topic, self.batch, self.mqs
        chunks = [payloads[i : i + b] for i in range(0, len(payloads), b)]
        acked = 0

        async def worker(w: int) -> None:
            nonlocal acked
            mq = mqs[w]
            for k in range(w, len(chunks), len(mqs)):
                chunk = chunks[k]
                results = await self.producer.send_batch(
                    [make_message(topic, p) for p in chunk], queue=mq
                )
                bad = [r for r in results if not r.ok]
                if bad:
                    raise self._fail(f"send_batch chunk {k}: {bad[0].status}")
                acked += len(chunk)

        await asyncio.gather(*(worker(w) for w in range(len(mqs))))
        return acked

    def produce_one(self, payload: bytes, timeout_s: float) -> None:
        self.lt.run(self._send_one(payload, timeout_s), timeout_s + 5)

    async def _send_one(self, payload: bytes, timeout_s: float) -> None:
        from mqcore.client.producer import make_message

        r = await self.producer.send(make_message(self.topic, payload), timeout=timeout_s)
        if not r.ok:
            raise self._fail(f"send: {r.status}")

    def produce_paced(
        self, make_payload: Callable[[int], bytes], n: int, interval_s: float, timeout_s: float
    ) -> dict:
        """Message i is built and sent at t0 + i*interval_s on the client loop; acks are
        pipelined (at most ``mq_inflight_paced`` outstanding) and all awaited."""
        return self.lt.run(asyncio.wait_for(self._paced(make_payload, n, interval_s), timeout_s))

    async def _paced(self, make_payload: Callable[[int], bytes], n: int, interval_s: float) -> dict:
        from mqcore.client.producer import make_message

        topic = self.topic
        sem = asyncio.Semaphore(self.inflight_paced)
        acked = late = 0
        errors: list[str] = []

        async def one(body: bytes) -> None:
            nonlocal acked
            try:
                r = await self.producer.send(make_message(topic, body))
                if r.ok:
                    acked += 1
                else:
                    errors.append(str(r.status))
            except Exception as e:
                errors.append(repr(e))
            finally:
                sem.release()

        # Only the sends in flight are kept: holding all n tasks (and their messages) to
        # the end made them survive into the oldest GC generation, and the full
        # collection that followed held this process for ~30 ms at n = 10,000 (a late
        # run of W4 messages at the same point of every run).
        pending: set[asyncio.Future[None]] = set()
        pc = time.perf_counter
        t0 = pc()
        for i in range(n):
            target = t0 + i * interval_s
            now = pc()
            if now < target:
                await asyncio.sleep(target - now)
            elif now - target > interval_s:
                late += 1
            await sem.acquire()
            task = asyncio.ensure_future(one(make_payload(i)))
            pending.add(task)
            task.add_done_callback(pending.discard)
        end = pc()
        await asyncio.gather(*pending)
        if errors:
            raise self._fail(f"{len(errors)} paced sends failed, e.g. {errors[0]}")
        return {"acked": acked, "late_sends": late, "send_wall_s": end - t0}

    # -- consume -----------------------------------------------------------------------
    def consume(
        self,
        n: int,
        on_message: Callable[[bytes], None],
        timeout_s: float,
        low_latency: bool = False,
    ) -> int:
        return self.lt.run(self._consume(n, on_message, timeout_s, low_latency), timeout_s + 60)

    async def _consume(
        self, n: int, on_message: Callable[[bytes], None], timeout_s: float, low_latency: bool
    ) -> int:
        from mqcore.client import ConsumeFromWhere, LitePullConsumer

        c = LitePullConsumer(
            self.group,
            namesrv=self.srv.namesrv,
            consume_from_where=ConsumeFromWhere.FIRST,
            pull_batch_size=self.pull_batch,
            pull_threshold_for_queue=max(1000, 4 * self.pull_batch),
            pull_threshold_for_all=20000,
            offset_store_dir=os.path.join(self.srv.dir, "offsets"),
        )
        c.subscribe(self.topic)
        await c.start()
        got = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            while got < n:
                left = deadline - loop.time()
                if left <= 0:
                    break
                msgs = await c.poll(timeout=min(1.0, left))
                for m in msgs:
                    if got >= n:
                        break
                    on_message(m.body)
                    got += 1
            await c.commit_sync()  # the "ack": consumer offsets stored on the broker
        finally:
            await c.shutdown()
        return got

    def backlog(self) -> dict:
        async def _b() -> dict:
            status = await self.admin.topic_status(self.topic)
            stored = sum(q.count for q in status)
            unconsumed = None
            for _ in range(50):
                try:
                    rows = await self.admin.consume_progress(self.group, self.topic)
                    unconsumed = sum(r.lag for r in rows)
                    if unconsumed == 0:
                        break
                except Exception:
                    pass
                await asyncio.sleep(0.1)
            return {"stored": stored, "unconsumed": unconsumed, "unacked": None}

        return self.lt.run(_b(), 60)

    def describe(self) -> dict:
        import mqcore

        loop = type(self.lt.loop).__module__ if self.lt else "?"
        return {
            "client": f"mq {getattr(mqcore, '__version__', '0.1.0')} (mqcore.client) on {loop}",
            "server": f"mq namesrv + broker ({PYTHON} -m mqcli.main), commit {_git_head()}",
            "produce": f"Producer.send_batch of {self.batch}, one batch in flight per queue "
            f"({self.queues} queues)",
            "produce_one": "Producer.send (SYNC)",
            "produce_paced": f"Producer.send tasks, {self.inflight_paced} acks in flight",
            "consume": f"LitePullConsumer poll, pull batch {self.pull_batch}, "
            "commit_sync of offsets at the end",
            "persistence": f"{self.flush}, mappedFileSizeCommitLog 256 MiB",
        }


def _git_head() -> str:
    try:
        return subprocess.run(
            ["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except Exception:
        return "?"
