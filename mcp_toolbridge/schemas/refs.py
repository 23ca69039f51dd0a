"""Schemas rewritten, with no validation: :func:`bundle_refs` makes a schema that uses
``{"$ref": "schema:ID"}`` self-contained (each referenced schema is embedded under ``$defs``
with ``"$id": "schema:ID"``, a Draft 2020-12 compound document, so the ref resolves with no
registry, in this process and in any client); :func:`inline_refs` writes such a bundle's
schemas in place of their refs again, for the clients whose schema code cannot follow a ref
by ``$id`` (the listed form of a tool); :func:`model_facing` strips the properties marked
``"visibility": "internal"``."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

SCHEMA_REF_PREFIX = "schema:"


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


_DATA = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are instances, never schemas: no ``$ref`` in them is rewritten."""
_NOTES = frozenset({"title", "description", "default", "examples", "deprecated", "$comment"})
"""Keywords beside a ``$ref`` that only annotate: merged over the inlined schema."""


MAX_INLINED = 256
"""The most ``$ref``s one schema has written in place; past it (a fan-out of refs that would
grow the schema exponentially) it is served as bundled."""


class _Kept(Exception):
    """The schema is served as bundled: a bundled schema refers to itself or to its own
    parts, a pointer reaches into one, or the refs fan out past :data:`MAX_INLINED`."""


def _inlined(node: Any, defs: dict[str, Any], stack: tuple[str, ...], budget: list[int]) -> Any:
    if isinstance(node, list):
        return [_inlined(item, defs, stack, budget) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#") and (stack or SCHEMA_REF_PREFIX in ref):
        raise _Kept  # a pointer inside a bundled schema, or one into a bundled schema
    out = {k: v if k in _DATA else _inlined(v, defs, stack, budget) for k, v in node.items()}
    if not (isinstance(ref, str) and ref in defs):
        return out
    budget[0] -= 1
    if ref in stack or budget[0] < 0:
        raise _Kept
    target = {k: v for k, v in defs[ref].items() if k != "$id"}
    inlined = _inlined(target, defs, (*stack, ref), budget)
    siblings = {k: v for k, v in out.items() if k != "$ref"}
    if set(siblings) <= _NOTES:
        return {**inlined, **siblings}
    return {**siblings, "allOf": [inlined]}


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each bundled ``schema:ID`` definition written in place of its ``$ref``
    and ``$defs`` dropped: the form every client's schema code takes, where a ref by ``$id``
    fails in some and openai-agents' strict conversion refuses any bare ``$ref``. The same
    schema; the very same object when nothing is bundled, or when it is kept bundled
    (:class:`_Kept`)."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    bundled = {
        key: value
        for key, value in defs.items()
        if key.startswith(SCHEMA_REF_PREFIX) and isinstance(value, dict) and value.get("$id") == key
    }
    if not bundled:
        return schema
    rest = {key: value for key, value in defs.items() if key not in bundled}
    root = {key: value for key, value in schema.items() if key != "$defs"}
    try:
        out: dict[str, Any] = _inlined(root, bundled, (), [MAX_INLINED])
    except _Kept:
        return schema
    if rest:
        out["$defs"] = rest
    return out
