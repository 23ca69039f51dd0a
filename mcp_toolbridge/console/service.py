"""``serve --console [HOST:]PORT``: the console on its own socket, served by uvicorn on the
server's event loop, beside stdio or streamable HTTP.

The console is created before the runtime (its audit feed is one of the bridge's observers)
and attached to the runtime and the MCP server once they exist. It binds 127.0.0.1 unless
told otherwise and prints its URL, with a one-time token, on stderr; once that is spent, the
next (:meth:`Console.on_url`). On a replica of a service
sharing a Redis (:meth:`Console.replicate`, before the runtime opens) its pages show and
answer every replica's questions, calls and connections (replicated.py), and its sessions at
the MCP server's path are signed with the service's keys (signed.py), so a browser behind the
load balancer may reach any replica."""

from __future__ import annotations

import contextlib
import getpass
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import uvicorn
from anyio.abc import TaskStatus

from mcp_toolbridge.console.desk import ConsoleHost, Desk
from mcp_toolbridge.console.feed import AuditFeed
from mcp_toolbridge.console.guard import (
    DEFAULT_ADMIN_ROLE,
    Gatekeeper,
    Guard,
)
from mcp_toolbridge.console.login import (
    LOGIN_KEY_LABEL,
    BrowserLogin,
    Issuer,
    LoginClient,
    SignIn,
)
from mcp_toolbridge.console.pages import Pages
from mcp_toolbridge.console.replicated import (
    Replicated,
    SharedConnections,
    SharedDesk,
    SharedFeed,
)
from mcp_toolbridge.console.sessions import Connections
from mcp_toolbridge.console.signed import SessionSigner
from mcp_toolbridge.console.views import Serving
from mcp_toolbridge.edge import LOOPBACK_NAMES, is_loopback, listen_on
from mcp_toolbridge.host import Connected
from mcp_toolbridge.state import ConsoleShare, StateUnavailable

DEFAULT_HOST = "127.0.0.1"
WATCH_S = 1.0
"""With replicas: how often a replica looks whether its printed URL was spent on another."""
CLOSE_S = 3.0
"""How long :meth:`Console.close` waits for uvicorn's shutdown (1 s for connections, then its
lifespan)."""
RENEW = (
    "run `mcp-toolbridge console-url` on the machine the server runs on, or take the newest "
    "console URL on the server's stderr (its log)"
)
"""How a person gets a new one-time URL (the page a spent one gets says it)."""


