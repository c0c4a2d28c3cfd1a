"""The connection options, wherever they stand on the command line.

``-n/--namesrv``, ``--context``, ``--access-key``/``--secret-key`` and ``--tls``,
``--tls-ca``, ``--tls-cert``, ``--tls-key`` say where and how a command connects. Users of
kubectl and rpk give such flags anywhere, so `mq` takes them before the command
(``mq -n ADDR topic list``), between a group and its command (``mq topic -n ADDR list``)
and after it (``mq topic list -n ADDR``); every help page lists them in one "Connection"
panel.

Each place that takes them opens a :func:`scope` for the rest of the command: the root
callback and the groups on their click context, a command around its callback. A value
given nearer the command wins over one given before it. :mod:`mqcli.connect` (the name
server) and :mod:`mqcli.credentials` (the ACL keys) read :func:`current`; TLS reaches the
clients through the environment ``ClientConfig`` reads (``MQ_TLS``, ``MQ_TLS_CA``,
``MQ_TLS_CERT``, ``MQ_TLS_KEY``), set for the command's duration.

The options themselves, and how the command tree gets them, are in
:mod:`mqcli.connection_options`; this module is the state they set, which the code that
connects reads without loading typer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typer._click import Context

__all__ = ["Connection", "current", "enter_scope", "scope"]


@dataclass(frozen=True, slots=True)
class Connection:
    """What the connection options said; None (False for ``tls``): not given."""

    namesrv: str | None = None
    context: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    tls: bool = False
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None

    def over(self, base: Connection) -> Connection:
        """These values where given, ``base``'s for the others."""
        return Connection(
            **{
                f.name: (mine if mine not in (None, False) else getattr(base, f.name))
                for f in dataclasses.fields(self)
                for mine in (getattr(self, f.name),)
            }
        )


_current = Connection()


def current() -> Connection:
    """The connection options in force for the running command."""
    return _current


@contextlib.contextmanager
def scope(given: Connection) -> Iterator[Connection]:
    """``given`` over the options in force, until the block ends (the TLS environment too)."""
    global _current
    saved = _current
    _current = given.over(saved)
    try:
        with _tls_environment(_current):
            yield _current
    finally:
        _current = saved


def enter_scope(ctx: Context, given: Connection) -> None:
    """:func:`scope` for the rest of ``ctx`` (a group's options stay in force while its
    command runs; click closes the scope with the context)."""
    ctx.with_resource(scope(given))


@contextlib.contextmanager
def _tls_environment(conn: Connection) -> Iterator[None]:
    """``MQ_TLS`` and the PEM variables as ``conn`` says, restored afterwards; any PEM
    file implies TLS."""
    files = {"MQ_TLS_CA": conn.tls_ca, "MQ_TLS_CERT": conn.tls_cert, "MQ_TLS_KEY": conn.tls_key}
    wanted = {name: str(path) if path else None for name, path in files.items()}
    wanted["MQ_TLS"] = "1" if conn.tls or any(files.values()) else None
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
