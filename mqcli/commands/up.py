"""`mq up`: a name server and a broker in one process, on one event loop.

The quickest way to a working cluster on one machine (``make run`` uses it): the
broker registers with the name server beside it; Ctrl-C (or SIGTERM) stops the broker
cleanly first, then the name server.

``--brokers N`` names the first broker ``broker-a`` and adds ``broker-b``... of the same
cluster, each in its own process
(one event loop uses one core; N brokers use N), each with its own store beside the first
(``<store>-broker-b``) and, with a fixed ``--broker-port``, port ``+10`` per broker.
Producers spread their sends over every broker's queues, as over a RocketMQ cluster.

``--slave`` gives every broker name a slave (brokerId 1, brokerRole SLAVE) in a process
of its own, with the store ``<store>-<brokerName>-s`` and, with fixed ports, its
master's port ``+5`` (the master's HA port is its port ``+1``, the fast ports ``-2``,
so no two collide); the slave learns its master's HA address from the name server, as
in RocketMQ. ``--broker-role`` makes the masters SYNC_MASTER instead of ASYNC_MASTER.

``--replicas N`` is RocketMQ 5's controller mode instead: the name server also hosts a
one-node controller (enableControllerInNamesrv; its Raft journal in ``<store>/controller``,
on a free port), and N brokers of one name (``broker-a``), each in controller mode with
controllerAddr the name server, its own store ``<store>/broker-a-r<k>`` and, with a fixed
``--broker-port``, port ``+5`` per replica (as a slave of ``--slave``). The controller,
not the config, makes one of them master and the others its slaves; when the master
stops answering for controllerHeartBeatTimeoutMills (``--heartbeat-timeout``) an in-sync
slave takes over. The first replica runs in the `mq up` process, the others in their own.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import socket
import string
import time
from dataclasses import dataclass
from enum import StrEnum
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import typer

from mqcli import output
from mqcli.commands.broker import describe, start_access_point, start_broker, stop_with
from mqcli.serving import serve_until_signal, setup_logging
from mqcore.broker.config import BrokerConfig, local_ip
from mqcore.broker.controller import BrokerController
from mqcore.common.properties import read_properties_file
from mqcore.controller.server import ControllerConfig
from mqcore.errors import ConfigError, MQError
from mqcore.metrics.names import MetricsExporterType
from mqcore.namesrv import NamesrvConfig, NamesrvController
from mqcore.remoting import run
from mqcore.remoting.tls import TlsMode
from mqcore.store.store_config import BrokerRole, MessageStoreConfig

_MAX_BROKERS = 26
_PORT_STEP = 10
_SLAVE_PORT_STEP = 5
_CHILD_START_TIMEOUT = 60.0
_MAX_REPLICAS = 9
_REPLICA_PORT_STEP = _SLAVE_PORT_STEP
_REPLICA_NAME = "broker-a"
HEARTBEAT_TIMEOUT_MS = 10_000
"""RocketMQ 5's controllerHeartBeatTimeoutMills: how long a silent master keeps its role."""
_MIN_HEARTBEAT_TIMEOUT_MS = 1000
_CONTROLLER_LEADER_TIMEOUT = 30.0
_GRPC_PORT = 8081
"""RocketMQ 5's grpcServerPort default: where its SDKs' examples connect."""


class MasterRole(StrEnum):
    """The roles `mq up` gives its masters (RocketMQ's brokerRole values)."""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"


@dataclass(frozen=True)
class _ExtraBroker:
    """A broker process of ``--brokers N`` beyond the first."""

    process: BaseProcess
    conn: Connection


