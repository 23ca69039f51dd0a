"""Short, MCP-style requests over the bundled example manifests, searched the way tool_search
and the ``search`` CLI verb search them: a regression set for everyday wording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.cli.main import main
from mcp_toolbridge.runtime import Settings, bundled_manifests, load_catalog

LOADED = load_catalog(Settings(audit=False))
INDEX = SearchIndex.build(LOADED.catalog.specs())


def test_the_bundled_catalog_is_what_these_queries_expect() -> None:
    assert not LOADED.errors
    assert {s.name for s in LOADED.catalog.specs()} == {
        "debug_echo",
        "slugify",
        "get_time",
        "word_count",
        "hash_text",
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what time is it in Helsinki", "get_time"),
        ("current time in New York", "get_time"),
        ("today's date", "get_time"),
        ("count the words in this text", "word_count"),
        ("how many lines and characters are in this paragraph", "word_count"),
        ("sha256 of this string", "hash_text"),
        ("compute an md5 digest", "hash_text"),
        ("turn this blog title into a URL slug", "slugify"),
        ("make a slug for my post", "slugify"),
        ("echo my message back", "debug_echo"),
        ("show exactly what an exec tool receives", "debug_echo"),
    ],
)
def test_short_requests_find_the_bundled_tool_first(query: str, expected: str) -> None:
    hits = INDEX.search(query, 3)
    assert hits and hits[0].name == expected, [h.name for h in hits]


def test_a_two_part_request_gets_both_bundled_tools_first() -> None:
    hits = INDEX.search("count the words in this text, then hash it with sha256", 2)
    assert {h.name for h in hits} == {"word_count", "hash_text"}


def test_the_search_verb_prints_the_best_hits_as_text_or_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["search", "count the words in this text", str(bundled_manifests()), "-k", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert len(lines) == 2
    score, name, *summary = lines[0].split()
    assert float(score) > 0 and name == "word_count"
    assert " ".join(summary) == "Count the words, lines and characters in a text."

    code = main(["search", "sha256 of this string", "-k", "1", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["name"] for r in rows] == ["hash_text"]
    assert rows[0]["input_schema"]["required"] == ["text"]
    assert rows[0]["description"].startswith("Compute a cryptographic digest")
    assert rows[0]["score"] > 0


def test_the_search_verb_reports_a_broken_catalog_instead_of_searching_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text('{"tools": [{"name": "x"}]}', encoding="utf-8")
    code = main(["search", "anything", str(bad)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "problem" in captured.err
