"""What keeps the console a page only its person can use (docs/console.md, "Safety").

- **Who**: a visit opens a session with a one-time token in its URL (``?token=``): the one
  the server printed on stderr (and keeps for ``console-url``: cli/console_url.py), or a
  sign-in pass (``/sign-in``, a browser sign-in). It is exchanged, once, for a session cookie
  (HttpOnly, SameSite=Strict, this port's own name) and the browser is sent on to the same
  page without it, so it stays out of every Referer; the history keeps the URL first opened,
  whose token is spent by then. Once the printed token is spent the next is printed (and
  told to :attr:`Gatekeeper.announce`). A spent or unknown token gets a page that says how
  to get a new URL. Any other request without a known session is 401; at the MCP server's
  path with an authorization server, a page that signs in with it (login.py: its ``/login``
  and ``/callback`` and the stylesheet are the only paths open without a session).
- **Where from**: the Host header must name this machine's loopback, the bound address or an
  ``--allow-host`` name (DNS rebinding), and an Origin header, when sent, must be this very
  console's origin; otherwise 403 before anything runs.
- **Forged requests**: every state-changing request (POST) carries a CSRF token bound to the
  session (an HMAC of its id under a key made at start), checked by the handler.
- **What the page may do**: a strict Content-Security-Policy (scripts, styles and
  connections from this origin only, no inline script, no frames, forms post here only),
  no sniffing, no referrer beyond the console itself (so a same-origin form's Origin is
  sent), no caching, no framing.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Protocol
from urllib.parse import parse_qsl, quote, urlencode

import anyio

from mcp_toolbridge.console.signed import SessionSigner
from mcp_toolbridge.edge import (
    LOOPBACK_NAMES,
    ASGIApp,
    Header,
    Message,
    Receive,
    Scope,
    Send,
    send_reply,
)
from mcp_toolbridge.state import StateUnavailable

log = logging.getLogger("mcp_toolbridge.console")

MAX_SESSIONS = 64
"""Browser sessions kept at once; the oldest is forgotten first (its person opens a new
one-time URL)."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
PATH_SAFE = "/:@!$&'()*+,;=-._~%"
"""What a path keeps unquoted when the console sends the browser on (RFC 3986 pchar)."""
USER_KEY = "toolbridge.console.user"
LOGIN_PATHS = ("/login", "/callback")
"""The browser sign-in's own paths (login.py), open without a session."""
SESSION_KEY = "toolbridge.console.session"
KEEPER_KEY = "toolbridge.console.keeper"
PASS_S = 120.0
"""How long a sign-in pass may wait to be opened."""
PRINTED_LEASE_S = 120.0
"""How long the printed URL's token is kept in the replicas' Redis past its replica's last
renewal (:meth:`Gatekeeper.watch_printed`, every second or so): while that replica runs the
URL waits until it is opened, and a replica killed without ending (SIGKILL) leaves a URL
that opens elsewhere for this long at most. In one process it waits until it is spent or
the server ends."""
DEFAULT_ADMIN_ROLE = "admin"
MAX_LOGINS = 1024
"""Completed browser sign-ins remembered at once in memory (the oldest is forgotten first;
the issuer refuses a code redeemed twice anyway)."""


class PassBook(Protocol):
    """Where one-time sign-in passes (and the browser sign-ins completed) are kept when
    replicas share them (Redis)."""

    async def put_pass(self, given: str, who: str, ttl_s: float, *, kind: str = ...) -> None: ...

    async def take_pass(self, given: str, *, kind: str = ...) -> str | None: ...

    async def has_pass(self, given: str, *, kind: str = ...) -> bool: ...

    async def keep_pass(self, given: str, ttl_s: float, *, kind: str = ...) -> bool: ...


class BrowserLogin(Protocol):
    """The sign-in in the browser with the issuer (login.py): its own paths and the page a
    visit without a session gets."""

    async def handle(self, scope: Scope, send: Send, at: str) -> None: ...

    async def sign_in_page(self, scope: Scope, send: Send, at: str) -> None: ...


