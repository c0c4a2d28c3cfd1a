"""`mq namesrv`: run a name server (RocketMQ's ``mqnamesrv``) in the foreground.

Prints the address it really listens on (so ``--listen 127.0.0.1:0`` is usable by scripts
and tests), logs to ``<logDir>/namesrv-<port>.log`` at ``logLevel`` (a file per name
server of the machine) and warnings to stderr, and stops cleanly on SIGINT/SIGTERM.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer

from mqcli import output
from mqcli.serving import (
    PrintConfigOpt,
    config_option,
    listen_option,
    log_dir_option,
    namesrv_log_name,
    parse_listen,
    serve_until_signal,
    setup_logging,
)
from mqcore.controller.server import ControllerConfig
from mqcore.errors import ConfigError, MQError
from mqcore.namesrv import NamesrvConfig, NamesrvController
from mqcore.remoting import run, uvloop_available


async def _serve(
    config: NamesrvConfig, log_file: Path, controller_config: ControllerConfig | None
) -> None:
    controller = NamesrvController(config, controller_config)
    try:
        await controller.start()
    except OSError as exc:
        output.fail(
            f"cannot listen on {config.bind_address}:{config.listen_port}: {exc.strerror}",
            hint="is another name server running? choose another port with --listen HOST:PORT",
        )
    loop_name = "uvloop" if uvloop_available() else "asyncio"
    metrics = f", metrics={controller.metrics.url}" if controller.metrics is not None else ""
    print(
        f"mq namesrv listening on {controller.listen_address} "
        f"(serializeType=JSON, loop={loop_name}, log={log_file}{metrics})",
        flush=True,
    )
    logging.getLogger("mq.namesrv").info("name server started on %s", controller.listen_address)
    await serve_until_signal(controller.shutdown)
    print("mq namesrv stopped", flush=True)


def namesrv(
    config_file: Path | None = config_option(
        "Properties file with RocketMQ keys (listenPort, ...)."
    ),
    print_config: bool = PrintConfigOpt,
    listen: str | None = listen_option("default 0.0.0.0:9876; port 0 picks a free one"),
    log_dir: Path | None = log_dir_option("Directory of namesrv-<port>.log (overrides logDir)."),
) -> None:
    """Run a name server: brokers register here, clients look up topic routes.

    Examples:
      mq namesrv
      mq namesrv -c namesrv.properties --listen 0.0.0.0:9876
    """
    controller_keys = frozenset(ControllerConfig.property_fields())
    try:
        config = (
            NamesrvConfig.from_file(config_file, also_known=controller_keys)
            if config_file
            else NamesrvConfig()
        )
        controller_config = None
        if config.enable_controller_in_namesrv:  # RocketMQ 5: its keys in the same file
            controller_config = (
                ControllerConfig.from_properties(config_file) if config_file else ControllerConfig()
            )
            controller_config.raft_config()  # peers and self id checked before starting
    except MQError as exc:
        output.fail(str(exc), hint="see `mq namesrv -p` for the known keys")
    if listen is not None:
        config.bind_address, config.listen_port = parse_listen(listen)
    if log_dir is not None:
        config.log_dir = str(log_dir)
    if print_config:
        sys.stdout.write(config.to_properties_text())
        return
    try:
        log_file = setup_logging(
            config.log_dir, config.log_level, namesrv_log_name(config.listen_port)
        )
    except (ConfigError, OSError) as exc:
        output.fail(str(exc))
    run(_serve(config, log_file, controller_config))


def register(app: typer.Typer) -> None:
    app.command("namesrv")(namesrv)
