from __future__ import annotations

from typing import Any

import jsonschema_specifications  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcp_toolbridge.schemas import bundle_refs, check_schema, compile_schema, meta, model_facing

META = Draft202012Validator(
    Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
)
VOCABULARIES = ["core", "applicator", "unevaluated", "validation", "meta-data"]
VOCABULARIES += ["format-annotation", "content"]


def constrained_keywords() -> set[str]:
    """Every keyword the Draft 2020-12 meta-schema (root and vocabularies) constrains."""
    base = "https://json-schema.org/draft/2020-12/"
    uris = [f"{base}schema", *(f"{base}meta/{v}" for v in VOCABULARIES)]
    return {
        key
        for uri in uris
        for key in jsonschema_specifications.REGISTRY.contents(uri)["properties"]
    }


ITEMS = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
        }
    },
    "additionalProperties": False,
}


def test_a_valid_schema_has_no_problems():
    assert check_schema(ITEMS) == []
    assert check_schema(True) == []


def test_schema_problems_name_the_pointer_inside_the_schema():
    problems = check_schema({"type": "object", "properties": {"n": {"type": "integr"}}})
    assert len(problems) == 1
    assert problems[0].startswith("at /properties/n/type: 'integr' is not one of [")


def test_every_schema_problem_is_reported():
    problems = check_schema({"properties": {"a": {"minimum": "x"}, "b": {"required": "b"}}})
    assert problems == [
        "at /properties/a/minimum: 'x' is not of type 'number'",
        "at /properties/b/required: 'b' is not of type 'array'",
    ]


def test_a_schema_that_is_not_an_object_is_a_problem():
    assert check_schema([1]) == ["at /: a schema must be a JSON object, got list"]


def test_validate_renders_the_instance_path_and_constraint():
    compiled = compile_schema(ITEMS)
    assert compiled.validate({"items": [{"n": 0}]}) == ["at /items/0/n: expected at least 1; got 0"]
    assert compiled.validate({"items": [{"n": 2}]}) == []
    assert compiled.is_valid({"items": []})


def test_validate_reports_every_error_root_ones_as_slash():
    compiled = compile_schema({**ITEMS, "required": ["q"]})
    errors = compiled.validate({"items": [{"n": 0}], "zz": 1})
    assert 'at /: missing the required property "q"' in errors
    assert 'at /: unexpected property "zz"; expected only the properties "items"' in errors
    assert errors[-1] == "at /items/0/n: expected at least 1; got 0"


def test_a_failed_one_of_shows_the_closest_branch():
    compiled = compile_schema(
        {
            "oneOf": [
                {"properties": {"mode": {"const": "one"}}, "required": ["mode", "text"]},
                {"properties": {"mode": {"const": "many"}}, "required": ["mode", "docs"]},
            ]
        }
    )
    closest = " (the closest of the 2 alternatives of oneOf)"
    assert compiled.validate({"mode": "one"}) == [
        'at /: missing the required property "text"' + closest
    ]
    assert compiled.validate({"mode": "many"}) == [
        'at /: missing the required property "docs"' + closest
    ]


def test_format_is_an_annotation_not_checked():
    compiled = compile_schema({"type": "string", "format": "email"})
    assert compiled.validate("not an email") == []


def test_a_dangling_ref_is_an_error_not_a_crash():
    errors = compile_schema({"$ref": "#/$defs/missing"}).validate(1)
    assert len(errors) == 1
    assert errors[0].startswith("at /: the schema's $ref")


def test_compile_with_a_registry_resolves_schema_ids():
    compiled = compile_schema(
        {"type": "object", "properties": {"a": {"$ref": "schema:pos.v1"}}},
        registry={"schema:pos.v1": {"type": "integer", "minimum": 1}},
    )
    assert compiled.validate({"a": 0}) == ["at /a: expected at least 1; got 0"]


def test_bundle_refs_inlines_a_root_ref_and_embeds_nested_ones():
    targets: dict[str, dict[str, Any]] = {
        "schema:req.v1": {
            "type": "object",
            "properties": {"n": {"$ref": "schema:pos.v1"}, "next": {"$ref": "schema:req.v1"}},
        },
        "schema:pos.v1": {"$ref": "#/$defs/p", "$defs": {"p": {"type": "integer", "minimum": 1}}},
    }
    bundled, root_ref, unresolved = bundle_refs({"$ref": "schema:req.v1"}, targets.get)
    assert root_ref == "schema:req.v1"
    assert unresolved == []
    assert set(bundled["$defs"]) == {"schema:req.v1", "schema:pos.v1"}
    assert check_schema(bundled) == []
    compiled = compile_schema(bundled)
    assert compiled.validate({"n": 0}) == ["at /n: expected at least 1; got 0"]
    assert compiled.validate({"next": {"n": 0}}) == ["at /next/n: expected at least 1; got 0"]
    assert "$defs" not in targets["schema:req.v1"]


