"""web_fetch: fetch one http(s) URL and return it as Markdown, text or HTML, behind an SSRF guard.

Every hop (the URL, then each redirect, at most 5) goes through the same checks before any
connection: the URL text (http/https only, no credentials, no backslash or control
characters); for a redirect to another host, the caller's ``host_check`` (the net.fetch
scope; without one, such a redirect is returned to the model instead of followed); the host
name and every address it resolves to against
:class:`~mcp_toolbridge.builtins.web.netguard.NetPolicy`.
The name is resolved once per hop and the connection goes to an address that was checked (no
second lookup: DNS rebinding cannot move it).

The body is streamed with a cap on its decoded size (``max_bytes``, default 5 MB). HTML
becomes Markdown (default) or text; other text is returned as it came; binary content is
saved to a session sidecar file and not shown. The returned content is capped at 200 KB: past
it the head is returned (with the secret scan on, redacted with the 16 KB after the cut
first: a secret the cap splits is a marker, not its first half), ``truncated`` is set and
the whole text is in ``output_path``, which the note names.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread

from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.web import extract as web_extract
from mcp_toolbridge.builtins.web.fetch_spec import DEFAULT_MAX_BYTES
from mcp_toolbridge.builtins.web.fetch_spec import SPEC as SPEC  # the tool's own, as before
from mcp_toolbridge.builtins.web.netguard import HostRefused, NetPolicy, check_url_text
from mcp_toolbridge.errors import (
    ArgumentsError,
    ExecError,
    ExecTimeoutError,
    ExecTransportError,
    PermissionDeniedError,
)
from mcp_toolbridge.executors import (
    ExecRequest,
    ExecResult,
    FetchedBody,
    FetchTarget,
    fetch_pinned,
    parse_target,
    shown_head,
)
from mcp_toolbridge.host import CUT_MARGIN_CHARS, RedactCut
from mcp_toolbridge.policy import Policy, Targets, host_of

MAX_OUTPUT_BYTES = 200 * 1024
MAX_REDIRECTS = 5
ERROR_EXCERPT_CHARS = 300
ACCEPT = "text/html, application/xhtml+xml, text/plain;q=0.9, */*;q=0.8"
_SUFFIXES = {"markdown": ".md", "text": ".txt", "html": ".html", "raw": ".txt"}

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""resolver(host, port) -> the host's addresses (text), in the order to try them."""
HostCheck = Callable[[str], str | None]
"""host_check(host) -> why the net.fetch scope refuses ``host``, or None when it is granted."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver (getaddrinfo), duplicates removed."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _CrossHostRedirect(Exception):
    def __init__(self, target: FetchTarget) -> None:
        super().__init__(target.url)
        self.target = target


class WebFetchTool:
    """The web_fetch built-in (see the module doc). ``allow_loopback`` is for tests only."""

    spec = SPEC

    def __init__(
        self,
        sessions: Sessions,
        *,
        allow_loopback: bool = False,
        resolver: Resolver | None = None,
        timeout_s: float = 30.0,
        host_check: HostCheck | None = None,
        max_redirects: int = MAX_REDIRECTS,
        verify: ssl.SSLContext | None = None,
    ) -> None:
        self._sessions = sessions
        self._policy = NetPolicy(allow_loopback=allow_loopback)
        self._resolver = resolver or system_resolver
        self._timeout_s = timeout_s
        self._host_check = host_check
        self._max_redirects = max_redirects
        self._verify = verify

    async def run(self, request: ExecRequest) -> ExecResult:
        args = request.arguments
        url = str(args["url"]).strip()
        fmt: web_extract.OutputFormat = args.get("format") or "markdown"
        max_bytes = int(args.get("max_bytes") or DEFAULT_MAX_BYTES)
        try:
            check_url_text(url)
        except HostRefused as exc:
            raise ArgumentsError(str(exc), tool=SPEC.name) from None
        first = self._first_host(url)
        limit_s = min(self._timeout_s, request.timeout_s)

        async def pin(target: FetchTarget, hop: int) -> list[str]:
            return await self._pin(target, hop, first)

        try:
            with anyio.fail_after(limit_s):
                page = await fetch_pinned(
                    url,
                    pin,
                    max_bytes=max_bytes,
                    max_redirects=self._max_redirects,
                    accept=ACCEPT,
                    read_timeout_s=limit_s,
                    verify=self._verify,
                )
        except _CrossHostRedirect as redirect:
            return _redirect_result(url, redirect.target)
        except TimeoutError:
            raise ExecTimeoutError(
                f"fetching {url} took longer than {limit_s:g}s; the site is slow or "
                "unreachable: try again later or another URL",
                tool=SPEC.name,
            ) from None
        except ExecError as exc:
            exc.tool = exc.tool or SPEC.name
            raise
        return await self._result(request, url, fmt, max_bytes, page)

    def _first_host(self, url: str) -> str:
        """The host the capability check saw; the fetcher's own parse must agree with it."""
        seen = host_of(url)
        if seen.isascii():
            try:
                self._policy.check_host(seen)
            except HostRefused as exc:
                raise PermissionDeniedError(f"the URL was refused: {exc}", tool=SPEC.name) from None
        try:
            parsed = parse_target(url)
        except ExecTransportError as exc:
            raise ArgumentsError(exc.message, tool=SPEC.name) from None
        if seen.isascii() and ":" not in seen and parsed.host != seen:
            raise PermissionDeniedError(
                f"the URL's host is ambiguous ({seen!r} or {parsed.host!r}); write the URL plainly",
                tool=SPEC.name,
            )
        return parsed.host

    async def _pin(self, target: FetchTarget, hop: int, first: str) -> list[str]:
        """Check one hop and return the addresses it may connect to (see the module doc)."""
        what = "the URL" if hop == 0 else f"redirect {hop} to {target.url}"
        try:
            check_url_text(target.url)
            if target.has_userinfo:
                raise HostRefused("URLs with credentials (user:password@host) are refused")
        except HostRefused as exc:
            raise PermissionDeniedError(f"{what} was refused: {exc}", tool=SPEC.name) from None
        if hop and target.host != first:
            if self._host_check is None:
                raise _CrossHostRedirect(target)
            problem = self._host_check(target.host)
            if problem is not None:
                raise PermissionDeniedError(f"{what} was refused: {problem}", tool=SPEC.name)
        try:
            literal = self._policy.check_host(target.host)
            if literal is not None:
                return [str(literal)]
        except HostRefused as exc:
            raise PermissionDeniedError(f"{what} was refused: {exc}", tool=SPEC.name) from None
        try:
            addresses = await self._resolver(target.host, target.port)
        except OSError as exc:
            raise ExecTransportError(
                f"could not resolve {target.host}: {exc.strerror or exc}; check the host name",
                tool=SPEC.name,
            ) from None
        if not addresses:
            raise ExecTransportError(f"{target.host} has no address", tool=SPEC.name)
        checked: list[str] = []
        for address in addresses:
            try:
                checked.append(str(self._policy.check_address(address)))
            except HostRefused as exc:
                raise PermissionDeniedError(
                    f"{what} was refused: {target.host} resolves to {address} ({exc})",
                    tool=SPEC.name,
                ) from None
        return checked

    async def _result(
        self,
        request: ExecRequest,
        url: str,
        fmt: web_extract.OutputFormat,
        max_bytes: int,
        page: FetchedBody,
    ) -> ExecResult:
        kind = web_extract.classify(page.content_type, page.body)
        common: dict[str, Any] = {
            "http_status": page.status,
            "url": page.url,
            "stdout_bytes": len(page.body),
        }
        if not 200 <= page.status < 300:
            return _http_error(page, kind, common, request.context.redact_cut)
        state = self._sessions.get(request.context.session_id)
        value: dict[str, Any] = {"url": page.url, "status": page.status}
        value["content_type"] = page.content_type or "unknown"
        if page.redirects:
            value["requested_url"] = url
        notes: list[str] = []
        if page.over_cap:
            notes.append(
                f"the body was larger than max_bytes ({max_bytes} bytes); only that much was "
                "downloaded and converted"
            )
        if kind == "binary":
            kept = state.write_sidecar("web_fetch", page.body, suffix=".bin")
            if kept is None:
                return ExecResult(
                    ok=False,
                    error=f"{page.url} is binary ({value['content_type']}, {len(page.body)} "
                    "bytes) and this session's file space is used up, so it was not kept",
                    **common,
                )
            value["bytes"] = len(page.body)
            value["saved_to"] = str(kept)
            notes.append(f"binary content is not shown; it was saved to {kept}")
            value["note"] = "; ".join(notes)
            return _ok(value, **common)
        shown_fmt = fmt if kind == "html" else "raw"
        extracted = await anyio.to_thread.run_sync(
            web_extract.extract, page.body, page.content_type, kind, fmt
        )
        value["format"] = shown_fmt
        if extracted.note:
            notes.append(extracted.note)
        if extracted.title:
            value["title"] = extracted.title
        head, cut = _cap(extracted.text, MAX_OUTPUT_BYTES)
        cut_at = len(head.encode("utf-8"))  # what the note counts: the text, not its markers
        redact = request.context.redact_cut
        if cut and redact is not None:  # redacted with the text past the cut, then cut
            head = await anyio.to_thread.run_sync(shown_head, extracted.text, len(head), redact)
        value["content"] = head
        if not cut:
            if notes:
                value["note"] = "; ".join(notes)
            return _ok(value, **common)
        data = extracted.text.encode("utf-8")
        kept = state.write_sidecar("web_fetch", data, suffix=_SUFFIXES[shown_fmt])
        notes.append(
            f"content capped at 200 KB: the first {cut_at} of {len(data)} "
            "bytes are shown"
            + (
                f"; the whole text is in {kept} (read it with offset and limit)"
                if kept
                else "; the rest could not be kept (session file space used up)"
            )
        )
        value["note"] = "; ".join(notes)
        output_path = str(kept) if kept is not None else None
        return _ok(value, truncated=True, output_path=output_path, **common)


