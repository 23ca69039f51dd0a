"""Query expansion in the core install: a request that shares no word with its tool finds it
through the shipped neighbour table, without numpy and without outranking the tools that
have the request's own words."""

from __future__ import annotations

import gzip

import pytest

from mcp_toolbridge.catalog import ranking_config
from mcp_toolbridge.catalog.expansion import TABLE, expand, neighbours
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.text import default_analyzer
from tests.catalog.test_index import tool

CATALOG = [
    tool("cinema_showtimes", "Showtimes of the films playing at cinemas near a city"),
    tool("weather_forecast", "Forecast of temperature and rain for a city"),
    tool("send_mail", "Send an e-mail message to a recipient"),
    tool("legal_advice", "Answer questions about statutes and legal matters"),
    tool("stock_quote", "The latest quote of a share on an exchange"),
]


def lexical(specs: list = CATALOG) -> SearchIndex:  # type: ignore[type-arg]
    return SearchIndex.build(specs, semantic=False)


def names(index: SearchIndex, query: str, k: int = 3) -> list[str]:
    return [hit.name for hit in index.search(query, k)]


def test_the_table_ships_with_the_package_and_reads_without_numpy() -> None:
    table = neighbours()
    assert TABLE.is_file() and TABLE.stat().st_size < 2_000_000
    assert len(table) > 10_000
    for stem, row in list(table.items())[:500]:
        words, cosines = row[0::2], [float(c) for c in row[1::2]]
        assert cosines == sorted(cosines, reverse=True), stem
        assert all(0.4 <= c <= 1.0 for c in cosines) and stem not in words
        assert all(isinstance(word, str) for word in words) and len(words) <= 16
    # stems as the index analyses words: "movies" and "films" are both there
    movie, film = default_analyzer().terms("movies films")
    assert film in table[movie][0::2]
    text = gzip.decompress(TABLE.read_bytes()).decode("utf-8")
    assert text.count("\n") == len(table)


def test_a_request_without_the_tools_words_finds_it_in_the_core_install() -> None:
    index = lexical()
    assert names(index, "any good movies tonight", 1) == ["cinema_showtimes"]
    assert names(index, "my landlord wants to evict me, what does the law say", 1) == [
        "legal_advice"
    ]
    assert names(index, "is it going to be sunny and warm this weekend", 1) == ["weather_forecast"]


def test_without_expansion_the_same_requests_find_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ranking_config, "EXPANSION_WEIGHT", 0.0)
    index = lexical()
    assert names(index, "any good movies tonight") == []
    assert names(index, "is it going to be sunny and warm this weekend") == []


def test_the_requests_own_words_outrank_their_neighbours() -> None:
    specs = [
        *CATALOG,
        tool("movie_reviews", "Reviews of a movie by critics"),
    ]
    index = lexical(specs)
    assert names(index, "movie reviews", 2)[0] == "movie_reviews"
    # a term the catalog has is not expanded (EXPANSION_KNOWN 0): no film tool tags along
    # for a request that the catalog answers in its own words
    assert "cinema_showtimes" not in names(index, "movie reviews", 5)
    assert names(index, "any good movies tonight", 5) == ["movie_reviews"]


def test_nonsense_still_finds_nothing() -> None:
    index = lexical()
    for query in ("zzqxunmatched", "qwxv blorptangle"):
        assert index.search(query, 5) == []


def test_expand_weighs_neighbours_by_cosine_and_leaves_the_query_terms_out() -> None:
    movie, film = default_analyzer().terms("movie film")
    out = expand([movie], top=8, floor=0.5, weight=0.3)
    assert 0.0 < out[film] <= 0.3 and movie not in out
    assert expand([movie, film], top=8, floor=0.5, weight=0.3).get(film) is None
    assert expand([movie], top=8, floor=0.5, weight=0.0) == {}
    assert expand(["zzqxunmatched"], top=8, floor=0.5, weight=0.3) == {}
