"""Permission bits of the plain ACL and which request codes need an admin account.

The bit values are 4.9.8's (``DENY=1, ANY=2, PUB=4, SUB=8``) so a decision reads the same
as a RocketMQ broker's; the admin codes are 4.9.8's five plus the ones issue 12 names
(resets, wiping a broker's write permission, deleting on the name server, config and ACL
updates), which 4.9.8 left open to any signed account.
"""

from __future__ import annotations

import enum
import logging
from typing import Final

from mqcore.protocol import RequestCode

__all__ = [
    "ADMIN_CODES",
    "NAMESRV_ADMIN_CODES",
    "Perm",
    "format_perm",
    "has_permission",
    "parse_perm",
]

log = logging.getLogger("mq.acl")


class Perm(enum.IntFlag):
    DENY = 1
    ANY = 2
    """Needed by requests that any of PUB or SUB satisfies."""
    PUB = 4
    SUB = 8


_BY_NAME: Final = {
    "DENY": Perm.DENY,
    "PUB": Perm.PUB,
    "SUB": Perm.SUB,
    "PUB|SUB": Perm.PUB | Perm.SUB,
    "SUB|PUB": Perm.PUB | Perm.SUB,
}


def parse_perm(text: object) -> Perm:
    """``PUB``, ``SUB``, ``PUB|SUB`` (either order) or ``DENY``; anything else (a missing
    default included) is DENY, as in 4.9.8, so a typo never grants more."""
    if text is None:
        return Perm.DENY
    perm = _BY_NAME.get(str(text).strip())
    if perm is None:
        log.warning("unknown ACL permission %r: treated as DENY", text)
        return Perm.DENY
    return perm


def format_perm(perm: Perm) -> str:
    if perm & Perm.DENY:
        return "DENY"
    both = Perm.PUB | Perm.SUB
    if perm & both == both:
        return "PUB|SUB"
    if perm & Perm.PUB:
        return "PUB"
    if perm & Perm.SUB:
        return "SUB"
    return "DENY"


def has_permission(needed: Perm, owned: Perm) -> bool:
    """Whether ``owned`` grants ``needed`` (DENY in ``owned`` wins over everything)."""
    if owned & Perm.DENY:
        return False
    if needed & Perm.ANY:
        return bool(owned & (Perm.PUB | Perm.SUB))
    return bool(needed & owned)


NAMESRV_ADMIN_CODES: Final = frozenset(
    {
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.UPDATE_NAMESRV_CONFIG,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG_BY_VALUE,
    }
)
"""What the name server checks when ACL is on (its other codes stay open, as reads)."""

ADMIN_CODES: Final = NAMESRV_ADMIN_CODES | frozenset(
    {
        # 4.9.8's Permission.ADMIN_CODE
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        # what else rewrites state an operator owns
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.RESET_CONSUMER_OFFSET_IN_BROKER,
        RequestCode.CLONE_GROUP_OFFSET,
        RequestCode.TRIGGER_DELETE_FILES,
        RequestCode.DELETE_EXPIRED_COMMITLOG,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.CLEAN_UNUSED_TOPIC,
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    }
)
"""Codes only an ``admin: true`` account may send (when its address is not trusted)."""
