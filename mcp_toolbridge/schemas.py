"""JSON Schema handling: the only module that imports jsonschema.

- :func:`check_schema` meta-validates a declared schema (Draft 2020-12 unless the schema's
  ``$schema`` names another draft) and returns one-line problems with the JSON pointer inside
  the schema. Like ``jsonschema``'s own ``check_schema`` it also checks that ``pattern`` and
  ``patternProperties`` keys are valid regular expressions. Draft 2020-12 schemas are checked
  keyword by keyword with a cache (see :func:`_check_2020`), so a 10,000-tool catalog is
  checked in about 0.15 s.
- :func:`compile_schema` builds a :class:`CompiledSchema` once; its ``validate`` is on the hot
  path of every call and returns every error rendered on one line, shallow ones first, then
  in document order: ``at /items/0/n: 0 is less than the minimum of 1`` (``at /: ...`` for the
  root). A failed ``oneOf``/``anyOf`` is shown as the error of its closest branch.
- :func:`bundle_refs` makes a schema that uses ``{"$ref": "schema:ID"}`` self-contained: each
  referenced schema is embedded under ``$defs`` with ``"$id": "schema:ID"`` (a Draft 2020-12
  compound document), so the ref resolves with no registry, in this process and in any client.
- :func:`model_facing` strips properties marked ``"visibility": "internal"``.

Format checking of *instances* is off: ``format`` is an annotation (the Draft 2020-12
default). Checking it would make validity depend on which optional format libraries happen to
be installed, and it costs time on every call.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jsonschema import exceptions as js_exceptions
from jsonschema import validators as js_validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

__all__ = [
    "SCHEMA_REF_PREFIX",
    "CompiledSchema",
    "bundle_refs",
    "check_schema",
    "compile_schema",
    "model_facing",
]

SCHEMA_REF_PREFIX = "schema:"
_MAX_MESSAGE = 300
_DEFAULT_VALIDATOR = js_validators.Draft202012Validator
_META: dict[type[Validator], Validator] = {}
_WEAK = ("anyOf", "oneOf")


def _pointer(path: Iterable[str | int]) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts)


def _shorten(message: str) -> str:
    message = " ".join(message.split())
    if len(message) > _MAX_MESSAGE:
        return message[: _MAX_MESSAGE - 1] + "…"
    return message


JsonPath = tuple[str | int, ...]
Finding = tuple[JsonPath, str, bool]
"""An error's location, its message and whether it is a weak (oneOf/anyOf) error."""


def _closest(error: js_exceptions.ValidationError) -> js_exceptions.ValidationError:
    """For a failed oneOf/anyOf, the error from the branch that came closest (fewest errors,
    then the earliest branch), descending as far as that goes."""
    while error.context:
        branches: dict[int, list[js_exceptions.ValidationError]] = {}
        for sub in error.context:
            head = sub.relative_schema_path[0] if sub.relative_schema_path else 0
            branches.setdefault(head if isinstance(head, int) else 0, []).append(sub)
        _, nearest = min(branches.items(), key=lambda item: (len(item[1]), item[0]))
        error = max(nearest, key=js_exceptions.relevance)
    return error


def _findings(errors: Iterable[js_exceptions.ValidationError]) -> list[Finding]:
    found: list[Finding] = []
    for error in errors:
        best = _closest(error)
        found.append((tuple(best.absolute_path), best.message, error.validator in _WEAK))
    return found


def _render(found: Iterable[Finding]) -> list[str]:
    """One line per error: shallow ones first, then in document order, weak ones last."""

    def rank(item: Finding) -> tuple[int, tuple[str, ...], bool]:
        path = tuple(f"{p:012d}" if isinstance(p, int) else p for p in item[0])
        return len(path), path, item[2]

    lines: list[str] = []
    for path, message, _ in sorted(found, key=rank):
        line = f"at {_pointer(path)}: {_shorten(message)}"
        if line not in lines:
            lines.append(line)
    return lines


def _validator_class(schema: object) -> type[Validator]:
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
    return _findings(_meta(_DEFAULT_VALIDATOR).iter_errors({key: probe}))


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
    cls = _validator_class(schema)
    if cls is _DEFAULT_VALIDATOR and isinstance(schema, dict):
        return _render(_check_2020(schema))
    return _render(_findings(_meta(cls).iter_errors(schema)))


_ENDLESS = (
    "at /: the schema (or the value) nests without end, e.g. a $ref that refers to itself; "
    "fix the schema"
)


class CompiledSchema:
    """A schema compiled once; :meth:`validate` is cheap to call many times."""

    __slots__ = ("_validator", "schema")

    def __init__(self, validator: Validator, schema: dict[str, Any]) -> None:
        self._validator = validator
        self.schema = schema

    def validate(self, instance: object) -> list[str]:
        """Rendered errors, best first (``at /: ...`` for the root); empty when valid."""
        try:
            errors = self._validator.iter_errors(instance)  # type: ignore[arg-type]
            return _render(_findings(errors))
        except Unresolvable as exc:
            return [f"at /: the schema's $ref {exc.ref!r} cannot be resolved; fix the schema"]
        except re.error as exc:
            return [f"at /: the schema has an invalid regular expression ({exc}); fix the schema"]
        except RecursionError:
            return [_ENDLESS]

    def is_valid(self, instance: object) -> bool:
        try:
            return bool(self._validator.is_valid(instance))  # type: ignore[arg-type]
        except (Unresolvable, re.error, RecursionError):
            return False


