"""The console's sign-in in the browser, at the MCP server's path, with the authorization server
that protects the endpoint (``serve --http … --auth-issuer URL --console … --console-client-id
ID``; docs/console.md, "Signing in in the browser"): the authorization code flow with PKCE
(S256), ``state`` and ``nonce``. This module keeps the browser's side; the issuer's side
(the authorization request, redeeming the code, checking the tokens exactly as the MCP
endpoint does) is the :class:`Issuer` the server gives (server/console_login.py).

- **The sign-in page**: a visit without a session gets it (401), with "Sign in with <issuer>",
  a link to ``<console>/login`` at the console's canonical address (beside the canonical URL
  of the MCP endpoint), so the whole sign-in happens at the address the issuer sends back to.
- ``GET <console>/login?next=PATH``: a new attempt: random ``state``, ``nonce`` and PKCE
  verifier (``secrets``); the attempt (those, where to go back, its deadline after
  :data:`LOGIN_S`) is sealed (Fernet: encrypted and authenticated, under keys derived from
  the service's shared state keys on replicas, so any replica opens it; else this process's
  own) into a short-lived cookie (HttpOnly; SameSite=Lax, since the issuer's redirect back is
  a cross-site navigation), and the browser goes to the issuer's authorization endpoint.
  Nothing is written on the server for an attempt: starting sign-ins costs it nothing.
- ``GET <console>/callback?code=…&state=…``: refused, with a page that says why, when the
  browser holds no attempt it can open (the cookie is gone: expired, another browser or
  address; no verifier), the state is not the attempt's (forged, or another attempt's), the
  attempt is past its deadline, it already completed (a replay: a completed sign-in is
  remembered until its deadline where every replica finds it, memory or the replicas'
  Redis), or the issuer said no (``error=access_denied``…); then the issuer's side redeems
  the code and names the caller, who must carry the admin role (a group or role claim
  value) or gets a 403 page. The console session opens as a one-time URL's does (answers
  audited as ``console:<subject>``); the next page is reached from a page of the console
  itself, so the session's SameSite=Strict cookie goes with it.
- ``GET <console>/sign-in`` (:class:`SignIn`): a one-time URL for a caller the server's edge
  let through, with the admin role, or holding the static bearer token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from mcp_toolbridge.console.guard import DEFAULT_ADMIN_ROLE, PASS_S, Gatekeeper, answer, cookie_of
from mcp_toolbridge.console.rendering import environment
from mcp_toolbridge.edge import Receive, Scope, Send
from mcp_toolbridge.host import CALLER_KEY, Caller, SignInRefused
from mcp_toolbridge.state import StateUnavailable

log = logging.getLogger("mcp_toolbridge.console")

LOGIN_S = 600.0
"""How long a person may take at the issuer to sign in."""
KEPT_S = LOGIN_S + 300.0
"""How long the browser keeps an attempt's cookie (past its deadline, to say it expired)."""
LOGIN_KEY_LABEL = b"mcp-toolbridge console login v1"
"""What the service's keys are derived for to seal attempts (replicas: signed.py)."""


def s256(verifier: str) -> str:
    """The PKCE challenge of ``verifier`` (RFC 7636 4.2: BASE64URL(SHA256(verifier)))."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class LoginClient:
    """The console's OAuth client at the issuer (``--console-client-id``; its secret from
    the environment or the secrets, never the command line)."""

    client_id: str
    secret: str | None = field(default=None, repr=False)


class Issuer(Protocol):
    """The issuer's side of the sign-in (server/console_login.py)."""

    @property
    def issuer(self) -> str: ...

    @property
    def resource(self) -> str: ...

    def authorization_url(
        self, *, client_id: str, redirect_uri: str, state: str, nonce: str, challenge: str
    ) -> str: ...

    async def sign_in(
        self,
        *,
        code: str,
        verifier: str,
        redirect_uri: str,
        nonce: str,
        client_id: str,
        secret: str | None,
    ) -> Caller: ...


