from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.web.providers import (
    BraveProvider,
    SearxngProvider,
    providers_from_config,
)
from mcp_toolbridge.builtins.web.search import NO_PROVIDER, WebSearchTool, web_search_from_config
from mcp_toolbridge.errors import ConfigError, ExecError, ExecTimeoutError
from mcp_toolbridge.executors.base import CallContext, ExecRequest, ExecResult
from mcp_toolbridge.schemas import compile_schema
from mcp_toolbridge.secrets import SecretResolver
from tests.support.web_fixture import Reply, Seen, WebServer, serving

WAIT_S = 10.0
BRAVE_KEY = "brave-test-key"
SECRETS = SecretResolver(env={"TOOLBRIDGE_SECRET_BRAVE": BRAVE_KEY})

SEARXNG_ANSWER = {
    "query": "anyio",
    "results": [
        {
            "url": "https://anyio.readthedocs.io/",
            "title": "AnyIO &amp; friends",
            "content": "High level <em>asynchronous</em> concurrency",
            "engine": "duckduckgo",
        },
        {"url": "https://github.com/agronholm/anyio", "title": "agronholm/anyio", "content": ""},
        {"title": "no url: skipped"},
        {"url": "https://pypi.org/project/anyio/", "title": "anyio · PyPI", "content": "pkg"},
    ],
}
BRAVE_ANSWER = {
    "type": "search",
    "web": {
        "type": "search",
        "results": [
            {
                "title": "Brave <strong>one</strong>",
                "url": "https://one.example/",
                "description": "The <strong>first</strong> result &quot;quoted&quot;",
            },
            {"title": "Two", "url": "https://two.example/", "description": "second"},
        ],
    },
}


def json_reply(value: object, status: int = 200) -> Reply:
    return Reply(status, json.dumps(value).encode(), "application/json")


def searxng_route(seen: Seen) -> Reply:
    if seen.query.get("format") != ["json"]:
        return Reply(403, b"Forbidden", "text/html")
    return json_reply(SEARXNG_ANSWER | {"query": seen.query["q"][0]})


