"""`mq exporter`: Prometheus metrics of any cluster, mq or RocketMQ 4.x, by polling admin
requests (as rocketmq-exporter does), under the names an mq broker with
``metricsExporterType=PROM`` serves itself, so one dashboard reads both.

The poll is :class:`~mqcore.client.exporter.ClusterExporter`; this module parses the
flags, serves the last poll on ``--host:--port`` and stops on Ctrl-C. ``--once`` prints
one poll in the text format instead, for scripts.
"""

from __future__ import annotations

import asyncio
import sys

import typer

from mqcli import output
from mqcli.commands.admin_util import admin_session
from mqcli.connect import NamesrvOpt, run_async
from mqcli.serving import serve_until_signal
from mqcore.errors import ConfigError

__all__ = ["register"]

DEFAULT_PORT = 5557
"""RocketMQ 5's ``metricsPromExporterPort`` (a broker serving itself uses it too: give
another ``--port`` on a broker's host)."""


def exporter(
    namesrv: str | None = NamesrvOpt,
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port to serve /metrics on (0: any)."),
    host: str = typer.Option("0.0.0.0", "--host", help="Interface to serve /metrics on."),
    interval: float = typer.Option(
        15.0, "--interval", metavar="SECONDS", help="Seconds between two polls of the cluster."
    ),
    label: str = typer.Option(
        "", "--label", metavar="K:V,...", help="Labels added to every sample (as metricsLabel)."
    ),
    once: bool = typer.Option(
        False, "--once", help="Poll once, print the metrics (text format) and exit."
    ),
) -> None:
    """Serve Prometheus metrics of any cluster.

    An mq or a RocketMQ 4.x cluster, polled with admin requests: every master's runtime
    info, topics, groups and consume stats each --interval; scrapes get the last poll.
    The names and labels are those an mq broker with metricsExporterType=PROM serves
    (docs/operations.md), so the Grafana dashboard in grafana/ reads either.

    Examples:
      mq exporter -n 127.0.0.1:9876
      mq exporter -n "ns1:9876;ns2:9876" --port 9557 --interval 30
      mq exporter --once | grep rocketmq_consumer_lag_messages
    """
    from mqcore.metrics.names import parse_metrics_label

    if not 0 <= port <= 65535:
        raise typer.BadParameter(f"must be 0..65535, got {port}", param_hint="--port")
    if interval <= 0:
        raise typer.BadParameter(f"must be > 0, got {interval}", param_hint="--interval")
    try:
        labels = parse_metrics_label(label)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--label") from None
    if once:
        sys.stdout.write(run_async(_once(namesrv, labels)))
        return
    run_async(_serve(namesrv, host, port, interval, labels))


async def _once(namesrv: str | None, labels: dict[str, str]) -> str:
    from prometheus_client import CollectorRegistry, generate_latest

    from mqcore.client.exporter import ClusterExporter

    async with admin_session(namesrv) as admin:
        exporter = ClusterExporter(admin, labels)
        await exporter.poll()
    if exporter.polls == 0:
        output.fail("the name server did not answer", hint="check -n / MQ_NAMESRV_ADDR")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter)
    return generate_latest(registry).decode()


async def _serve(
    namesrv: str | None, host: str, port: int, interval: float, labels: dict[str, str]
) -> None:
    from mqcore.client.exporter import ClusterExporter
    from mqcore.metrics.http import MetricsHttpServer

    async with admin_session(namesrv) as admin:
        exporter = ClusterExporter(admin, labels)
        endpoint = MetricsHttpServer(host, port, exporter)
        endpoint.serve()  # ConfigError (one line) when the port is taken
        try:
            await exporter.poll()  # the first scrape already has figures
            polling = asyncio.create_task(exporter.run(interval), name="exporter-poll")
            print(
                f"mq exporter serving {endpoint.url} for {', '.join(admin.namesrv_addrs)} "
                f"(a poll every {interval:g} s, the first took {exporter.last_poll_ms:.0f} ms)",
                flush=True,
            )

            async def stop() -> None:
                polling.cancel()
                await asyncio.gather(polling, return_exceptions=True)

            await serve_until_signal(stop)
        finally:
            await endpoint.stop()
    print("mq exporter stopped", flush=True)


def register(app: typer.Typer) -> None:
    app.command("exporter")(exporter)
