"""What ``serve --http`` was told (HttpOptions), what it refuses to start with, which Host
names it answers, and the URL to give a client.

The SDK checks Host and Origin against an allow-list (its TransportSecuritySettings, made
here) so that a web page cannot reach the server through DNS rebinding: the loopback names
always, the bound address, and every ``--allow-host`` name. A server bound to every address
(0.0.0.0, ::) is reached by its loopback URL here and by the names it was given from
elsewhere; its 421 for any other Host names the Host and the flag that admits it.
"""

from __future__ import annotations

import dataclasses
import math
import socket

from mcp.server.transport_security import TransportSecuritySettings

from mcp_toolbridge.edge import (
    LOOPBACK_NAMES,
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    bracketed,
    is_loopback,
    listen_on,
    send_json_reply,
)
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.server.auth_options import AuthOptions
from mcp_toolbridge.server.deadlines import BODY_S, HEAD_S

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
SESSION_IDLE_TIMEOUT_S = 30 * 60.0
"""A stateful session no request has used for this long is closed (the SDK's default)."""
TOKEN_ENV = "TOOLBRIDGE_TOKEN"
DRAIN_TIMEOUT_S = 30.0
"""On SIGTERM, running calls may finish for this long; then they are ended (audited as
ended by the shutdown)."""
WILDCARDS = ("0.0.0.0", "::", "")


@dataclasses.dataclass(frozen=True)
class HttpOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    stateless: bool = False
    allowed_hosts: tuple[str, ...] = ()
    """More Host names clients use to reach this server (a DNS name, a LAN address)."""
    path: str = MCP_PATH
    session_idle_timeout_s: float = SESSION_IDLE_TIMEOUT_S
    """Close a stateful session after this long without a request in flight: its calls are
    cancelled (their processes killed) and its state dropped."""
    auth: AuthOptions | None = None
    """Accept access tokens of this OAuth issuer (instead of the static token)."""
    drain_timeout_s: float = DRAIN_TIMEOUT_S
    """On SIGTERM: how long running calls may go on before they are ended."""
    head_s: float = HEAD_S
    """How long a client may take to send a request's headers (deadlines.py)."""
    body_s: float = BODY_S
    """And its body, after the headers."""

    @property
    def url(self) -> str:
        return f"http://{bracketed(self.host or DEFAULT_HOST)}:{self.port}{self.path}"


def host_names(options: HttpOptions) -> list[str]:
    """The names a client may reach the server by: loopback, the bound address (unless it is
    a wildcard), the --allow-host names."""
    names = [*LOOPBACK_NAMES, *options.allowed_hosts]
    if options.host not in WILDCARDS:
        names.append(options.host)
    return list(dict.fromkeys(names))


def reach_line(options: HttpOptions) -> str | None:
    """Said at start-up when the server listens on every address (its URL then names the
    loopback address): the names it answers, since a client on another machine that uses one
    it was not told about gets 421."""
    if options.host not in WILDCARDS:
        return None
    names = ", ".join(bracketed(n) for n in host_names(options))
    if options.allowed_hosts:
        return f"listening on every address, answering the Host names {names}"
    return (
        f"listening on every address, but answering only the Host names {names} (DNS-rebinding "
        "protection): for clients on other machines, add --allow-host with each name or "
        "address they use (--allow-host tools.internal); any other is answered 421"
    )


def connect_url(options: HttpOptions) -> str:
    """The URL to give a client: bound to every address (0.0.0.0, ::), the loopback one, as
    neither 0.0.0.0 nor :: is an address to connect to, nor a Host the server answers."""
    if options.host not in WILDCARDS:
        return options.url
    return dataclasses.replace(options, host="::1" if options.host == "::" else "127.0.0.1").url


class ExplainedHost:
    """ASGI middleware: the SDK's 421 for a Host not on the allow-list says only "Invalid Host
    header"; this one names the Host and the flag that allows it. The decision stays the
    SDK's: only the answer's body is replaced."""

    def __init__(self, app: ASGIApp, options: HttpOptions) -> None:
        self._app = app
        self._names = ", ".join(bracketed(n) for n in host_names(options))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        replaced = False

        async def sending(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 421:
                replaced = True
                await self._explain(scope, message, send)
            elif not replaced:
                await send(message)

        await self._app(scope, receive, sending)

    async def _explain(self, scope: Scope, start: Message, send: Send) -> None:
        given = next((v for k, v in scope.get("headers", []) if k.lower() == b"host"), b"")
        host = given.decode("latin-1")
        name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
        error = {
            "error": f"this server does not answer to the Host {host!r} (DNS-rebinding "
            f"protection; it answers {self._names}): start it with --allow-host "
            f"{name or 'NAME'} to reach it by that name"
        }
        await send_json_reply(send, start["status"], error)


def security_settings(options: HttpOptions) -> TransportSecuritySettings:
    """The Host/Origin allow-list: loopback, the bound address, the --allow-host names."""
    hosts: list[str] = []
    origins: list[str] = []
    for name in host_names(options):
        shown = bracketed(name)
        hosts += [shown, f"{shown}:*"]
        origins += [
            f"http://{shown}",
            f"http://{shown}:*",
            f"https://{shown}",
            f"https://{shown}:*",
        ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def parse_address(text: str, *, flag: str = "--http") -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1)."""
    host, port = DEFAULT_HOST, text
    if text.startswith("["):
        inner, _, rest = text[1:].partition("]")
        host, port = inner, rest.removeprefix(":")
    elif ":" in text:
        head, _, port = text.rpartition(":")
        host = head or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise ConfigError(
            f"{flag} {text}: expected HOST:PORT with a port from 0 to 65535, e.g. 127.0.0.1:8765",
            code=ErrorCode.CONFIG_INVALID,
        )
    return host, number


def listen(options: HttpOptions) -> socket.socket:
    """The socket ``serve --http`` listens on (every address when the host is empty)."""
    return listen_on(options.host or "0.0.0.0", options.port, "--http")


def check_binding(options: HttpOptions) -> None:
    """Refuse to listen beyond this machine without a token (and settings that make no
    sense)."""
    if not math.isfinite(options.drain_timeout_s) or options.drain_timeout_s < 0:
        raise ConfigError(
            f"--drain-timeout must be 0 or more seconds, not {options.drain_timeout_s:g}",
            code=ErrorCode.CONFIG_INVALID,
        )
    if not math.isfinite(options.session_idle_timeout_s) or options.session_idle_timeout_s <= 0:
        raise ConfigError(
            "--session-idle-timeout must be a positive number of seconds, "
            f"not {options.session_idle_timeout_s:g}",
            code=ErrorCode.CONFIG_INVALID,
        )
    if options.token is not None and not options.token.strip():
        raise ConfigError(
            f"the bearer token is empty; pass a long random value with --token or {TOKEN_ENV}",
            code=ErrorCode.CONFIG_INVALID,
        )
    if options.token and options.auth is not None:
        raise ConfigError(
            f"--token ({TOKEN_ENV}) and --auth-issuer exclude each other: with an "
            "authorization server every caller has their own token; drop the static one",
            code=ErrorCode.CONFIG_INVALID,
        )
    if options.auth is not None:
        options.auth.checked()
    if not is_loopback(options.host) and not options.token and options.auth is None:
        raise ConfigError(
            f"refusing to serve on {options.host or 'every address'} without a bearer token: "
            f"anyone who can reach it could run the tools. Set {TOKEN_ENV} (or --token), or "
            f"--auth-issuer, or bind {DEFAULT_HOST}",
            code=ErrorCode.CONFIG_INVALID,
        )
