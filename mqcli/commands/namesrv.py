"""`mq namesrv`: run a name server (RocketMQ's ``mqnamesrv``) in the foreground.

Prints the address it really listens on (so ``--listen 127.0.0.1:0`` is usable by scripts
and tests), logs to ``<logDir>/namesrv.log`` at ``logLevel`` and warnings to stderr, and
stops cleanly on SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

import typer

from mqcli import output
from mqcore.errors import ConfigError, MQError
from mqcore.namesrv import NamesrvConfig, NamesrvController
from mqcore.remoting import run, uvloop_available

_LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s - %(message)s"


def _parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise typer.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint="--listen")
    return host.strip("[]") or "0.0.0.0", int(port)


def _setup_logging(config: NamesrvConfig) -> Path:
    level = logging.getLevelName(config.log_level.upper())
    if not isinstance(level, int):
        raise ConfigError(f"logLevel must be DEBUG, INFO, WARNING or ERROR, not {config.log_level}")
    log_dir = Path(config.log_dir).expanduser()
    log_dir.mkdir(parents=True, exist_ok=True)
    log_file = log_dir / "namesrv.log"
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
    return log_file


async def _serve(config: NamesrvConfig, log_file: Path) -> None:
    controller = NamesrvController(config)
    try:
        await controller.start()
    except OSError as exc:
        output.fail(
            f"cannot listen on {config.bind_address}:{config.listen_port}: {exc.strerror}",
            hint="is another name server running? choose another port with --listen HOST:PORT",
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop_name = "uvloop" if uvloop_available() else "asyncio"
    print(
        f"mq namesrv listening on {controller.listen_address} "
        f"(serializeType=JSON, loop={loop_name}, log={log_file})",
        flush=True,
    )
    logging.getLogger("mq.namesrv").info("name server started on %s", controller.listen_address)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await controller.shutdown()
    print("mq namesrv stopped", flush=True)


def namesrv(
    config_file: Path | None = typer.Option(
        None,
        "-c",
        "--config",
        help="Properties file with RocketMQ keys (listenPort, ...).",
        dir_okay=False,
    ),
    print_config: bool = typer.Option(
        False, "-p", "--print-config", help="Print the effective configuration and exit."
    ),
    listen: str | None = typer.Option(
        None,
        "--listen",
        metavar="HOST:PORT",
        help="Address to listen on (default 0.0.0.0:9876; port 0 picks a free one).",
    ),
) -> None:
    """Run a name server: brokers register here, clients look up topic routes."""
    try:
        config = NamesrvConfig.from_file(config_file) if config_file else NamesrvConfig()
    except MQError as exc:
        output.fail(str(exc), hint="see `mq namesrv -p` for the known keys")
    if listen is not None:
        config.bind_address, config.listen_port = _parse_listen(listen)
    if print_config:
        sys.stdout.write(config.to_properties_text())
        return
    try:
        log_file = _setup_logging(config)
    except (ConfigError, OSError) as exc:
        output.fail(str(exc))
    run(_serve(config, log_file))


def register(app: typer.Typer) -> None:
    app.command("namesrv")(namesrv)
