"""The token validator against the real provider: keys discovered from its metadata, a key
rotation followed (an unknown kid fetches the keys again), a flood of unknown kids fetching
them at most once per interval; opaque tokens' introspection answers kept for a bounded time
(never beyond the token's exp), refusals never kept, the cache bounded; and the options it
refuses to start with."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
from mcp.server.auth.provider import AccessToken

from mcp_toolbridge.errors import ConfigError
from mcp_toolbridge.server import tokens
from mcp_toolbridge.server.auth_options import AuthOptions
from mcp_toolbridge.server.tokens import TokenValidator, metadata_urls
from tests.support.oauth import (
    AGENT,
    AGENT_SECRET,
    CLIENTS,
    OPAQUE,
    OPAQUE_SECRET,
    RS,
    RS_SECRET,
    Clock,
    needs_oidc,
)
from tests.support.oidc import oidc_provider, rsa_jwk

RESOURCE = "http://127.0.0.1:9/mcp"


class Counting(TokenValidator):
    """The validator, counting how often it fetches the issuer's keys."""

    fetches = 0

    async def _fetch_keys(self) -> None:
        self.fetches += 1
        await super()._fetch_keys()

    asked = 0

    async def _introspect(self, token: str, digest: bytes) -> AccessToken | None:
        self.asked += 1
        return await super()._introspect(token, digest)


def _introspecting(issuer: str, cache_s: float) -> AuthOptions:
    return AuthOptions(
        issuer=issuer,
        leeway_s=0,
        introspection_client_id=RS,
        introspection_secret=RS_SECRET,
        introspection_cache_s=cache_s,
    )


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
        (AuthOptions(issuer="https://id", introspection_cache_s=-1), "0 (ask the issuer"),
        (AuthOptions(issuer="https://id", introspection_cache_s=3600), "to 300 seconds"),
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
            clock = Clock()  # the remembered token's times are checked on it
            validator = Counting(options, RESOURCE, clock=clock)
            await validator.start()
            key = jwt.PyJWK(provider.keys[0]).key
            exp = int(time.time()) + 60
            claims = {"iss": provider.issuer, "aud": RESOURCE, "sub": "x", "exp": exp}
            kid = provider.keys[0]["kid"]
            token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})
            first = await validator.verify_token(token)  # checked whole, then remembered
            clock.now = exp + 0.5  # past exp, within the second of skew
            again = await validator.verify_token(token)  # remembered
            clock.now = exp + 1.5  # past the skew too
            expired = await validator.verify_token(token)
    assert first is not None and again == first
    assert expired is None


@needs_oidc
async def test_an_introspection_answer_is_kept_for_the_cache_time_never_beyond_the_tokens_exp(
    tmp_path: Path,
) -> None:
    clock = Clock()
    with anyio.fail_after(60):
        async with oidc_provider(
            tmp_path, clients=CLIENTS, opaque_clients=[OPAQUE], access_token_ttl=60
        ) as provider:
            short = Counting(_introspecting(provider.issuer, 10), RESOURCE, clock=clock)
            long = Counting(_introspecting(provider.issuer, 300), RESOURCE, clock=clock)
            for validator in (short, long):
                await validator.start()
            token = await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=RESOURCE)
            assert token.count(".") != 2
            first = [await v.verify_token(token) for v in (short, long)]
            clock.now += 9
            within = [await v.verify_token(token) for v in (short, long)]
            assert (short.asked, long.asked) == (1, 1)
            clock.now += 2  # the short cache ended: asked again
            later = [await v.verify_token(token) for v in (short, long)]
            assert (short.asked, long.asked) == (2, 1)
            assert first[1] is not None and first[1].expires_at is not None
            clock.now = first[1].expires_at - 0.5
            before_exp = await long.verify_token(token)
            clock.now = first[1].expires_at + 0.5  # 300 s are not over, the token's life is
            after_exp = await long.verify_token(token)
            assert long.asked == 2
    assert all(a is not None and a.client_id == OPAQUE for a in [*first, *within, *later])
    assert all(a is not None and a.token == token for a in [*first, *within, *later])
    assert before_exp is not None and after_exp is None


