"""`mq broker`: run a broker (RocketMQ's ``mqbroker``) in the foreground.

One properties file (``-c``) holds broker and store keys side by side, as RocketMQ's
``broker.conf`` does; flags override it. Prints the address it really listens on (so
``--listen 127.0.0.1:0`` works for scripts and tests), logs to
``<logDir>/broker-<brokerName>.log`` (``logDir`` defaults to ``<storePathRootDir>/logs``, so
brokers of one machine never share a file) and warnings to stderr, and stops cleanly on
SIGINT/SIGTERM: unregister, stop accepting, flush, persist offsets and configs, remove the
abort file.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from mqcli import output
from mqcli.connection import Connection, current, enter_scope
from mqcli.serving import (
    PrintConfigOpt,
    broker_log_name,
    config_option,
    freeze_startup_heap,
    is_local_address,
    listen_option,
    log_dir_option,
    parse_listen,
    serve_until_signal,
    setup_logging,
    shorten_gil_switch_interval,
)
from mqcore.broker.config import BROKER_CONFIG_FIELDS, BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.common.properties import read_server_properties
from mqcore.errors import ConfigError, MQError, StoreLockedError
from mqcore.remoting import run, uvloop_available
from mqcore.remoting.settings import NETTY_CLIENT_FIELDS, NETTY_SERVER_FIELDS
from mqcore.store.store_config import MESSAGE_STORE_CONFIG_FIELDS, MessageStoreConfig

if TYPE_CHECKING:
    from mqcore.proxy.local import LocalAccessPoint

__all__ = ["describe", "load_config", "start_access_point", "start_broker", "stop_with"]


_ROCKETMQ_TABLES = (
    BROKER_CONFIG_FIELDS,
    NETTY_SERVER_FIELDS,
    NETTY_CLIENT_FIELDS,
    MESSAGE_STORE_CONFIG_FIELDS,
)


def load_config(
    config_file: Path | None,
    *,
    namesrv: str | None = None,
    listen: str | None = None,
    store: Path | None = None,
    log_dir: Path | None = None,
) -> tuple[BrokerConfig, MessageStoreConfig]:
    """Broker and store settings from one properties file, then the flags on top.

    ``logDir`` is the flag, else the file's key, else ``<store root>/logs``: this broker's
    own directory, wherever the store is. Raises ConfigError naming the bad key; unknown
    keys are reported on stderr."""
    props = read_server_properties(config_file) if config_file is not None else {}
    known = set(BrokerConfig.property_fields()) | set(MessageStoreConfig.property_fields())
    # 4.9.8's keys that mq has no setting for (a file a 4.9.8 broker used, or one
    # UPDATE_BROKER_CONFIG saved them in) are read quietly: they are not typos.
    known.update(key for table in _ROCKETMQ_TABLES for key, _ in table)
    for key in props:
        if key not in known:
            output.err_console.print(f"warning: {config_file}: unknown property {key!r} ignored")
    broker = BrokerConfig.from_properties(props)
    if config_file is not None:  # where UPDATE_BROKER_CONFIG saves its changes
        broker.broker_config_path = str(config_file.absolute())
    store_config = MessageStoreConfig.from_properties(props)
    if namesrv is not None:
        broker.namesrv_addr = namesrv
    if listen is not None:
        host, port = parse_listen(listen)
        broker.bind_address, broker.listen_port = host, port
        if host not in ("0.0.0.0", "::") and "brokerIP1" not in props:
            broker.broker_ip1 = host
    elif (
        "bindAddress" not in props and "brokerIP1" in props and is_local_address(broker.broker_ip1)
    ):
        # brokerIP1=127.0.0.1 means this broker is for this host: do not listen on every
        # interface (RocketMQ always does). An address this host does not have (behind
        # NAT) keeps RocketMQ's bind to every interface.
        broker.bind_address = broker.broker_ip1
    if store is not None:
        store_config.store_path_root_dir = str(store)
    if log_dir is not None:
        broker.log_dir = str(log_dir)
    elif "logDir" not in props:
        broker.log_dir = str(store_config.root / "logs")
    broker.__post_init__()
    store_config.validate()
    return broker, store_config


async def start_broker(controller: BrokerController) -> None:
    """Start, turning the usual failures into one clear line and exit code 1."""
    store = controller.store_config.root
    try:
        await controller.start()
    except StoreLockedError as exc:
        output.fail(str(exc), hint=f"is another broker using {store}? choose another --store")
    except OSError as exc:
        output.fail(
            f"cannot listen on {controller.config.bind_address}:{controller.config.listen_port} "
            f"(and the fast port {controller.config.listen_port - 2}): {exc.strerror or exc}",
            hint="is another broker running? choose another port with --listen HOST:PORT",
        )
    except MQError as exc:
        output.fail(f"cannot start the broker on {store}: {exc}")
    period = controller.config.register_name_server_period / 1000
    for addr, ok in controller.outer_api.last_results.items():
        if not ok:  # serving anyway: the register loop keeps trying
            output.err_console.print(
                f"warning: not registered with name server {addr} yet (unreachable or "
                f"refused); retrying every {period:g} s, clients find no route until then",
                style="yellow",
                markup=False,
                highlight=False,
            )


async def start_access_point(controller: BrokerController) -> LocalAccessPoint | None:
    """The gRPC access point of a started broker when ``grpcServerPort`` asks for one;
    a port it cannot take stops the broker and fails in one line."""
    port = controller.config.grpc_server_port
    if port is None:
        return None
    from mqcore.proxy.local import LocalAccessPoint  # grpc: 0.15 s, for this broker only

    try:
        access_point = LocalAccessPoint(controller, port)
    except ConfigError as exc:
        await controller.shutdown()
        output.fail(f"cannot serve gRPC with TLS: {exc}", hint="see docs/rocketmq5.md")
    try:
        await access_point.start()
    except OSError as exc:
        await controller.shutdown()
        output.fail(
            f"cannot serve gRPC on {controller.config.bind_address}:{port}: {exc}",
            hint="is another broker or proxy using it? choose another grpcServerPort "
            "(mq up: --grpc-port PORT, or -1 for none)",
        )
    return access_point


def stop_with(
    controller: BrokerController, access_point: LocalAccessPoint | None
) -> Callable[[], Awaitable[None]]:
    """The clean stop of a broker and its access point: the gRPC clients first."""

    async def stop() -> None:
        if access_point is not None:
            await access_point.stop()
        await controller.shutdown()

    return stop


def describe(controller: BrokerController) -> str:
    c, s = controller.config, controller.store_config
    replicas = controller.replicas
    ident = f"id={c.broker_id}"
    if replicas is not None:  # controller mode: the id the controller gave, and where
        given = "-" if replicas.broker_id is None else replicas.broker_id
        ident += f" controllerBrokerId={given} controller={c.controller_addr}"
    metrics = f" metrics={controller.metrics.url}" if controller.metrics is not None else ""
    return (
        f"cluster={c.broker_cluster_name} broker={c.broker_name} {ident} "
        f"role={s.broker_role.value} fast port={controller.fast_server.port} store={s.root} "
        f"flushDiskType={s.flush_disk_type.value} "
        f"namesrv={c.namesrv_addr or '-'} loop={'uvloop' if uvloop_available() else 'asyncio'}"
        f"{metrics}"
    )


async def _serve(broker: BrokerConfig, store_config: MessageStoreConfig, log_file: Path) -> None:
    controller = BrokerController(broker, store_config)
    await start_broker(controller)
    access_point = await start_access_point(controller)
    freeze_startup_heap()  # the loaded tables stay out of full garbage collections
    shorten_gil_switch_interval()  # the loop waits at most 1 ms behind a helper thread
    grpc = f", grpc={access_point.address}" if access_point is not None else ""
    print(
        f"mq broker listening on {controller.broker_addr} "
        f"({describe(controller)}{grpc}, log={log_file})",
        flush=True,
    )
    await serve_until_signal(stop_with(controller, access_point))
    print("mq broker stopped", flush=True)


def broker(
    ctx: typer.Context,
    namesrv: str | None = typer.Option(
        None,
        "-n",
        "--namesrv-addr",
        metavar="ADDRS",
        help='Name servers, "host:port;host:port" (overrides namesrvAddr / $NAMESRV_ADDR).',
    ),
    config_file: Path | None = config_option(
        "Properties file with RocketMQ broker and store keys (broker.conf)."
    ),
    print_config: bool = PrintConfigOpt,
    listen: str | None = listen_option("default 0.0.0.0:10911; port 0 picks a free pair"),
    store: Path | None = typer.Option(
        None, "--store", metavar="DIR", help="Store root (overrides storePathRootDir)."
    ),
    log_dir: Path | None = log_dir_option(
        "Directory of broker-<brokerName>.log (overrides logDir; default <store>/logs)."
    ),
) -> None:
    """Run a broker: stores messages, serves producers and consumers, registers routes.

    `mq broker status` shows a running broker's figures instead."""
    if ctx.invoked_subcommand is not None:
        if namesrv is not None:  # `mq broker -n ADDR status`: the name server to ask
            enter_scope(ctx, Connection(namesrv=namesrv))
        return
    namesrv = namesrv or current().namesrv  # `mq -n ADDR broker`: the same name servers
    try:
        broker_config, store_config = load_config(
            config_file, namesrv=namesrv, listen=listen, store=store, log_dir=log_dir
        )
    except MQError as exc:
        output.fail(str(exc), hint="see `mq broker -p` for the known keys and their values")
    if print_config:
        sys.stdout.write("# broker\n" + broker_config.to_properties_text())
        sys.stdout.write("# store\n" + store_config.to_properties_text())
        return
    try:
        log_file = setup_logging(
            broker_config.log_dir,
            broker_config.log_level,
            broker_log_name(broker_config.broker_name, broker_config.broker_id),
        )
    except (ConfigError, OSError) as exc:
        output.fail(str(exc))
    run(_serve(broker_config, store_config, log_file))


def register(app: typer.Typer) -> None:
    from mqcli.commands import broker_admin, broker_config, broker_status

    broker_app = typer.Typer(no_args_is_help=False, subcommand_metavar="[COMMAND [ARGS]...]")
    broker_app.callback(invoke_without_command=True)(broker)
    broker_status.register(broker_app)
    broker_admin.register(broker_app)
    broker_config.register(broker_app)
    app.add_typer(broker_app, name="broker")