@dataclass
class Gatekeeper:
    """The console's secrets and allow-lists: the URL token, the CSRF key, the sessions.

    With ``signer`` (replicas: signed.py) sessions and CSRF tokens are signed with the
    service's shared key, so every replica honours them, and with ``passes`` the one-time
    sign-in passes are kept where every replica finds them."""

    port: int
    user: str
    """Who answers through this console (``console:<name>`` in the audit)."""
    hosts: tuple[str, ...] = LOOPBACK_NAMES
    printing: bool = True
    """Whether a URL with a one-time token is printed for ``user`` (False: only a sign-in
    pass opens a session: OAuth, see SignIn)."""
    base: str = ""
    """The console's address: the printed URL without its token."""
    renew: str = "run `mcp-toolbridge console-url` on the machine the server runs on"
    """How a person gets a new URL (the page a spent token gets says it)."""
    announce: Callable[[str], Awaitable[None]] | None = None
    """Told each next printed URL, once the one before is spent."""
    printed: str | None = field(default=None, repr=False)
    """The printed URL's token, not yet spent (None: none printed yet, or none at all)."""
    _printing: anyio.Lock = field(default_factory=anyio.Lock)
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _sessions: OrderedDict[str, str] = field(default_factory=OrderedDict)
    """Session id -> who it is (``user`` for the token, the admin's subject for a pass)."""
    _passes: dict[str, tuple[str, float]] = field(default_factory=dict)
    _logins: OrderedDict[bytes, float] = field(default_factory=OrderedDict)
    """Browser sign-ins completed (login.py): the digest of their state -> until when."""
    signer: SessionSigner | None = None
    passes: PassBook | None = None
    secure: bool = False
    """The console is reached over HTTPS (its canonical address says so): its session cookie
    is ``Secure``, never sent over plain HTTP."""
    printed_lease_s: float = PRINTED_LEASE_S
    """How long the printed token stays in ``passes`` past its last renewal."""

    @property
    def cookie(self) -> str:
        if self.signer is not None:  # the same on every replica of the service
            return f"toolbridge_console_{self.signer.tag}"
        return f"toolbridge_console_{self.port}"

    def host_ok(self, host_header: str) -> bool:
        name = host_header.strip().lower()
        if name.startswith("["):
            name = name[1 : name.find("]")] if "]" in name else name
        else:
            name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
        return name in {h.lower() for h in self.hosts}

    def origin_ok(self, origin: str, host_header: str) -> bool:
        """An Origin is accepted only when it is this console's own (scheme, Host)."""
        return origin in (f"http://{host_header}", f"https://{host_header}")

    @property
    def url(self) -> str | None:
        """The printed URL not yet spent; None: none."""
        return f"{self.base}/?token={self.printed}" if self.printed is not None else None

    def _is_printed(self, given: str) -> bool:
        printed = self.printed
        return printed is not None and hmac.compare_digest(given.encode(), printed.encode())

    async def print_next(self) -> str | None:
        """A new printed one-time token (kept where every replica finds it), told to
        :attr:`announce` when set; its URL (None: nothing is printed here). StateUnavailable:
        the shared store did not answer."""
        if not self.printing:
            return None
        given = secrets.token_urlsafe(32)
        if self.passes is not None:
            await self.passes.put_pass(given, self.user, self.printed_lease_s)
        self.printed = given
        url = self.url
        if self.announce is not None and url is not None:
            await self.announce(url)
        return url

    async def _printed_spent(self) -> None:
        try:
            await self.print_next()
        except StateUnavailable as exc:  # the replicas' watch prints it once Redis answers
            log.warning("console: no next URL yet: %s", exc.reason)

    async def _renew(self, spent: str) -> None:
        """Print the next token once, when ``spent`` is still the printed one (a visit here
        and the watch may both find it spent)."""
        async with self._printing:
            if self.printed == spent:
                await self.print_next()

    async def watch_printed(self) -> None:
        """With replicas: renew the printed token's lease, or, when it was spent on another
        replica (or lapsed), print the next (StateUnavailable: Redis did not answer)."""
        printed = self.printed
        if printed is None or self.passes is None:
            return
        if not await self.passes.keep_pass(printed, self.printed_lease_s):
            await self._renew(printed)

    async def forget_printed(self) -> None:
        """The server ends: its printed token opens nothing more, on any replica."""
        printed, self.printed = self.printed, None
        if printed is not None and self.passes is not None:
            await self.passes.take_pass(printed)

    async def admit(self, given: str) -> str | None:
        """Who the URL's one-time token (printed, or a sign-in pass) stands for, once; None:
        nobody (spent, lapsed or never issued)."""
        if self.passes is None and self._is_printed(given):
            self.printed = None  # once: nothing awaited since the check
            await self._printed_spent()
            return self.user
        if self.passes is not None:
            try:
                who = await self.passes.take_pass(given)
            except StateUnavailable:
                return None
            if who is not None and self._is_printed(given):
                try:
                    await self._renew(given)
                except StateUnavailable as exc:  # the watch prints it once Redis answers
                    log.warning("console: no next URL yet: %s", exc.reason)
            return who
        now = time.monotonic()
        for known, (who, until) in list(self._passes.items()):
            if until < now:
                del self._passes[known]
            elif hmac.compare_digest(given.encode(), known.encode()):
                del self._passes[known]  # once
                return who
        return None

    async def issue_pass(self, who: str) -> str:
        """A token that opens one session as ``who`` within :data:`PASS_S` seconds
        (StateUnavailable: the shared store where passes are kept did not answer)."""
        if self.passes is not None:
            given = secrets.token_urlsafe(32)
            await self.passes.put_pass(given, who, PASS_S)
            return given
        if len(self._passes) >= MAX_SESSIONS:
            self._passes.pop(next(iter(self._passes)))
        given = secrets.token_urlsafe(32)
        self._passes[given] = (who, time.monotonic() + PASS_S)
        return given

    async def spend_login(self, state: str, ttl_s: float) -> None:
        """Remember for ``ttl_s`` that the browser sign-in ``state`` completed, where every
        replica finds it (StateUnavailable: the shared store did not answer)."""
        if self.passes is not None:
            await self.passes.put_pass(state, "spent", ttl_s, kind="login")
            return
        self._logins[hashlib.sha256(state.encode()).digest()] = time.monotonic() + ttl_s
        while len(self._logins) > MAX_LOGINS:
            self._logins.popitem(last=False)

    async def login_spent(self, state: str) -> bool:
        """Whether the browser sign-in ``state`` already completed (a replay)."""
        if self.passes is not None:
            return await self.passes.has_pass(state, kind="login")
        until = self._logins.get(hashlib.sha256(state.encode()).digest())
        return until is not None and until >= time.monotonic()

    def open_session(self, who: str) -> str:
        if self.signer is not None:
            return self.signer.session(who)
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = who
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return sid

    def who(self, sid: str) -> str | None:
        if self.signer is not None:
            return self.signer.open(sid)
        for known, who in self._sessions.items():
            if hmac.compare_digest(sid.encode(), known.encode()):
                return who
        return None

    def csrf(self, sid: str) -> str:
        if self.signer is not None:
            return self.signer.csrf(sid)
        return hmac.new(self._key, b"csrf:" + sid.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, sid: str, given: str) -> bool:
        if self.signer is not None:
            return self.signer.csrf_ok(sid, given)
        return hmac.compare_digest(self.csrf(sid).encode(), given.encode())


