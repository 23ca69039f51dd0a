"""A call refused by the tool's input schema tells the model how to fix it: what the schema
expected and what it got, long values cut, for every keyword a model commonly breaks; in the
text every client shows, and every problem as data in ``_meta["toolbridge/details"]``. Through
the SDK's client in both eras, against a real manifest tool (which never runs: the arguments
are refused first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_toolbridge.runtime import Settings
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import text_of
from tests.support.served import served_client

MODES = ["auto", "legacy"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 3, "maxLength": 40},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "colour": {"enum": ["red", "green", "blue"]},
        "kind": {"const": "note"},
        "slug": {"type": "string", "pattern": "^[a-z-]+$"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "when": {"type": "string", "format": "date"},
        "size": {"oneOf": [{"type": "integer"}, {"enum": ["small", "large"]}]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["title"],
    "additionalProperties": False,
}

LONG = "x" * 80
CUT = '"' + "x" * 40 + '…"'

CASES: list[tuple[dict[str, Any], str, str, str, str]] = [
    # arguments, path, keyword, expected, got
    ({"title": LONG}, "/title", "maxLength", "at most 40 characters", f"80 ({CUT})"),
    ({"title": "ab"}, "/title", "minLength", "at least 3 characters", '2 ("ab")'),
    ({"title": "abc", "count": 0}, "/count", "minimum", "at least 1", "0"),
    ({"title": "abc", "count": 11}, "/count", "maximum", "at most 10", "11"),
    ({"title": "abc", "ratio": 0}, "/ratio", "exclusiveMinimum", "more than 0", "0"),
    ({"title": "abc", "ratio": 1}, "/ratio", "exclusiveMaximum", "less than 1", "1"),
    (
        {"title": "abc", "colour": "gren"},
        "/colour",
        "enum",
        'one of "red", "green", "blue"',
        '"gren" (did you mean "green"?)',
    ),
    ({"title": "abc", "kind": "memo"}, "/kind", "const", 'exactly "note"', '"memo"'),
    (
        {"title": "abc", "slug": "Not A Slug " + LONG},
        "/slug",
        "pattern",
        "a string matching the pattern ^[a-z-]+$",
        '"Not A Slug ' + "x" * 29 + '…" (91 characters)',
    ),
    ({"title": "abc", "tags": []}, "/tags", "minItems", "at least 1 item", "0"),
    ({"title": "abc", "tags": ["a", "b", "c"]}, "/tags", "maxItems", "at most 2 items", "3"),
    ({"title": "abc", "count": "5"}, "/count", "type", "an integer", 'a string ("5")'),
    ({"title": 7}, "/title", "type", "a string", "an integer (7)"),
    ({}, "/", "required", 'the required property "title"', "an object without it"),
    (
        {"title": "abc", "colur": "red"},
        "/",
        "additionalProperties",
        'only the properties "title", "count", "ratio", "colour", "kind", "slug", "tags", '
        '"when", "size", "note"',
        'the property "colur"',
    ),
    (
        {"title": "abc", "size": "medium"},
        "/size",
        "oneOf",
        'an integer or one of "small", "large"',
        'a string ("medium")',
    ),
    ({"title": "abc", "note": 3}, "/note", "anyOf", "a string or null", "an integer (3)"),
]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    agentcli_manifest(tmp_path / "m", [echo_tool("form", schema=SCHEMA)], {"echo": ECHO})
    return Settings(paths=[tmp_path / "m"], workspace=tmp_path, audit=False)


@pytest.mark.parametrize("mode", MODES)
async def test_each_broken_keyword_says_what_was_expected_and_what_was_got(
    settings: Settings, mode: str
) -> None:
    async with served_client(settings, mode) as client:
        results = [await client.call_tool("form", arguments) for arguments, *_ in CASES]
    for result, (arguments, path, keyword, expected, got) in zip(results, CASES, strict=True):
        assert result.is_error and result.structured_content is None, arguments
        assert result.meta is not None and result.meta["toolbridge/code"] == "args.invalid"
        [problem] = result.meta["toolbridge/details"]["errors"]
        assert problem == {
            "path": path,
            "keyword": keyword,
            "expected": expected,
            "got": got,
            "message": problem["message"],
        }, arguments
        assert text_of(result) == f"invalid arguments: {problem['message']}"
        if keyword not in ("required", "additionalProperties"):  # worded as they are
            assert problem["message"] == f"at {path}: expected {expected}; got {got}"


@pytest.mark.parametrize("mode", MODES)
async def test_the_bound_and_the_cut_value_of_a_too_long_string_are_in_the_text(
    settings: Settings, mode: str
) -> None:
    """The issue's case: a model that sent 80 characters where 40 fit reads both numbers,
    and not the whole value back."""
    async with served_client(settings, mode) as client:
        result = await client.call_tool("form", {"title": LONG})
    assert text_of(result) == (
        f"invalid arguments: at /title: expected at most 40 characters; got 80 ({CUT})"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_misspelt_property_is_named_with_the_one_it_may_be(
    settings: Settings, mode: str
) -> None:
    async with served_client(settings, mode) as client:
        result = await client.call_tool("form", {"titel": "abc"})
    text = text_of(result)
    assert text.startswith(
        'invalid arguments: at /: missing the required property "title" ("titel" was given: '
        'a misspelling of "title"?); at /: unexpected property "titel"; expected only the '
        'properties "title", '
    )
    assert text.endswith('(did you mean "title"?)')


@pytest.mark.parametrize("mode", MODES)
async def test_every_problem_is_in_meta_the_text_shows_three(settings: Settings, mode: str) -> None:
    broken = {"title": 1, "count": 0, "ratio": 2, "colour": "x", "kind": "y", "slug": "Z"}
    async with served_client(settings, mode) as client:
        result = await client.call_tool("form", broken)
    assert result.meta is not None
    errors = result.meta["toolbridge/details"]["errors"]
    assert [e["path"] for e in errors] == [
        "/colour",
        "/count",
        "/kind",
        "/ratio",
        "/slug",
        "/title",
    ]
    shown = "; ".join(e["message"] for e in errors[:3])
    assert text_of(result) == f"invalid arguments: {shown} (and 3 more)"


async def test_format_is_not_checked(settings: Settings) -> None:
    async with served_client(settings) as client:
        result = await client.call_tool("form", {"title": "abc", "when": "not a date"})
    assert not result.is_error, text_of(result)
