"""TLS of the gRPC port, from the broker's own ``tls.server.*`` keys.

gRPC cannot tell TLS from plaintext on one port as the remoting ports do in
``permissive`` mode, so the gRPC port is plaintext when ``tls.server.mode`` is
``disabled`` and TLS only otherwise: an operator who asked for TLS gets it. The same
certificate and key serve it (an unencrypted PEM key: grpc takes the key's bytes as they
are), and ``tls.server.need.client.auth`` asks clients for certificates signed by
``tls.server.trustCertPath``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc

from mqcore.errors import ConfigError
from mqcore.remoting.tls import ClientAuth, ServerTlsKeys, TlsMode

__all__ = ["server_credentials"]


def _read(key: str, path: str | None) -> bytes:
    if not path:
        raise ConfigError(f"{key} is needed for TLS on the gRPC port")
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ConfigError(f"{key}: {exc.strerror or exc}") from None


def server_credentials(config: ServerTlsKeys) -> Any:
    """grpc server credentials, or None for plaintext. Raises ConfigError for a missing
    or unreadable file, or an encrypted key."""
    if TlsMode(config.tls_server_mode) is TlsMode.DISABLED:
        return None
    if config.tls_server_key_password:
        raise ConfigError(
            "tls.server.keyPassword: the gRPC port needs an unencrypted key (tls.server.keyPath)"
        )
    cert = _read("tls.server.certPath", config.tls_server_cert_path)
    key = _read("tls.server.keyPath", config.tls_server_key_path)
    client_auth = ClientAuth(config.tls_server_need_client_auth)
    roots = None
    if client_auth is not ClientAuth.NONE:
        roots = _read("tls.server.trustCertPath", config.tls_server_trust_cert_path)
    return grpc.ssl_server_credentials(
        [(key, cert)],
        root_certificates=roots,
        require_client_auth=client_auth is ClientAuth.REQUIRE,
    )
