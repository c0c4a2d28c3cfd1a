"""Which ACL keys the CLI signs with: ``--access-key K --secret-key S`` (before or after
the command) > the keys of the context ``--context NAME`` names >
``MQ_ACCESS_KEY``/``MQ_SECRET_KEY`` > the current context's keys > RocketMQ's
``$ROCKETMQ_HOME/conf/tools.yml`` (``accessKey``/``secretKey``, what mqadmin reads) >
none (requests go unsigned, as to a server without ACL)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from mqcli.connection import current

if TYPE_CHECKING:  # the client and the ACL code load only when a command signs
    from mqcore.acl.signature import SessionCredentials
    from mqcore.client import ClientConfig

__all__ = ["client_config", "resolve_credentials"]


def _pair(access_key: str | None, secret_key: str | None, where: str) -> SessionCredentials | None:
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        from mqcli.output import fail

        fail(f"{where} gives only one of the access key and the secret key", hint="give both")
    from mqcore.acl.signature import SessionCredentials

    return SessionCredentials(access_key, secret_key)


def _tools_yml() -> SessionCredentials | None:
    home = os.environ.get("ROCKETMQ_HOME")
    if not home:
        return None
    import yaml

    from mqcore.acl.signature import SessionCredentials

    try:
        doc = yaml.safe_load((Path(home) / "conf" / "tools.yml").read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(doc, dict):
        return None
    ak, sk = doc.get("accessKey"), doc.get("secretKey")
    return SessionCredentials(str(ak), str(sk)) if ak and sk else None


def resolve_credentials() -> SessionCredentials | None:
    from mqcli.connect import ContextStore, chosen_context

    conn = current()
    given = _pair(conn.access_key, conn.secret_key, "--access-key/--secret-key")
    if given is not None:
        return given
    chosen = chosen_context()
    if chosen is not None and chosen.access_key and chosen.secret_key:
        return _pair(chosen.access_key, chosen.secret_key, f"context {chosen.name!r}")
    env = _pair(os.environ.get("MQ_ACCESS_KEY"), os.environ.get("MQ_SECRET_KEY"), "the environment")
    if env is not None:
        return env
    store = ContextStore.load()
    if store.current is not None:
        context = store.contexts[store.current]
        if context.access_key and context.secret_key:
            return _pair(context.access_key, context.secret_key, f"context {context.name!r}")
    return _tools_yml()


def client_config() -> ClientConfig | None:
    """The ClientConfig a command's clients use: signing when keys were given."""
    credentials = resolve_credentials()
    if credentials is None:
        return None
    from mqcore.client import ClientConfig

    return ClientConfig(credentials=credentials)