def _extra_configs(
    first: BrokerConfig, store: Path, count: int, role: BrokerRole = BrokerRole.ASYNC_MASTER
) -> list[tuple[BrokerConfig, MessageStoreConfig]]:
    """Configs of brokers b, c, ... : own name, own store beside the first, next ports."""
    out = []
    for k in range(1, count):
        name = f"broker-{string.ascii_lowercase[k]}"
        port = first.listen_port + _PORT_STEP * k if first.listen_port else 0
        config = BrokerConfig(
            broker_name=name,
            listen_port=port,
            bind_address=first.bind_address,
            broker_ip1=first.broker_ip1,
            namesrv_addr=first.namesrv_addr,
            broker_cluster_name=first.broker_cluster_name,
            log_dir=f"{store}-{name}/logs",
        )
        _copy_tls(first, config)
        store_config = MessageStoreConfig(store_path_root_dir=f"{store}-{name}", broker_role=role)
        store_config.validate()
        out.append((config, store_config))
    return out


def _slave_config(master: BrokerConfig, store: Path) -> tuple[BrokerConfig, MessageStoreConfig]:
    """The slave of ``master``: same name and cluster, brokerId 1, its own store
    ``<store>-<brokerName>-s`` (``store`` is the first broker's root), port ``+5``."""
    config = BrokerConfig(
        broker_name=master.broker_name,
        broker_id=1,
        listen_port=master.listen_port + _SLAVE_PORT_STEP if master.listen_port else 0,
        bind_address=master.bind_address,
        broker_ip1=master.broker_ip1,
        namesrv_addr=master.namesrv_addr,
        broker_cluster_name=master.broker_cluster_name,
        log_dir=f"{store}-{master.broker_name}-s/logs",
    )
    _copy_tls(master, config)
    store_config = MessageStoreConfig(
        store_path_root_dir=f"{store}-{master.broker_name}-s", broker_role=BrokerRole.SLAVE
    )
    store_config.validate()
    return config, store_config


