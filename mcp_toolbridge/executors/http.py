"""The HTTP executor: runs tools whose transport is :class:`~mcp_toolbridge.model.HttpTransport`.

httpx2's exceptions are translated by :mod:`.http_errors` (shared with the web built-ins).

Request building:

- ``{name}`` in the URL is replaced by argument ``name`` (strings as is, other values as JSON
  text), percent-encoded with nothing kept safe; a missing or null argument is an
  :class:`ArgumentsError`, and so is a value that leaves its path segment empty, ``.`` or
  ``..`` (the request would reach another endpoint).
- ``${secret:ID}`` in the URL (percent-encoded) and in header values (verbatim) is replaced by
  the resolved secret; an id the call did not resolve is a :class:`SecretError`.
- The arguments the URL does not use go in the query string for GET, HEAD, DELETE and OPTIONS
  (strings as is, numbers and booleans as JSON text, lists as repeated keys, objects as JSON
  text, nulls left out) and otherwise in a JSON object body (``{}`` when none are left).
- Headers: ``User-Agent: mcp-toolbridge/<version>``, ``Accept: application/json`` and
  ``Accept-Encoding: gzip, deflate`` (what :mod:`.http_body` decodes), overridden by the
  manifest's headers (case-insensitively).

Exchange: one deadline (``timeout_s``) over the whole exchange, redirects followed by hand (at
most ``max_redirects``), each hop's host checked against ``requires.net_hosts`` when the tool
declares any, and against the call's net scope (the hosts of ``request.sandbox``'s profile: the
policy's ``net.hosts`` and the tool's own, which the capability check judged the first hop
by; ``*`` allows any). The tool runs in the server, outside the sandbox, so a redirect is the
one way its request could reach a host that check never saw. When a redirect leaves the
origin, headers that carried a secret placeholder and ``Authorization``/``Cookie`` are dropped.
The body is read by :func:`.http_body.read_body` (decoded, with a cap on the decoded size) up
to ``min(request.max_output_bytes, max_response_bytes)``; a larger 2xx body gives
``ExecResult(ok=False, truncated=True, error="response larger than N bytes ...")``.

Progress: a long exchange reports its elapsed time and the body bytes received so far
(:mod:`~mcp_toolbridge.executors.progress`).

Results: a 2xx body is parsed as JSON whatever its content type (empty body or HEAD: ``{}``;
not JSON: :class:`ExecOutputError`). Any other final status gives ``ExecResult(ok=False,
http_status=..., error="HTTP <status> <reason>: <first 500 characters of the body>")`` with
``value`` set to the body when it is JSON. ``url`` is the final URL, ``stdout_bytes`` the body
size. Secret values (raw and percent-encoded) are redacted from every error, value and URL.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import anyio
import httpx2

from mcp_toolbridge import __version__
from mcp_toolbridge.errors import (
    ArgumentsError,
    ErrorCode,
    ExecError,
    ExecOutputError,
    ExecTimeoutError,
    ExecTransportError,
    PermissionDeniedError,
    SecretError,
)
from mcp_toolbridge.executors.base import ExecRequest, ExecResult
from mcp_toolbridge.executors.cuts import redacted_head
from mcp_toolbridge.executors.http_body import ACCEPT_ENCODING, read_body
from mcp_toolbridge.executors.http_client import (
    ClientSettingError,
    default_client,
    reached,
)
from mcp_toolbridge.executors.http_errors import host_label, too_many_redirects, translated
from mcp_toolbridge.executors.progress import Heartbeat
from mcp_toolbridge.host import CUT_MARGIN_CHARS, RedactCut
from mcp_toolbridge.model import HttpTransport, ToolSpec
from mcp_toolbridge.secrets import ENV_PREFIX, redact, redact_value, secret_env_name

if TYPE_CHECKING:
    from mcp_toolbridge.sandbox import SandboxProfile

DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_REDIRECTS = 5
ERROR_BODY_READ_BYTES = 64 * 1024
ERROR_EXCERPT_CHARS = 500
OUTPUT_EXCERPT_CHARS = 200
QUERY_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
_PLACEHOLDER = re.compile(r"\$\{secret:([^}]*)\}|\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")
_SECRET = re.compile(r"\$\{secret:([^}]*)\}")


@dataclass(frozen=True, slots=True)
class HttpCall:
    """A request ready to send: the first hop of an exchange."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    secret_headers: frozenset[str]
    """Lower-cased names of headers whose value came from a secret placeholder."""


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _secret_value(secret_id: str, secrets: Mapping[str, str], tool: str) -> str:
    value = secrets.get(secret_id)
    if not value:
        raise SecretError(
            f'secret "{secret_id}" used by the URL or headers was not resolved: list it in the '
            f"tool's secrets and set {ENV_PREFIX}{secret_env_name(secret_id)} or add it to the "
            "--secrets file",
            tool=tool,
        )
    return value