def _header(scope: Scope, name: bytes) -> str | None:
    found = [v for k, v in scope.get("headers", []) if k.lower() == name]
    return found[0].decode("latin-1") if len(found) == 1 else None


def cookie_of(scope: Scope, name: str) -> str | None:
    """The value of the request's cookie ``name``; None without it."""
    raw = _header(scope, b"cookie")
    if raw is None:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed Cookie header holds no cookie
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None and morsel.value else None


class Guard:
    """ASGI middleware: Host, Origin and session checks, and the security headers."""

    def __init__(self, app: ASGIApp, keeper: Gatekeeper, login: BrowserLogin | None = None) -> None:
        self._app = app
        self._keeper = keeper
        self._login = login

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        keeper = self._keeper
        host = _header(scope, b"host")
        if host is None or not keeper.host_ok(host):
            await _refuse(send, 421, "This console answers only on this machine's own names.")
            return
        origin = _header(scope, b"origin")
        if origin is not None and not keeper.origin_ok(origin, host):
            await _refuse(send, 403, "Requests from other sites are refused.")
            return
        login = self._login
        at = _within(scope)
        if login is not None and at in LOGIN_PATHS:
            await login.handle(scope, send, at)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        sid = self._session(scope)
        if "token" in query:
            who = await keeper.admit(query["token"])
            if who is None:
                held = sid is not None and keeper.who(sid) is not None
                await _spent(send, keeper.renew, scope.get("root_path", "") + "/" if held else None)
                return
            await self._welcome(scope, send, query, who)
            return
        who = keeper.who(sid) if sid is not None else None
        if sid is None or who is None:
            if login is not None and scope.get("method") in ("GET", "HEAD"):
                if at.startswith("/static/"):  # the sign-in page's stylesheet
                    await self._app(scope, receive, _secured(send))
                else:
                    await login.sign_in_page(scope, send, at)
                return
            await _refuse(
                send,
                401,
                "Open the console with the one-time URL the server printed on stderr; for a "
                f"new one, {keeper.renew}.",
            )
            return
        scope[SESSION_KEY] = sid
        scope[USER_KEY] = who
        scope[KEEPER_KEY] = keeper
        await self._app(scope, receive, _secured(send))

    def _session(self, scope: Scope) -> str | None:
        return cookie_of(scope, self._keeper.cookie)

    async def _welcome(self, scope: Scope, send: Send, query: dict[str, str], who: str) -> None:
        """Trade the URL's token for a session cookie, and go on to the page without it."""
        sid = self._keeper.open_session(who)
        rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
        prefix = scope.get("root_path", "")
        path = _within(scope)
        # Always a path of this console: re-quoted (a tab or a backslash a browser would drop
        # or read as "/" is sent encoded) and with one leading slash, so "//host/…" never
        # reads as another host's URL.
        path = prefix + "/" + quote(path, safe=PATH_SAFE).lstrip("/")
        location = path + (f"?{rest}" if rest else "")
        cookie = f"{self._keeper.cookie}={sid}; Path={prefix or '/'}; HttpOnly; SameSite=Strict"
        if self._keeper.secure:
            cookie += "; Secure"
        await answer(
            send, 303, headers=[(b"location", location.encode()), (b"set-cookie", cookie.encode())]
        )


