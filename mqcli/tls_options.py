"""``--tls``, ``--tls-ca``, ``--tls-cert`` and ``--tls-key`` on every command that talks
to a server.

Those are the commands taking the shared ``-n/--namesrv`` option
(:data:`mqcli.connect.NamesrvOpt`); :func:`add_tls_options` gives each these options
once the app is assembled, so no command repeats them. A command run with them sees
``MQ_TLS=1`` / ``MQ_TLS_CA`` / ``MQ_TLS_CERT`` / ``MQ_TLS_KEY`` in its environment for its
duration, and every client it builds reads those (:class:`mqcore.client.ClientConfig`'s
defaults): one path, whether the options or the environment said so.
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

TlsOpt = typer.Option(
    False,
    "--tls",
    envvar="MQ_TLS",
    help="Talk to the servers over TLS (env MQ_TLS=1).",
    show_default=False,
)


def _pem_option(flag: str, env: str, text: str) -> Any:
    return typer.Option(
        None,
        flag,
        envvar=env,
        metavar="PATH",
        exists=True,
        dir_okay=False,
        help=f"{text} (env {env}).",
        show_default=False,
    )


_PEM_OPTIONS: dict[str, tuple[str, Any]] = {
    "mq_tls_ca_file": (
        "MQ_TLS_CA",
        _pem_option(
            "--tls-ca",
            "MQ_TLS_CA",
            "CA certificate (PEM) the servers' certificates chain to; implies --tls "
            "(default: the system's CAs)",
        ),
    ),
    "mq_tls_cert_file": (
        "MQ_TLS_CERT",
        _pem_option(
            "--tls-cert",
            "MQ_TLS_CERT",
            "Client certificate (PEM) for servers that verify clients "
            "(tls.server.need.client.auth); implies --tls; needs --tls-key",
        ),
    ),
    "mq_tls_key_file": (
        "MQ_TLS_KEY",
        _pem_option("--tls-key", "MQ_TLS_KEY", "Private key (PEM) of --tls-cert"),
    ),
}
"""Parameter name -> (environment variable, typer option) of each PEM file option."""


@contextlib.contextmanager
def tls_environment(tls: bool, ca: Path | None, **pems: Path | None) -> Iterator[None]:
    """``MQ_TLS`` and the PEM variables as the options say, restored afterwards.

    ``pems`` are ``cert=``/``key=`` paths; any PEM file implies TLS."""
    files = {"MQ_TLS_CA": ca, "MQ_TLS_CERT": pems.get("cert"), "MQ_TLS_KEY": pems.get("key")}
    wanted = {name: str(path) if path else None for name, path in files.items()}
    wanted["MQ_TLS"] = "1" if tls or any(files.values()) else None
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
        inspect.Parameter(_TLS, inspect.Parameter.KEYWORD_ONLY, default=TlsOpt, annotation=bool)
    ]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=Path | None)
        for name, (_, opt) in _PEM_OPTIONS.items()
    ]

    @functools.wraps(callback)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tls = bool(kwargs.pop(_TLS, False))
        ca, cert, key = (kwargs.pop(name, None) for name in _PEM_OPTIONS)
        if (cert is None) != (key is None):
            raise typer.BadParameter("--tls-cert and --tls-key go together")
        with tls_environment(tls, ca, cert=cert, key=key):
            return callback(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        **hints,
        _TLS: bool,
        **{name: Path | None for name in _PEM_OPTIONS},
    }
    return wrapper


def add_tls_options(app: typer.Typer) -> None:
    """Give every command of ``app`` (and of its sub-apps) that takes ``-n/--namesrv``
    the TLS options."""
    for command in app.registered_commands:
        if command.callback is not None and _talks_to_servers(command.callback):
            command.callback = _with_tls(command.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            add_tls_options(group.typer_instance)
