"""``--tls`` and ``--tls-ca PATH`` on every command that talks to a server.

Those are the commands taking the shared ``-n/--namesrv`` option
(:data:`mqcli.connect.NamesrvOpt`); :func:`add_tls_options` gives each the two options
once the app is assembled, so no command repeats them. A command run with them sees
``MQ_TLS=1`` / ``MQ_TLS_CA=PATH`` in its environment for its duration, and every client it
builds reads those (:class:`mqcore.client.ClientConfig`'s defaults): one path, whether the
options or the environment said so.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer

from mqcli.connect import NamesrvOpt

__all__ = ["add_tls_options", "tls_environment"]

_TLS = "mq_tls_flag"
_TLS_CA = "mq_tls_ca_file"

TlsOpt = typer.Option(
    False,
    "--tls",
    envvar="MQ_TLS",
    help="Talk to the servers over TLS (env MQ_TLS=1).",
    show_default=False,
)
TlsCaOpt = typer.Option(
    None,
    "--tls-ca",
    envvar="MQ_TLS_CA",
    metavar="PATH",
    exists=True,
    dir_okay=False,
    help="CA certificate (PEM) the servers' certificates chain to; implies --tls "
    "(env MQ_TLS_CA; default: the system's CAs).",
    show_default=False,
)


@contextlib.contextmanager
def tls_environment(tls: bool, ca: Path | None) -> Iterator[None]:
    """``MQ_TLS``/``MQ_TLS_CA`` as the options say, restored afterwards."""
    wanted = {"MQ_TLS": "1" if tls or ca else None, "MQ_TLS_CA": str(ca) if ca else None}
    saved = {name: os.environ.get(name) for name in wanted}
    try:
        for name, value in wanted.items():
            if value is not None:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _talks_to_servers(callback: Callable[..., Any]) -> bool:
    """Takes the shared ``-n`` option and has not had the TLS options yet (a sub-app
    registered under two names is walked twice)."""
    params = inspect.signature(callback).parameters
    return _TLS not in params and any(p.default is NamesrvOpt for p in params.values())


def _with_tls(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` with the two options added to what typer sees."""
    hints = typing.get_type_hints(callback)
    signature = inspect.signature(callback)
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()
    ]
    params += [
        inspect.Parameter(_TLS, inspect.Parameter.KEYWORD_ONLY, default=TlsOpt, annotation=bool),
        inspect.Parameter(
            _TLS_CA, inspect.Parameter.KEYWORD_ONLY, default=TlsCaOpt, annotation=Path | None
        ),
    ]

    @functools.wraps(callback)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tls = bool(kwargs.pop(_TLS, False))
        ca = kwargs.pop(_TLS_CA, None)
        with tls_environment(tls, ca):
            return callback(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**hints, _TLS: bool, _TLS_CA: Path | None}
    return wrapper


def add_tls_options(app: typer.Typer) -> None:
    """Give every command of ``app`` (and of its sub-apps) that takes ``-n/--namesrv``
    the ``--tls`` and ``--tls-ca`` options."""
    for command in app.registered_commands:
        if command.callback is not None and _talks_to_servers(command.callback):
            command.callback = _with_tls(command.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            add_tls_options(group.typer_instance)