def _secured(send: Send) -> Send:
    async def secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return secured


def _within(scope: Scope) -> str:
    """The request's path within the console (Starlette's Mount keeps the whole path)."""
    prefix = scope.get("root_path", "")
    path: str = scope.get("path", "/")
    if prefix and path.startswith(prefix):
        return path[len(prefix) :] or "/"
    return path


async def _spent(send: Send, renew: str, console: str | None) -> None:
    """The page a spent, lapsed or unknown token gets (401): how to get a new URL; with a
    session already open in this browser, the way on to the console."""
    on = ""
    if console is not None:
        link = html.escape(quote(console, safe=PATH_SAFE))
        on = (
            "<p>This browser has a console session already: "
            f'<a href="{link}">open the console</a>.</p>\n'
        )
    body = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>This console URL was used · mcp-toolbridge console</title>\n</head>\n<body>\n"
        "<main>\n<h1>This console URL was used already</h1>\n"
        "<p>Each console URL opens one session, once, and this one is spent (or it was never "
        "valid here). Whoever opened it first has the console.</p>\n"
        f"{on}<p>For a new URL, {html.escape(renew)}.</p>\n</main>\n</body>\n</html>\n"
    ).encode()
    await answer(send, 401, body, content_type=b"text/html; charset=utf-8")


async def _refuse(send: Send, status: int, text: str) -> None:
    refusal = f"mcp-toolbridge console: {text}\n".encode()
    await answer(send, status, refusal, content_type=b"text/plain; charset=utf-8")


async def answer(
    send: Send,
    status: int,
    body: bytes = b"",
    *,
    content_type: bytes | None = None,
    headers: Sequence[Header] = (),
) -> None:
    """A whole answer of the console's own (a refusal, a page, a redirect, JSON), with the
    console's security headers."""
    await send_reply(
        send, status, body, content_type=content_type, headers=[*headers, *SECURITY_HEADERS]
    )
