"""What a call of the access point knows of its caller (what it knows of the brokers is
:mod:`mqcore.proxy.brokers`' seam)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CallContext"]


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who makes a call: the ``x-mq-*`` metadata and the peer's address."""

    client_id: str
    remote_address: str
    language: str = "JAVA"
    client_version: str = ""
    namespace: str = ""
    access_key: str | None = None
    """The account the call was signed with (ACL), None when unsigned."""