class BrowserLogin:
    """The sign-in page, ``/login`` and ``/callback`` of the console at ``prefix``."""

    def __init__(
        self,
        keeper: Gatekeeper,
        prefix: str,
        role: str,
        issuer: Issuer,
        client: Callable[[], LoginClient | None],
        *,
        keys: Sequence[bytes] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``keys``: the service's keys for sealing attempts (replicas: derived from the
        shared state keys, newest first); none: a key of this process's own."""
        self._keeper = keeper
        self._prefix = prefix
        self._role = role
        self._issuer = issuer
        self._client = client
        sealing = list(keys) or [secrets.token_bytes(32)]
        self._sealer = MultiFernet([Fernet(base64.urlsafe_b64encode(k)) for k in sealing])
        self.clock = clock
        """The wall clock an attempt's deadline is checked against (a test's own)."""
        self._env = environment()

    @property
    def cookie(self) -> str:
        return f"{self._keeper.cookie}_login"

    @property
    def console_url(self) -> str:
        """The console's canonical address: beside the MCP endpoint's canonical URL."""
        return urljoin(self._issuer.resource.rstrip("/"), self._prefix.lstrip("/"))

    @property
    def redirect_uri(self) -> str:
        """Where the issuer sends the browser back (registered with the console's client)."""
        return self.console_url + "/callback"

    def _attributes(self, same_site: str) -> str:
        secure = "; Secure" if self.console_url.startswith("https:") else ""
        return f"; Path={self._prefix or '/'}; HttpOnly; SameSite={same_site}{secure}"

    async def handle(self, scope: Scope, send: Send, at: str) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await self._page(send, 405, title="Not here", problem="Sign-in pages take GET only.")
        elif at == "/login":
            await self._start(scope, send)
        else:
            await self._callback(scope, send)

    async def sign_in_page(self, scope: Scope, send: Send, at: str) -> None:
        """The page a visit without a session gets (401): sign in with the issuer."""
        query = scope.get("query_string", b"").decode("latin-1")
        wanted = self._prefix + at + (f"?{query}" if query else "")
        client = self._client()
        login = f"{self.console_url}/login?{urlencode({'next': _local(wanted, self._prefix)})}"
        await self._page(
            send,
            401,
            title="Sign in to the console",
            lead=f"This console belongs to the MCP server at {self._issuer.resource}. "
            f"It needs an account at {self._issuer.issuer} with the role {self._role!r}.",
            login_url=login if client is not None else None,
            note=f"From a script: GET {self._prefix}/sign-in with your access token as "
            "'Authorization: Bearer …' answers with a one-time URL that opens the console.",
        )

    async def _start(self, scope: Scope, send: Send) -> None:
        client = self._client()
        if client is None:
            await self._page(
                send,
                404,
                title="No sign-in here",
                problem="This server has no console client at its issuer (--console-client-id)"
                f": sign in with GET {self._prefix}/sign-in and an access token instead.",
            )
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        state, nonce, verifier = (secrets.token_urlsafe(n) for n in (32, 32, 64))
        attempt = {
            "s": state,
            "v": verifier,
            "n": nonce,
            "r": _local(query.get("next", ""), self._prefix),
            "e": self.clock() + LOGIN_S,
        }
        try:
            target = self._issuer.authorization_url(
                client_id=client.client_id,
                redirect_uri=self.redirect_uri,
                state=state,
                nonce=nonce,
                challenge=s256(verifier),
            )
        except SignInRefused as exc:
            await self._page(send, exc.status, title="Cannot sign in now", problem=exc.reason)
            return
        sealed = self._sealer.encrypt(json.dumps(attempt).encode()).decode("ascii")
        cookie = f"{self.cookie}={sealed}; Max-Age={int(KEPT_S)}{self._attributes('Lax')}"
        headers = [(b"location", target.encode()), (b"set-cookie", cookie.encode())]
        await answer(send, 303, headers=headers)

    def _opened(self, held: str | None) -> dict[str, Any] | None:
        """The attempt a cookie seals; None: no cookie, or not sealed by this service."""
        if held is None:
            return None
        try:
            return _attempt(self._sealer.decrypt(held.encode("ascii")).decode())
        except (InvalidToken, UnicodeError):
            return None

    async def _callback(self, scope: Scope, send: Send) -> None:
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        kept = self._opened(cookie_of(scope, self.cookie))
        state = query.get("state", "")
        again = f"{self.console_url}/login?{urlencode({'next': self._prefix + '/'})}"

        async def refuse(status: int, problem: str) -> None:
            await self._page(
                send, status, title="Not signed in", problem=problem, login_url=again, forget=True
            )

        if kept is None:
            await refuse(
                400,
                "This browser has no sign-in under way here (no PKCE verifier for it: its "
                "cookie is gone, because the attempt expired or began in another browser or at "
                f"another address than {self.console_url}). Sign in again.",
            )
            return
        if not state or not hmac.compare_digest(state.encode(), kept["s"].encode()):
            await refuse(
                400,
                "The sign-in's state is not the one this browser started: the link is forged "
                "or belongs to another sign-in. Sign in again.",
            )
            return
        if self.clock() > kept["e"]:
            await refuse(
                400, f"This sign-in took longer than {LOGIN_S / 60:g} minutes. Sign in again."
            )
            return
        try:
            spent = await self._keeper.login_spent(state)
        except StateUnavailable as exc:
            await self._unavailable(send, exc)
            return
        if spent:
            await refuse(400, "This sign-in was already used: each completes once. Sign in again.")
            return
        if "error" in query:
            said = ": ".join(query[k][:300] for k in ("error", "error_description") if query.get(k))
            status = 403 if query["error"] == "access_denied" else 400
            await refuse(status, f"{self._issuer.issuer} did not sign you in ({said}).")
            return
        client = self._client()
        code = query.get("code")
        if not code or client is None:
            await refuse(400, "The issuer's answer has no authorization code. Sign in again.")
            return
        try:
            caller = await self._issuer.sign_in(
                code=code,
                verifier=kept["v"],
                redirect_uri=self.redirect_uri,
                nonce=kept["n"],
                client_id=client.client_id,
                secret=client.secret,
            )
        except SignInRefused as exc:
            await refuse(exc.status, f"{exc.reason}.")
            return
        try:  # the code is redeemed: this callback never counts again
            await self._keeper.spend_login(state, max(1.0, kept["e"] - self.clock() + 1))
        except StateUnavailable as exc:  # the issuer refuses the code again anyway
            log.warning("console sign-in: cannot record it as used: %s", exc.reason)
        name = caller.subject or caller.client_id
        if name is None or self._role not in caller.groups:
            await refuse(
                403,
                f"You signed in at {self._issuer.issuer} as {name}, but the console needs the "
                f"role {self._role!r} (a value of your groups or roles): ask whoever runs the "
                "issuer for it.",
            )
            return
        sid = self._keeper.open_session(name)
        session = f"{self._keeper.cookie}={sid}{self._attributes('Strict')}"
        await self._page(
            send,
            200,
            title=f"Signed in as {name}",
            go=kept["r"],
            forget=True,
            cookies=[session],
        )

    async def _unavailable(self, send: Send, exc: StateUnavailable) -> None:
        await self._page(
            send, 503, title="Cannot sign in now", problem=f"The shared state: {exc.reason}."
        )

    async def _page(
        self,
        send: Send,
        status: int,
        *,
        title: str,
        forget: bool = False,
        cookies: list[str] | None = None,
        **shown: Any,
    ) -> None:
        body = self._env.get_template("signin.html").render(
            title=title, base=self._prefix, issuer=self._issuer.issuer, **shown
        )
        headers = []
        for cookie in cookies or []:
            headers.append((b"set-cookie", cookie.encode()))
        if forget:
            gone = f"{self.cookie}=; Max-Age=0{self._attributes('Lax')}"
            headers.append((b"set-cookie", gone.encode()))
        page = b"text/html; charset=utf-8"
        await answer(send, status, body.encode(), content_type=page, headers=headers)


