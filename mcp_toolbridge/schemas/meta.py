"""Checking a declared schema (meta-validation): :func:`check_schema` (Draft 2020-12 unless
the schema's ``$schema`` names another draft) returns one-line problems with the JSON pointer
inside the schema. Like ``jsonschema``'s own ``check_schema`` it also checks that ``pattern``
and ``patternProperties`` keys are valid regular expressions. Draft 2020-12 schemas are
checked keyword by keyword with a cache (see :func:`_check_2020`), so a 10,000-tool catalog is
checked in about 0.15 s. The cache starts knowing the kinds of values most schemas are made of
(:func:`_seed_values`): a schema made only of those is checked without importing jsonschema.

A ``pattern``, or a ``patternProperties`` key, that RE2 does not take (look-arounds,
back-references, a repeat count over 1000) is a problem too (:func:`_ours`): arguments
are checked on the server's event loop, where only RE2 (linear in the value) may match them.
Python's ``re``, the fallback of :mod:`.drafts`, took seconds on an argument of 22 letters for
``^(?=a)(a+)+$``, doubling with each letter more (found by the red-team pass of 2026-11-29,
4th). So is a ``$ref`` to a document the schema does not hold (``http://...``, ``file:...``,
``other.json``): the server fetches no schema, so every call would fail; the problem says to
inline it, or to use a Runloop ``schema:ID`` ref (found by the same pass). And so is a JSON
pointer (``#/$defs/NAME``, or one after a held document's URI) that points to nothing, to a
value that is not a schema, or that is not a JSON Pointer (RFC 6901: ``~`` only as ``~0`` or
``~1``, array indexes without leading zeros; the fragment percent-decoded first): each call
failed ``cannot be resolved``, or with an internal error (:func:`_pointed`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import permutations
from typing import Any

from mcp_toolbridge.schemas.lines import Finding, JsonPath, findings, linear, render

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
_ANY_STRING = frozenset(
    {"description", "title", "$comment", "format", "contentEncoding", "contentMediaType"}
)
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
        if value and all(_is_schema(v) for v in value):
            return (key, True)  # a non-empty list of schemas: what the meta-schema asks
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
    from mcp_toolbridge.schemas import drafts  # jsonschema: only for a value not seeded

    return findings(drafts.meta_validator(drafts.DEFAULT).iter_errors({key: probe}))


_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_FLAGS = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})


def _seed_values() -> Iterator[tuple[str, Any]]:
    """A value of each kind the meta-schema accepts for a keyword, one per :func:`_keyword_key`
    (every value of a kind is judged alike): the kinds most schemas are made of, so that
    checking them needs no jsonschema. tests/test_schemas.py checks each with jsonschema."""
    yield from ((key, "") for key in _ANY_STRING)
    yield from ((key, 0) for key in _ANY_NUMBER | _COUNT)
    yield from ((key, []) for key in _ANY_LIST | {"required"})
    yield from ((key, None) for key in _ANY_VALUE)
    yield from ((key, {}) for key in _SUB_ONE | _SUB_MAP)
    yield from ((key, [{}]) for key in _SUB_LIST)
    yield from ((key, flag) for key in _SUB_ONE | _FLAGS for flag in (True, False))
    yield from (("type", kind) for kind in _TYPES)
    yield from (("type", [kind]) for kind in _TYPES)
    yield from (("type", list(pair)) for pair in permutations(_TYPES, 2))


def _compiles(pattern: object) -> bool:
    """Whether ``pattern`` is a string Python's ``re`` compiles: the meta-schema's ``regex``
    format as jsonschema checks it (an invalid one is left to jsonschema, for its words)."""
    if type(pattern) is not str:
        return False
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


_SEEDED = frozenset(_keyword_key(key, value, []) for key, value in _seed_values())


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
            if type(value) is str and key not in _ANY_VALUE:  # the common case, inlined
                cache_key: tuple[Any, ...] = (key, str) if key in _ANY_STRING else (key, str, value)
            else:
                cache_key = _keyword_key(key, value, children)
            cached = cache.get(cache_key)
            if cached is None:
                if len(cache) >= _KEYWORD_CACHE_MAX:
                    cache.clear()
                if cache_key in _SEEDED or (key == "pattern" and _compiles(value)):
                    cached = cache[cache_key] = _NONE
                else:
                    cached = cache[cache_key] = _keyword_errors(key, value) or _NONE
            if cached:
                found.extend((where + path, message, weak) for path, message, weak in cached)
        if children:
            stack.extend((where + path, child) for path, child in reversed(children))
            children.clear()
    return found


_NOT_SCHEMA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a ``pattern`` inside them is a value."""