@dataclass(frozen=True)
class ReplicaTiming:
    """The periods of ``--replicas``, all from the heartbeat timeout: RocketMQ 5's
    defaults at its default of 10 s, shorter in proportion below it (a heartbeat every
    tenth of the timeout, scans and syncs every half), so a shorter timeout is honoured
    rather than outrun by a 5 s scan."""

    heartbeat_timeout: int
    """controllerHeartBeatTimeoutMills (brokers)."""
    heartbeat_interval: int
    """brokerHeartbeatInterval (brokers)."""
    scan_interval: int
    """scanNotActiveBrokerInterval (the controller)."""
    sync_period: int
    """syncBrokerMetadataPeriod and checkSyncStateSetPeriod (brokers)."""

    @classmethod
    def for_timeout(cls, timeout_ms: int) -> ReplicaTiming:
        return cls(
            heartbeat_timeout=timeout_ms,
            heartbeat_interval=max(100, min(1000, timeout_ms // 10)),
            scan_interval=max(200, min(5000, timeout_ms // 2)),
            sync_period=max(200, min(5000, timeout_ms // 2)),
        )


def _replica_configs(
    template: BrokerConfig,
    root: Path,
    count: int,
    timing: ReplicaTiming,
    role: BrokerRole = BrokerRole.ASYNC_MASTER,
) -> list[tuple[BrokerConfig, MessageStoreConfig]]:
    """The ``count`` replicas of broker-a in controller mode, with controllerAddr the name
    server (``template.namesrv_addr``): stores ``<root>/broker-a-r<k>``, ports ``+5`` per
    replica from the template's (0: any). ``role`` is where a replica starts; the
    controller decides what it is."""
    out = []
    for k in range(count):
        store = root / f"{_REPLICA_NAME}-r{k}"
        config = BrokerConfig(
            broker_name=_REPLICA_NAME,
            listen_port=template.listen_port + _REPLICA_PORT_STEP * k
            if template.listen_port
            else 0,
            bind_address=template.bind_address,
            broker_ip1=template.broker_ip1,
            namesrv_addr=template.namesrv_addr,
            broker_cluster_name=template.broker_cluster_name,
            log_dir=str(store / "logs"),
            enable_controller_mode=True,
            controller_addr=template.namesrv_addr or "",
            controller_heart_beat_timeout_mills=timing.heartbeat_timeout,
            broker_heartbeat_interval=timing.heartbeat_interval,
            sync_broker_metadata_period=timing.sync_period,
            check_sync_state_set_period=timing.sync_period,
        )
        _copy_tls(template, config)
        store_config = MessageStoreConfig(store_path_root_dir=str(store), broker_role=role)
        store_config.validate()
        out.append((config, store_config))
    return out


def _serve_metrics(configs: list[BrokerConfig], first_port: int) -> None:
    """Every broker serves Prometheus metrics, the n-th on ``first_port + n`` (the name
    server has ``first_port - 1``); with 0, each on a free port."""
    for k, config in enumerate(configs, 1):
        config.metrics_exporter_type = MetricsExporterType.PROM
        config.metrics_prom_exporter_port = first_port + k if first_port else 0


def _free_port(host: str) -> int:
    """A port nothing listens on now (for the controller's Raft node)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _controller_config(root: Path, host: str, timing: ReplicaTiming) -> ControllerConfig:
    """A one-node controller group on a free Raft port, its journal in ``<root>/controller``."""
    return ControllerConfig(
        controller_d_leger_peers=f"n0-{host}:{_free_port(host)}",
        controller_d_leger_self_id="n0",
        controller_store_path=str(root / "controller"),
        scan_not_active_broker_interval=timing.scan_interval,
    )


def _copy_tls(source: BrokerConfig, target: BrokerConfig) -> None:
    """Every broker of `mq up` serves and connects as the first does (tls.* keys)."""
    for name in vars(source):
        if name.startswith("tls_"):
            setattr(target, name, getattr(source, name))


def _apply_tls_file(path: Path, namesrv: NamesrvConfig, broker: BrokerConfig) -> None:
    """The tls.* keys of ``path`` (RocketMQ's tls.config.file) for the name server and
    the brokers; the brokers' own calls use TLS too unless the file sets tls.enable."""
    props = read_properties_file(path)
    unknown = sorted(k for k in props if not k.startswith("tls."))
    if unknown:
        raise ConfigError(f"{path}: only tls.* keys belong in a TLS config file, not {unknown}")
    namesrv.update({k: v for k, v in props.items() if k in NamesrvConfig.property_fields()})
    broker.update(props, source=str(path))
    if "tls.enable" not in props:
        broker.tls_enable = broker.tls_server_mode is not TlsMode.DISABLED


def _label(config: BrokerConfig, store_config: MessageStoreConfig | None = None) -> str:
    """``broker-a``, ``broker-a slave 1`` for a slave, or a replica's store name
    (``broker-a-r1``) in controller mode (in messages, errors and log file names)."""
    if config.enable_controller_mode and store_config is not None:
        return store_config.root.name
    name = config.broker_name
    return name if config.broker_id == 0 else f"{name} slave {config.broker_id}"


def _child_main(
    broker_config: BrokerConfig, store_config: MessageStoreConfig, conn: Connection
) -> None:
    """Entry of an extra broker process: report the address (or the error), then serve."""
    if broker_config.enable_controller_mode:
        log_name = f"up-{_label(broker_config, store_config)}.log"
    else:
        suffix = "" if broker_config.broker_id == 0 else f"-s{broker_config.broker_id}"
        log_name = f"up-{broker_config.broker_name}{suffix}.log"
    setup_logging(broker_config.log_dir, broker_config.log_level, log_name)

    async def serve() -> None:
        controller = BrokerController(broker_config, store_config)
        try:
            await controller.start()
        except (MQError, OSError) as exc:
            conn.send(("error", f"{_label(broker_config, store_config)}: {exc}"))
            return
        conn.send(("ok", f"{controller.broker_addr} ({describe(controller)})"))
        await serve_until_signal(controller.shutdown, (signal.SIGTERM,))

    # Ctrl-C on a terminal signals the whole process group; the parent stops its
    # brokers in order with SIGTERM, and a SIGTERM after a SIGINT would kill this one
    # halfway through its shutdown (an abort file, a recovery at the next start).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    run(serve())


async def _start_extra(
    configs: list[tuple[BrokerConfig, MessageStoreConfig]],
) -> list[_ExtraBroker]:
    """Start the extra broker processes and wait until each listens (or fails)."""
    ctx = multiprocessing.get_context("spawn")  # never fork a process with a running loop
    started: list[_ExtraBroker] = []
    loop = asyncio.get_running_loop()
    try:
        for broker_config, store_config in configs:
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_child_main,
                args=(broker_config, store_config, child),
                name=f"mq-{_label(broker_config, store_config).replace(' ', '-')}",
            )
            proc.start()
            child.close()
            started.append(_ExtraBroker(proc, parent))
        for extra, (broker_config, store_config) in zip(started, configs, strict=True):
            ready = await loop.run_in_executor(None, extra.conn.poll, _CHILD_START_TIMEOUT)
            status, text = extra.conn.recv() if ready else ("error", "did not start in time")
            if status != "ok":
                raise MQError(f"{_label(broker_config, store_config)}: {text}")
            print(f"mq broker listening on {text}", flush=True)
    except BaseException:
        await _stop_extra(started)
        raise
    return started


async def _stop_extra(extras: list[_ExtraBroker]) -> None:
    """SIGTERM each extra broker (a clean shutdown), wait, kill what hangs."""
    loop = asyncio.get_running_loop()
    for extra in extras:
        if extra.process.is_alive():
            extra.process.terminate()
    for extra in extras:
        await loop.run_in_executor(None, extra.process.join, 30)
        if extra.process.is_alive():
            extra.process.kill()
            await loop.run_in_executor(None, extra.process.join, 5)
        extra.conn.close()


async def _wait_for_controller(namesrv: NamesrvController) -> None:
    """The one-node controller leads once its Raft node has elected itself (a second or
    two); brokers started before would only retry until then."""
    deadline = time.monotonic() + _CONTROLLER_LEADER_TIMEOUT
    while namesrv.controller is not None and not namesrv.controller.raft.is_leader:
        if time.monotonic() > deadline:
            raise MQError(f"the controller did not lead within {_CONTROLLER_LEADER_TIMEOUT:g} s")
        await asyncio.sleep(0.1)


def _role_settled(broker: BrokerController) -> bool:
    """A replica knows its master and, when that is itself, serves as one (HA port up)."""
    replicas = broker.replicas
    if replicas is None or replicas.master_broker_id is None:
        return False
    return not replicas.is_master or broker.store_config.broker_role is not BrokerRole.SLAVE


async def _wait_for_role(broker: BrokerController, timeout: float) -> None:
    """Give the first replica up to ``timeout`` s to learn its role before the others
    start: after a restart it starts as a slave and is made master again a sync period
    later, and a replica that followed it before then would find no HA port there."""
    deadline = time.monotonic() + timeout
    while not _role_settled(broker) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def _serve(
    namesrv_config: NamesrvConfig,
    broker_config: BrokerConfig,
    store_config: MessageStoreConfig,
    log_file: Path,
    brokers: int = 1,
    slave: bool = False,
    replicas: int = 0,
    timing: ReplicaTiming | None = None,
    metrics_port: int | None = None,
) -> None:
    store = store_config.root
    controller_config = None
    if replicas:
        timing = timing or ReplicaTiming.for_timeout(HEARTBEAT_TIMEOUT_MS)
        namesrv_config.enable_controller_in_namesrv = True
        try:
            controller_config = _controller_config(store, broker_config.broker_ip1, timing)
        except OSError as exc:
            output.fail(
                f"no port for the controller's Raft node on {broker_config.broker_ip1}: "
                f"{exc.strerror or exc}",
                hint="choose another --host",
            )
    namesrv = NamesrvController(namesrv_config, controller_config)
    try:
        await namesrv.start()
    except OSError as exc:
        output.fail(
            f"cannot listen on {namesrv_config.bind_address}:{namesrv_config.listen_port}: "
            f"{exc.strerror or exc}",
            hint="is a name server already running? choose another --namesrv-port",
        )
    except ConfigError as exc:  # the metrics port
        output.fail(str(exc), hint="choose another --metrics-port")
    except MQError as exc:
        output.fail(f"cannot start the controller: {exc}", hint=f"is {store} writable?")
    host = broker_config.broker_ip1
    broker_config.namesrv_addr = f"{host}:{namesrv.port}"
    # Before the start, which replaces a listen port 0 with the port it got.
    if replicas:
        assert timing is not None and controller_config is not None
        try:
            await _wait_for_controller(namesrv)
        except MQError as exc:
            await namesrv.shutdown()
            output.fail(str(exc), hint=f"see {log_file}")
        all_replicas = _replica_configs(
            broker_config, store, replicas, timing, store_config.broker_role
        )
        (broker_config, store_config), masters = all_replicas[0], all_replicas[1:]
        slaves = []
    else:
        masters = _extra_configs(broker_config, store, brokers, store_config.broker_role)
        slaves = [_slave_config(c, store) for c in [broker_config, *(c for c, _ in masters)]]
    if metrics_port is not None:
        extra = masters + (slaves if slave else [])
        _serve_metrics([broker_config, *(c for c, _ in extra)], metrics_port)
    controller = BrokerController(broker_config, store_config)
    try:
        await start_broker(controller)
    except SystemExit:
        await namesrv.shutdown()
        raise
    try:
        access_point = await start_access_point(controller)
    except SystemExit:
        await namesrv.shutdown()
        raise
    metrics = f" (metrics={namesrv.metrics.url})" if namesrv.metrics is not None else ""
    print(f"mq namesrv listening on {host}:{namesrv.port}{metrics}", flush=True)
    if controller_config is not None and timing is not None:
        raft = controller_config.controller_d_leger_peers.partition("-")[2]
        print(
            f"mq controller in the name server at {host}:{namesrv.port} (Raft {raft}, "
            f"journal {controller_config.controller_store_path}, "
            f"controllerHeartBeatTimeoutMills={timing.heartbeat_timeout})",
            flush=True,
        )
    grpc = f", grpc={access_point.address}" if access_point is not None else ""
    print(
        f"mq broker listening on {controller.broker_addr} "
        f"({describe(controller)}{grpc}, log={log_file})",
        flush=True,
    )
    stop_broker = stop_with(controller, access_point)
    extras: list[_ExtraBroker] = []
    if replicas and timing is not None:
        await _wait_for_role(controller, timing.heartbeat_timeout / 1000 + 5)
    if masters or slave:
        try:
            extras = await _start_extra(masters + (slaves if slave else []))
        except MQError as exc:
            await stop_broker()
            await namesrv.shutdown()
            output.fail(str(exc))
    what = "both" if not extras else "all"
    print(f"export NAMESRV_ADDR={host}:{namesrv.port}   # Ctrl-C stops {what}", flush=True)

    async def stop_all() -> None:
        try:
            await _stop_extra(extras)
            await stop_broker()
        finally:
            await namesrv.shutdown()

    await serve_until_signal(stop_all)
    print("mq up stopped", flush=True)


def up(
    store: Path = typer.Option(
        Path(os.path.expanduser("~")) / "store", "--store", metavar="DIR", help="Store root."
    ),
    namesrv_port: int = typer.Option(9876, "--namesrv-port", help="Name server port (0: any)."),
    broker_port: int = typer.Option(
        10911, "--broker-port", help="Broker port; the fast port is this - 2 (0: any pair)."
    ),
    host: str | None = typer.Option(
        None,
        "--host",
        help="Interface to listen on and address to advertise (default 127.0.0.1; "
        "0.0.0.0: every interface, advertising this host's IP).",
    ),
    brokers: int = typer.Option(
        1,
        "--brokers",
        metavar="N",
        help="Brokers of the cluster, one process (one core) each; stores <store>-broker-b...",
    ),
    slave: bool = typer.Option(
        False,
        "--slave",
        help="Also a slave per broker (brokerId 1, own process, store <store>-<name>-s, port +5).",
    ),
    broker_role: MasterRole = typer.Option(
        MasterRole.ASYNC_MASTER,
        "--broker-role",
        case_sensitive=False,
        help="brokerRole of the masters: SYNC_MASTER answers a send once a slave has it.",
    ),
    replicas: int = typer.Option(
        0,
        "--replicas",
        metavar="N",
        help="Controller mode: N brokers of broker-a (one process each, stores "
        "<store>/broker-a-r<k>, ports +5 each) and a controller in the name server that "
        "elects their master (0: none).",
    ),
    heartbeat_timeout: int = typer.Option(
        HEARTBEAT_TIMEOUT_MS,
        "--heartbeat-timeout",
        metavar="MS",
        help="With --replicas: controllerHeartBeatTimeoutMills, how long a silent master "
        "keeps its role (the other periods shrink with it).",
    ),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        metavar="PORT",
        help="Serve Prometheus metrics: the name server on PORT, the brokers on PORT+1, "
        "PORT+2... (metricsExporterType=PROM; 0: any free ports).",
    ),
    grpc_port: int | None = typer.Option(
        None,
        "--grpc-port",
        metavar="PORT",
        help="The first broker's gRPC access point for RocketMQ 5 SDKs (grpcServerPort; "
        "default 8081, a free port with --broker-port 0; -1: none). See docs/rocketmq5.md.",
    ),
    tls_config: Path | None = typer.Option(
        None,
        "--tls-config",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        help="Properties file of tls.* keys (tls.server.mode, tls.server.certPath, ...) for "
        "the name server and every broker; see docs/security.md.",
    ),
) -> None:
    """Run a name server and a broker in one process (Ctrl-C stops both).

    With --slave, every broker name also gets a slave that replicates its master, so a
    master/slave pair can be tried with one command (see docs/ha.md).

    With --replicas N, RocketMQ 5's controller mode: the name server also hosts a
    one-node controller (Raft journal in <store>/controller) and N brokers of broker-a
    let it choose their master; when the master is silent for --heartbeat-timeout ms,
    an in-sync slave takes over. `mq cluster list` shows the epoch and in-sync set.

    Examples:
      mq up
      mq up --store /tmp/mq-store --brokers 2
      mq up --slave --host 0.0.0.0
      mq up --replicas 3 --heartbeat-timeout 3000
      mq up --metrics-port 5556
      mq up --grpc-port 8081

    The broker of this process also serves RocketMQ 5's gRPC access point (the 5.x
    SDKs' endpoint) on --grpc-port, 8081 unless told.
    """
    for name, port in (
        ("--namesrv-port", namesrv_port),
        ("--broker-port", broker_port),
        ("--metrics-port", metrics_port or 0),
        ("--grpc-port", 0 if grpc_port in (None, -1) else grpc_port),
    ):
        if not 0 <= port <= 65535:
            raise typer.BadParameter(f"must be 0..65535, got {port}", param_hint=name)
    if not 1 <= brokers <= _MAX_BROKERS:
        raise typer.BadParameter(
            f"must be 1..{_MAX_BROKERS}, got {brokers}", param_hint="--brokers"
        )
    if replicas:
        _check_replicas(replicas, brokers, slave, heartbeat_timeout, broker_port)
    elif heartbeat_timeout != HEARTBEAT_TIMEOUT_MS:
        raise typer.BadParameter(
            "only with --replicas N (controller mode)", param_hint="--heartbeat-timeout"
        )
    last_port = broker_port + _PORT_STEP * (brokers - 1) + (_SLAVE_PORT_STEP if slave else 0)
    if broker_port and last_port > 65535:
        raise typer.BadParameter("the last broker's port would pass 65535", param_hint="--brokers")
    served = (replicas or brokers) * (2 if slave else 1)
    if metrics_port and metrics_port + served > 65535:
        raise typer.BadParameter(
            "the last broker's metrics port would pass 65535", param_hint="--metrics-port"
        )
    if broker_role is MasterRole.SYNC_MASTER and not slave and replicas < 2:
        output.err_console.print(
            "warning: a SYNC_MASTER without a slave refuses every send "
            "(SLAVE_NOT_AVAILABLE); add --slave"
        )
    # A playground is for this machine unless asked: loopback by default (--host 0.0.0.0
    # listens everywhere and advertises this host's address).
    bind = host or "127.0.0.1"
    try:
        namesrv_config = NamesrvConfig(listen_port=namesrv_port, bind_address=bind)
        broker_config = BrokerConfig(
            listen_port=broker_port,
            bind_address=bind,
            broker_ip1=local_ip() if bind in ("0.0.0.0", "::") else bind,
            namesrv_addr=None,
            log_dir=str(store / "logs"),
        )
        if brokers > 1:
            broker_config.broker_name = "broker-a"
        if grpc_port is None:  # RocketMQ 5's port, or any like the others with port 0
            grpc_port = _GRPC_PORT if broker_port else 0
        broker_config.grpc_server_port = grpc_port if grpc_port >= 0 else None
        if tls_config is not None:
            _apply_tls_file(tls_config, namesrv_config, broker_config)
        if metrics_port is not None:
            namesrv_config.metrics_exporter_type = MetricsExporterType.PROM
            namesrv_config.metrics_prom_exporter_port = metrics_port
        store_config = MessageStoreConfig(
            store_path_root_dir=str(store), broker_role=BrokerRole(broker_role.value)
        )
        store_config.validate()
        log_file = setup_logging(broker_config.log_dir, broker_config.log_level, "up.log")
    except (MQError, OSError) as exc:
        output.fail(str(exc))
    timing = ReplicaTiming.for_timeout(heartbeat_timeout) if replicas else None
    run(
        _serve(
            namesrv_config,
            broker_config,
            store_config,
            log_file,
            brokers,
            slave,
            replicas,
            timing,
            metrics_port,
        )
    )


def _check_replicas(
    replicas: int, brokers: int, slave: bool, heartbeat_timeout: int, broker_port: int
) -> None:
    """--replicas makes broker-a's replicas, which the controller pairs: not with the
    fixed pairs of --slave, nor with more broker names (one line each, exit code 2)."""
    if not 2 <= replicas <= _MAX_REPLICAS:
        raise typer.BadParameter(
            f"must be 2..{_MAX_REPLICAS}, got {replicas} (plain `mq up` runs one broker)",
            param_hint="--replicas",
        )
    if slave:
        raise typer.BadParameter(
            "not with --slave: the controller chooses the slaves among the replicas",
            param_hint="--replicas",
        )
    if brokers > 1:
        raise typer.BadParameter(
            "not with --brokers: the replicas are of one broker name, broker-a",
            param_hint="--replicas",
        )
    if heartbeat_timeout < _MIN_HEARTBEAT_TIMEOUT_MS:
        raise typer.BadParameter(
            f"must be at least {_MIN_HEARTBEAT_TIMEOUT_MS} ms, got {heartbeat_timeout}",
            param_hint="--heartbeat-timeout",
        )
    if broker_port and broker_port + _REPLICA_PORT_STEP * (replicas - 1) + 1 > 65535:
        raise typer.BadParameter(
            "the last replica's port would pass 65535", param_hint="--replicas"
        )


def register(app: typer.Typer) -> None:
    app.command("up")(up)
