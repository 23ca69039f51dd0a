"""``serve --http``: the HTTP server's options from the flags, with its credential: the static
token (``--token``, ``TOOLBRIDGE_TOKEN``) or an OAuth issuer (``--auth-issuer`` and the policy
file's ``[auth]`` table, the flags winning; the introspection secret resolved from the secrets:
``TOOLBRIDGE_SECRET_<ID>`` or the secrets file); and how long and for how many people the
server keeps what it keeps of them (``[auth]`` too). The web console, with its OAuth client
at that issuer for a person's sign-in in the browser (``--console-client-id``, ``[auth]``).

``serve --state``: where what outlives a call is kept, from the flag or the policy's
``[state]`` table: this process's memory (the default), or a Redis that replicas of one
service share; then (over HTTP) this process as one replica: its name (``--replica``, the
policy's ``[state] replica``, else the host name) and the request-state keys every replica
shares (``TOOLBRIDGE_STATE_KEYS``, else the secret ``[state] keys`` names).

The flags that apply to one transport only are refused with the other: the HTTP ones over
stdio, and stdio's ``--eof-grace`` (checked and bounded here) over HTTP."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.cli.console_url import UrlFile, print_urls
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.runtime import Loaded, Settings
from mcp_toolbridge.secrets import SecretResolver
from mcp_toolbridge.state import MemoryState

if TYPE_CHECKING:  # Redis: imported by a server that uses it (--state redis://...)
    from mcp_toolbridge.console import Console
    from mcp_toolbridge.server import (
        AuthOptions,
        ConsoleMount,
        HttpOptions,
        IssuerLogin,
        Replica,
    )
    from mcp_toolbridge.state import ConsoleShare

CONSOLE_PATH = "/console"
CONSOLE_SECRET_ENV = "TOOLBRIDGE_CONSOLE_CLIENT_SECRET"
"""The console's OAuth client secret (else the secret ``[auth] console_client_secret`` names)."""


def console_for(args: argparse.Namespace, settings: Settings, loaded: Loaded) -> Console | None:
    """The web console ``--console [HOST:]PORT`` asks for (not yet listening), or None; with
    its OAuth client at the issuer (``--console-client-id`` or ``[auth] console_client_id``,
    the secret from ``TOOLBRIDGE_CONSOLE_CLIENT_SECRET`` or the secret ``[auth]
    console_client_secret`` names) when one is configured."""
    table = loaded.policy.file.auth
    if args.console is None:
        for flag, value in (
            ("--console-admin-role", args.console_admin_role),
            ("--console-client-id", args.console_client_id),
        ):
            if value:
                raise ConfigError(
                    f"{flag} applies to --console only", code=ErrorCode.CONFIG_INVALID
                )
        return None
    from mcp_toolbridge.console import Console, ConsoleOptions, LoginClient  # Starlette: on use
    from mcp_toolbridge.server import parse_address, timed_protocol

    host, port = parse_address(args.console, flag="--console")
    options = ConsoleOptions(
        host=host, port=port, allowed_hosts=tuple(args.allow_host), http=timed_protocol()
    )
    role = args.console_admin_role or table.console_admin_role
    if role:
        options = replace(options, admin_role=role)
    client_id = args.console_client_id or table.console_client_id
    if client_id:
        if args.http is None or not (args.auth_issuer or table.issuer):
            raise ConfigError(
                "--console-client-id (a person signs in to /console in the browser) needs "
                "--http and an authorization server (--auth-issuer or [auth] issuer)",
                code=ErrorCode.CONFIG_INVALID,
            )
        secret = settings.environ.get(CONSOLE_SECRET_ENV) or os.environ.get(CONSOLE_SECRET_ENV)
        if not secret and (secret_id := table.console_client_secret) is not None:
            resolver = SecretResolver.from_sources(settings.environ, settings.secrets_file)
            secret = resolver.resolve([secret_id], tool="[auth]")[secret_id]
        options = replace(options, login=LoginClient(client_id, secret or None))
    return Console(options)


AGAIN = "a new one: mcp-toolbridge console-url"


async def told_url(urls: UrlFile, say: Callable[[str], None], where: str, url: str) -> None:
    """The printed console URL was spent: the next, on stderr and for ``console-url``."""
    what = "console also" if where == "mounted" else "console"
    say(f"{what} at {url} (the URL before it is used or lapsed; this one opens once too)")
    await urls.keep(where, url)


def url_file() -> UrlFile:
    """Where this server keeps its console URLs not yet spent, for ``console-url``."""
    return UrlFile()


def console_urls(args: argparse.Namespace) -> int:
    """``console-url``: the one-time URLs of the consoles of servers running here."""
    return print_urls(args)


