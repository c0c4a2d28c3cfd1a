"""`mq proxy`: run the gRPC access point in front of a cluster (RocketMQ 5's ``mqproxy`` in
cluster mode) in the foreground.

The RocketMQ 5 SDKs connect to this one address; each call goes over remoting to the broker
that owns its queue (:mod:`mqcore.proxy.cluster`). Settings are RocketMQ 5's proxy keys in a
properties file (``-c``: ``namesrvAddr``, ``grpcServerPort``, ``proxyMode``), flags on top.
Prints the address it really listens on (so ``--grpc-port 0`` works for scripts and tests),
logs to ``<logDir>/proxy-<port>.log`` and warnings to stderr, and stops cleanly on
SIGINT/SIGTERM: the gRPC clients first, then the connections to the brokers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from mqcli import output
from mqcli.connection import current
from mqcli.serving import (
    PrintConfigOpt,
    config_option,
    log_dir_option,
    serve_until_signal,
    setup_logging,
)
from mqcore.common.properties import read_properties_file
from mqcore.errors import ConfigError, MQError
from mqcore.proxy.config import ProxyConfig
from mqcore.remoting import run

if TYPE_CHECKING:
    from mqcore.proxy.cluster import ClusterAccessPoint

__all__ = ["load_config"]


def load_config(
    config_file: Path | None,
    *,
    namesrv: str | None = None,
    grpc_port: int | None = None,
    bind: str | None = None,
    log_dir: Path | None = None,
) -> ProxyConfig:
    """The file's keys over the defaults, then the flags. Raises ConfigError naming the
    bad key; unknown keys are reported on stderr."""
    config = ProxyConfig()
    if config_file is not None:
        props = read_properties_file(config_file)
        known = ProxyConfig.property_fields()
        for key in props:
            if key not in known:
                output.err_console.print(
                    f"warning: {config_file}: unknown property {key!r} ignored"
                )
        config.update(props)
    if namesrv is not None:
        config.namesrv_addr = namesrv
    if grpc_port is not None:
        config.grpc_server_port = grpc_port
    if bind is not None:
        config.bind_address = bind
    if log_dir is not None:
        config.log_dir = str(log_dir)
    config.__post_init__()
    return config


def _log_name(port: int) -> str:
    """``proxy-<port>.log``; with port 0 (any port) the process id stands in."""
    return f"proxy-{port or f'pid{os.getpid()}'}.log"


async def _start(config: ProxyConfig) -> ClusterAccessPoint:
    from mqcli.credentials import client_config
    from mqcore.proxy.cluster import ClusterAccessPoint  # grpc: only for this command

    signing = client_config() if config.enable_acl_rpc_hook_for_cluster_mode else None
    try:
        proxy = ClusterAccessPoint(config, client_config=signing)
    except ConfigError as exc:
        output.fail(str(exc), hint="see `mq proxy -p` for the keys and their values")
    try:
        await proxy.start()
    except OSError as exc:
        await proxy.stop()
        output.fail(
            f"cannot serve gRPC on {config.bind_address}:{config.grpc_server_port}: {exc}",
            hint="is another proxy or broker using it? choose another --grpc-port",
        )
    return proxy


async def _serve(config: ProxyConfig, log_file: Path) -> None:
    proxy = await _start(config)
    print(
        f"mq proxy listening on {proxy.address} (proxyMode=cluster, "
        f"namesrv={config.namesrv_addr}, log={log_file})",
        flush=True,
    )
    await serve_until_signal(proxy.stop)
    print("mq proxy stopped", flush=True)


def proxy(
    namesrv: str | None = typer.Option(
        None,
        "-n",
        "--namesrv-addr",
        metavar="ADDRS",
        help='The cluster\'s name servers, "host:port;host:port" (overrides namesrvAddr / '
        "$NAMESRV_ADDR).",
    ),
    grpc_port: int | None = typer.Option(
        None,
        "--grpc-port",
        metavar="PORT",
        help="Where the RocketMQ 5 SDKs connect (grpcServerPort; default 8081, 0 picks a "
        "free port).",
    ),
    bind: str | None = typer.Option(
        None,
        "--bind",
        metavar="HOST",
        help="Interface the gRPC port listens on (bindAddress; default 0.0.0.0).",
    ),
    config_file: Path | None = config_option(
        "Properties file with RocketMQ 5's proxy keys (namesrvAddr, grpcServerPort, ...)."
    ),
    print_config: bool = PrintConfigOpt,
    log_dir: Path | None = log_dir_option("Directory of proxy-<port>.log (overrides logDir)."),
) -> None:
    """Run the gRPC access point for RocketMQ 5 SDKs in front of a cluster (cluster mode).

    Routes name this proxy for every broker's queues; a send goes to its queue's broker,
    a receive pops from every broker. With enableACL the proxy checks the SDKs'
    signatures against plainAclFile; with enableAclRpcHookForClusterMode it signs what it
    forwards with the keys given as to any mq command (--access-key/--secret-key).

    Examples:
      mq proxy -n 127.0.0.1:9876
      mq proxy -n 'ns1:9876;ns2:9876' --grpc-port 8081
    """
    namesrv = namesrv or current().namesrv  # `mq -n ADDR proxy`: the same name servers
    try:
        config = load_config(
            config_file, namesrv=namesrv, grpc_port=grpc_port, bind=bind, log_dir=log_dir
        )
    except MQError as exc:
        output.fail(str(exc), hint="see `mq proxy -p` for the keys and their values")
    if print_config:
        sys.stdout.write(config.to_properties_text())
        return
    try:
        log_file = setup_logging(
            config.log_dir, config.log_level, _log_name(config.grpc_server_port)
        )
    except (ConfigError, OSError) as exc:
        output.fail(str(exc))
    run(_serve(config, log_file))


def register(app: typer.Typer) -> None:
    app.command("proxy")(proxy)