def _attempt(raw: str) -> dict[str, Any] | None:
    """An attempt with its state, verifier, nonce, deadline and page; None when it lacks one
    of them."""
    try:
        kept = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(kept, dict):
        return None
    fields = (("s", str), ("v", str), ("n", str), ("r", str), ("e", int | float))
    if not all(isinstance(kept.get(name), kind) for name, kind in fields) or not kept["v"]:
        return None
    return kept


def _local(wanted: str, prefix: str) -> str:
    """``wanted`` when it is a page of this console (a path under ``prefix``: never another
    site, ``//host`` or a backslash), else the console's first page."""
    parts = urlsplit(wanted)
    home = (prefix or "") + "/"
    if parts.scheme or parts.netloc or "\\" in wanted or not wanted.startswith(home):
        return home
    return wanted


class SignIn:
    """``GET <console>/sign-in`` on an MCP server: the edge has checked the request's
    credential. With an authorization server (its Caller in ``scope``) a caller with the
    admin role (a group or role claim) gets a one-time URL that opens a console session as
    them (answers are audited as ``console:<subject>``), anyone else 403; with the static
    bearer token (``role`` None) its holder gets one that opens a session as the console's
    person, as the printed URL does."""

    def __init__(
        self, keeper: Gatekeeper, prefix: str, role: str | None = DEFAULT_ADMIN_ROLE
    ) -> None:
        self._keeper = keeper
        self._prefix = prefix
        self._role = role

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._role is None:
            name: str | None = self._keeper.user
        else:
            caller = scope.get(CALLER_KEY)
            name = (caller.subject or caller.client_id) if isinstance(caller, Caller) else None
            if not isinstance(caller, Caller) or self._role not in caller.groups:
                name = None
        if name is None:
            await _json(send, 403, {"error": f"the console needs the {self._role!r} role"})
            return
        try:
            given = await self._keeper.issue_pass(str(name))
        except StateUnavailable as exc:
            await _json(send, 503, {"error": f"no sign-in pass now: {exc.reason}"})
            return
        await _json(send, 200, {"url": f"{self._prefix}/?token={given}", "expires_in": int(PASS_S)})


async def _json(send: Send, status: int, value: object) -> None:
    await answer(send, status, json.dumps(value).encode(), content_type=b"application/json")
