"""Helpers shared by the server commands (`mq namesrv`, `mq broker`, `mq up`): the
``--listen`` flag, logging to a file plus stderr, and a clean stop on SIGINT/SIGTERM.

Every server of a machine logs to a file of its own: a broker under its store root
(``<storePathRootDir>/logs/broker-<brokerName>.log``) unless ``logDir``/``--log-dir`` says
otherwise, a name server to ``<logDir>/namesrv-<port>.log``. One shared file, as RocketMQ's
``~/logs/rocketmqlogs``, interleaves servers that have nothing to do with each other.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

import typer

from mqcore.errors import ConfigError

__all__ = [
    "PrintConfigOpt",
    "broker_log_name",
    "config_option",
    "freeze_startup_heap",
    "is_local_address",
    "listen_option",
    "log_dir_option",
    "namesrv_log_name",
    "parse_listen",
    "serve_until_signal",
    "setup_logging",
    "shorten_gil_switch_interval",
]

_LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s - %(message)s"


PrintConfigOpt = typer.Option(
    False, "-p", "--print-config", help="Print the effective configuration and exit."
)


def config_option(help_text: str) -> Any:
    """``-c/--config``: the server's properties file (RocketMQ's keys)."""
    return typer.Option(None, "-c", "--config", help=help_text, dir_okay=False)


def listen_option(default_text: str) -> Any:
    """``--listen HOST:PORT`` (see :func:`parse_listen`); ``default_text`` says what
    happens without it."""
    return typer.Option(
        None,
        "--listen",
        metavar="HOST:PORT",
        help=f"Address to listen on ({default_text}).",
    )


def log_dir_option(help_text: str) -> Any:
    """``--log-dir DIR``: where the server's own log file goes."""
    return typer.Option(None, "--log-dir", metavar="DIR", help=help_text, file_okay=False)


def parse_listen(value: str, flag: str = "--listen") -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise typer.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint=flag)
    return host.strip("[]") or "0.0.0.0", int(port)


def _file_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def broker_log_name(broker_name: str, broker_id: int = 0) -> str:
    """``broker-<name>.log``; a slave's ``broker-<name>-s<id>.log`` (it may share logDir)."""
    suffix = "" if broker_id == 0 else f"-s{broker_id}"
    return f"broker-{_file_part(broker_name)}{suffix}.log"


def namesrv_log_name(listen_port: int) -> str:
    """``namesrv-<port>.log``; with port 0 (any port) the process id stands in."""
    return f"namesrv-{listen_port or f'pid{os.getpid()}'}.log"


def is_local_address(host: str) -> bool:
    """Whether ``host`` is an address of this machine (one a server can bind)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((host, 0))
    except OSError:
        return False
    return True


def setup_logging(log_dir: str, log_level: str, file_name: str) -> Path:
    """``mq`` loggers to ``<log_dir>/<file_name>`` at ``log_level``, warnings to stderr."""
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        raise ConfigError(f"logLevel must be DEBUG, INFO, WARNING or ERROR, not {log_level}")
    directory = Path(log_dir).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    log_file = directory / file_name
    root = logging.getLogger("mq")
    root.setLevel(min(level, logging.WARNING))
    root.propagate = False
    file_handler = RotatingFileHandler(log_file, maxBytes=64 * 1024 * 1024, backupCount=5)
    file_handler.setLevel(level)
    file_handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    stderr_handler = logging.StreamHandler(sys.stderr)
    stderr_handler.setLevel(logging.WARNING)
    stderr_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.handlers[:] = [file_handler, stderr_handler]
    # The store logs under its module name; route it the same way.
    store_log = logging.getLogger("mqcore")
    store_log.setLevel(min(level, logging.WARNING))
    store_log.propagate = False
    store_log.handlers[:] = [file_handler, stderr_handler]
    return log_file


async def serve_until_signal(
    stop_all: Callable[[], Awaitable[None]],
    signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM),
) -> None:
    """Wait for one of ``signals`` (SIGINT/SIGTERM), then run ``stop_all``."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        await stop_all()


SERVER_SWITCH_INTERVAL = 0.001
"""Seconds a thread may hold the GIL while another waits for it (CPython's default is
5 ms)."""


def shorten_gil_switch_interval() -> None:
    """Let the event loop take the GIL back within 1 ms instead of 5 ms.

    A server's helper threads (the config persister rendering a 10,000-topic
    ``topics.json``, the flush threads) run pure Python for milliseconds at a time; with
    CPython's 5 ms switch interval the loop, wanting the GIL back, waits up to 5 ms each
    time, and a send answered meanwhile waits with it (bench/scale.py: send p99 went from
    0.6 ms at rest to 10.6 ms during a burst of topic creates). Only the server commands
    call this; it costs more GIL hand-overs when threads contend."""
    sys.setswitchinterval(SERVER_SWITCH_INTERVAL)


def freeze_startup_heap() -> None:
    """Collect once, then leave everything alive now out of later garbage collections.

    A broker holds its tables (topics, groups, offsets, statistics) as hundreds of
    thousands of objects, and every full collection walks them all with the GIL held:
    ~100 ms at 10,000 topics and groups, a stall of every request that no slicing
    shortens (bench/loop_stalls.py, "a full garbage collection"). What a server loaded
    to start lives until it stops, so it is frozen (``gc.freeze``) once started;
    collections then walk what was made since. The cost: an object of the frozen set
    that later dies inside a reference cycle is never reclaimed (a few per reconnection
    to a name server, not per request). Only the server commands call this: a process
    that starts and stops many servers (tests, ``mq up``) would keep each one's
    cycles."""
    gc.collect()
    gc.freeze()