def _check_segments(template: str, expand: Callable[[re.Match[str]], str], tool: str) -> None:
    """A placeholder in the URL's path fills one segment: a value that makes its segment
    empty, ``.`` or ``..`` would move the request to another endpoint once the dot segments
    are resolved (``/users/../sessions`` is ``/sessions``), so it is an
    :class:`ArgumentsError`."""
    for segment in urlsplit(template).path.split("/")[1:]:
        names = [match.group(2) for match in _PLACEHOLDER.finditer(segment) if match.group(2)]
        value = _PLACEHOLDER.sub(expand, segment)
        if names and value in ("", ".", ".."):
            shown = " and ".join(f"{{{name}}}" for name in names)
            raise ArgumentsError(
                f'URL placeholder {shown} would make the path segment "{value}" of {template}: '
                'an empty, "." or ".." segment moves the request to another endpoint. Give '
                f"{' and '.join(names)} a value that names one path segment.",
                tool=tool,
            )


def build_call(
    transport: HttpTransport, arguments: Mapping[str, Any], secrets: Mapping[str, str], tool: str
) -> HttpCall:
    """Expand the URL and headers of ``transport`` and place the remaining arguments."""
    used: set[str] = set()

    def expand(match: re.Match[str]) -> str:
        secret_id, name = match.group(1), match.group(2)
        if secret_id is not None:
            return quote(_secret_value(secret_id, secrets, tool), safe="")
        value = arguments.get(name)
        if value is None:
            raise ArgumentsError(
                f'URL placeholder {{{name}}} needs the argument "{name}", which was not given',
                tool=tool,
            )
        used.add(name)
        return quote(_text(value), safe="")

    method = transport.method.upper()
    _check_segments(transport.url, expand, tool)
    url = _PLACEHOLDER.sub(expand, transport.url).partition("#")[0]
    rest = {key: value for key, value in arguments.items() if key not in used}
    body: bytes | None = None
    if method in QUERY_METHODS:
        pairs = [
            (key, _text(item))
            for key, value in rest.items()
            for item in (value if isinstance(value, list | tuple) else [value])
            if item is not None
        ]
        if pairs:
            query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
            joiner = "" if url.endswith(("?", "&")) else "&" if "?" in url else "?"
            url = f"{url}{joiner}{query}"
    else:
        body = json.dumps(rest, ensure_ascii=False, separators=(",", ":")).encode()

    headers = {
        "User-Agent": f"mcp-toolbridge/{__version__}",
        "Accept": "application/json",
        "Accept-Encoding": ACCEPT_ENCODING,
    }
    if body is not None:
        headers["Content-Type"] = "application/json"
    secret_headers: set[str] = set()
    for name, template in transport.headers.items():
        for existing in [key for key in headers if key.lower() == name.lower()]:
            del headers[existing]
        value = _SECRET.sub(lambda m: _secret_value(m.group(1), secrets, tool), template)
        if value != template:
            secret_headers.add(name.lower())
        headers[name] = value
    return HttpCall(method, url, headers, body, frozenset(secret_headers))


