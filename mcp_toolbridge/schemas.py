"""JSON Schema handling: the only module that imports jsonschema.

- :func:`check_schema` meta-validates a declared schema (Draft 2020-12 unless the schema's
  ``$schema`` names another draft) and returns one-line problems with the JSON pointer inside
  the schema. Like ``jsonschema``'s own ``check_schema`` it also checks that ``pattern`` and
  ``patternProperties`` keys are valid regular expressions. Draft 2020-12 schemas are checked
  node by node with a cache, so a 10,000-tool catalog is checked in about a second.
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
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
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
_NODE_CACHE: dict[str, list[tuple[tuple[str | int, ...], str, bool]]] = {}
_NODE_CACHE_MAX = 20_000
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
    if isinstance(schema, dict):
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
_FREE_TEXT = frozenset({"description", "title", "$comment"})


def _is_schema(value: object) -> bool:
    return isinstance(value, dict | bool)


def _split(node: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[JsonPath, Any]]]:
    """The node with every subschema replaced by ``true`` and free values blanked (what the
    meta-schema checks of this node alone), and its subschemas with their relative paths."""
    shallow: dict[str, Any] = {}
    children: list[tuple[JsonPath, Any]] = []
    for key, value in node.items():
        if key in _SUB_ONE and _is_schema(value):
            shallow[key] = True
            children.append(((key,), value))
        elif key in _SUB_LIST and isinstance(value, list):
            shallow[key] = [True if _is_schema(v) else v for v in value]
            children.extend(((key, i), v) for i, v in enumerate(value) if _is_schema(v))
        elif key in _SUB_MAP and isinstance(value, dict):
            keep = key == "patternProperties"  # its keys must be valid regexes
            shallow[key] = {
                k: True if _is_schema(v) else v
                for k, v in value.items()
                if keep or not _is_schema(v)
            }
            children.extend(((key, k), v) for k, v in value.items() if _is_schema(v))
        elif key in _FREE_TEXT and isinstance(value, str):
            shallow[key] = ""
        elif key in ("default", "const"):
            shallow[key] = None
        elif key in ("enum", "examples") and isinstance(value, list):
            shallow[key] = []
        elif (
            key == "required"
            and isinstance(value, list)
            and all(isinstance(v, str) for v in value)
            and len(set(value)) == len(value)
        ):
            shallow[key] = []
        else:
            shallow[key] = value
    return shallow, children


def _check_2020(schema: dict[str, Any]) -> list[Finding]:
    """Meta-validation node by node: every subschema position of the Draft 2020-12 meta-schema
    refers back to the meta-schema root, so a schema is valid exactly when each of its nodes is
    valid with its subschemas replaced by ``true``. Node results are cached, which makes large
    catalogs (thousands of similar property schemas) cheap to check."""
    meta = _meta(_DEFAULT_VALIDATOR)
    found: list[Finding] = []
    stack: list[tuple[JsonPath, Any]] = [((), schema)]
    while stack:
        where, node = stack.pop()
        if not isinstance(node, dict):
            continue
        shallow, children = _split(node)
        key = json.dumps(shallow, sort_keys=True)
        cached = _NODE_CACHE.get(key)
        if cached is None:
            if len(_NODE_CACHE) >= _NODE_CACHE_MAX:
                _NODE_CACHE.clear()
            cached = _NODE_CACHE[key] = _findings(meta.iter_errors(shallow))
        found.extend((where + path, message, weak) for path, message, weak in cached)
        stack.extend((where + path, child) for path, child in children)
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

    def is_valid(self, instance: object) -> bool:
        try:
            return bool(self._validator.is_valid(instance))  # type: ignore[arg-type]
        except (Unresolvable, re.error):
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


def _schema_refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(SCHEMA_REF_PREFIX):
            yield ref
        for value in node.values():
            yield from _schema_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_refs(value)


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
    pending = list(_schema_refs(schema))
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


_NESTED_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
_NESTED_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_NESTED_MAP = ("properties", "$defs", "definitions", "patternProperties")


def _is_internal(node: object) -> bool:
    return isinstance(node, dict) and node.get("visibility") == "internal"


def model_facing(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the properties marked ``"visibility": "internal"`` (also dropped from
    ``required``), recursively. Returns the very same object when nothing is internal."""
    changed: dict[str, Any] = {}
    props = schema.get("properties")
    if isinstance(props, dict):
        internal = {key for key, value in props.items() if _is_internal(value)}
        kept = {key: model_facing(v) if isinstance(v, dict) else v for key, v in props.items()}
        kept = {key: value for key, value in kept.items() if key not in internal}
        if internal or any(kept[key] is not props[key] for key in kept):
            changed["properties"] = kept
        required = schema.get("required")
        if internal and isinstance(required, list):
            changed["required"] = [name for name in required if name not in internal]
    for key in _NESTED_ONE:
        value = schema.get(key)
        if isinstance(value, dict) and (new := model_facing(value)) is not value:
            changed[key] = new
    for key in _NESTED_LIST:
        value = schema.get(key)
        if isinstance(value, list):
            items = [model_facing(v) if isinstance(v, dict) else v for v in value]
            if any(a is not b for a, b in zip(items, value, strict=True)):
                changed[key] = items
    for key in _NESTED_MAP:
        value = schema.get(key)
        if key != "properties" and isinstance(value, dict):
            mapped = {k: model_facing(v) if isinstance(v, dict) else v for k, v in value.items()}
            if any(mapped[k] is not value[k] for k in value):
                changed[key] = mapped
    if not changed:
        return schema
    return {**schema, **changed}