_BACKTRACKS = (
    "the regular expression {pattern!r} needs backtracking (a look-around, a back-reference, a "
    "repeat count over 1000, ...), which the server does not run on arguments: one argument "
    "could hold every call for minutes. Write it for RE2 (linear time), or drop it and check "
    "the value in the tool"
)


_OUTSIDE = (
    "$ref {ref} is outside the schema, and the server fetches none (every call would fail): "
    'inline it under "$defs" and refer to it as "#/$defs/NAME", or, in a Runloop tools.json, '
    'as "schema:ID"'
)
_REFS = frozenset({"$ref", "$dynamicRef"})
_ANCHORS = frozenset({"$anchor", "$dynamicAnchor"})
_SHOWN_REF = 80
"""The characters of a ref a problem quotes: the advice after it stays within the line."""


def _ours(schema: dict[str, Any]) -> list[Finding]:
    """The problems the server finds beyond the meta-schema, in one walk of ``schema``:

    - each ``pattern`` and ``patternProperties`` key that Python's ``re`` compiles and RE2
      does not take (see the module doc);
    - each ``$ref`` (or ``$dynamicRef``) to a document the schema does not hold: not a ``#``
      pointer, and no ``$id`` in the schema names it. Validation uses a registry that
      retrieves nothing (``compiled.py``), so such a ref would fail every call. Base URIs
      follow the ``$id``s as ``referencing`` joins them (``id`` too under draft 4 and earlier;
      up to draft 7 an ``$id`` beside a ``$ref`` is ignored, as there);
    - each JSON pointer (:func:`_pointed`) or anchor (``#name``: an ``$anchor``, a
      ``$dynamicAnchor``, or an ``$id`` of ``#name`` up to draft 7) that the document the
      ref is in does not hold.
    """
    draft = schema.get("$schema")
    old = isinstance(draft, str) and ("draft-04" in draft or "draft-03" in draft)
    legacy = old or (isinstance(draft, str) and ("draft-06" in draft or "draft-07" in draft))
    names = ("$id", "id") if old else ("$id",)
    found: list[Finding] = []
    held: dict[str, Any] = {"": schema}
    anchors: set[tuple[str, str]] = set()
    refs: list[tuple[JsonPath, str, str]] = []
    stack: list[tuple[JsonPath, Any, str]] = [((), schema, "")]
    while stack:
        where, node, base = stack.pop()
        if type(node) is list:
            for i, value in enumerate(node):
                if type(value) is dict or type(value) is list:
                    stack.append(((*where, i), value, base))
            continue
        for name in names:
            ident = node.get(name)
            if type(ident) is not str:
                continue
            if ident.startswith("#"):
                anchors.add((base, ident[1:]))
            elif not (legacy and "$ref" in node):
                base = _joined(base, ident)
                held.setdefault(base, node)
        patterns: list[tuple[JsonPath, object]] = []
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                if key == "pattern":
                    patterns.append(((key,), value))
                elif key in _REFS:
                    refs.append(((*where, key), value, base))
                elif key in _ANCHORS:
                    anchors.add((base, value))
            elif kind is dict or kind is list:
                if key == "patternProperties" and kind is dict:
                    patterns.extend(((key, name), name) for name in value)
                if key not in _NOT_SCHEMA:
                    stack.append(((*where, key), value, base))
        for path, pattern in patterns:
            if _compiles(pattern) and not linear(str(pattern)):
                found.append((where + path, _BACKTRACKS.format(pattern=pattern), False))
    for where, ref, base in refs:
        if ref.startswith("#"):  # as referencing looks it up: in the document of the base
            target, fragment = base, ref[1:]
        else:
            target, fragment = _split(base, ref)
        if target not in held:
            found.append((where, _OUTSIDE.format(ref=json.dumps(ref[:_SHOWN_REF])), False))
        elif fragment.startswith("/") and (wrong := _pointed(held[target], fragment)):
            shown = json.dumps(ref[:_SHOWN_REF])
            found.append((where, f"$ref {shown} {wrong}, so every call would fail", False))
        elif fragment and not fragment.startswith("/") and (target, fragment) not in anchors:
            shown, name = json.dumps(ref[:_SHOWN_REF]), json.dumps(fragment[:_SHOWN_REF])
            wrong = f"points to no anchor (none named {name} in its document)"
            found.append((where, f"$ref {shown} {wrong}, so every call would fail", False))
    return found


