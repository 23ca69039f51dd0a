"""GET primitives for the web built-ins: a fetch pinned to checked addresses, and a plain GET.

:func:`fetch_pinned` is what web_fetch uses against untrusted URLs:

- Redirects are followed by hand (at most ``max_redirects``). For every hop, including the
  first, ``pin(target, hop)`` is awaited: it applies the caller's policy (address rules,
  granted hosts) and returns the addresses it checked. Nothing is looked up here.
- The request is sent to a checked address: the URL's host is replaced by the address, while
  the ``Host`` header keeps the original host (and port) and TLS uses the original host name
  for SNI and certificate verification (httpx2's documented ``sni_hostname`` request
  extension). A new client per hop, so no connection is ever reused for another host name.
- No proxies or certificate settings from the environment, no cookies, no credentials;
  ``verify`` (an ``ssl.SSLContext``) replaces the system trust store when given.
- The body is read by :func:`.http_body.read_body`: decoded (gzip, deflate, identity) with a
  cap on the decoded size, so a gzip bomb costs at most the cap.

:func:`fetch_plain` is a GET (or a form POST) to an operator-configured endpoint (search
providers, an authorization server's metadata, keys and introspection): system DNS, no
redirects followed, the same bounded decoding.

httpx2's exceptions become call errors through :mod:`.http_errors` (the map the Runloop http
tools use too): :class:`ExecTransportError`, or :class:`ExecTimeoutError` naming the limit;
callers put the overall deadline around the call with ``anyio.fail_after``.
"""

from __future__ import annotations

import functools
import http.cookiejar
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
import anyio.to_thread
import httpx2

from mcp_toolbridge import __version__
from mcp_toolbridge.errors import ExecError, ExecTimeoutError, ExecTransportError
from mcp_toolbridge.executors.http_body import ACCEPT_ENCODING, read_body
from mcp_toolbridge.executors.http_errors import (
    connect_reason,
    host_label,
    too_many_redirects,
    translated,
)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = f"mcp-toolbridge/{__version__}"


@dataclass(frozen=True, slots=True)
class FetchTarget:
    """One hop's URL, parsed by httpx2 (the parser that sends the request)."""

    url: str
    """The absolute URL, normalized (IDN hosts in punycode)."""
    scheme: str
    host: str
    """The host as a name or address text: lower-case, punycode, no brackets, no final dot."""
    port: int
    """The effective port (the scheme's default when the URL has none)."""
    has_userinfo: bool
    label: str
    """``host``, or ``host:port`` when the port is not the scheme's default (for messages)."""


@dataclass(frozen=True, slots=True)
class FetchedBody:
    """The final response of a fetch: status, headers that matter, the decoded body."""

    url: str
    status: int
    reason: str
    content_type: str
    body: bytes
    """The decoded body, at most ``max_bytes``."""
    over_cap: bool
    """The decoded body was longer than ``max_bytes``; reading stopped there."""
    redirects: tuple[str, ...] = ()
    """The URLs redirected to, in order (the last one is ``url``)."""
    address: str = ""
    """The address the final hop connected to (pinned fetches only)."""


Pin = Callable[[FetchTarget, int], Awaitable[Sequence[str]]]
"""pin(target, hop) -> the checked addresses to try, in order; raise to refuse the hop."""


def parse_target(url: str | httpx2.URL) -> FetchTarget:
    """Parse an absolute http(s) URL; :class:`ExecTransportError` when it is not one."""
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        raise ExecTransportError(f"invalid URL {str(url)[:200]!r}: {exc}") from exc
    if parsed.scheme not in DEFAULT_PORTS or not parsed.raw_host:
        raise ExecTransportError(
            f"cannot fetch {str(parsed)[:200]!r}: only absolute http:// and https:// URLs are "
            "supported"
        )
    host = parsed.raw_host.decode("ascii").lower().rstrip(".")
    if not host:
        raise ExecTransportError(f"cannot fetch {str(parsed)[:200]!r}: the URL has no host")
    return FetchTarget(
        url=str(parsed),
        scheme=parsed.scheme,
        host=host,
        port=parsed.port or DEFAULT_PORTS[parsed.scheme],
        has_userinfo=bool(parsed.userinfo),
        label=host_label(parsed),
    )


