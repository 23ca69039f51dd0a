"""The allowlisting HTTP(S) proxy: a sandbox's only network, for tools granted specific hosts.

One proxy serves one launch, on a unix socket in a private 0700 folder that is bind-mounted
into the sandbox (the relay inside turns it into ``127.0.0.1:3128`` there). It speaks the two
forms clients send through ``HTTP_PROXY``/``HTTPS_PROXY``:

- ``CONNECT host:port`` (HTTPS and any other TCP protocol): answered ``200`` and then relayed
  both ways, untouched;
- an absolute-form request ``GET http://host[:port]/path HTTP/1.1``: forwarded in origin form
  with ``Connection: close``, one request per connection.

A host is let through only when it matches the profile's ``net.hosts`` (the policy's host
patterns: exact, ``*.domain`` or an IP). It must be a plain DNS name or IP literal (a NUL or
any other odd character is refused before matching: the ``attacker\\x00.allowed.com`` trick).
The proxy resolves the name itself and connects to the address it checked (no second lookup
to rebind). A name granted only through a ``*.`` pattern must resolve to global addresses: a
loopback, private or link-local answer is refused; a name or IP granted exactly may be anything.

Every refusal is answered ``403`` with the reason and logged as a warning naming the tool
(``mcp_toolbridge.sandbox``). Waits are bounded: the request head must arrive within
``HEAD_TIMEOUT_S`` and fit ``HEAD_LIMIT`` bytes, the upstream connection within
``CONNECT_TIMEOUT_S``; a tunnel lives at most as long as the launch.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from urllib.parse import urlsplit

import anyio
import anyio.abc

from mcp_toolbridge.sandbox.profile import SandboxProfile

log = logging.getLogger("mcp_toolbridge.sandbox")

HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
CHUNK = 64 * 1024
_NAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
)
_HOP_HEADERS = frozenset(
    {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}
)


class Refused(Exception):
    """The request is not let through; the message says why (sent back and logged)."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class AllowlistProxy:
    """Handles the connections of one sandboxed launch."""

    def __init__(self, profile: SandboxProfile) -> None:
        self.profile = profile

    async def handle(self, client: anyio.abc.ByteStream) -> None:
        async with client:
            try:
                with anyio.fail_after(HEAD_TIMEOUT_S):
                    head, rest = await _read_head(client)
                method, target, version = _request_line(head)
                if method == b"CONNECT":
                    host, port = _authority(target.decode("ascii", "replace"))
                    upstream = await self._open(host, port)
                    await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    first = rest
                else:
                    host, port, path = _absolute(target.decode("ascii", "replace"))
                    upstream = await self._open(host, port)
                    first = _origin_form(head, method, path, version) + rest
            except Refused as refused:
                await _refuse(client, refused, self.profile.tool)
                return
            except TimeoutError:
                return  # no complete request head in time: drop the connection
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return
            async with upstream:
                if first:
                    await upstream.send(first)
                await _splice(client, upstream)

    async def _open(self, host: str, port: int) -> anyio.abc.SocketStream:
        if not self.profile.allows_host(host):
            granted = ", ".join(p.source for p in self.profile.hosts) or "none"
            raise Refused(f"host {host!r} is not in the tool's net.hosts ({granted})")
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError) as exc:
            raise Refused(f"cannot resolve {host!r}: {exc}", 502) from exc
        exact = self.profile.names_exactly(host)
        addresses = [str(info[4][0]) for info in infos]
        if not exact:
            local = [a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_global]
            if local:
                raise Refused(
                    f"host {host!r} resolves to a non-global address ({local[0]}); a host "
                    "granted by a wildcard pattern must be public (grant it by name instead)"
                )
        for address in dict.fromkeys(addresses):
            try:
                with anyio.fail_after(CONNECT_TIMEOUT_S):
                    return await anyio.connect_tcp(address, port)
            except (OSError, TimeoutError):
                continue
        raise Refused(f"cannot connect to {host}:{port}", 502)


async def _read_head(client: anyio.abc.ByteStream) -> tuple[bytes, bytes]:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > HEAD_LIMIT:
            raise Refused(f"the request head is longer than {HEAD_LIMIT} bytes", 431)
        buffer += await client.receive(CHUNK)
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _request_line(head: bytes) -> tuple[bytes, bytes, bytes]:
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        raise Refused("not an HTTP proxy request", 400)
    method, target, version = parts
    return method, target, version


def _host(text: str) -> str:
    """A plain DNS name or an IP literal, lowercased; anything else is refused."""
    host = text.strip("[]").lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not _NAME.match(host):
        raise Refused(f"{text!r} is not a valid host name", 400)
    return host


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise Refused(f"{text!r} is not a valid port", 400)
    return int(text)


def _authority(target: str) -> tuple[str, int]:
    if target.startswith("["):
        host, sep, port = target[1:].partition("]:")
    else:
        host, sep, port = target.rpartition(":")
    if not sep:
        raise Refused(f"CONNECT needs host:port, not {target!r}", 400)
    return _host(host), _port(port)


def _absolute(target: str) -> tuple[str, int, bytes]:
    try:
        parts = urlsplit(target)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"{target!r} is not a valid URL", 400) from exc
    if parts.scheme != "http" or not parts.hostname or "@" in parts.netloc:
        raise Refused("only http:// URLs are proxied this way; use CONNECT for https", 400)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return _host(parts.hostname), port or 80, path.encode("ascii", "replace")


def _origin_form(head: bytes, method: bytes, path: bytes, version: bytes) -> bytes:
    lines = head[:-4].split(b"\r\n")
    kept = [
        line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    return b"\r\n".join([b" ".join((method, path, version)), *kept, b"Connection: close"]) + (
        b"\r\n\r\n"
    )


async def _refuse(client: anyio.abc.ByteStream, refused: Refused, tool: str) -> None:
    reason = str(refused)
    log.warning("sandbox proxy refused a connection of tool %r: %s", tool, reason)
    body = f"mcp-toolbridge sandbox: {reason}\n".encode()
    status = {400: "Bad Request", 403: "Forbidden", 431: "Too Large", 502: "Bad Gateway"}
    head = (
        f"HTTP/1.1 {refused.status} {status.get(refused.status, 'Refused')}\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    try:
        await client.send(head + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _splice(a: anyio.abc.ByteStream, b: anyio.abc.ByteStream) -> None:
    async def copy(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream) -> None:
        try:
            while True:
                await sink.send(await source.receive(CHUNK))
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        except OSError:
            pass
        try:
            await sink.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(copy, a, b)
        tg.start_soon(copy, b, a)