def mount_of(console: Console | None, http: HttpOptions) -> ConsoleMount | None:
    """The console at ``/console`` of the MCP server too, behind its authentication."""
    if console is None:
        return None
    hosts = [*http.allowed_hosts]
    if http.host not in ("0.0.0.0", "::", ""):
        hosts.append(http.host)

    shown = http.host if http.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    shown = f"[{shown}]" if ":" in shown else shown

    def mount(port: int, issuer: IssuerLogin | None) -> Any:
        return console.mounted(
            CONSOLE_PATH, port=port, hosts=hosts, token=http.token, issuer=issuer, shown=shown
        )

    return mount


def console_path_line(url: str, http: HttpOptions, console: Console) -> str:
    """Where the console is on the MCP server, and how to open it there."""
    base = url.rsplit("/", 1)[0] + CONSOLE_PATH
    if http.auth is not None:
        role = console.options.admin_role
        login = console.options.login
        if login is not None:
            resource = (http.auth.resource or url).rstrip("/")
            redirect = urljoin(resource, CONSOLE_PATH.lstrip("/")) + "/callback"
            return (
                f"console also at {base}/: people whose groups or roles include {role!r} sign "
                f"in there with {http.auth.issuer} (client {login.client_id!r}, redirect URI "
                f"{redirect}); or GET {base}/sign-in with an access token for a one-time URL"
            )
        return (
            f"console also at {base}/: GET {base}/sign-in with an access token whose groups "
            f"or roles include {role!r} gives a one-time URL (--console-client-id: sign in "
            "in the browser)"
        )
    opens = f"console also at {console.mounted_url} (it opens once"
    if http.token:
        return f"{opens}; GET {base}/sign-in with the bearer token gives another)"
    return f"{opens})"


def auth_options(
    args: argparse.Namespace, settings: Settings, loaded: Loaded
) -> AuthOptions | None:
    """The OAuth resource server's options: the flags over the policy's ``[auth]`` table;
    None when no issuer is named."""
    from mcp_toolbridge.server import AuthOptions  # imports mcp: only when serving

    table = loaded.policy.file.auth
    issuer = args.auth_issuer or table.issuer
    if issuer is None:
        return None
    secret = None
    if (secret_id := table.introspection_secret) is not None:
        resolver = SecretResolver.from_sources(settings.environ, settings.secrets_file)
        secret = resolver.resolve([secret_id], tool="[auth]")[secret_id]
    return AuthOptions(
        issuer=issuer,
        resource=args.auth_resource or table.resource,
        scopes=tuple(table.scopes),
        algorithms=tuple(table.algorithms) or AuthOptions.algorithms,
        leeway_s=table.leeway_s,
        group_claims=tuple(table.group_claims),
        introspection_client_id=table.introspection_client_id,
        introspection_secret=secret,
        introspection_cache_s=table.introspection_cache_s,
    ).checked()


def people_sessions(loaded: Loaded) -> Sessions:
    """The sessions and State of a server, keeping what it keeps of people (callers an access
    token names) as long and for as many as the policy's ``[auth]`` table says."""
    table = loaded.policy.file.auth
    state = MemoryState(person_idle_s=table.person_idle_s, max_people=table.max_people)
    return Sessions(state=state)


MAX_EOF_GRACE_S = 3600.0
"""The longest ``--eof-grace``: a server whose client has gone does not linger for hours."""


def eof_grace(args: argparse.Namespace) -> float | None:
    """``--eof-grace`` checked (None: not given, the stdio transport's default)."""
    grace: float | None = getattr(args, "eof_grace", None)
    if grace is None:
        return None
    if args.http is not None:
        raise ConfigError(
            "--eof-grace applies to stdio only (over HTTP, --drain-timeout bounds the calls "
            "running when the server stops); drop it or serve over stdio",
            code=ErrorCode.CONFIG_INVALID,
        )
    if not math.isfinite(grace) or not 0 <= grace <= MAX_EOF_GRACE_S:
        raise ConfigError(
            f"--eof-grace must be 0 to {MAX_EOF_GRACE_S:g} seconds, not {grace:g}",
            code=ErrorCode.CONFIG_INVALID,
        )
    return grace


