"""`AclGuard`: the servers' pre-dispatch check, over a ``plain_acl.yml`` it re-reads.

A server's dispatcher calls the guard before each request's processor (one ``None``
check when ACL is off). A refused request is answered NO_PERMISSION with the reason and
logged with the peer's address; its processor never runs, so nothing is written. The file
is polled (size, mtime, inode) every few seconds by a task of the server's loop, never on
a request; a file that no longer parses keeps the previous accounts in force.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import yaml

from mqcore.acl.config import PlainAclConfig, load_acl_file
from mqcore.acl.updates import (
    AccountUpdate,
    DataVersion,
    data_version,
    delete_account,
    edit_acl_file,
    set_global_white_addresses,
    upsert_account,
)
from mqcore.acl.validator import validate
from mqcore.errors import ConfigError
from mqcore.protocol import RemotingCommand, ResponseCode
from mqcore.remoting import Channel

__all__ = ["DEFAULT_POLL_INTERVAL", "AclGuard", "default_acl_path"]

log = logging.getLogger("mq.acl")

DEFAULT_POLL_INTERVAL = 5.0
"""Seconds between looks at the file (4.9.8's AclFileWatchService waits 5 s too)."""


def default_acl_path(configured: str | None, fallback_dir: Path) -> Path:
    """``plainAclFile`` when set; else ``$ROCKETMQ_HOME/conf/plain_acl.yml`` (where 4.9.8
    looks) when ROCKETMQ_HOME is set; else ``fallback_dir/plain_acl.yml``."""
    if configured:
        return Path(configured).expanduser()
    home = os.environ.get("ROCKETMQ_HOME")
    if home:
        return Path(home) / "conf" / "plain_acl.yml"
    return fallback_dir / "plain_acl.yml"


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class AclGuard:
    """Callable as a dispatcher's ``pre_dispatch``: ``guard(channel, request)`` is None
    (go on) or the NO_PERMISSION answer. ``only`` limits the check to those codes (the
    name server checks its admin codes only)."""

    def __init__(
        self,
        path: Path,
        *,
        only: Collection[int] | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
    ) -> None:
        self.path = path
        self.only = frozenset(only) if only is not None else None
        self.poll_interval = poll_interval
        self.config = load_acl_file(path)  # ConfigError at startup: refuse to start
        self._stamp = _stamp(path)
        self._task: asyncio.Task[None] | None = None
        if self._stamp is None:
            log.error("ACL is enabled but %s does not exist: every request is refused", path)
        else:
            log.info("ACL: %d accounts from %s", len(self.config.accounts), path)

    @classmethod
    def from_config(
        cls,
        enable: bool,
        plain_acl_file: str | None,
        fallback_dir: Path,
        *,
        only: Collection[int] | None = None,
    ) -> AclGuard | None:
        """The guard a server's ``aclEnable``/``plainAclFile`` keys ask for (None: off)."""
        if not enable:
            return None
        return cls(default_acl_path(plain_acl_file, fallback_dir), only=only)

    def __call__(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        if self.only is not None and request.code not in self.only:
            return None
        denied = validate(self.config, request, channel.remote_host)
        if denied is None:
            return None
        log.warning(
            "ACL refused request code %d from %s: %s", request.code, channel.remote_address,
            denied.reason,
        )  # fmt: skip
        return RemotingCommand.response_to(request, ResponseCode.NO_PERMISSION, denied.reason)

    def reload_if_changed(self) -> bool:
        """Re-read the file if it changed since the last look; whether it was re-read."""
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            config = load_acl_file(self.path)
        except ConfigError as exc:
            log.error("ACL file not reloaded, the previous accounts stay: %s", exc)
            return False
        self.config = config
        log.info("ACL reloaded: %d accounts from %s", len(config.accounts), self.path)
        return True

    def replace(self, config: PlainAclConfig) -> None:
        self.config = config

    # -- remote changes (UPDATE_AND_CREATE_ACL_CONFIG and friends) ----------------------
    # Blocking (a read, a write and an fsync of a small file): callers run them in a
    # thread, one at a time. The new accounts apply at once, not at the next poll.

    def update_account(self, update: AccountUpdate) -> None:
        """Create or change an account in the file (ConfigError: refused, file as it was)."""
        self._edit(lambda doc: upsert_account(doc, update))

    def delete_account(self, access_key: str) -> bool:
        """Remove an account from the file; False when it has none with that key."""
        return self._edit(lambda doc: delete_account(doc, access_key))

    def update_global_white_addresses(self, addresses: list[str]) -> None:
        self._edit(lambda doc: set_global_white_addresses(doc, addresses))

    def data_version(self) -> DataVersion:
        """The file's ``dataVersion`` (zeros for a file that never had one)."""
        try:
            doc = yaml.safe_load(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return DataVersion()
        return data_version(doc) if isinstance(doc, dict) else DataVersion()

    def _edit(self, edit: Callable[[dict[str, Any]], bool | None]) -> bool:
        result = edit_acl_file(self.path, edit)
        if result is None:
            return False
        self.config = result[0]
        self._stamp = _stamp(self.path)
        log.info("ACL file %s changed remotely: %d accounts", self.path, len(self.config.accounts))
        return True

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                self.reload_if_changed()
            except Exception:  # keep watching whatever one read did
                log.exception("ACL reload failed")

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._poll(), name="acl-watch")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
