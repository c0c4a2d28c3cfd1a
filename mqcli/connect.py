"""Where the CLI connects: the `-n` option, environment, and named contexts.

Resolution order for the name server, like natscli's contexts and kcat's config:
``-n/--namesrv`` (the command's own, else one given before it) > the context
``--context NAME`` names > ``MQ_NAMESRV_ADDR`` > RocketMQ's ``NAMESRV_ADDR`` > the
selected context (``mq context use NAME``) > ``127.0.0.1:9876``.

Contexts live in ``contexts.json`` under :func:`config_dir`: ``$MQ_CONFIG_DIR``, else
``$XDG_CONFIG_HOME/mq``, else ``~/.config/mq``. A file only at ``~/.config/mq`` (where
versions before XDG support kept it) is still read when ``XDG_CONFIG_HOME`` points
elsewhere, and the next change writes it to the new place.
"""

from __future__ import annotations

import os
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
import typer

from mqcli import output
from mqcli.connection import current
from mqcore.errors import MQError

T = TypeVar("T")

DEFAULT_NAMESRV = "127.0.0.1:9876"

CONNECTION_PANEL = "Connection"
"""The help panel of the options saying where and how to connect (-n, --context, keys,
TLS), on every command that connects and on `mq --help`."""

NamesrvOpt = typer.Option(
    None,
    "--namesrv",
    "-n",
    help="Name server(s) host:port;host:port (default: --context, MQ_NAMESRV_ADDR, "
    "NAMESRV_ADDR, the current context, 127.0.0.1:9876).",
    show_default=False,
    rich_help_panel=CONNECTION_PANEL,
)

CONTEXTS_FILE = "contexts.json"


def config_dir() -> Path:
    """Where mq keeps its settings: ``$MQ_CONFIG_DIR``, ``$XDG_CONFIG_HOME/mq``, or
    ``~/.config/mq`` (the XDG base directory default)."""
    if explicit := os.environ.get("MQ_CONFIG_DIR"):
        return Path(explicit)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():  # the spec: a relative path is to be ignored
        return Path(xdg) / "mq"
    return _legacy_config_dir()


def _legacy_config_dir() -> Path:
    return Path.home() / ".config" / "mq"


def contexts_path() -> Path:
    """The contexts file to read: :func:`config_dir`'s, or the one at ``~/.config/mq``
    when only that one exists (written before ``XDG_CONFIG_HOME`` was honoured)."""
    path = config_dir() / CONTEXTS_FILE
    if not path.exists() and "MQ_CONFIG_DIR" not in os.environ:
        legacy = _legacy_config_dir() / CONTEXTS_FILE
        if legacy.exists():
            return legacy
    return path


@dataclass(slots=True)
class Context:
    name: str
    namesrv: str
    description: str = ""
    access_key: str = ""
    """ACL keys this context signs with (see mqcli.credentials); empty: unsigned."""
    secret_key: str = ""


@dataclass(slots=True)
class ContextStore:
    """The saved contexts and which one is selected."""

    contexts: dict[str, Context]
    current: str | None

    @classmethod
    def load(cls) -> ContextStore:
        path = contexts_path()
        try:
            doc = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return cls({}, None)
        except (OSError, orjson.JSONDecodeError) as exc:
            output.fail(f"cannot read {path}: {exc}", hint="fix or delete the file")
        contexts = {
            name: Context(
                name,
                str(c.get("namesrv", "")),
                str(c.get("description", "")),
                str(c.get("accessKey", "")),
                str(c.get("secretKey", "")),
            )
            for name, c in dict(doc.get("contexts", {})).items()
        }
        current = doc.get("current")
        return cls(contexts, current if current in contexts else None)

    def save(self) -> None:
        """Write the contexts to :func:`config_dir` (moving them there from the old place
        when they were read from it)."""
        path = config_dir() / CONTEXTS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "current": self.current,
            "contexts": {n: _context_doc(c) for n, c in sorted(self.contexts.items())},
        }
        from mqcore.common.files import write_atomically

        write_atomically(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        if any(c.secret_key for c in self.contexts.values()):
            path.chmod(0o600)  # it holds ACL secrets


def _context_doc(c: Context) -> dict[str, str]:
    doc = {"namesrv": c.namesrv, "description": c.description}
    if c.access_key:
        doc |= {"accessKey": c.access_key, "secretKey": c.secret_key}
    return doc


def resolve_namesrv(option: str | None) -> str:
    """The name server address list to use for this command; a malformed one ends the
    command with one line saying which address, where it came from, and why."""
    given = option or current().namesrv
    if given:
        return check_namesrv(given, "-n/--namesrv")
    if (chosen := chosen_context()) is not None:
        return check_namesrv(chosen.namesrv, f"context {chosen.name!r}")
    for var in ("MQ_NAMESRV_ADDR", "NAMESRV_ADDR"):
        if env := os.environ.get(var):
            return check_namesrv(env, var)
    store = ContextStore.load()
    if store.current is not None:
        return check_namesrv(store.contexts[store.current].namesrv, f"context {store.current!r}")
    return DEFAULT_NAMESRV


def chosen_context() -> Context | None:
    """The context ``--context NAME`` names (None without the option); an unknown name
    ends the command with one line."""
    name = current().context
    if name is None:
        return None
    store = ContextStore.load()
    if name not in store.contexts:
        known = ", ".join(sorted(store.contexts)) or "none saved"
        output.fail(
            f"no context named {name!r} (known: {known})",
            hint="`mq context ls` lists them; `mq context add NAME -n ADDR` saves one",
        )
    return store.contexts[name]


def namesrv_problem(addresses: str) -> str | None:
    """Why ``host:port;host:port`` is not a name server list (None when it is one)."""
    for addr in addresses.split(";"):
        addr = addr.strip()
        host, sep, port = addr.rpartition(":")
        if not addr or not sep or not host.strip("[]") or (":" in host and "]" not in host):
            return f"bad name server address {addr!r}: expected host:port, e.g. 127.0.0.1:9876"
        if not port.isdigit():
            return f"bad port {port!r} in name server address {addr!r}: a number from 1 to 65535"
        if not 0 < int(port) < 65536:
            return f"bad port {port} in name server address {addr!r}: a number from 1 to 65535"
    return None


def check_namesrv(addresses: str, where: str) -> str:
    """``addresses`` when well formed; otherwise one error line naming ``where`` it came from."""
    problem = namesrv_problem(addresses)
    if problem is not None:
        output.fail(f"{problem} (from {where})", code=2, hint="give -n host:port[;host:port]")
    return addresses


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine (uvloop when installed); errors become one clear line."""
    from mqcore.remoting.loop import run  # asyncio and uvloop: only for commands that talk

    try:
        return run(main)
    except MQError as exc:
        if output.debug_enabled():
            raise
        output.fail(str(exc), hint=exc.hint)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