async def fetch_pinned(
    url: str,
    pin: Pin,
    *,
    max_bytes: int,
    max_redirects: int = 5,
    accept: str = "*/*",
    connect_timeout_s: float = 10.0,
    read_timeout_s: float = 30.0,
    verify: ssl.SSLContext | None = None,
) -> FetchedBody:
    """GET ``url`` following redirects by hand, connecting only to addresses ``pin`` returned
    (see the module doc). Raises what ``pin`` raises, or ExecTransportError/ExecTimeoutError."""
    target = parse_target(url)
    redirects: list[str] = []
    for hop in range(max_redirects + 1):
        addresses = list(await pin(target, hop))
        if not addresses:
            raise ExecTransportError(f"no address to connect to for {target.label}")
        headers = _headers(accept) | {"Host": _host_header(target)}
        timeout = httpx2.Timeout(connect_timeout_s, read=read_timeout_s)
        async with _client(timeout, await _tls(verify)) as client:
            response, address = await _send_pinned(client, target, addresses, headers)
            try:
                location = response.headers.get("location")
                if response.status_code not in REDIRECT_STATUSES or not location:
                    body, over = await read_body(response, max_bytes, host=target.label)
                    return FetchedBody(
                        url=target.url,
                        status=response.status_code,
                        reason=response.reason_phrase,
                        content_type=response.headers.get("content-type", ""),
                        body=body,
                        over_cap=over,
                        redirects=tuple(redirects),
                        address=address,
                    )
            finally:
                await response.aclose()
        if hop == max_redirects:
            raise too_many_redirects(max_redirects, target.url)
        with translated(target.label):
            joined = httpx2.URL(target.url).join(location)
        target = parse_target(joined)
        redirects.append(target.url)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


async def fetch_plain(
    url: str,
    *,
    params: Mapping[str, str],
    headers: Mapping[str, str],
    max_bytes: int,
    connect_timeout_s: float = 10.0,
    read_timeout_s: float = 30.0,
    verify: ssl.SSLContext | None = None,
    form: Mapping[str, str] | None = None,
) -> FetchedBody:
    """GET ``url`` with ``params`` as it is (system DNS, redirects not followed); with
    ``form``, POST it instead (``application/x-www-form-urlencoded``)."""
    target = parse_target(url)
    timeout = httpx2.Timeout(connect_timeout_s, read=read_timeout_s)
    async with _client(timeout, await _tls(verify)) as client:
        with translated(target.label):
            request = client.build_request(
                "GET" if form is None else "POST",
                target.url,
                params=dict(params),
                headers=_headers("*/*") | dict(headers),
                data=None if form is None else dict(form),
            )
            response = await client.send(request, stream=True)
        try:
            body, over = await read_body(response, max_bytes, host=target.label)
        finally:
            await response.aclose()
    return FetchedBody(
        url=str(request.url),
        status=response.status_code,
        reason=response.reason_phrase,
        content_type=response.headers.get("content-type", ""),
        body=body,
        over_cap=over,
    )


def _headers(accept: str) -> dict[str, str]:
    return {"User-Agent": USER_AGENT, "Accept": accept, "Accept-Encoding": ACCEPT_ENCODING}


def _host_header(target: FetchTarget) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    return host if target.port == DEFAULT_PORTS[target.scheme] else f"{host}:{target.port}"


_default_tls: list[ssl.SSLContext] = []
"""The default trust store's context, built once (see :func:`_tls`)."""


async def _tls(verify: ssl.SSLContext | None) -> ssl.SSLContext:
    """``verify``, or the default certificate checks: a context built once, in a worker
    thread. Loading the CA bundle takes 20-70 ms of CPU holding the GIL, which every call
    would otherwise spend on the event loop (httpx2 builds one per client)."""
    if verify is not None:
        return verify
    if not _default_tls:
        context = await anyio.to_thread.run_sync(
            functools.partial(httpx2.create_ssl_context, trust_env=False)
        )
        _default_tls[:] = [context]
    return _default_tls[0]


def _client(timeout: httpx2.Timeout, verify: ssl.SSLContext | None) -> httpx2.AsyncClient:
    """A client for one exchange: no cookies, no proxies or certificates from the environment;
    ``verify`` replaces the system trust store (None: the default certificate checks)."""
    no_cookies = http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    return httpx2.AsyncClient(
        timeout=timeout,
        cookies=no_cookies,
        follow_redirects=False,
        trust_env=False,
        verify=verify if verify is not None else True,
    )


async def _send_pinned(
    client: httpx2.AsyncClient,
    target: FetchTarget,
    addresses: Sequence[str],
    headers: Mapping[str, str],
) -> tuple[httpx2.Response, str]:
    """Send to the first address that accepts a connection. When none does, the error is a
    timeout if every address timed out, else a transport error; it lists each address."""
    failures: list[str] = []
    timeouts = 0
    for address in addresses:
        with translated(target.label):
            pinned = httpx2.URL(target.url).copy_with(host=address)
            request = client.build_request(
                "GET", pinned, headers=dict(headers), extensions={"sni_hostname": target.host}
            )
        try:
            with translated(target.label):
                return await client.send(request, stream=True), address
        except ExecError as exc:
            cause = exc.__cause__
            if not isinstance(cause, httpx2.ConnectError | httpx2.ConnectTimeout):
                raise
            failures.append(f"{address}: {connect_reason(cause)}")
            timeouts += isinstance(cause, httpx2.ConnectTimeout)
    error = ExecTimeoutError if timeouts == len(failures) else ExecTransportError
    raise error(f"could not connect to {target.label}: " + "; ".join(failures))
