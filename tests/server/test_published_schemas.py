"""The input schema a tool is listed with: bundled Runloop references (``schema:ID``,
embedded under ``$defs`` with that ``$id``) are written in place, so clients whose schema code
cannot follow a ref by ``$id`` (openai-agents' strict conversion refuses any bare ``$ref``;
tests/e2e/test_frameworks.py) take it; the schema accepts exactly what the bundled one does."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.schemas import bundle_refs, compile_schema, inline_refs

TARGETS: dict[str, dict[str, Any]] = {
    "schema:body.v1": {"type": "string", "maxLength": 5},
    "schema:page.v1": {"type": "object", "properties": {"body": {"$ref": "schema:body.v1"}}},
}
SAMPLES = [
    {"page": {"body": "short"}, "title": "t"},
    {"page": {"body": "far too long"}},
    {"page": {"body": 3}},
    {"page": "x"},
    {"title": 1},
    {},
]


def test_bundled_refs_are_inlined_and_accept_the_same_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "page": {"$ref": "schema:page.v1", "description": "the page"},
            "title": {"$ref": "schema:body.v1", "minLength": 1},
        },
        "required": ["page"],
    }
    bundled, _, unresolved = bundle_refs(schema, TARGETS.get)
    assert unresolved == []

    published = inline_refs(bundled)

    assert "$ref" not in str(published) and "$defs" not in published
    page = published["properties"]["page"]
    assert page["description"] == "the page"  # an annotation beside the ref: merged
    assert page["properties"]["body"] == {"type": "string", "maxLength": 5}
    title = published["properties"]["title"]  # a constraint beside it: kept, with allOf
    assert title == {"minLength": 1, "allOf": [{"type": "string", "maxLength": 5}]}
    before, after = compile_schema(bundled), compile_schema(published)
    for sample in SAMPLES:
        assert before.is_valid(sample) == after.is_valid(sample), sample


def test_a_recursive_or_self_pointing_bundle_and_a_plain_schema_are_served_as_they_are() -> None:
    recursive = {"type": "object", "properties": {"next": {"$ref": "schema:node.v1"}}}
    node = {"type": "object", "properties": {"next": {"$ref": "schema:node.v1"}}}
    bundled, _, _ = bundle_refs(recursive, {"schema:node.v1": node}.get)
    assert inline_refs(bundled) is bundled

    pointing = {"$ref": "#/$defs/p", "$defs": {"p": {"type": "integer"}}}
    bundled, _, _ = bundle_refs(
        {"properties": {"n": {"$ref": "schema:n.v1"}}}, {"schema:n.v1": pointing}.get
    )
    assert inline_refs(bundled) is bundled

    plain = {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}}
    assert inline_refs(plain) is plain


def test_refs_that_fan_out_past_the_bound_are_served_as_bundled() -> None:
    """Each level refers to the next twice: written in place, 2**12 copies of the last."""
    targets = {
        f"schema:l{n}.v1": {
            "type": "object",
            "properties": {
                "a": {"$ref": f"schema:l{n + 1}.v1"},
                "b": {"$ref": f"schema:l{n + 1}.v1"},
            },
        }
        for n in range(12)
    }
    targets["schema:l12.v1"] = {"type": "integer"}
    bundled, _, unresolved = bundle_refs({"$ref": "schema:l0.v1"}, targets.get)
    assert unresolved == []
    assert inline_refs(bundled) is bundled
