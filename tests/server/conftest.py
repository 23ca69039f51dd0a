"""Fixtures of the server tests: a real OpenID provider for the OAuth ones (one per module)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.oauth import CLIENTS, OPAQUE, PEOPLE
from tests.support.oidc import Provider, oidc_provider


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    """oidc-provider on 127.0.0.1 with alice and bob, the agents and the resource server's
    introspection client (tests/support/oauth.py); resources offer the scopes tools, deploy."""
    async with oidc_provider(
        tmp_path_factory.mktemp("oidc"),
        accounts=PEOPLE,
        clients=CLIENTS,
        opaque_clients=[OPAQUE],
        scopes=["tools", "deploy"],
    ) as running:
        yield running