@needs_oidc
async def test_refusals_are_never_kept_and_the_kept_answers_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "MAX_REMEMBERED", 2)
    with anyio.fail_after(60):
        async with oidc_provider(tmp_path, clients=CLIENTS, opaque_clients=[OPAQUE]) as provider:
            validator = Counting(_introspecting(provider.issuer, 60), RESOURCE)
            off = Counting(_introspecting(provider.issuer, 0), RESOURCE)
            for started in (validator, off):
                await started.start()
            refused = [await validator.verify_token("not-a-token-the-issuer-made") for _ in "ab"]
            assert validator.asked == 2
            issued = [
                await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=RESOURCE)
                for _ in range(3)
            ]
            for token in issued:
                assert await validator.verify_token(token) is not None
            assert validator.asked == 5
            assert await validator.verify_token(issued[2]) is not None  # kept
            assert await validator.verify_token(issued[0]) is not None  # the oldest went
            assert validator.asked == 6
            for _ in range(3):
                assert await off.verify_token(issued[1]) is not None
    assert refused == [None, None]
    assert off.asked == 3  # 0: the issuer is asked on every request


@needs_oidc
async def test_an_id_token_verifies_only_for_its_client_nonce_issuer_and_time(
    tmp_path: Path,
) -> None:
    """The console's sign-in checks the ID token with the issuer's keys: each claim that is
    not the sign-in's refuses it (the tokens signed here with the provider's own key)."""
    signing = rsa_jwk("id-key")
    key = jwt.PyJWK(signing).key
    with anyio.fail_after(60):
        async with oidc_provider(tmp_path, keys=[signing], clients=CLIENTS) as provider:
            validator = TokenValidator(AuthOptions(issuer=provider.issuer), RESOURCE)
            await validator.start()
            now = int(time.time())
            good = {"iss": provider.issuer, "aud": "console", "sub": "alice", "iat": now,
                    "exp": now + 300, "nonce": "n-1"}  # fmt: skip

            def signed(claims: dict[str, object], with_key: Any = key) -> str:
                return jwt.encode(claims, with_key, algorithm="RS256", headers={"kid": "id-key"})

            async def verdict(claims: dict[str, object], **other: Any) -> object:
                return await validator.verify_id_token(
                    signed(claims, **other), client_id="console", nonce="n-1"
                )

            accepted = await verdict(good)
            refused = [
                await verdict({**good, "nonce": "n-2"}),
                await verdict({k: v for k, v in good.items() if k != "nonce"}),
                await verdict({**good, "aud": "another-client"}),
                await verdict({**good, "aud": ["console", "another-client"]}),
                await verdict({**good, "iss": provider.issuer + "/other"}),
                await verdict({**good, "exp": now - 3600}),
                await verdict({k: v for k, v in good.items() if k != "sub"}),
                await verdict(good, with_key=jwt.PyJWK(rsa_jwk("id-key")).key),
            ]
            several = await verdict({**good, "aud": ["console", "x"], "azp": "console"})
    assert isinstance(accepted, dict) and accepted["sub"] == "alice"
    assert refused == [None] * len(refused)
    assert several is not None


@needs_oidc
async def test_a_flood_of_made_up_opaque_tokens_asks_the_issuer_a_bounded_number_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 made-up tokens at once, before any credential counts: the issuer is asked about
    at most MAX_INTROSPECTIONS at a time, each refused, and an issued token still verifies.
    Each was asked at once: 200 connections to the issuer from one flood, the server's
    descriptors and the issuer's rate limits used up for every caller."""
    out, peak = 0, 0
    asking = tokens._get_json

    async def counted(url: str, **kwargs: Any) -> Any:
        nonlocal out, peak
        out += 1
        peak = max(peak, out)
        try:
            return await asking(url, **kwargs)
        finally:
            out -= 1

    monkeypatch.setattr(tokens, "_get_json", counted)
    with anyio.fail_after(60):
        async with oidc_provider(tmp_path, clients=CLIENTS, opaque_clients=[OPAQUE]) as provider:
            validator = Counting(_introspecting(provider.issuer, 30), RESOURCE)
            await validator.start()
            refused: list[AccessToken | None] = []

            async def made_up(n: int) -> None:
                refused.append(await validator.verify_token(f"made-up-{n}-token"))

            async with anyio.create_task_group() as group:
                for n in range(200):
                    group.start_soon(made_up, n)
            issued = await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=RESOURCE)
            assert await validator.verify_token(issued) is not None
    assert refused == [None] * 200
    assert validator.asked == 201
    assert 1 < peak <= 16, peak  # MAX_INTROSPECTIONS