def brave_route(seen: Seen) -> Reply:
    if seen.headers.get("x-subscription-token") != BRAVE_KEY:
        return json_reply({"error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}, 401)
    return json_reply(BRAVE_ANSWER)


ROUTES: dict[str, Any] = {
    "/search": searxng_route,
    "/other/search": searxng_route,
    "/res/v1/web/search": brave_route,
    "/slow/search": Reply(body=b"{}", hold=True),
}


async def search(
    tool: WebSearchTool, query: str = "anyio", session: str = "s1", **args: Any
) -> ExecResult:
    arguments = {"query": query, **args}
    assert compile_schema(tool.spec.input_schema).validate(arguments) == []
    with anyio.fail_after(WAIT_S):
        return await tool.run(
            ExecRequest(
                spec=tool.spec,
                arguments=arguments,
                timeout_s=WAIT_S,
                context=CallContext(session_id=session),
            )
        )


def searxng(server: WebServer, path: str = "") -> SearxngProvider:
    return SearxngProvider(server.url(path))


async def test_searxng_results_are_parsed_into_title_url_and_snippet() -> None:
    with serving(ROUTES) as server:
        result = await search(WebSearchTool([searxng(server)], Sessions()), "anyio docs")
        seen = server.hits[0]
    assert seen.path == "/search"
    assert seen.query["q"] == ["anyio docs"] and seen.query["format"] == ["json"]
    assert result.ok
    assert result.value == {
        "results": [
            {
                "title": "AnyIO & friends",
                "url": "https://anyio.readthedocs.io/",
                "snippet": "High level asynchronous concurrency",
            },
            {
                "title": "agronholm/anyio",
                "url": "https://github.com/agronholm/anyio",
                "snippet": "",
            },
            {"title": "anyio · PyPI", "url": "https://pypi.org/project/anyio/", "snippet": "pkg"},
        ]
    }


async def test_brave_results_are_parsed_with_the_key_from_the_secret_resolver() -> None:
    with serving(ROUTES) as server:
        config = {
            "providers": [
                {
                    "kind": "brave",
                    "api_key_secret": "brave",
                    "url": server.url("/res/v1/web/search"),
                }
            ]
        }
        tool = WebSearchTool(providers_from_config(config, SECRETS), Sessions())
        result = await search(tool, "one", max_results=2)
        seen = server.hits[0]
    assert seen.headers["x-subscription-token"] == BRAVE_KEY
    assert seen.query["q"] == ["one"] and seen.query["count"] == ["2"]
    assert result.value["results"] == [
        {
            "title": "Brave one",
            "url": "https://one.example/",
            "snippet": 'The first result "quoted"',
        },
        {"title": "Two", "url": "https://two.example/", "snippet": "second"},
    ]


async def test_max_results_caps_the_list() -> None:
    with serving(ROUTES) as server:
        result = await search(WebSearchTool([searxng(server)], Sessions()), max_results=1)
    assert [r["url"] for r in result.value["results"]] == ["https://anyio.readthedocs.io/"]


async def test_a_rejected_api_key_is_a_tool_error_that_says_to_check_the_key() -> None:
    with serving(ROUTES) as server:
        provider = BraveProvider("wrong", url=server.url("/res/v1/web/search"))
        with pytest.raises(ExecError, match=r"HTTP 401.*check the Brave API key") as caught:
            await search(WebSearchTool([provider], Sessions()))
    assert "wrong" not in caught.value.message
    assert caught.value.tool == "web_search"


async def test_a_searxng_without_the_json_format_gets_a_hint() -> None:
    routes = {"/search": Reply(403, b"Forbidden", "text/html")}
    with serving(routes) as server:
        with pytest.raises(ExecError, match="enable the json format"):
            await search(WebSearchTool([searxng(server)], Sessions()))


async def test_each_session_may_search_only_up_to_its_cap() -> None:
    with serving(ROUTES) as server:
        tool = WebSearchTool([searxng(server)], Sessions(), max_calls_per_session=2)
        first = await search(tool, session="a")
        second = await search(tool, session="a")
        third = await search(tool, session="a")
        other = await search(tool, session="b")
        hits = len(server.hits)
    assert first.ok and second.ok and other.ok
    assert not third.ok
    assert third.error is not None and "limit reached" in third.error and "2" in third.error
    assert hits == 3


async def test_a_provider_that_does_not_answer_in_time_is_a_timeout() -> None:
    with serving(ROUTES) as server:
        tool = WebSearchTool([searxng(server, "/slow")], Sessions(), timeout_s=0.3)
        # The provider never answers: only the tool's deadline ends the search (the limit
        # guards against a hang).
        with anyio.fail_after(60), pytest.raises(ExecTimeoutError, match=r"within 0\.3s"):
            await search(tool)


async def test_the_provider_is_stable_per_session_and_sessions_spread_over_providers() -> None:
    with serving(ROUTES) as server:
        providers = [searxng(server), searxng(server, "/other")]
        tool = WebSearchTool(providers, Sessions())
        used: dict[str, set[str]] = {}
        for number in range(12):
            session = f"session-{number}"
            for _ in range(2):
                await search(tool, session=session)
                used.setdefault(session, set()).add(server.hits[-1].path)
            assert tool.provider_for(session) is tool.provider_for(session)
    assert all(len(paths) == 1 for paths in used.values())
    assert {path for paths in used.values() for path in paths} == {"/search", "/other/search"}


async def test_no_provider_configured_is_a_clear_tool_error() -> None:
    tool = web_search_from_config({}, SECRETS, Sessions())
    result = await search(tool)
    assert not result.ok
    assert result.error == NO_PROVIDER
    assert "[web_search]" in NO_PROVIDER


def test_config_builds_providers_in_order_and_reads_the_caps() -> None:
    table = {
        "max_calls_per_session": 3,
        "timeout_s": 4.5,
        "providers": [
            {"kind": "searxng", "url": "https://searx.example.org/"},
            {"kind": "brave", "api_key_secret": "brave"},
        ],
    }
    tool = web_search_from_config(table, SECRETS, Sessions())
    providers = providers_from_config(table, SECRETS)
    assert [p.name for p in providers] == ["searxng", "brave"]
    assert isinstance(providers[0], SearxngProvider)
    assert providers[0].endpoint == "https://searx.example.org/search"
    assert tool.spec.requires.net_hosts == ("searx.example.org", "api.search.brave.com")
    assert tool.spec.safety.read_only and tool.spec.safety.open_world


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"providers": [{"kind": "bing"}]}, "providers.0.kind"),
        ({"providers": [{"kind": "searxng"}]}, "url is required"),
        ({"providers": [{"kind": "searxng", "url": "searx.local"}]}, "absolute http"),
        ({"providers": [{"kind": "brave"}]}, "api_key_secret is required"),
        ({"providers": [{"kind": "brave", "api_key_secret": "nope"}]}, "TOOLBRIDGE_SECRET_NOPE"),
        ({"max_calls_per_session": 0}, "max_calls_per_session"),
        ({"timeout": 3}, "timeout"),
    ],
)
def test_bad_configuration_names_the_key_and_the_fix(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        providers_from_config(table, SECRETS)