def test_bundle_refs_lists_unresolved_ids():
    schema = {"type": "object", "properties": {"a": {"$ref": "schema:gone.v1"}}}
    _, root_ref, unresolved = bundle_refs(schema, lambda ref: None)
    assert (root_ref, unresolved) == (None, ["schema:gone.v1"])
    _, root_ref, unresolved = bundle_refs({"$ref": "schema:x.v1"}, lambda ref: None)
    assert (root_ref, unresolved) == ("schema:x.v1", ["schema:x.v1"])


def test_bundle_refs_returns_a_schema_without_ids_unchanged():
    assert bundle_refs(ITEMS, lambda ref: None) == (ITEMS, None, [])
    assert bundle_refs(ITEMS, lambda ref: None)[0] is ITEMS


def test_model_facing_returns_the_same_object_when_nothing_is_internal():
    assert model_facing(ITEMS) is ITEMS


def test_model_facing_strips_internal_properties_recursively():
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "trace": {"type": "string", "visibility": "internal", "mutation_source": "hook"},
            "opts": {
                "type": "object",
                "properties": {
                    "depth": {"type": "integer"},
                    "approved": {"type": "boolean", "visibility": "internal"},
                },
                "required": ["depth", "approved"],
            },
            "list": {
                "type": "array",
                "items": {"properties": {"x": {"visibility": "internal"}, "y": {}}},
            },
        },
        "required": ["q", "trace"],
    }
    facing = model_facing(schema)
    assert facing["required"] == ["q"]
    assert set(facing["properties"]) == {"q", "opts", "list"}
    assert facing["properties"]["opts"]["required"] == ["depth"]
    assert set(facing["properties"]["opts"]["properties"]) == {"depth"}
    assert set(facing["properties"]["list"]["items"]["properties"]) == {"y"}
    assert "trace" in schema["properties"]
    assert schema["required"] == ["q", "trace"]
    assert facing["properties"]["q"] is schema["properties"]["q"]


def test_model_facing_reaches_into_one_of_branches():
    schema = {
        "oneOf": [{"properties": {"a": {}, "b": {"visibility": "internal"}}}, {"type": "null"}]
    }
    facing = model_facing(schema)
    assert set(facing["oneOf"][0]["properties"]) == {"a"}
    assert facing["oneOf"][1] is schema["oneOf"][1]


def test_an_invalid_regex_is_a_schema_problem():
    assert check_schema({"properties": {"a": {"pattern": "(["}}}) == [
        "at /properties/a/pattern: '([' is not a 'regex'"
    ]
    assert check_schema({"patternProperties": {"([": {}}}) != []


def test_schemas_naming_another_draft_are_checked_against_that_draft():
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}
    assert check_schema(draft7) == []
    assert check_schema({"items": [{"type": "string"}]}) != []


def test_node_cache_gives_the_same_answer_for_repeated_schemas():
    bad = {"type": "object", "properties": {"a": {"type": "strin", "description": "one"}}}
    again = {"type": "object", "properties": {"b": {"type": "strin", "description": "two"}}}
    assert [p.split(":")[0] for p in check_schema(bad)] == ["at /properties/a/type"]
    assert [p.split(":")[0] for p in check_schema(again)] == ["at /properties/b/type"]


def meta_problems(schema: Any) -> list[str]:
    """check_schema's problems but a ref outside the schema or a pointer to nowhere (valid
    JSON Schema, which the server refuses: it fetches no schema, and such a ref fails every
    call)."""
    return [line for line in check_schema(schema) if "every call would fail" not in line]


PROBES: list[Any] = [5, -1, 1.5, "x", "([", None, True, [], [5], ["a", "a"], {"a": 5}, {}]


