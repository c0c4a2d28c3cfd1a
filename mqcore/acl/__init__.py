"""RocketMQ 4.x plain ACL: the ``plain_acl.yml`` model, request signatures and the
access decision, shared by the servers (enforcement) and the clients (signing).

The names below are imported on first use (PEP 562): a client that only signs requests
(:mod:`mqcore.acl.signature`) does not load the YAML model and its parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqcore.acl.address import AddressPattern
    from mqcore.acl.config import Account, PlainAclConfig, load_acl_file, parse_acl
    from mqcore.acl.permission import ADMIN_CODES, NAMESRV_ADMIN_CODES, Perm, parse_perm
    from mqcore.acl.signature import SessionCredentials, calc_signature, sign_request
    from mqcore.acl.validator import AccessDenied, check_resources, validate

__all__ = [
    "ADMIN_CODES",
    "NAMESRV_ADMIN_CODES",
    "AccessDenied",
    "Account",
    "AddressPattern",
    "Perm",
    "PlainAclConfig",
    "SessionCredentials",
    "calc_signature",
    "check_resources",
    "load_acl_file",
    "parse_acl",
    "parse_perm",
    "sign_request",
    "validate",
]

_HOMES = {
    "AddressPattern": "address",
    "Account": "config",
    "PlainAclConfig": "config",
    "load_acl_file": "config",
    "parse_acl": "config",
    "ADMIN_CODES": "permission",
    "NAMESRV_ADMIN_CODES": "permission",
    "Perm": "permission",
    "parse_perm": "permission",
    "SessionCredentials": "signature",
    "calc_signature": "signature",
    "sign_request": "signature",
    "AccessDenied": "validator",
    "check_resources": "validator",
    "validate": "validator",
}
"""Exported name -> the submodule that defines it."""

if not TYPE_CHECKING:
    from mqcore.common.lazy import lazy_names

    __getattr__, __dir__ = lazy_names(globals(), _HOMES)
