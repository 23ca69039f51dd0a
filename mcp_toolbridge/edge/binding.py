"""Where an HTTP edge (server/, console/) listens: this machine's loopback names, which it
always answers to, whether an address stays on this machine, and the listening socket."""

from __future__ import annotations

import ipaddress
import socket

from mcp_toolbridge.errors import ConfigError, ErrorCode

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bracketed(host: str) -> str:
    """``host`` as a URL names it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def listen_on(host: str, port: int, flag: str) -> socket.socket:
    """A socket listening on ``host:port``; a ConfigError naming ``flag`` (``--http``,
    ``--console``) when it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        raise ConfigError(
            f"{flag}: cannot listen on {bracketed(host)}:{port}: {exc.strerror or exc}; pick "
            "another address or port",
            code=ErrorCode.CONFIG_INVALID,
        ) from exc