def test_every_keyword_the_meta_schema_constrains_is_checked_like_jsonschema_does():
    keywords = constrained_keywords()
    assert {"type", "properties", "minimum", "$ref", "format"} <= keywords
    for keyword in sorted(keywords):
        for value in PROBES:
            schema = {keyword: value}
            errors = list(META.iter_errors(schema))
            got = [problem.split(": ", 1)[1] for problem in meta_problems(schema)]
            assert (got == []) == (errors == []), (schema, got)
            # A failed anyOf/oneOf is shown by its closest branch; other messages are verbatim.
            if len(errors) == 1 and errors[0].validator not in ("anyOf", "oneOf"):
                assert got == [errors[0].message], schema


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["", "string", "object", "x(", "^a$", "#frag"]),
)
KEYWORDS = st.sampled_from(
    [
        *("type", "properties", "items", "allOf", "anyOf", "minimum", "minLength", "required"),
        *("enum", "pattern", "patternProperties", "$ref", "$anchor", "description", "x-note"),
    ]
)
SCHEMAS = st.recursive(
    st.dictionaries(KEYWORDS, SCALARS, max_size=3),
    lambda inner: st.dictionaries(
        KEYWORDS,
        st.one_of(
            SCALARS,
            inner,
            st.lists(st.one_of(inner, SCALARS), max_size=3),
            st.dictionaries(st.sampled_from(["a", "b", "(["]), st.one_of(inner, SCALARS)),
        ),
        max_size=4,
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(SCHEMAS)
def test_a_schema_has_problems_exactly_when_jsonschema_rejects_it(schema: dict[str, Any]):
    assert (meta_problems(schema) == []) == META.is_valid(schema)


def test_cached_keyword_checks_still_quote_each_schema_exactly():
    assert check_schema({"$anchor": {"b": 1, "a": 2}}) == [
        "at /$anchor: {'b': 1, 'a': 2} is not of type 'string'"
    ]
    assert check_schema({"$anchor": {"a": 2, "b": 1}}) == [
        "at /$anchor: {'a': 2, 'b': 1} is not of type 'string'"
    ]
    assert check_schema({"minLength": True}) == ["at /minLength: True is not of type 'integer'"]
    assert check_schema({"minLength": 1}) == []
    assert check_schema({"$anchor": 0.0}) == ["at /$anchor: 0.0 is not of type 'string'"]
    assert check_schema({"$anchor": -0.0}) == ["at /$anchor: -0.0 is not of type 'string'"]


def test_every_kind_of_value_the_check_knows_as_valid_is_valid_for_jsonschema():
    """The check answers these kinds without jsonschema (a cold start need not import it), so
    each must be one jsonschema accepts; a non-empty list of schemas is one kind, whatever its
    length, and an empty one is not."""
    seeded = list(meta._seed_values())
    assert len(seeded) > 50
    for keyword, value in seeded:
        assert list(META.iter_errors({keyword: value})) == [], (keyword, value)
    for keyword in ("allOf", "anyOf", "oneOf", "prefixItems"):
        assert check_schema({keyword: [{}, True, {"type": "string"}]}) == []
        assert check_schema({keyword: []}) == [f"at /{keyword}: [] should be non-empty"]


def test_a_pattern_python_compiles_is_valid_and_one_it_cannot_is_told_in_jsonschemas_words():
    assert check_schema({"pattern": "^[a-z]+(?:-[a-z]+)*$"}) == []
    # A back-reference Python compiles and RE2 does not take: refused for the event loop's sake
    # (tests/loaders/test_hostile.py), not as an invalid regex.
    backref = check_schema({"properties": {"a": {"pattern": "(?P<x>a)(?P=x)"}}})
    assert [line.split(": ")[0] for line in backref] == ["at /properties/a/pattern"]
    assert "needs backtracking" in backref[0]
    assert check_schema({"pattern": "a{2"}) == []  # a literal brace, as Python reads it
    assert check_schema({"pattern": "(?<!a+)b"}) == ["at /pattern: '(?<!a+)b' is not a 'regex'"]


def test_a_schema_keyword_that_is_not_a_string_is_a_problem_not_a_crash():
    assert check_schema({"$schema": True}) == ["at /$schema: True is not of type 'string'"]


# -- what a value got wrong, worded for whoever sent it ------------------------------------------


def _lines(schema: dict[str, Any], value: Any) -> list[str]:
    return compile_schema(schema).validate(value)


def test_long_values_are_cut_and_their_length_given():
    assert _lines({"maxLength": 5}, "é" * 50) == [
        'at /: expected at most 5 characters; got 50 ("' + "é" * 40 + '…")'
    ]
    assert _lines({"type": "string"}, list(range(100))) == [
        "at /: expected a string; got an array ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, "
        "15, 16, …)"
    ]
    assert _lines({"const": "a"}, "b" * 41) == [
        'at /: expected exactly "a"; got "' + "b" * 40 + '…" (41 characters)'
    ]


def test_a_long_enum_is_listed_in_part():
    [line] = _lines({"enum": [f"v{n}" for n in range(20)]}, "w")
    assert line == (
        'at /: expected one of "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", '
        '"v10", "v11" (8 more); got "w"'
    )


def test_the_rarer_keywords_say_what_they_expected_too():
    assert _lines({"multipleOf": 5}, 7) == ["at /: expected a multiple of 5; got 7"]
    assert _lines({"uniqueItems": True}, [1, 2, 1]) == [
        "at /: expected items that are all different; got 1 more than once"
    ]
    assert _lines({"maxProperties": 1}, {"a": 1, "b": 2}) == [
        "at /: expected at most 1 property; got 2"
    ]
    assert _lines({"minProperties": 2}, {}) == ["at /: expected at least 2 properties; got 0"]
    assert _lines({"dependentRequired": {"a": ["b", "c"]}}, {"a": 1, "c": 2}) == [
        'at /: missing "b", required when "a" is given'
    ]
    # jsonschema's error for a false schema carries no path: the line says what, not where
    assert _lines({"properties": {"x": False}}, {"x": 1}) == [
        "at /: expected no value where the schema is false (a property or item it forbids); "
        "got an integer (1)"
    ]
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5}
    assert _lines({**draft4, "exclusiveMaximum": True}, 5) == ["at /: expected less than 5; got 5"]


def test_alternatives_say_what_any_of_them_takes_or_which_came_closest():
    nullable = {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}
    assert _lines(nullable, 4) == ["at /: expected a string or null; got an integer (4)"]
    assert _lines(nullable, "long") == [
        'at /: expected at most 3 characters; got 4 ("long") (the closest of the 2 '
        "alternatives of anyOf)"
    ]
    both = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert _lines(both, 3) == [
        "at /: expected a value that exactly one of the 2 alternatives (oneOf) takes; got an "
        "integer (3), which more than one takes"
    ]
    labelled = {"oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]}
    assert _lines(labelled, "m") == ['at /: expected one of "s", "l"; got a string ("m")']


def test_problems_carry_the_parts_the_line_is_made_of():
    [problem] = compile_schema({"properties": {"n": {"maximum": 3}}}).problems({"n": 9})
    assert problem.as_json() == {
        "path": "/n",
        "keyword": "maximum",
        "expected": "at most 3",
        "got": "9",
        "message": "at /n: expected at most 3; got 9",
    }


NAMED = {"type": "object", "properties": {"id": {"type": "integer"}}}
"""A schema whose property names other keywords test (patterns matched by RE2 since
2026-11-29): the verdicts and messages must be jsonschema's own."""


@given(
    st.dictionaries(
        st.sampled_from(["id", "x_a", "x_1", "y", "éé", "x_"]), st.integers(), max_size=4
    ),
    st.sampled_from([True, False, {"type": "string"}]),
    st.sampled_from([{}, {"^x_[a-z]$": {"type": "integer"}}, {"^x_": {"type": "string"}, "é": {}}]),
)
@settings(max_examples=200, deadline=None)
def test_property_names_are_judged_as_jsonschema_judges_them(
    instance: dict[str, int], additional: Any, patterns: dict[str, Any]
) -> None:
    from mcp_toolbridge.schemas.drafts import with_linear_patterns

    schema = {**NAMED, "additionalProperties": additional}
    if patterns:
        schema["patternProperties"] = patterns
    ours = with_linear_patterns(Draft202012Validator)(schema)
    theirs = Draft202012Validator(schema)

    def errors(validator: Any) -> list[tuple[str, list[Any]]]:
        found = validator.iter_errors(instance)
        return sorted((e.message, list(e.absolute_path)) for e in found)

    assert errors(ours) == errors(theirs)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "http://h.test/s.json"},
        {"properties": {"a": {"$ref": "file:///etc/passwd#/x"}}},
        {"items": {"$dynamicRef": "other.json"}},
        {"$id": "https://x.test/root.json", "items": {"$ref": "sibling.json"}},
        {"$defs": {"a": {"$id": "https://x.test/a"}}, "$ref": "https://x.test/b"},
        {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "x.json"},
        # Up to draft 7 an id beside a $ref is ignored (referencing, at call time, too).
        {"$schema": "http://json-schema.org/draft-04/schema#", "id": "urn:a", "$ref": "urn:a"},
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "items": {"$id": "u:b", "$ref": "u:b"},
        },
    ],
)
def test_a_ref_to_a_document_the_schema_does_not_hold_is_a_problem(schema: dict[str, Any]):
    [problem] = check_schema(schema)
    assert "is outside the schema, and the server fetches none" in problem, problem


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/a", "$defs": {"a": {}}},
        {"$ref": "#anchor", "$defs": {"a": {"$anchor": "anchor"}}},
        {"$defs": {"a": {"$id": "https://x.test/a", "not": {}}}, "$ref": "https://x.test/a#/not"},
        {
            "$id": "https://x.test/root.json",
            "items": {"$ref": "root.json#/$defs/x"},
            "$defs": {"x": {}},
        },
        {"$id": "https://x.test/dir/r", "$defs": {"b": {"$id": "b"}}, "$ref": "/dir/b"},
        {"$defs": {"schema:p.v1": {"$id": "schema:p.v1"}}, "items": {"$ref": "schema:p.v1"}},
        {"enum": [{"$ref": "http://h.test/data"}], "default": {"$ref": "x"}},
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "id": "urn:a",
            "not": {"$ref": "urn:a"},
        },
    ],
)
def test_a_ref_the_schema_holds_is_no_problem(schema: dict[str, Any]):
    assert check_schema(schema) == []


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"$ref": "#/$defs/a"}, 'points to nothing (no "$defs" at /)'),
        ({"$defs": {"a": {}}, "items": {"$ref": "#/$defs/a/b"}}, 'no "b" at /$defs/a'),
        ({"$defs": {"a~b": {}}, "$ref": "#/$defs/a~b"}, '"~" must be followed by 0 or 1'),
        ({"allOf": [{}], "not": {"$ref": "#/allOf/01"}}, '"01" is no array index'),
        ({"allOf": [{}], "not": {"$ref": "#/allOf/-"}}, "the array at /allOf has 1 items"),
        ({"enum": [1], "not": {"$ref": "#/enum/0"}}, "points to a number at /enum/0, not a"),
        ({"$dynamicRef": "#/$defs/gone"}, "points to nothing"),
        (
            {
                "$defs": {"r": {"$id": "https://x.test/r"}},
                "not": {"$ref": "https://x.test/r#/$defs"},
            },
            "points to nothing",
        ),
        (
            {"$id": "https://x.test/r", "$defs": {"s": {"$id": "s", "$ref": "#/$defs/t"}, "t": {}}},
            'no "$defs" at /',
        ),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "items": {"$ref": "#/definitions/x"},
            },
            'no "definitions" at /',
        ),
        ({"$defs": {"a": {"$anchor": "word"}}, "items": {"$ref": "#wrod"}}, 'none named "wrod"'),
        (
            {
                "$id": "https://x.test/r",
                "$defs": {"s": {"$id": "s", "$anchor": "a"}},
                "not": {"$ref": "#a"},
            },
            'none named "a"',
        ),
        (
            {"$schema": "http://json-schema.org/draft-07/schema#", "items": {"$ref": "#x"}},
            "no anchor",
        ),
    ],
)
def test_a_pointer_to_nowhere_is_a_problem(schema: dict[str, Any], said: str):
    [problem] = check_schema(schema)
    assert said in problem and "so every call would fail" in problem, problem


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"a/b~c": {}}, "$ref": "#/$defs/a~1b~0c"},
        {
            "$defs": {"a b": {}, "%": {}},
            "allOf": [{"$ref": "#/$defs/a%20b"}, {"$ref": "#/$defs/%25"}],
        },
        {"$defs": {"a": {}}, "$ref": "#/$defs%2Fa"},
        {"allOf": [{}, {}], "not": {"$ref": "#/allOf/1"}},
        {"$ref": "#", "not": {"$ref": "#/not"}},
        {
            "$id": "https://x.test/r",
            "$defs": {"s": {"$id": "s", "$defs": {"u": {}}, "$ref": "#/$defs/u"}},
        },
        {
            "$defs": {
                "schema:p.v1": {
                    "$id": "schema:p.v1",
                    "$defs": {"v": {}},
                    "items": {"$ref": "#/$defs/v"},
                }
            }
        },
        {"$defs": {"a": {"$anchor": "word"}}, "items": {"$ref": "#word"}},
        {"$defs": {"a": {"$dynamicAnchor": "meta"}}, "items": {"$dynamicRef": "#meta"}},
        {
            "$id": "https://x.test/r",
            "$defs": {"s": {"$id": "s", "$anchor": "a"}},
            "not": {"$ref": "s#a"},
        },
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"a": {"$id": "#a"}},
            "items": {"$ref": "#a"},
        },
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "definitions": {"a": {"id": "#a"}},
            "items": {"$ref": "#a"},
        },
    ],
)
def test_a_pointer_to_a_schema_the_schema_holds_is_no_problem(schema: dict[str, Any]):
    assert check_schema(schema) == []
