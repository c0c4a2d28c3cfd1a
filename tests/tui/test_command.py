"""`mq tui` resolves its name server like every command and hands options to the app."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mqcli.commands import tui as tui_command
from mqcli.tui.app import MQApp


def run(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[MQApp], str]:
    import typer

    started: list[MQApp] = []
    monkeypatch.setattr(MQApp, "run", lambda self, *a, **kw: started.append(self))
    app = typer.Typer()
    tui_command.register(app)
    app.command("noop", hidden=True)(lambda: None)  # keep `tui` a subcommand
    result = CliRunner().invoke(app, ["tui", *args])
    return result.exit_code, started, result.output


def test_options_reach_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    code, started, _ = run(
        ["-n", "10.1.1.1:9876", "--refresh", "0.5", "--view", "delay"], monkeypatch
    )
    assert code == 0
    (app,) = started
    assert (app.namesrv, app.refresh_seconds, app.initial_view) == ("10.1.1.1:9876", 0.5, "delay")


def test_environment_gives_the_name_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQ_NAMESRV_ADDR", "10.2.2.2:9876")
    code, started, _ = run([], monkeypatch)
    assert code == 0 and started[0].namesrv == "10.2.2.2:9876"


def test_bad_view_and_refresh_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    code, started, _ = run(["-n", "x:1", "--view", "nope"], monkeypatch)
    assert code == 1 and not started
    code, started, _ = run(["-n", "x:1", "--refresh", "0.1"], monkeypatch)
    assert code == 2 and not started
