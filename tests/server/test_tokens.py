"""The token validator against the real provider: keys discovered from its metadata, a key
rotation followed (an unknown kid fetches the keys again), a flood of unknown kids fetching
them at most once per interval; and the options it refuses to start with."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import jwt
import pytest

from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.server.tokens import AuthOptions, TokenValidator, metadata_urls
from tests.support.oauth import AGENT, AGENT_SECRET, CLIENTS, needs_oidc
from tests.support.oidc import oidc_provider, rsa_jwk

RESOURCE = "http://127.0.0.1:9/mcp"


class Counting(TokenValidator):
    """The validator, counting how often it fetches the issuer's keys."""

    fetches = 0

    async def _fetch_keys(self) -> None:
        self.fetches += 1
        await super()._fetch_keys()


@needs_oidc
async def test_a_rotated_key_is_fetched_again_and_both_keys_then_verify(tmp_path: Path) -> None:
    old_key, new_key = rsa_jwk("2025-key"), rsa_jwk("2026-key")
    with anyio.fail_after(60):
        async with oidc_provider(tmp_path, keys=[old_key], clients=CLIENTS) as before:
            validator = Counting(AuthOptions(issuer=before.issuer), RESOURCE, refetch_after_s=0)
            await validator.start()
            old = await before.client_credentials(AGENT, AGENT_SECRET, resource=RESOURCE)
            assert await validator.verify_token(old) is not None
        port = int(before.issuer.rsplit(":", 1)[1])
        async with oidc_provider(
            tmp_path, keys=[new_key, old_key], clients=CLIENTS, port=port
        ) as after:
            assert after.issuer == before.issuer
            new = await after.client_credentials(AGENT, AGENT_SECRET, resource=RESOURCE)
            assert jwt.get_unverified_header(new)["kid"] == "2026-key"
            accepted = await validator.verify_token(new)
            still = await validator.verify_token(old)
    assert accepted is not None and accepted.subject == AGENT
    assert still is not None
    assert validator.fetches == 2  # at start, and once for the new kid


@needs_oidc
async def test_unknown_key_ids_fetch_the_keys_at_most_once_per_interval(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with oidc_provider(tmp_path, clients=CLIENTS) as provider:
            validator = Counting(AuthOptions(issuer=provider.issuer), RESOURCE)
            await validator.start()
            intruder = rsa_jwk("unknown")
            key = jwt.PyJWK(intruder).key
            forged = [
                jwt.encode(
                    {"iss": provider.issuer, "aud": RESOURCE, "exp": 2**40, "sub": "x"},
                    key,
                    algorithm="RS256",
                    headers={"kid": f"kid-{n}"},
                )
                for n in range(20)
            ]
            verdicts = [await validator.verify_token(token) for token in forged]
    assert verdicts == [None] * 20
    assert validator.fetches == 1  # the start's: the rest were within the interval


@needs_oidc
async def test_an_issuer_whose_metadata_names_another_issuer_is_refused(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with oidc_provider(tmp_path, clients=CLIENTS) as provider:
            spoofed = AuthOptions(issuer=provider.issuer.replace("127.0.0.1", "localhost"))
            with pytest.raises(ConfigError) as refused:
                await TokenValidator(spoofed, RESOURCE).start()
    assert "names the issuer" in str(refused.value)


async def test_an_unreachable_issuer_stops_the_start_with_what_was_tried() -> None:
    validator = TokenValidator(AuthOptions(issuer="http://127.0.0.1:9"), RESOURCE)
    with anyio.fail_after(30), pytest.raises(ConfigError) as refused:
        await validator.start()
    message = str(refused.value)
    assert "no metadata for the issuer http://127.0.0.1:9" in message
    assert "/.well-known/oauth-authorization-server" in message
    assert "/.well-known/openid-configuration" in message


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        (AuthOptions(issuer="http://id.example.com"), "must be an https URL"),
        (AuthOptions(issuer="https://id.example.com/?x=1"), "without a query"),
        (AuthOptions(issuer="https://id", algorithms=("HS256",)), "never are"),
        (AuthOptions(issuer="https://id", algorithms=("none",)), "never are"),
        (AuthOptions(issuer="https://id", introspection_client_id="rs"), "needs both"),
    ],
)
def test_options_that_would_weaken_the_checks_are_refused(
    options: AuthOptions, complaint: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        options.checked()
    assert complaint in str(refused.value)


def test_metadata_is_looked_for_where_rfc_8414_and_openid_discovery_put_it() -> None:
    assert metadata_urls("https://id.example.com") == [
        "https://id.example.com/.well-known/oauth-authorization-server",
        "https://id.example.com/.well-known/openid-configuration",
    ]
    assert metadata_urls("https://id.example.com/realms/team") == [
        "https://id.example.com/.well-known/oauth-authorization-server/realms/team",
        "https://id.example.com/.well-known/openid-configuration/realms/team",
        "https://id.example.com/realms/team/.well-known/openid-configuration",
    ]
    assert json.dumps(metadata_urls("https://id.example.com/")) == json.dumps(
        metadata_urls("https://id.example.com")
    )


@needs_oidc
async def test_a_remembered_token_is_refused_once_it_expires(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with oidc_provider(tmp_path, clients=CLIENTS) as provider:
            options = AuthOptions(issuer=provider.issuer, leeway_s=1.0)
            validator = Counting(options, RESOURCE)
            await validator.start()
            key = jwt.PyJWK(provider.keys[0]).key
            now = int(time.time())
            claims = {"iss": provider.issuer, "aud": RESOURCE, "sub": "x", "exp": now}
            kid = provider.keys[0]["kid"]
            token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})
            first = await validator.verify_token(token)  # within the second of skew
            again = await validator.verify_token(token)  # remembered
            await anyio.sleep(max(0.0, now + 1.2 - time.time()))  # a test of expiry: time must pass
            expired = await validator.verify_token(token)
    assert first is not None and again is first
    assert expired is None