def _split_host_port(pattern: str) -> tuple[str, int | None]:
    pattern = pattern.strip().lower()
    if "://" in pattern:
        pattern = pattern.split("://", 1)[1]
    pattern = pattern.split("/", 1)[0]
    if pattern.startswith("["):
        host, _, rest = pattern[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, sep, port = pattern.rpartition(":")
        if not sep or not port.isdigit():
            host, port = pattern, ""
    return host.rstrip("."), int(port) if port.isdigit() else None


def host_allowed(host: str, port: int | None, patterns: Sequence[str]) -> bool:
    """Whether ``host:port`` matches a declared net host: ``api.example.com`` (exact),
    ``*.example.com`` (any subdomain, not the apex), ``*`` (any), each with an optional
    ``:port`` that must then equal the effective port."""
    host = host.lower().rstrip(".")
    for pattern in patterns:
        want_host, want_port = _split_host_port(pattern)
        if want_port is not None and want_port != port:
            continue
        if want_host == "*" or want_host == host:
            return True
        if want_host.startswith("*.") and host.endswith(want_host[1:]):
            return True
    return False


class _Scrubber:
    """Redacts secret values, in every form they are written in (percent-encoded, base64...:
    :func:`~mcp_toolbridge.secrets.secret_forms`), from text and JSON values."""

    def __init__(self, secrets: Mapping[str, str], cut: RedactCut | None = None) -> None:
        self.secrets = dict(secrets)
        self.cut = cut
        """The call's redaction of a cut (the secret scan's; None when it is off)."""

    def text(self, text: str) -> str:
        return redact(text, self.secrets)

    def value(self, value: object) -> object:
        return redact_value(value, self.secrets)


def _excerpt(body: bytes, limit: int, scrub: _Scrubber) -> str:
    """The start of ``body`` for an error text: the call's secret values replaced before it is
    cut (a cut through one would show the part no exact match finds), then redacted with what
    follows it (``scrub.cut``: one scan of up to 16 KB, once per failed call)."""
    head = body[: 4 * limit + CUT_MARGIN_CHARS]  # every character of the limit, and a margin
    text = scrub.text(head.decode("utf-8", errors="replace").strip())
    if len(text) <= limit and len(head) == len(body):
        return text
    return redacted_head(text, limit, scrub.cut) + "…"


class HttpExecutor:
    """Runs HTTP tools on one shared :class:`httpx2.AsyncClient` (see the module doc)."""

    def __init__(
        self,
        client: httpx2.AsyncClient | None,
        *,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
    ) -> None:
        self.client = client
        """None until the first call makes the default client (see :meth:`open`)."""
        self.max_response_bytes = max_response_bytes
        self.max_redirects = max_redirects
        self._making = anyio.Lock()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
    ) -> AsyncIterator[HttpExecutor]:
        """An executor on a default client (:func:`.http_client.default_client`: the
        operator's proxy settings apply), closed on exit. The client is made by the first call, in
        a worker thread: its TLS context costs ≈ 50 ms, which a server that never calls an
        HTTP tool should not pay before answering its first request."""
        executor = cls(None, max_response_bytes=max_response_bytes, max_redirects=max_redirects)
        try:
            yield executor
        finally:
            if executor.client is not None:
                with anyio.CancelScope(shield=True):
                    await executor.client.aclose()

    async def _client(self, tool: str) -> httpx2.AsyncClient:
        if self.client is None:
            async with self._making:
                if self.client is None:
                    try:
                        self.client = await anyio.to_thread.run_sync(default_client)
                    except ClientSettingError as exc:
                        raise ExecTransportError(str(exc), tool=tool) from None
        return self.client

    async def run(self, request: ExecRequest) -> ExecResult:
        spec = request.spec
        if not isinstance(spec.transport, HttpTransport):
            raise ExecError(
                f"the HTTP executor cannot run a {spec.transport.kind} tool",
                tool=spec.name,
                code=ErrorCode.EXEC_UNSUPPORTED,
            )
        call = build_call(spec.transport, request.arguments, request.secrets, spec.name)
        scrub = _Scrubber(request.secrets, request.context.redact_cut)
        limit = min(request.max_output_bytes, self.max_response_bytes)
        beat = Heartbeat(request.progress)
        profile = request.sandbox.profile if request.sandbox is not None else None
        try:
            with anyio.fail_after(request.timeout_s):
                return await beat.run(
                    lambda: self._exchange(call, spec, limit, scrub, beat, profile)
                )
        except TimeoutError as exc:
            raise ExecTimeoutError(
                f"tool timed out after {request.timeout_s:g}s", tool=spec.name
            ) from exc

    def _target(
        self,
        url: str | httpx2.URL,
        spec: ToolSpec,
        scrub: _Scrubber,
        hop: int,
        profile: SandboxProfile | None = None,
    ) -> httpx2.URL:
        try:
            target = httpx2.URL(url)
        except httpx2.InvalidURL as exc:
            raise ExecTransportError(
                f"invalid URL {scrub.text(str(url))}: {scrub.text(str(exc))}", tool=spec.name
            ) from exc
        if target.scheme not in ("http", "https") or not target.host:
            raise ExecTransportError(
                f"cannot request {scrub.text(str(target))}: only absolute http and https URLs "
                "are supported",
                tool=spec.name,
            )
        patterns = spec.requires.net_hosts
        if patterns and not host_allowed(target.host, target.origin.port, patterns):
            action = "redirect to" if hop else "request to"
            raise PermissionDeniedError(
                f"{action} {host_label(target)} is not allowed: the tool declares net hosts "
                f"{', '.join(patterns)}",
                tool=spec.name,
            )
        if hop and profile is not None and not _in_scope(profile, target.host):
            granted = ", ".join(p.source for p in profile.hosts) or "none"
            raise PermissionDeniedError(
                f"redirect to {host_label(target)} is not allowed: the host is not in the "
                f"call's granted net.hosts ({granted})",
                tool=spec.name,
            )
        return target

    async def _exchange(
        self,
        call: HttpCall,
        spec: ToolSpec,
        limit: int,
        scrub: _Scrubber,
        beat: Heartbeat,
        profile: SandboxProfile | None,
    ) -> ExecResult:
        method, headers, body = call.method, dict(call.headers), call.body
        target = self._target(call.url, spec, scrub, 0)
        for hop in range(self.max_redirects + 1):
            with translated(host_label(target), tool=spec.name, scrub=scrub.text):
                outgoing = httpx2.Request(method, target, headers=headers, content=body)
            with translated(reached(target), tool=spec.name, scrub=scrub.text):
                client = await self._client(spec.name)
                response = await client.send(outgoing, stream=True, follow_redirects=False)
            try:
                location = response.headers.get("location")
                if response.status_code not in REDIRECT_STATUSES or not location:
                    return await self._result(response, method, target, spec, limit, scrub, beat)
                if hop == self.max_redirects:
                    raise too_many_redirects(
                        self.max_redirects, str(target), tool=spec.name, scrub=scrub.text
                    )
                status = response.status_code
                with translated(host_label(target), tool=spec.name, scrub=scrub.text):
                    joined = target.join(location)
                following = self._target(joined, spec, scrub, hop + 1, profile)
                if _switches_to_get(status, method):
                    method, body = "GET", None
                    headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
                if following.origin != target.origin:
                    dropped = call.secret_headers | _CREDENTIAL_HEADERS
                    headers = {k: v for k, v in headers.items() if k.lower() not in dropped}
                target = following
            finally:
                with anyio.move_on_after(2, shield=True):
                    await response.aclose()
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    async def _result(
        self,
        response: httpx2.Response,
        method: str,
        target: httpx2.URL,
        spec: ToolSpec,
        limit: int,
        scrub: _Scrubber,
        beat: Heartbeat,
    ) -> ExecResult:
        status = response.status_code
        url = scrub.text(str(target))
        success = 200 <= status < 300
        declared = response.headers.get("content-length", "")
        if success and declared.isdigit() and "content-encoding" not in response.headers:
            if int(declared) > limit:
                body, over = b"", True  # refused by its declared size, nothing read
            else:
                body, over = await _read(response, target, spec.name, scrub, limit, beat)
        else:
            read_limit = limit if success else min(limit, ERROR_BODY_READ_BYTES)
            body, over = await _read(response, target, spec.name, scrub, read_limit, beat)
        parsed = _parse_json(body) if body.strip() and not over else _NOT_JSON
        if not success:
            head = f"HTTP {status} {response.reason_phrase}".rstrip()
            excerpt = _excerpt(body, ERROR_EXCERPT_CHARS, scrub)
            return ExecResult(
                ok=False,
                value=None if parsed is _NOT_JSON else scrub.value(parsed),
                error=f"{head}: {excerpt}" if excerpt else head,
                http_status=status,
                stdout_bytes=len(body),
                truncated=over,
                url=url,
            )
        if over:
            return ExecResult(
                ok=False,
                error=f"response larger than {limit} bytes: ask for less data (narrow the query "
                "or page through results)",
                http_status=status,
                truncated=True,
                stdout_bytes=len(body),
                url=url,
            )
        if method == "HEAD" or not body.strip():
            parsed = {}
        elif parsed is _NOT_JSON:
            content_type = response.headers.get("content-type") or "no content type"
            raise ExecOutputError(
                f"expected a JSON response from {url} but got {content_type} "
                f"(HTTP {status}): {_excerpt(body, OUTPUT_EXCERPT_CHARS, scrub)!r}",
                tool=spec.name,
            )
        return ExecResult(
            ok=True, value=scrub.value(parsed), http_status=status, stdout_bytes=len(body), url=url
        )


_NOT_JSON = object()


async def _read(
    response: httpx2.Response,
    target: httpx2.URL,
    tool: str,
    scrub: _Scrubber,
    limit: int,
    beat: Heartbeat,
) -> tuple[bytes, bool]:
    host = host_label(target)
    return await read_body(
        response, limit, host=host, tool=tool, scrub=scrub.text, on_chunk=beat.count
    )


def _in_scope(profile: SandboxProfile, host: str) -> bool:
    """Whether the call's scope grants ``host``: any with ``*`` (network ``full``)."""
    try:
        return profile.network == "full" or profile.allows_host(host)
    except ArgumentsError:  # a control character: no pattern names it
        return False


def _switches_to_get(status: int, method: str) -> bool:
    """303 turns any method but HEAD into GET; 301 and 302 turn POST into GET (RFC 9110 15.4)."""
    return (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST")


def _parse_json(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _NOT_JSON