def _cap(text: str, limit: int) -> tuple[str, bool]:
    """The text cut to at most ``limit`` UTF-8 bytes, at a line end when one is near."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    cut = data[:limit]
    newline = cut.rfind(b"\n")
    if newline >= limit * 4 // 5:
        cut = cut[:newline]
    return cut.decode("utf-8", errors="ignore"), True


def _http_error(
    page: FetchedBody, kind: web_extract.Kind, common: dict[str, Any], redact: RedactCut | None
) -> ExecResult:
    """The failure of an HTTP error status: the start of its page, redacted with what follows
    it (one scan of about 16 KB, with the secret scan on)."""
    head = f"HTTP {page.status} {page.reason}".rstrip()
    excerpt = ""
    if kind != "binary":
        size = 16384 + (CUT_MARGIN_CHARS if redact is not None else 0)
        text = web_extract.decode(page.body[:size], page.content_type, html=kind == "html")
        excerpt = shown_head(" ".join(text.split()), ERROR_EXCERPT_CHARS, redact)
    error = f"{head} from {page.url}" + (f": {excerpt}" if excerpt else "")
    return ExecResult(ok=False, error=error, **common)


def _redirect_result(url: str, target: FetchTarget) -> ExecResult:
    value = {
        "url": url,
        "redirect_to": target.url,
        "note": f"{url} redirects to another host ({target.host}); it was not followed. "
        "Call web_fetch with redirect_to to fetch it.",
    }
    return _ok(value, url=url)


def _ok(value: dict[str, Any], **facts: Any) -> ExecResult:
    return ExecResult(ok=True, value=value, text=_text(value), **facts)


def _text(value: dict[str, Any]) -> str:
    """Markdown for the model: the title, where the text came from, the text, the notes."""
    if "redirect_to" in value:
        return str(value["note"])
    source = f"Source: {value['url']} (HTTP {value['status']}, {value['content_type']})"
    if "requested_url" in value:
        source += f", redirected from {value['requested_url']}"
    parts = [f"# {value['title']}", source] if value.get("title") else [source]
    if "saved_to" in value:
        parts.append(f"Binary content ({value['bytes']} bytes) saved to {value['saved_to']}.")
    else:
        parts += ["", value["content"]]
    if value.get("note"):
        parts += ["", f"({value['note']})"]
    return "\n".join(parts)


def redirect_check(policy: Policy) -> HostCheck:
    """web_fetch's check of a redirect to another host: the capability scope and the rules, as
    for a call naming that host. Only an allow follows it: a redirect cannot ask a person."""

    def check(host: str) -> str | None:
        targets = Targets(hosts=(host,))
        denial = policy.check_capabilities(SPEC, targets)
        if denial is not None:
            return denial.message
        decision = policy.decide(SPEC, targets)
        if decision.action != "allow":
            return f"{decision.rule} says {decision.action} for {host}; call web_fetch with it"
        return None

    return check
