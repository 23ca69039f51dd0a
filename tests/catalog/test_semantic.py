"""The semantic leg of tool search: a request that shares no word with its tool still finds
it; the exact-name and ``select:`` paths are unchanged; the model is read on first use only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mcp_toolbridge.catalog import ranking_config, semantic_model, semantic_status
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.semantic_model import semantic_ready
from mcp_toolbridge.catalog.text import without_values
from mcp_toolbridge.catalog.vectors import CatalogVectors
from tests.catalog.test_index import tool
from tests.support.fresh_python import run_json_script

if TYPE_CHECKING:
    from mcp_toolbridge.catalog.embedding import Matrix

pytestmark = pytest.mark.skipif(
    not semantic_ready(), reason=f"the semantic leg is {semantic_status()} (the dev extra has it)"
)

CATALOG = [
    tool("law_lookup", "Look up statutes, regulations and court decisions"),
    tool("weather_now", "Current temperature and forecast for a city"),
    tool("recipe_finder", "Find cooking recipes by ingredient"),
    tool("flight_search", "Search airline flights between airports"),
    tool("stock_quote", "Latest share price of a listed company"),
    tool("translate_text", "Translate text into another language"),
    tool("music_play", "Play songs and albums"),
    tool("tenant_help", "Landlord disputes: rent, deposits and evictions"),
]

NO_SHARED_WORD = [
    ("is it going to rain tomorrow in Paris", "weather_now"),
    ("what is Apple trading at", "stock_quote"),
    ("what dinner can I make with chickens and rice", "recipe_finder"),
    ("which legislation covers copyright", "law_lookup"),
]


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return SearchIndex.build(CATALOG)


@pytest.mark.parametrize(("query", "expected"), NO_SHARED_WORD)
def test_a_request_sharing_no_word_with_its_tool_finds_it(
    index: SearchIndex, query: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the semantic leg alone: the lexical leg's expansion (test_expansion.py) is left out
    monkeypatch.setattr(ranking_config, "EXPANSION_WEIGHT", 0.0)
    assert SearchIndex.build(CATALOG, semantic=False).search(query, 3) == []  # no word shared
    # Eight one-line descriptions give cosines of 0.17 to 0.34 for these pairs, below what
    # noise reaches in real catalogs (ranking_config.SEMANTIC_MIN): here the cut is lowered.
    monkeypatch.setattr(ranking_config, "SEMANTIC_MIN", 0.15)
    assert index.search(query, 3)[0].name == expected


def test_a_nearest_vector_alone_is_not_a_match(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranking_config, "EXPANSION_WEIGHT", 0.0)  # the semantic leg alone
    for query in ("zzqxunmatched", "qwxv blorptangle", "is it going to rain tomorrow in Paris"):
        assert index.find(query, 3).hits == []  # below the noise floor at the shipped cut
    assert index.find("zzqxunmatched", 3).closest == []


def test_a_clause_of_stop_words_alone_still_finds_nothing(index: SearchIndex) -> None:
    assert index.search("what can you do for me") == []


def test_names_and_select_come_before_the_semantic_leg(index: SearchIndex) -> None:
    assert index.search("music_play is it going to rain", 2)[0].name == "music_play"
    hits = index.search("select:tenant_help,law_lookup", 5)
    assert [h.name for h in hits] == ["tenant_help", "law_lookup"]


def test_hidden_tools_stay_hidden_from_the_semantic_leg(index: SearchIndex) -> None:
    hits = index.search("forecast for a city", 8, visible=lambda n: n != "weather_now")
    assert "weather_now" not in [h.name for h in hits]


def test_warm_up_makes_the_vectors_once() -> None:
    index = SearchIndex.build(CATALOG)
    assert not index.warm
    index.warm_up()
    assert index.warm
    assert index.search("what is the latest share price of Apple", 1)[0].name == "stock_quote"


def test_building_an_index_reads_no_model_and_imports_no_numpy() -> None:
    code = (
        "import json, sys\n"
        "from mcp_toolbridge.catalog import SearchIndex\n"
        "from tests.catalog.test_index import tool\n"
        "index = SearchIndex.build([tool('a', 'Send a mail'), tool('b', 'Read a file')])\n"
        "assert index.search('select:a') and not index.warm\n"
        "from mcp_toolbridge.catalog.expansion import loaded\n"
        "assert not loaded()  # nor the expansion table: the first search's warm-up reads it\n"
        "print(json.dumps(sorted(m for m in ('numpy', 'tokenizers') if m in sys.modules)))\n"
    )
    assert run_json_script(code) == []


@pytest.mark.parametrize(
    ("missing", "said"),
    [
        ("extra", "pip install 'mcp-toolbridge[semantic]'"),
        ("model", "reinstall mcp-toolbridge"),
    ],
)
def test_without_numpy_or_its_model_the_leg_is_off_and_says_how(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, missing: str, said: str
) -> None:
    if missing == "extra":
        monkeypatch.setattr(semantic_model, "EXTRA", ("numpy", "no_such_module_here"))
    else:
        monkeypatch.setattr(semantic_model, "TABLE", tmp_path / "gone.npz")
    semantic_status.cache_clear()
    try:
        status = semantic_status()
        assert status.startswith("off:") and said in status and "search is lexical" in status
        index = SearchIndex.build(CATALOG)
        index.warm_up()  # the expansion table only: no vectors to make
        assert index.warm and index._vectors is None
        assert index.search("current temperature in a city", 1)[0].name == "weather_now"
        # no word shared: found lexically, through the near words of "rain" (expansion.py)
        assert index.search("is it going to rain tomorrow in Paris", 3)[0].name == "weather_now"
    finally:
        semantic_status.cache_clear()


def test_the_model_ships_with_the_package_and_its_licence() -> None:
    folder = semantic_model.FOLDER
    assert semantic_model.model_files() == (semantic_model.TABLE, semantic_model.VOCAB)
    assert "Apache License" in (folder / "LICENSE").read_text(encoding="utf-8")
    assert "all-MiniLM-L6-v2" in (folder / "NOTICE").read_text(encoding="utf-8")


def test_the_values_a_request_gives_are_not_embedded(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what the leg embeds, recorded around the real method
    embedded: list[str] = []
    real = CatalogVectors.cosines

    def recording(self: CatalogVectors, texts: Sequence[str]) -> Matrix:
        embedded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(CatalogVectors, "cosines", recording)
    query = "Translate 'Hello, my friend' into French, then the weather on 2024-12-25 at 40.71"
    found = [hit.name for hit in index.search(query, 3)]
    assert found[:2] == ["translate_text", "weather_now"]
    assert embedded and all("Hello" not in t and "2024" not in t for t in embedded)
    assert any("Translate" in t and "French" in t for t in embedded)
    # a request that is only a value is about it
    assert without_values("'quarterly report'") == "'quarterly report'"
