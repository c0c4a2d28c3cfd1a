"""`mq bench`: load generators in the spirit of RocketMQ's benchmark tools and `nats bench`.

``produce`` sends a fixed load, ``consume`` drains a topic, ``e2e`` does both at once; all
three report msgs/s, MiB/s and latency percentiles the same way (:mod:`.stats`).
"""

from __future__ import annotations

import typer

from mqcli.commands.bench.consume import consume
from mqcli.commands.bench.e2e import e2e
from mqcli.commands.bench.produce import produce
from mqcli.commands.bench.stats import Tally, percentile, summarize

__all__ = ["Tally", "percentile", "register", "summarize"]


def register(app: typer.Typer) -> None:
    bench = typer.Typer(
        help="Load generators: `produce` sends a fixed load, `consume` drains a topic, `e2e`"
        " does both at once; each reports rate and latency.",
        no_args_is_help=True,
    )
    bench.command("produce")(produce)
    bench.command("consume")(consume)
    bench.command("e2e")(e2e)
    app.add_typer(bench, name="bench")
