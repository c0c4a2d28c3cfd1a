"""`mq store ...`: offline tools over a store directory (inspect, dump, verify, generate)."""

from __future__ import annotations

import typer

store_app = typer.Typer(help="Read and check store files offline (never writes to them).",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")
