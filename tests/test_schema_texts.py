"""cleaned_texts: every title and description of a schema rewritten, nothing else."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from mcp_toolbridge.schemas import cleaned_texts

ESC = re.compile("\x1b")


def clean(text: str) -> str:
    return ESC.sub("", text)


def test_texts_at_any_depth_are_cleaned_and_data_and_names_are_kept() -> None:
    schema: dict[str, Any] = {
        "title": "T\x1b",
        "type": "object",
        "properties": {
            "default": {"type": "string", "description": "a property named default\x1b"},
            "title": {"type": "string", "title": "a property named title\x1b"},
            "pick": {"enum": [{"title": "data\x1b"}], "default": {"description": "data\x1b"}},
        },
        "items": [{"anyOf": [{"description": "deep\x1b"}]}],
        "required": ["title\x1b"],
    }
    before = copy.deepcopy(schema)
    cleaned, count = cleaned_texts(schema, clean)
    assert count == 4
    assert schema == before  # never modified in place
    expected = json.loads(json.dumps(before).replace("\\u001b", ""))
    expected["properties"]["pick"] = before["properties"]["pick"]
    expected["required"] = before["required"]
    assert json.dumps(cleaned) == json.dumps(expected)  # key order kept too
    assert cleaned["properties"]["pick"] is schema["properties"]["pick"]  # not copied


def test_a_clean_schema_is_returned_as_it_is() -> None:
    schema = {"type": "object", "properties": {"a": {"description": "plain"}}}
    assert cleaned_texts(schema, clean) == (schema, 0)
    assert cleaned_texts(schema, clean)[0] is schema


def test_a_schema_nested_past_the_recursion_limit_is_cleaned() -> None:
    schema: dict[str, Any] = {"type": "array"}
    node = schema
    for _ in range(3000):
        inner: dict[str, Any] = {"type": "array", "description": "level\x1b"}
        node["items"] = inner
        node = inner
    cleaned, count = cleaned_texts(schema, clean)
    assert count == 3000
    node = cleaned
    while "items" in node:
        node = node["items"]
        assert node["description"] == "level"
