"""Search providers behind web_search, and the ``[web_search]`` configuration that picks them.

Configuration (a TOML table; where it lives is the host's choice)::

    [web_search]
    max_calls_per_session = 25      # default 25
    timeout_s = 15                  # per call, default 15

    [[web_search.providers]]
    kind = "searxng"                # a SearXNG instance with the JSON format enabled
    url = "https://searx.example.org"

    [[web_search.providers]]
    kind = "brave"                  # the Brave Search API
    api_key_secret = "brave"        # a secret id: TOOLBRIDGE_SECRET_BRAVE or the secrets file
    # url = "https://api.search.brave.com/res/v1/web/search"   (the default)

With several providers, each session uses one of them, picked by a hash of the session id.

- **searxng**: ``GET <url>/search?q=...&format=json``; results from ``results[]``
  (``title``, ``url``, ``content``). SearXNG answers 403 when ``json`` is missing from
  ``search.formats`` in its settings.yml.
- **brave**: ``GET <url>?q=...&count=N`` with the ``X-Subscription-Token`` header; results from
  ``web.results[]`` (``title``, ``url``, ``description``).

Snippets lose their HTML tags and entities and are cut at 500 characters.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_toolbridge.errors import ConfigError, ExecError, ExecOutputError, SecretError
from mcp_toolbridge.secrets import SecretResolver

if TYPE_CHECKING:  # the HTTP client's modules: imported by the first search (fetch_plain)
    from mcp_toolbridge.executors import FetchedBody

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
BRAVE_MAX_COUNT = 20
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
MAX_SNIPPET_CHARS = 500
DEFAULT_MAX_CALLS = 25
DEFAULT_TIMEOUT_S = 15.0
_TAG = re.compile(r"<[^>]*>")


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    snippet: str

    def as_json(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


class SearchProvider(Protocol):
    """One search backend. Errors are raised as ExecError subclasses with a clear message."""

    @property
    def name(self) -> str: ...

    @property
    def host(self) -> str:
        """The host the provider calls (declared as the tool's net.fetch host)."""
        ...

    async def search(self, query: str, max_results: int) -> list[SearchResult]: ...


class SearxngProvider:
    """A SearXNG instance's JSON API."""

    name = "searxng"

    def __init__(self, url: str) -> None:
        base = url.rstrip("/")
        self.endpoint = base if base.endswith("/search") else base + "/search"
        self.host = _host(url)

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        from mcp_toolbridge.executors import fetch_plain  # on the first search

        page = await fetch_plain(
            self.endpoint,
            params={"q": query, "format": "json"},
            headers={"Accept": "application/json"},
            max_bytes=MAX_RESPONSE_BYTES,
        )
        hint = (
            "; enable the json format in the instance's settings.yml (search.formats)"
            if page.status == 403
            else ""
        )
        document = _json_of(page, self.name, hint)
        items = document.get("results") if isinstance(document, dict) else None
        return _results(items, "content", max_results)


class BraveProvider:
    """The Brave Search API (web results)."""

    name = "brave"

    def __init__(self, api_key: str, *, url: str = BRAVE_ENDPOINT) -> None:
        self._api_key = api_key
        self.endpoint = url
        self.host = _host(url)

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        from mcp_toolbridge.executors import fetch_plain  # on the first search

        page = await fetch_plain(
            self.endpoint,
            params={"q": query, "count": str(min(max_results, BRAVE_MAX_COUNT))},
            headers={"Accept": "application/json", "X-Subscription-Token": self._api_key},
            max_bytes=MAX_RESPONSE_BYTES,
        )
        hint = ""
        if page.status in (401, 403, 422):
            hint = "; check the Brave API key (the provider's api_key_secret)"
        elif page.status == 429:
            hint = "; the API rate limit or quota is exhausted, try again later"
        document = _json_of(page, self.name, hint)
        web = document.get("web") if isinstance(document, dict) else None
        items = web.get("results") if isinstance(web, dict) else None
        return _results(items, "description", max_results)


class _ProviderConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["searxng", "brave"]
    url: str | None = None
    api_key_secret: str | None = None


class WebSearchConfig(BaseModel):
    """The ``[web_search]`` table (see the module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    providers: tuple[_ProviderConfig, ...] = ()
    max_calls_per_session: int = Field(default=DEFAULT_MAX_CALLS, ge=1, le=100_000)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=600)


def load_web_search_config(table: Mapping[str, Any]) -> WebSearchConfig:
    """Validate a ``[web_search]`` table; :class:`ConfigError` names the bad key."""
    try:
        return WebSearchConfig.model_validate(dict(table))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"[web_search] {where}: {first['msg']}") from None


def providers_from_config(
    config: Mapping[str, Any] | WebSearchConfig, secrets: SecretResolver
) -> list[SearchProvider]:
    """The providers a ``[web_search]`` table configures, in order, their keys resolved.

    Raises :class:`ConfigError` for a bad table, a searxng entry without an http(s) url, or a
    brave entry whose secret is not set.
    """
    parsed = config if isinstance(config, WebSearchConfig) else load_web_search_config(config)
    providers: list[SearchProvider] = []
    for index, entry in enumerate(parsed.providers):
        where = f"[web_search] providers[{index}] ({entry.kind})"
        if entry.url is not None:
            _check_url(entry.url, where)
        if entry.kind == "searxng":
            if entry.url is None:
                raise ConfigError(f"{where}: url is required (the SearXNG instance's base URL)")
            providers.append(SearxngProvider(entry.url))
            continue
        if not entry.api_key_secret:
            raise ConfigError(
                f'{where}: api_key_secret is required (a secret id, e.g. "brave", set as '
                "TOOLBRIDGE_SECRET_BRAVE or in the secrets file)"
            )
        try:
            key = secrets.resolve([entry.api_key_secret], tool="web_search")
        except SecretError as exc:
            raise ConfigError(f"{where}: {exc.message}") from None
        providers.append(BraveProvider(key[entry.api_key_secret], url=entry.url or BRAVE_ENDPOINT))
    return providers


def _check_url(url: str, where: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: url {url!r} must be an absolute http:// or https:// URL")


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower().rstrip(".")


def _json_of(page: FetchedBody, provider: str, hint: str) -> Any:
    if not 200 <= page.status < 300:
        excerpt = " ".join(page.body[:2000].decode("utf-8", errors="replace").split())[:300]
        head = f"HTTP {page.status} {page.reason}".rstrip()
        raise ExecError(
            f"the {provider} search provider failed: {head}"
            + (f": {excerpt}" if excerpt else "")
            + hint,
            tool="web_search",
        )
    if page.over_cap:
        raise ExecOutputError(
            f"the {provider} search provider sent more than {MAX_RESPONSE_BYTES} bytes",
            tool="web_search",
        )
    try:
        return json.loads(page.body)
    except (ValueError, UnicodeDecodeError):
        raise ExecOutputError(
            f"the {provider} search provider did not answer with JSON "
            f"({page.content_type or 'no content type'})",
            tool="web_search",
        ) from None


def _results(items: object, snippet_key: str, max_results: int) -> list[SearchResult]:
    found: list[SearchResult] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        url = item.get("url")
        if not isinstance(url, str) or not url:
            continue
        found.append(
            SearchResult(
                title=_clean(item.get("title")) or url,
                url=url,
                snippet=_clean(item.get(snippet_key))[:MAX_SNIPPET_CHARS],
            )
        )
        if len(found) >= max_results:
            break
    return found


def _clean(value: object) -> str:
    if not isinstance(value, str):
        return ""
    return " ".join(html.unescape(_TAG.sub("", value)).split())
