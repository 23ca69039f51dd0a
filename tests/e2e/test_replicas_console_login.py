"""The console's sign-in in the browser on a service of replicas (``serve --http --state
redis://… --auth-issuer … --console … --console-client-id …``, the client's secret in the
environment), against a real OpenID provider: a sign-in begun on one replica completes on
another (the attempt is kept in the shared Redis, the browser holds only its state), the
session it opens holds on every replica, the same callback replayed on the first is refused
(the attempt was taken once), and the secret shows in no line the replicas print."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest

from tests.console.conftest import PEOPLE
from tests.support.cluster import cluster
from tests.support.manifests import agentcli_manifest, echo_tool
from tests.support.oauth import needs_oidc
from tests.support.oidc import Provider, oidc_provider, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, needs_oidc]

# The service's canonical address as its people reach it (behind a load balancer, not run
# here): the tokens' audience and the console's callback; the test plays the balancer,
# taking each request to the replica it chooses.
PUBLIC = "http://127.0.0.1:9"


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[Provider]:
    (tmp_path / "oidc").mkdir()
    async with oidc_provider(tmp_path / "oidc", accounts=PEOPLE) as running:
        yield running


async def test_a_sign_in_begun_on_one_replica_completes_on_another_once(
    tmp_path: Path, provider: Provider
) -> None:
    client_id, secret = await provider.register(f"{PUBLIC}/console/callback")
    assert secret is not None
    folder = tmp_path / "manifests"
    agentcli_manifest(folder, [echo_tool()], {})
    args = (
        "--sandbox", "off", "--workspace", str(tmp_path), "--console", "127.0.0.1:0",
        "--auth-issuer", provider.issuer, "--auth-resource", f"{PUBLIC}/mcp",
        f"--console-client-id={client_id}", str(folder),
    )  # fmt: skip  # "=": an issuer's generated id may begin with "-"
    env = {"TOOLBRIDGE_CONSOLE_CLIENT_SECRET": secret}
    with anyio.fail_after(300):
        async with (
            cluster(tmp_path, ("r1", "r2"), *args, env=env) as service,
            httpx2.AsyncClient(timeout=30) as browser,
        ):
            r1, r2 = (service.direct(n).rsplit("/mcp", 1)[0] for n in ("r1", "r2"))
            page = await browser.get(f"{r1}/console/")
            assert page.status_code == 401 and f"Sign in with {provider.issuer}" in page.text
            assert f'href="{PUBLIC}/console/login?next=%2Fconsole%2F"' in page.text
            started = await browser.get(f"{r1}/console/login")  # the balancer chose r1
            assert started.status_code == 303
            back = await sign_in(
                started.headers["location"], "alice", redirect_prefix=f"{PUBLIC}/console/"
            )
            rest = back.removeprefix(PUBLIC)  # the balancer chose r2 for the callback
            state_cookie = dict(browser.cookies.items())
            done = await browser.get(r2 + rest)
            assert done.status_code == 200 and "Signed in as alice" in done.text
            for base in (r1, r2):  # the session is signed with the service's keys
                shown = await browser.get(f"{base}/console/")
                assert shown.status_code == 200 and "alice" in shown.text
            async with httpx2.AsyncClient(cookies=state_cookie) as thief:
                replayed = await thief.get(r1 + rest)
            assert replayed.status_code == 400 and "already used" in replayed.text
            lines = [x for n in ("r1", "r2") for x in service.replicas[n].lines]
            assert any(f"redirect URI {PUBLIC}/console/callback" in x for x in lines), lines
            assert not any(secret in x for x in lines)
    assert urlsplit(back).path == "/console/callback"