def compile_schema(
    schema: dict[str, Any], registry: Mapping[str, dict[str, Any]] | None = None
) -> CompiledSchema:
    """Compile ``schema`` (assumed to pass :func:`check_schema`).

    ``registry`` maps extra ``$ref`` targets (e.g. ``schema:mail.send.request.v1``) to schemas;
    schemas made by :func:`bundle_refs` need none.
    """
    cls = _validator_class(schema)
    if registry:
        resources = [
            (uri, Resource.from_contents(body, default_specification=DRAFT202012))
            for uri, body in registry.items()
        ]
        validator = cls(schema, registry=Registry().with_resources(resources))
    else:
        validator = cls(schema)
    return CompiledSchema(validator, schema)


def _schema_refs(node: object) -> list[str]:
    """Every ``schema:ID`` ref in ``node``, in document order (repeats included)."""
    found: list[str] = []
    stack: list[object] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(SCHEMA_REF_PREFIX):
                found.append(ref)
            inner = [v for v in item.values() if isinstance(v, (dict, list))]
        elif isinstance(item, list):
            inner = [v for v in item if isinstance(v, (dict, list))]
        else:
            continue
        if inner:
            inner.reverse()
            stack += inner
    return found


def bundle_refs(
    schema: dict[str, Any], lookup: Callable[[str], dict[str, Any] | None]
) -> tuple[dict[str, Any], str | None, list[str]]:
    """Resolve every ``schema:ID`` ref in ``schema`` (nested ones too) through ``lookup``.

    Returns ``(bundled, root_ref, unresolved)``: ``root_ref`` is the id when the whole schema
    was ``{"$ref": "schema:ID"}`` (the result is then a copy of that schema); ``unresolved``
    lists the ids ``lookup`` could not find. The input is never modified.
    """
    root_ref: str | None = None
    ref = schema.get("$ref")
    if set(schema) == {"$ref"} and isinstance(ref, str) and ref.startswith(SCHEMA_REF_PREFIX):
        root_ref = ref
        target = lookup(ref)
        if target is None:
            return schema, root_ref, [ref]
        schema = copy.deepcopy(target)
    pending = _schema_refs(schema)
    if not pending:
        return schema, root_ref, []
    bundled = copy.deepcopy(schema)
    embedded: dict[str, Any] = {}
    unresolved: list[str] = []
    while pending:
        ref = pending.pop(0)
        if ref in embedded or ref in unresolved:
            continue
        target = lookup(ref)
        if target is None:
            unresolved.append(ref)
            continue
        embedded[ref] = {**copy.deepcopy(target), "$id": ref}
        pending.extend(_schema_refs(target))
    if embedded:
        defs = bundled.get("$defs")
        bundled["$defs"] = {**(defs if isinstance(defs, dict) else {}), **embedded}
    return bundled, root_ref, unresolved


_NESTED_ONE = frozenset({"items", "additionalProperties", "not", "if", "then", "else", "contains"})
_NESTED_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_NESTED_MAP = frozenset({"$defs", "definitions", "patternProperties"})


def _is_internal(node: object) -> bool:
    return isinstance(node, dict) and node.get("visibility") == "internal"


def _facing_map(values: dict[str, Any], drop: frozenset[str]) -> dict[str, Any] | None:
    """``values`` with :func:`model_facing` applied to its schemas and the ``drop`` keys
    removed; None when that changes nothing (no copy is made then)."""
    out: dict[str, Any] | None = None
    for i, (key, value) in enumerate(values.items()):
        new = model_facing(value) if isinstance(value, dict) and key not in drop else value
        if out is None and (new is not value or key in drop):
            out = dict(itertools.islice(values.items(), i))
        if out is not None and key not in drop:
            out[key] = new
    return out


def model_facing(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the properties marked ``"visibility": "internal"`` (also dropped from
    ``required``), recursively. Returns the very same object when nothing is internal."""
    changed: dict[str, Any] | None = None
    for key, value in schema.items():
        new: Any = value
        if key == "properties" and isinstance(value, dict):
            drop = frozenset(k for k, v in value.items() if _is_internal(v))
            if (props := _facing_map(value, drop)) is not None:
                new = props
            required = schema.get("required")
            if drop and isinstance(required, list):
                changed = changed or {}
                changed["required"] = [name for name in required if name not in drop]
        elif key in _NESTED_ONE and isinstance(value, dict):
            new = model_facing(value)
        elif key in _NESTED_LIST and isinstance(value, list):
            items = [model_facing(v) if isinstance(v, dict) else v for v in value]
            if any(a is not b for a, b in zip(items, value, strict=True)):
                new = items
        elif key in _NESTED_MAP and isinstance(value, dict):
            new = _facing_map(value, frozenset()) or value
        if new is not value:
            changed = changed or {}
            changed[key] = new
    if changed is None:
        return schema
    return {**schema, **changed}
