"""A caller named by its identity provider with characters that reorder or hide text (the
red-team pass of 2026-11-29, 9th): a person whose subject at the issuer holds U+202E and
a tag character calls a tool the policy asks about; the console shows its name with escapes on the
approvals card, the timeline and the catalog's choices. A real OpenID provider, a real
server and console, real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_toolbridge.server.auth_options import AuthOptions
from tests.console.conftest import Person, mounted_serving
from tests.support.oauth import needs_oidc, person_client
from tests.support.oidc import Provider, oidc_provider

pytestmark = pytest.mark.anyio

ADMIN, ADMIN_SECRET = "ops-admin", "ops-admin-secret-0123456789abcdef"
SPOOFED = "bot\u202egnp.exe\U000e0041"
"""Read as ``bot`` then ``exe.png``, with an invisible ``A``."""
SPOOFED_SHOWN = "bot\\u202egnp.exe\\U000e0041"


class _At:
    def __init__(self, url: str) -> None:
        self.url = url


@pytest.fixture(scope="module")
async def issuer(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    clients = [
        {"client_id": ADMIN, "client_secret": ADMIN_SECRET, "grant_types": ["client_credentials"],
         "response_types": [], "redirect_uris": [], "groups": ["admin"]},
    ]  # fmt: skip
    accounts = {SPOOFED: ["staff"]}
    async with oidc_provider(
        tmp_path_factory.mktemp("oidc"), clients=clients, accounts=accounts
    ) as running:
        yield running


async def _call(url: str, out: list[Any]) -> None:
    """``note`` called by the person :data:`SPOOFED` signed in at the issuer (their IDE)."""
    async with person_client(url, SPOOFED, "auto") as client:
        out.append(await client.call_tool("note", {"text": "hello"}))


def _hides_nothing(page: str) -> None:
    assert SPOOFED_SHOWN in page
    assert "\u202e" not in page and "\U000e0041" not in page


@needs_oidc
async def test_a_callers_name_from_its_token_is_shown_with_escapes(
    tmp_path: Path, issuer: Provider
) -> None:
    auth = AuthOptions(issuer=issuer.issuer, scopes=("tools",))
    async with mounted_serving(tmp_path, auth=auth) as (url, _), httpx2.AsyncClient() as http:
        base = url.rsplit("/", 1)[0] + "/console"
        admin = await issuer.client_credentials(ADMIN, ADMIN_SECRET, resource=url)
        given = await http.get(base + "/sign-in", headers={"Authorization": f"Bearer {admin}"})
        assert given.status_code == 200, given.text
        async with Person.at(_At(url.rsplit("/", 1)[0] + given.json()["url"])) as me:  # type: ignore[arg-type]
            result: list[Any] = []
            async with anyio.create_task_group() as group:
                group.start_soon(_call, url, result)
                [waiting] = await me.waiting()
                _hides_nothing(await me.page())
                _hides_nothing(await me.page("/part/approvals"))
                await me.answer(waiting, "deny")
            assert result[0].is_error
            _hides_nothing(await me.page("/timeline"))
            catalog = await me.page("/catalog")
            _hides_nothing(catalog)
            # the catalog's choice is the name as shown, and it picks that caller
            [label] = [c for c in catalog.split("<option") if SPOOFED_SHOWN in c]
            name = label.split(">", 1)[1].split("<", 1)[0].replace("&#39;", "'")
            chosen = await me.page("/catalog", caller=name.replace("&amp;", "&"))
            assert "for <strong>" + name in chosen
