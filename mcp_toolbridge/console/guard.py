"""What keeps the console a page only its person can use (docs/console.md, "Safety").

- **Who**: the first visit carries the random token printed on stderr (``?token=``); it is
  exchanged for a session cookie (HttpOnly, SameSite=Strict, this port's own name) and the
  browser is sent on to the same page without the token, so it stays out of every Referer
  (the history keeps the URL first opened: docs/console.md). Any other request without a
  known session is 401; at the MCP server's path with an authorization server, a page that
  signs in with it (login.py: its ``/login`` and ``/callback`` and the stylesheet are the
  only paths open without a session).
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
import ipaddress
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlencode

from mcp_toolbridge.console.signed import SessionSigner
from mcp_toolbridge.host import CALLER_KEY, Caller
from mcp_toolbridge.state import StateUnavailable

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
MAX_SESSIONS = 64
"""Browser sessions kept at once; the oldest is forgotten first (its person opens the URL
printed on stderr again)."""
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
DEFAULT_ADMIN_ROLE = "admin"
MAX_LOGINS = 1024
"""Completed browser sign-ins remembered at once in memory (the oldest is forgotten first;
the issuer refuses a code redeemed twice anyway)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class PassBook(Protocol):
    """Where one-time sign-in passes (and the browser sign-ins completed) are kept when
    replicas share them (Redis)."""

    async def put_pass(self, given: str, who: str, ttl_s: float, *, kind: str = ...) -> None: ...

    async def take_pass(self, given: str, *, kind: str = ...) -> str | None: ...

    async def has_pass(self, given: str, *, kind: str = ...) -> bool: ...


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
    token: str | None = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The URL token; None: only a sign-in pass opens a session (OAuth, see SignIn)."""
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

    async def admit(self, given: str) -> str | None:
        """Who the URL's token (or a one-time sign-in pass) stands for; None: nobody."""
        if self.token is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            return self.user
        if self.passes is not None:
            try:
                return await self.passes.take_pass(given)
            except StateUnavailable:
                return None
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
        if "token" in query:
            who = await keeper.admit(query["token"])
            if who is None:
                await _refuse(send, 401, "Wrong or used token: open the URL printed on stderr.")
                return
            await self._welcome(scope, send, query, who)
            return
        sid = self._session(scope)
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
                "Open the console with the URL the server printed on stderr (it carries the "
                "console's token).",
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
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode()),
                    (b"set-cookie", cookie.encode()),
                    (b"content-length", b"0"),
                    *SECURITY_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


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


async def _refuse(send: Send, status: int, text: str) -> None:
    body = f"mcp-toolbridge console: {text}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SignIn:
    """``GET <console>/sign-in`` on an MCP server with an authorization server: the edge has
    validated the request's access token (its Caller in ``scope``); a caller with the admin
    role (a group or role claim) gets a one-time URL that opens a console session as them
    (answers are audited as ``console:<subject>``), anyone else 403."""

    def __init__(self, keeper: Gatekeeper, prefix: str, role: str = DEFAULT_ADMIN_ROLE) -> None:
        self._keeper = keeper
        self._prefix = prefix
        self._role = role

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = scope.get(CALLER_KEY)
        name = (caller.subject or caller.client_id) if isinstance(caller, Caller) else None
        if not isinstance(caller, Caller) or name is None or self._role not in caller.groups:
            await _json(send, 403, {"error": f"the console needs the {self._role!r} role"})
            return
        try:
            given = await self._keeper.issue_pass(str(name))
        except StateUnavailable as exc:
            await _json(send, 503, {"error": f"no sign-in pass now: {exc.reason}"})
            return
        await _json(send, 200, {"url": f"{self._prefix}/?token={given}", "expires_in": int(PASS_S)})


async def _json(send: Send, status: int, value: object) -> None:
    body = json.dumps(value).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