def _split(base: str, ref: str) -> tuple[str, str]:
    """``ref`` against ``base``: the document it names, and its fragment."""
    from urllib.parse import urldefrag, urljoin

    return urldefrag(urljoin(base, ref))


def _joined(base: str, ref: str) -> str:
    """``ref`` against ``base``, without its fragment: the document it names."""
    return _split(base, ref)[0]


_INDEX = re.compile(r"0|[1-9][0-9]*")
_ESCAPE = re.compile(r"~(?![01])")


def _pointed(document: Any, fragment: str) -> str | None:
    """What is wrong with the JSON pointer ``fragment`` (a URI fragment, percent-encoded)
    inside ``document``: the end of a sentence, or None when it points to a schema. As RFC 6901
    says: the fragment is percent-decoded, then split at each ``/``; ``~1`` is ``/`` and ``~0``
    is ``~`` in a name (``~`` followed by anything else is no pointer), and an array index is
    a number without leading zeros (``-``, the item past the last, points to nothing)."""
    if "%" in fragment:
        from urllib.parse import unquote

        fragment = unquote(fragment)
    escaped = "~" in fragment
    if escaped and _ESCAPE.search(fragment):
        return 'is not a JSON Pointer ("~" must be followed by 0 or 1: ~0 is "~", ~1 is "/")'
    node, parts = document, fragment[1:].split("/")
    for i, part in enumerate(parts):
        if type(node) is dict:
            name = part.replace("~1", "/").replace("~0", "~") if escaped else part
            if name in node:
                node = node[name]
                continue
            wrong = f"no {json.dumps(name)[:_SHOWN_REF]} at {_at(parts, i)}"
        elif type(node) is list and _INDEX.fullmatch(part):
            if int(part) < len(node):
                node = node[int(part)]
                continue
            wrong = f"the array at {_at(parts, i)} has {len(node)} items"
        elif type(node) is list and part != "-":
            shown = json.dumps(part)[:_SHOWN_REF]
            return f"is not a JSON Pointer ({shown} is no array index, at {_at(parts, i)})"
        elif type(node) is list:
            wrong = f"the array at {_at(parts, i)} has {len(node)} items"
        else:
            wrong = f"the value at {_at(parts, i)} has no {json.dumps(part)[:_SHOWN_REF]}"
        return f"points to nothing ({wrong})"
    if type(node) is dict or type(node) is bool:
        return None
    kind = "null" if node is None else "an array" if type(node) is list else "a string"
    if type(node) is int or type(node) is float:
        kind = "a number"
    return f"points to {kind} at {_at(parts, len(parts))}, not a schema (an object or a boolean)"


def _at(parts: list[str], end: int) -> str:
    """The pointer of the first ``end`` parts, as written (escaped)."""
    return "/" + "/".join(parts[:end])


def check_schema(schema: object) -> list[str]:
    """Problems with ``schema`` as a JSON Schema (meta-validation), empty when it is fine.

    Each problem is one line naming the JSON pointer inside the schema, e.g.
    ``at /properties/n/minimum: 'x' is not of type 'number'``.
    """
    if isinstance(schema, bool):
        return []  # true and false are schemas in every draft since 6
    if not isinstance(schema, dict):
        return [f"at /: a schema must be a JSON object, got {type(schema).__name__}"]
    ours = _ours(schema)
    if "$schema" not in schema:
        return render(_check_2020(schema) + ours)
    from mcp_toolbridge.schemas import drafts  # jsonschema: which draft the schema names

    cls = drafts.validator_class(schema)
    if cls is drafts.DEFAULT:
        return render(_check_2020(schema) + ours)
    return render(findings(drafts.meta_validator(cls).iter_errors(schema)) + ours)
