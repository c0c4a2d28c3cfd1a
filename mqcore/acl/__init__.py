"""RocketMQ 4.x plain ACL: the ``plain_acl.yml`` model, request signatures and the
access decision, shared by the servers (enforcement) and the clients (signing)."""

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