def local_user() -> str:
    """Who runs the server: the person the console's token stands for."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


@dataclass(frozen=True)
class ConsoleOptions:
    host: str = DEFAULT_HOST
    port: int = 0
    allowed_hosts: tuple[str, ...] = ()
    """More Host names a browser reaches the console by."""
    admin_role: str = DEFAULT_ADMIN_ROLE
    """Over HTTP with an authorization server: the group or role claim value a caller needs
    to sign in to the console at the MCP server's path."""
    login: LoginClient | None = None
    """Over HTTP with an authorization server: the console's OAuth client there, with which
    a person signs in in the browser (login.py); None: only ``/sign-in`` with a token."""
    http: Any = "auto"
    """uvicorn's HTTP protocol (``serve`` gives the server's, which closes a connection
    whose request does not arrive in time: server/deadlines.py)."""


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers: the server's own handle SIGINT and SIGTERM, and
    end the console with everything else."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class Console:
    """The console: its desk, its audit feed, the Host a headless call is asked through."""

    def __init__(self, options: ConsoleOptions) -> None:
        self.options = options
        self.desk = Desk()
        self.feed = AuditFeed()
        self.host = ConsoleHost(self.desk)
        self._socket: socket.socket | None = None
        self._uvicorn: _Uvicorn | None = None
        self._served = anyio.Event()
        self._pages: Pages | None = None
        self.keeper: Gatekeeper | None = None
        self.mounted_keeper: Gatekeeper | None = None
        """The console's at the MCP server's path, once mounted."""
        self._share: ConsoleShare | None = None
        self._signer: SessionSigner | None = None
        self._replicated: Replicated | None = None
        self.browser_login: BrowserLogin | None = None
        """The sign-in in the browser at the MCP server's path (with an issuer), once mounted."""

    @property
    def url(self) -> str:
        """The console's printed URL not yet spent (attached: there is one)."""
        return (self.keeper.url if self.keeper is not None else None) or ""

    @property
    def mounted_url(self) -> str | None:
        """The printed URL of the console at the MCP server's path not yet spent (None:
        none, with an authorization server)."""
        return self.mounted_keeper.url if self.mounted_keeper is not None else None

    def on_url(self, told: Callable[[str, str], Awaitable[None]]) -> None:
        """``told(where, url)`` with each next printed URL, ``where`` ``console`` or
        ``mounted`` (the one at the MCP server's path)."""
        for where, keeper in (("console", self.keeper), ("mounted", self.mounted_keeper)):
            if keeper is not None:
                keeper.announce = lambda url, where=where: told(where, url)

    def replicate(self, share: ConsoleShare, replica: str, keys: Sequence[str]) -> None:
        """This console is one replica's of a service sharing ``share``'s Redis, whose
        request-state ``keys`` every replica has: call before the runtime opens (the feed
        is an observer of its bridge)."""
        self._share = share
        self._signer = SessionSigner(keys)
        self.desk = SharedDesk(share, replica)
        self.feed = SharedFeed(share, replica)
        self.host = ConsoleHost(self.desk)

    def attach(
        self,
        serving: Serving,
        *,
        connections: Callable[[], Sequence[Connected]] | None,
        local_session: str,
    ) -> str:
        """Bind the socket for the runtime being served; the URL to open (with its one-time
        token)."""
        host = self.options.host or DEFAULT_HOST
        self._socket = listen_on(host, self.options.port, "--console")
        port = self._socket.getsockname()[1]
        names = [*LOOPBACK_NAMES, *self.options.allowed_hosts]
        if host not in ("0.0.0.0", "::"):
            names.append(host)
        shown = f"[{host}]" if ":" in host else host
        if host in ("0.0.0.0", "::"):
            shown = "127.0.0.1"
        self.keeper = Gatekeeper(
            port=port,
            user=local_user(),
            hosts=tuple(dict.fromkeys(names)),
            base=f"http://{shown}:{port}",
            renew=RENEW,
        )
        self.keeper.printed = secrets.token_urlsafe(32)  # in memory: no store to wait for
        listed: Connections = Connections(connections)
        if self._share is not None:
            assert isinstance(self.desk, SharedDesk) and isinstance(self.feed, SharedFeed)
            listed = SharedConnections(
                connections, self._share, self.desk.replica, on_replicas=self.desk.touch
            )
            self._replicated = Replicated(self.desk, self.feed, listed)
        self._pages = Pages(
            desk=self.desk,
            feed=self.feed,
            serving=serving,
            connections=listed,
            local_session=local_session,
        )
        return self.url

    @property
    def beyond_loopback(self) -> bool:
        return not is_loopback(self.options.host or DEFAULT_HOST)

    def app(self) -> Guard:
        assert self._pages is not None and self.keeper is not None, "attach() first"
        return Guard(self._pages.app(), self.keeper)

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled or :meth:`stop`; started once the socket accepts."""
        assert self._socket is not None, "attach() first"
        config = uvicorn.Config(
            self.app(),
            http=self.options.http,
            log_config=None,
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
        self._uvicorn = _Uvicorn(config)
        try:
            async with anyio.create_task_group() as group:
                if self._replicated is not None:
                    await group.start(self._replicated.run)
                    group.start_soon(self._watch_printed)
                task_status.started()
                await self._uvicorn.serve(sockets=[self._socket])
                group.cancel_scope.cancel()
        finally:
            self._socket.close()
            await self._forget_printed()
            self._served.set()

    async def _watch_printed(self) -> None:
        """With replicas: print the next URL of the console at the MCP server's path once its
        printed one was spent on another replica (or lapsed)."""
        while True:
            if (keeper := self.mounted_keeper) is not None:
                try:
                    await keeper.watch_printed()
                except StateUnavailable:
                    pass
            await anyio.sleep(WATCH_S)

    async def _forget_printed(self) -> None:
        """The printed URLs open nothing once the server ends (with replicas: on none)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            for keeper in (self.keeper, self.mounted_keeper):
                if keeper is not None:
                    try:
                        await keeper.forget_printed()
                    except StateUnavailable:
                        pass

    def mounted(
        self,
        prefix: str,
        *,
        port: int,
        hosts: Sequence[str],
        token: str | None,
        issuer: Issuer | None,
        shown: str = DEFAULT_HOST,
    ) -> tuple[Guard, SignIn | None]:
        """The console again at ``prefix`` of the MCP server on ``port`` (reached as
        ``shown``), behind its authentication: without an authorization server a one-time
        URL printed on stderr (:meth:`open_mounted`) opens a session, and with the static
        bearer ``token`` its holder gets another one from ``<prefix>/sign-in`` (:class:`SignIn`,
        behind the server's token check); the URL never carries that token. With an
        authorization server (``issuer``, the server's side of it) a person signs in in the
        browser (login.py, with ``options.login``, read at each request) or a script fetches
        a sign-in pass (:class:`SignIn`, which the server protects with the same token check
        as the MCP endpoint). Returns the pages and the sign-in."""
        oauth = issuer is not None
        assert self._pages is not None and self.keeper is not None, "attach() first"
        renew = RENEW
        if token is not None:
            renew += (
                f", or GET {prefix}/sign-in with 'Authorization: Bearer <the server's token>' "
                "(it answers with a one-time URL)"
            )
        if oauth:
            renew = (
                f"sign in again at {prefix}/, or GET {prefix}/sign-in with an access token "
                "(it answers with a one-time URL)"
            )
        keeper = Gatekeeper(
            port=port,
            user=self.keeper.user,
            hosts=tuple(dict.fromkeys([*LOOPBACK_NAMES, *hosts])),
            printing=not oauth,
            base=f"http://{shown}:{port}{prefix}",
            renew=renew,
            signer=self._signer,
            passes=self._share,
            secure=issuer is not None and issuer.resource.startswith("https:"),
        )
        self.mounted_keeper = keeper
        sign_in = None
        if oauth:
            sign_in = SignIn(keeper, prefix, self.options.admin_role)
        elif token is not None:
            sign_in = SignIn(keeper, prefix, None)
        if issuer is not None:
            keys = self._signer.derived(LOGIN_KEY_LABEL) if self._signer is not None else ()
            login = BrowserLogin(
                keeper,
                prefix,
                self.options.admin_role,
                issuer,
                lambda: self.options.login,
                keys=keys,
            )
            self.browser_login = login
        return Guard(self._pages.app(), keeper, self.browser_login), sign_in

    async def open_mounted(self) -> str | None:
        """Print the first one-time URL of the console at the MCP server's path (with
        replicas: kept in their Redis first, StateUnavailable when it does not answer); None
        with an authorization server."""
        if self.mounted_keeper is None:
            return None
        return await self.mounted_keeper.print_next()

    async def history(self, audit: Path | None) -> None:
        """Show the last hour of the audit log at ``audit`` (a restart keeps the timeline)."""
        if audit is not None:
            await anyio.to_thread.run_sync(self.feed.history, audit, time.time())

    async def close(self) -> None:
        """:meth:`stop`, and wait (at most :data:`CLOSE_S`) until :meth:`serve` has ended:
        cancelled during uvicorn's shutdown instead, its app's lifespan is cancelled too, and
        uvicorn logs that as a failed shutdown, with a traceback."""
        self.stop()
        if self._uvicorn is not None:
            with anyio.move_on_after(CLOSE_S):
                await self._served.wait()

    def stop(self) -> None:
        if self._pages is not None:
            self._pages.stopping.set()
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
