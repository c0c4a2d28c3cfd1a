"""`mq tui`: the live dashboard (see mqcli.tui)."""

from __future__ import annotations

import typer

from mqcli.connect import NamesrvOpt, resolve_namesrv
from mqcli.output import fail


def tui(
    namesrv: str | None = NamesrvOpt,
    refresh: float = typer.Option(
        2.0, "--refresh", "-r", help="Seconds between refreshes (at least 0.5).", min=0.5
    ),
    view: str = typer.Option(
        "cluster",
        "--view",
        help="View to open: cluster, topics, groups, delay, messages or dlq.",
    ),
) -> None:
    """Live dashboard of a cluster (Textual).

    Views: cluster (brokers with role, HA state and slave lag; name servers), topics
    (depth, put TPS), groups (lag per queue, members), delay levels
    (SCHEDULE_TOPIC_XXXX progress), messages (by key, id or time range) and dead
    letters (browse, resend). Keys: F1-F6 or alt+1..6 switch views anywhere (1-6 and
    tab outside text boxes; esc leaves a box), / filters, r refreshes, ctrl+s saves an
    SVG screenshot (into $MQ_SCREENSHOT_DIR or here), ? shows help, q quits.

    Examples:
      mq tui
      mq tui --view groups -n 10.0.0.5:9876
    """
    from mqcli.tui.app import VIEWS, MQApp

    if view not in VIEWS:
        fail(f"no view named {view!r}", hint="use one of " + ", ".join(VIEWS))
    MQApp(resolve_namesrv(namesrv), refresh=refresh, view=view).run()


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)