def http_options(
    args: argparse.Namespace, settings: Settings, loaded: Loaded
) -> HttpOptions | None:
    """None for stdio (refusing the flags that apply to HTTP only)."""
    if args.http is None:
        given = (
            ("--token", args.token),
            ("--stateless", args.stateless),
            ("--session-idle-timeout", args.session_idle_timeout),
            ("--auth-issuer", args.auth_issuer),
            ("--auth-resource", args.auth_resource),
            ("--drain-timeout", args.drain_timeout),
            ("--replica", args.replica),
        )
        for flag, value in given:
            if value:
                raise ConfigError(f"{flag} applies to --http only", code=ErrorCode.CONFIG_INVALID)
        return None
    from mcp_toolbridge.server import (
        SESSION_IDLE_TIMEOUT_S,
        TOKEN_ENV,
        HttpOptions,
        check_binding,
        parse_address,
    )

    host, port = parse_address(args.http)
    auth = auth_options(args, settings, loaded)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    options = HttpOptions(
        host=host,
        port=port,
        token=token,
        stateless=args.stateless,
        allowed_hosts=tuple(args.allow_host),
        session_idle_timeout_s=(
            SESSION_IDLE_TIMEOUT_S
            if args.session_idle_timeout is None
            else args.session_idle_timeout
        ),
        auth=auth,
    )
    if args.drain_timeout is not None:
        options = replace(options, drain_timeout_s=args.drain_timeout)
    check_binding(options)
    _check_resource(options, replicated=state_url(args, loaded) != MEMORY)
    return options


def _check_resource(options: HttpOptions, *, replicated: bool) -> None:
    """An issuer's tokens are for the URL clients reach: without ``--auth-resource`` it is
    the ``--http`` URL, which no client reaches when the server listens on every address
    (``http://0.0.0.0:PORT/mcp``) or is one replica behind a load balancer (the replica's own
    URL): every client would refuse the metadata, or every token would be for another
    audience. Refused at start (exit 2) rather than at every sign-in."""
    from mcp_toolbridge.server import WILDCARDS

    if options.auth is None or options.auth.resource is not None:
        return
    if options.host in WILDCARDS:
        why = f"it listens on every address ({options.url} is no URL a client can use)"
    elif replicated:
        why = (
            f"it is a replica (--state redis://...): clients reach the load balancer, not "
            f"{options.url}"
        )
    else:
        return
    raise ConfigError(
        f"--auth-issuer needs --auth-resource here, since {why}. Give the URL clients "
        "reach this MCP endpoint at, e.g. --auth-resource https://tools.example.com/mcp (or "
        "[auth] resource in the policy): it is the resource the metadata names and the "
        "audience the issuer puts in the tokens",
        code=ErrorCode.CONFIG_INVALID,
    )


MEMORY = "memory"


def state_url(args: argparse.Namespace, loaded: Loaded) -> str:
    url: str = getattr(args, "state", None) or loaded.policy.file.state.url
    if url == MEMORY:
        return url
    from mcp_toolbridge.state import check_url  # the Redis client's module: a replica's only

    return check_url(url)


def _keys_text(settings: Settings, loaded: Loaded) -> str | None:
    from mcp_toolbridge.server import KEYS_ENV

    text = settings.environ.get(KEYS_ENV) or os.environ.get(KEYS_ENV)
    secret_id = loaded.policy.file.state.keys
    if not text and secret_id is not None:
        resolver = SecretResolver.from_sources(settings.environ, settings.secrets_file)
        text = resolver.resolve([secret_id], tool="[state]")[secret_id]
    return text


@asynccontextmanager
async def opened_state(
    args: argparse.Namespace, settings: Settings, loaded: Loaded, *, http: bool
) -> AsyncIterator[tuple[Sessions, Replica | None]]:
    """The sessions' State, and this replica (HTTP with Redis only); closed on the way out.
    ConfigError (exit 2) for a bad URL, missing or short keys, a bad replica name."""
    url = state_url(args, loaded)
    if url == MEMORY:
        yield people_sessions(loaded), None
        return
    table = loaded.policy.file.state
    replica = None
    if http:
        from mcp_toolbridge.server import Replica, replica_name, state_keys

        keys = state_keys(_keys_text(settings, loaded))
        name = replica_name(getattr(args, "replica", None) or table.replica)
    from mcp_toolbridge.state import PASSWORD_ENV, RedisLink, RedisState, SharedStore

    password = settings.environ.get(PASSWORD_ENV) or os.environ.get(PASSWORD_ENV)
    link = RedisLink(url, password=password or None)
    try:
        if http:
            replica = Replica(name, SharedStore(link, prefix=table.prefix), keys)
        person_ttl_s = loaded.policy.file.auth.person_idle_s  # max_people: memory only
        state = RedisState(link, prefix=table.prefix, person_ttl_s=person_ttl_s)
        yield Sessions(state=state), replica
    finally:
        await link.aclose()


def shared_console(replica: Replica) -> ConsoleShare:
    """What the consoles of the replicas share, in the replicas' Redis."""
    from mcp_toolbridge.state import ConsoleShare

    return ConsoleShare(replica.shared.link, prefix=replica.shared.prefix)


def describe(url: str) -> str:
    if url == MEMORY:
        return "state in memory"
    from mcp_toolbridge.state import where

    return f"shared state in Redis at {where(url)}"
