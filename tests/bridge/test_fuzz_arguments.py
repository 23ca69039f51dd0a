"""Fuzzing tool arguments: validators and the Bridge answer any JSON with a typed outcome.

Arbitrary JSON goes to the compiled validators of every bundled tool, of awkward hand-written
schemas (regex patterns, tiny multipleOf, recursive $ref, huge bounds) and of generated
schemas that pass the schema check; then through ``Bridge.call`` for the bundled tools, where
a call either runs or comes back as an outcome with an error code, never an exception.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.bridge.pipeline import Bridge
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.schemas import check_schema, compile_schema
from tests.support.fuzzing import FUZZ, TEXT, deeply_nested, json_values, mutated
from tests.support.paths import ROOT

SETTINGS = Settings(paths=[ROOT / "manifests"], audit=False, timeout_s=10)
LOADED = load_catalog(SETTINGS, BUILTIN_SPECS)

AWKWARD: list[dict[str, Any]] = [
    {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}},
    {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}},
    {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 1e-308}}},
    {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0.1}}},
    {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**70}}},
    {"type": "object", "properties": {"d": {"type": "string", "format": "date-time"}}},
    {"type": "object", "properties": {"e": {"type": "string", "format": "email"}}},
    {"type": "object", "properties": {"r": {"type": "string", "format": "regex"}}},
    {"type": "object", "properties": {"u": {"type": "array", "uniqueItems": True}}},
    {"type": "object", "properties": {"c": {"const": {"a": [1, 2.0, None]}}}},
    {"type": "object", "properties": {"e": {"enum": [1, "1", True, None, [1], {"a": 1}]}}},
    {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "properties": {"list": {"$ref": "#/$defs/node"}},
    },
    {
        "type": "object",
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "dependentSchemas": {"a": {"properties": {"b": {"not": {}}}}},
        "unevaluatedProperties": False,
    },
    {
        "type": "object",
        "properties": {"x": {"type": "string", "minLength": 2, "maxLength": 3}},
        "required": ["x"],
        "additionalProperties": False,
        "if": {"properties": {"x": {"const": "ab"}}},
        "then": {"minProperties": 2},
    },
]
ARGUMENTS = st.one_of(
    json_values(16),
    st.dictionaries(TEXT, json_values(8), max_size=5),
    st.builds(lambda d: {"list": d}, st.sampled_from([deeply_nested(400), {"next": {}}])),
)


def _validators() -> list[Any]:
    compiled = [entry.arguments for entry in LOADED.catalog]
    compiled += [entry.output for entry in LOADED.catalog if entry.output is not None]
    for schema in AWKWARD:
        assert check_schema(schema) == [], schema
        compiled.append(compile_schema(schema))
    return compiled


VALIDATORS = _validators()


@FUZZ
@given(index=st.integers(0, len(VALIDATORS) - 1), instance=ARGUMENTS)
def test_every_validator_answers_any_json_with_a_list_of_one_line_errors(
    index: int, instance: Any
) -> None:
    errors = VALIDATORS[index].validate(instance)
    assert isinstance(errors, list)
    assert all(isinstance(e, str) and e.startswith("at /") for e in errors), errors
    assert VALIDATORS[index].is_valid(instance) == (errors == [])


KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(["string", "integer", "number", "object", "array", "boolean", "null"]),
    "minimum": st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False)),
    "exclusiveMaximum": st.floats(allow_nan=False, allow_infinity=False),
    "multipleOf": st.floats(min_value=1e-300, max_value=1e300),
    "minLength": st.integers(0, 10),
    "pattern": st.sampled_from(["^a", "(?i)x", "\\d+", "[", "(", "\\p{L}", "a{2,1}", ".*"]),
    "format": st.sampled_from(["date", "uri", "ipv4", "uuid", "regex", "unknown-format"]),
    "enum": st.lists(json_values(3), min_size=1, max_size=3),
    "const": json_values(3),
    "required": st.lists(TEXT, max_size=3, unique=True),
    "items": st.just({"type": "integer"}),
    "additionalProperties": st.booleans(),
    "uniqueItems": st.booleans(),
    "$ref": st.sampled_from(["#", "#/$defs/missing", "other.json", "#/properties"]),
}


@st.composite
def generated_schemas(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(list(KEYWORDS)), max_size=5, unique=True))
    schema = {key: draw(KEYWORDS[key]) for key in keys}
    if draw(st.booleans()):
        schema = {"type": "object", "properties": {draw(TEXT): schema}}
    return schema


@FUZZ
@given(schema=generated_schemas(), instance=ARGUMENTS)
def test_a_schema_that_passes_the_check_compiles_and_validates_anything(
    schema: dict[str, Any], instance: Any
) -> None:
    problems = check_schema(schema)
    assert all(isinstance(p, str) for p in problems)
    if problems:
        return
    errors = compile_schema(schema).validate(instance)
    assert isinstance(errors, list) and all(isinstance(e, str) for e in errors)


@pytest.fixture
async def bridge() -> AsyncIterator[Bridge]:
    async with open_bridge(SETTINGS, LOADED) as opened:
        yield opened


NEAR_VALID = {
    "word_count": {"text": "one two"},
    "slugify": {"text": "A Title", "max_length": 20},
    "hash_text": {"text": "x", "algorithm": "sha256"},
    "debug_echo": {"message": "hi", "count": 1},
    "tool_search": {"query": "count words", "limit": 3},
}
CALLS = st.one_of(
    st.tuples(st.sampled_from(sorted(LOADED.catalog.names)), ARGUMENTS),
    st.sampled_from(sorted(NEAR_VALID.items())).flatmap(
        lambda item: st.tuples(st.just(item[0]), mutated(item[1], max_edits=2))
    ),
)


@FUZZ
@given(call=CALLS)
async def test_any_arguments_to_any_tool_give_an_outcome_never_an_exception(
    bridge: Bridge, call: tuple[str, Any]
) -> None:
    name, arguments = call
    outcome = await bridge.call(name, arguments if isinstance(arguments, dict) else {"_": 0})
    if outcome.ok:
        return
    assert isinstance(outcome.code, ErrorCode)
    assert outcome.error and outcome.error.strip()
    if not isinstance(arguments, dict):
        return
    assert outcome.code in {
        ErrorCode.ARGS_INVALID,
        ErrorCode.EXEC_FAILED,
        ErrorCode.OUTPUT_INVALID,
        ErrorCode.PERMISSION_DENIED,
    }, outcome


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
    ],
)
def test_a_schema_whose_ref_refers_to_itself_gives_an_error_not_a_recursion_crash(
    schema: dict[str, Any],
) -> None:
    compiled = compile_schema(schema)
    (error,) = compiled.validate({"a": 1})
    assert "refers to itself" in error
    assert compiled.is_valid({"a": 1}) is False
