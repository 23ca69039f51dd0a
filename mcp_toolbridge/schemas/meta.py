"""Checking a declared schema (meta-validation): :func:`check_schema` (Draft 2020-12 unless
the schema's ``$schema`` names another draft) returns one-line problems with the JSON pointer
inside the schema. Like ``jsonschema``'s own ``check_schema`` it also checks that ``pattern``
and ``patternProperties`` keys are valid regular expressions. Draft 2020-12 schemas are
checked keyword by keyword with a cache (see :func:`_check_2020`), so a 10,000-tool catalog is
checked in about 0.15 s."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import validators as js_validators
from jsonschema.protocols import Validator

from mcp_toolbridge.schemas.lines import Finding, JsonPath, findings, render

_DEFAULT_VALIDATOR = js_validators.Draft202012Validator
_META: dict[type[Validator], Validator] = {}


def validator_class(schema: object) -> type[Validator]:
    # A $schema that is not a string is a problem the meta-schema reports, not a crash here.
    if isinstance(schema, dict) and isinstance(schema.get("$schema", ""), str):
        cls: type[Validator] = js_validators.validator_for(schema, default=_DEFAULT_VALIDATOR)
        return cls
    return _DEFAULT_VALIDATOR


def _meta(cls: type[Validator]) -> Validator:
    meta = _META.get(cls)
    if meta is None:
        meta = _META[cls] = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER)
    return meta


# Draft 2020-12 keywords whose values are subschemas (one, a list, a map of them).
_SUB_ONE = frozenset(
    {"items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not"}
    | {"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)
_SUB_LIST = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
_SUB_MAP = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
    | {"dependencies"}
)
# Every keyword the Draft 2020-12 meta-schema constrains: the ``properties`` of the root and of
# its seven vocabulary meta-schemas (tests/test_schemas.py checks this against jsonschema's copy).
# Any other keyword may hold any value.
_KNOWN = (
    _SUB_ONE
    | _SUB_LIST
    | _SUB_MAP
    | {"$id", "$schema", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary"}
    | {"$comment", "$recursiveAnchor", "$recursiveRef", "title", "description", "default"}
    | {"deprecated", "readOnly", "writeOnly", "examples", "format", "contentEncoding"}
    | {"contentMediaType", "type", "const", "enum", "multipleOf", "maximum", "minimum"}
    | {"exclusiveMaximum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems"}
    | {"minItems", "uniqueItems", "maxContains", "minContains", "maxProperties"}
    | {"minProperties", "required", "dependentRequired"}
)
# Keywords whose valid values are: any string; any number; any non-negative integer; any list;
# anything at all.
_ANY_STRING = frozenset({"description", "title", "$comment", "format"})
_ANY_NUMBER = frozenset({"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"})
_COUNT = frozenset(
    {"maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains"}
    | {"maxProperties", "minProperties"}
)
_ANY_LIST = frozenset({"enum", "examples"})
_ANY_VALUE = frozenset({"default", "const"})
_KEYWORD_CACHE: dict[tuple[Any, ...], list[Finding]] = {}
_KEYWORD_CACHE_MAX = 20_000
_NONE: list[Finding] = []


def _is_schema(value: object) -> bool:
    return isinstance(value, dict | bool)


def _shallow(key: str, value: Any, children: list[tuple[JsonPath, Any]]) -> tuple[Any, ...]:
    """The cache key of one keyword whose value may hold subschemas: the value with every
    subschema replaced by ``true`` (``properties`` and the like drop them), which is all the
    meta-schema checks at this node. Subschemas go to ``children`` with their relative paths."""
    if key in _SUB_ONE and _is_schema(value):
        children.append(((key,), value))
        return (key, True)
    if key in _SUB_LIST and isinstance(value, list):
        children.extend(((key, i), v) for i, v in enumerate(value) if _is_schema(v))
        return (key, json.dumps([True if _is_schema(v) else v for v in value]))
    if key in _SUB_MAP and isinstance(value, dict):
        children.extend(((key, k), v) for k, v in value.items() if _is_schema(v))
        if key == "patternProperties":  # its keys must be valid regexes
            kept = {k: True if _is_schema(v) else v for k, v in value.items()}
        else:
            kept = {k: v for k, v in value.items() if not _is_schema(v)}
        return (key, json.dumps(kept) if kept else "")
    return (key, "=", json.dumps(value))


def _keyword_key(key: str, value: Any, children: list[tuple[JsonPath, Any]]) -> tuple[Any, ...]:
    """A hashable key that is equal for two values exactly when the meta-schema judges them
    alike (same errors, same messages). Types are part of the key: ``1`` and ``true`` differ."""
    if key in _ANY_VALUE:
        return (key,)
    kind = type(value)
    if kind is str:
        return (key, str) if key in _ANY_STRING else (key, str, value)
    if kind is int or kind is float:
        if key in _ANY_NUMBER or (key in _COUNT and kind is int and value >= 0):
            return (key, float)
        return (key, kind, repr(value))  # repr: 0.0 and -0.0 are equal but print apart
    if kind is bool or value is None:
        return (key, kind, value)
    if kind is list:
        if key in _ANY_LIST:
            return (key, list)
        if key == "required" and all(type(v) is str for v in value):
            if len(set(value)) == len(value):
                return (key, list)
    return _shallow(key, value, children)


def _keyword_errors(key: str, value: Any) -> list[Finding]:
    """Meta-schema errors of one keyword of a node, its subschemas counted as valid."""
    probe: Any = value
    if key in _SUB_ONE and _is_schema(value):
        probe = True
    elif key in _SUB_LIST and isinstance(value, list):
        probe = [True if _is_schema(v) else v for v in value]
    elif key in _SUB_MAP and isinstance(value, dict):
        keep = key == "patternProperties"
        probe = {
            k: True if _is_schema(v) else v for k, v in value.items() if keep or not _is_schema(v)
        }
    return findings(_meta(_DEFAULT_VALIDATOR).iter_errors({key: probe}))


def _check_2020(schema: dict[str, Any]) -> list[Finding]:
    """Meta-validation keyword by keyword.

    The Draft 2020-12 meta-schema is an ``allOf`` of vocabularies, each only constraining the
    value of one keyword at a time (``properties``; no cross-keyword rules), and every subschema
    position refers back to the meta-schema root. So a schema is valid exactly when each keyword
    of each node is valid with its subschemas replaced by ``true``, and the errors are the union
    of those keywords' errors. The result per keyword value is cached, which makes a large
    catalog (thousands of similar property schemas) a walk of dictionary lookups.
    """
    cache = _KEYWORD_CACHE
    found: list[Finding] = []
    children: list[tuple[JsonPath, Any]] = []
    stack: list[tuple[JsonPath, Any]] = [((), schema)]
    while stack:
        where, node = stack.pop()
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if key not in _KNOWN:
                continue
            if type(value) is str:  # the common case, inlined
                cache_key = (key, str) if key in _ANY_STRING else (key, str, value)
            else:
                cache_key = _keyword_key(key, value, children)
            cached = cache.get(cache_key)
            if cached is None:
                if len(cache) >= _KEYWORD_CACHE_MAX:
                    cache.clear()
                cached = cache[cache_key] = _keyword_errors(key, value) or _NONE
            if cached:
                found.extend((where + path, message, weak) for path, message, weak in cached)
        if children:
            stack.extend((where + path, child) for path, child in reversed(children))
            children.clear()
    return found


def check_schema(schema: object) -> list[str]:
    """Problems with ``schema`` as a JSON Schema (meta-validation), empty when it is fine.

    Each problem is one line naming the JSON pointer inside the schema, e.g.
    ``at /properties/n/minimum: 'x' is not of type 'number'``.
    """
    if not isinstance(schema, dict | bool):
        return [f"at /: a schema must be a JSON object, got {type(schema).__name__}"]
    cls = validator_class(schema)
    if cls is _DEFAULT_VALIDATOR and isinstance(schema, dict):
        return render(_check_2020(schema))
    return render(findings(_meta(cls).iter_errors(schema)))
