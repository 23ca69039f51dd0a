"""web_search: a query in, ``{results: [{title, url, snippet}]}`` out, from a configured provider.

- The provider is the host's choice (``[web_search]``, see ``providers``). With several,
  each session sticks to one, picked by a hash of its session id, so a flaky provider fails
  consistently for that session instead of the results wandering between backends.
- Each session may make ``max_calls_per_session`` calls (default 25); every call that reaches
  the provider counts, failed ones included. Each call is cut off after ``timeout_s``
  (default 15 s).
- No provider configured: every call is a tool error saying how to configure one.
- The tool declares net.fetch for the provider hosts; the query goes only there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.web.providers import (
    DEFAULT_MAX_CALLS,
    DEFAULT_TIMEOUT_S,
    SearchProvider,
    load_web_search_config,
    providers_from_config,
)
from mcp_toolbridge.builtins.web.search_spec import DEFAULT_RESULTS, build_spec
from mcp_toolbridge.errors import ExecError, ExecTimeoutError
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.secrets import SecretResolver

CALLS_KEY = "web_search.calls"
NO_PROVIDER = (
    "web_search is not available: no search provider is configured. The server operator must "
    "add a [web_search] table with providers (searxng or brave) to its policy file (--policy)."
)


class WebSearchTool:
    """The web_search built-in over the configured providers (see the module doc)."""

    def __init__(
        self,
        providers: Sequence[SearchProvider],
        sessions: Sessions,
        *,
        max_calls_per_session: int = DEFAULT_MAX_CALLS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._providers = tuple(providers)
        self._sessions = sessions
        self._max_calls = max_calls_per_session
        self._timeout_s = timeout_s
        self._spec = build_spec([provider.host for provider in self._providers])

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def provider_for(self, session_id: str) -> SearchProvider | None:
        """The session's provider: stable for a session id and a provider list."""
        if not self._providers:
            return None
        digest = hashlib.sha256(session_id.encode("utf-8")).digest()
        return self._providers[int.from_bytes(digest[:8], "big") % len(self._providers)]

    async def run(self, request: ExecRequest) -> ExecResult:
        provider = self.provider_for(request.context.session_id)
        if provider is None:
            return ExecResult(ok=False, error=NO_PROVIDER)
        query = str(request.arguments["query"]).strip()
        if not query:
            return ExecResult(ok=False, error="the query is empty; give words to search for")
        max_results = int(request.arguments.get("max_results") or DEFAULT_RESULTS)
        ctx = request.context
        if not await self._sessions.state.take(ctx.owner, CALLS_KEY, self._max_calls):
            who = "you have" if ctx.caller.identified else "this session has"
            return ExecResult(
                ok=False,
                error=f"web_search limit reached: {who} used all {self._max_calls} "
                "searches it may make. Work with the results you have, or fetch pages you "
                "already know with web_fetch.",
            )
        limit_s = min(self._timeout_s, request.timeout_s)
        try:
            with anyio.fail_after(limit_s):
                results = await provider.search(query, max_results)
        except TimeoutError:
            raise ExecTimeoutError(
                f"the {provider.name} search provider did not answer within {limit_s:g}s; "
                "try again later",
                tool="web_search",
            ) from None
        except ExecError as exc:
            exc.tool = "web_search"
            raise
        found = [result.as_json() for result in results[:max_results]]
        return ExecResult(ok=True, value={"results": found}, text=_text(query, found))


def _text(query: str, results: list[dict[str, str]]) -> str:
    """A numbered Markdown list: [title](url), then the snippet."""
    if not results:
        return f"No results for {query!r}. Try other words."
    lines = [f"Results for {query!r}:"]
    for n, result in enumerate(results, 1):
        lines.append(f"{n}. [{result['title']}]({result['url']})")
        if result["snippet"]:
            lines.append(f"   {' '.join(result['snippet'].split())}")
    return "\n".join(lines)


def web_search_from_config(
    table: Mapping[str, Any], secrets: SecretResolver, sessions: Sessions
) -> WebSearchTool:
    """A WebSearchTool from a ``[web_search]`` table (an empty table: no provider)."""
    config = load_web_search_config(table)
    return WebSearchTool(
        providers_from_config(config, secrets),
        sessions,
        max_calls_per_session=config.max_calls_per_session,
        timeout_s=config.timeout_s,
    )
