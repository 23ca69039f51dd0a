"""``serve --http``: the HTTP server's options from the flags, with its credential: the static
token (``--token``, ``TOOLBRIDGE_TOKEN``) or an OAuth issuer (``--auth-issuer`` and the policy
file's ``[auth]`` table, the flags winning; the introspection secret resolved from the secrets:
``TOOLBRIDGE_SECRET_<ID>`` or the secrets file).

``serve --state``: where what outlives a call is kept, from the flag or the policy's
``[state]`` table: this process's memory (the default), or a Redis that replicas of one
service share; then (over HTTP) this process as one replica: its name (``--replica``, the
policy's ``[state] replica``, else the host name) and the request-state keys every replica
shares (``TOOLBRIDGE_STATE_KEYS``, else the secret ``[state] keys`` names)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.runtime import Loaded, Settings
from mcp_toolbridge.secrets import SecretResolver
from mcp_toolbridge.state import RedisLink, RedisState, SharedStore, check_url, where

if TYPE_CHECKING:
    from mcp_toolbridge.server import AuthOptions, HttpOptions, Replica


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
    ).checked()


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
        options = dataclasses.replace(options, drain_timeout_s=args.drain_timeout)
    check_binding(options)
    return options


MEMORY = "memory"


def state_url(args: argparse.Namespace, loaded: Loaded) -> str:
    url: str = getattr(args, "state", None) or loaded.policy.file.state.url
    return url if url == MEMORY else check_url(url)


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
        yield Sessions(), None
        return
    table = loaded.policy.file.state
    replica = None
    if http:
        from mcp_toolbridge.server import Replica, replica_name, state_keys

        keys = state_keys(_keys_text(settings, loaded))
        name = replica_name(getattr(args, "replica", None) or table.replica)
    link = RedisLink(url)
    try:
        if http:
            replica = Replica(name, SharedStore(link, prefix=table.prefix), keys)
        yield Sessions(state=RedisState(link, prefix=table.prefix)), replica
    finally:
        await link.aclose()


def describe(url: str) -> str:
    return "state in memory" if url == MEMORY else f"shared state in Redis at {where(url)}"
