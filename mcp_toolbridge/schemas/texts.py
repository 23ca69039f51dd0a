"""The texts of a schema a client shows to a model: every ``title`` and ``description``
string at any depth (a property's, an item's, a definition's), rewritten by
:func:`cleaned_texts` with the rest of the schema left as written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_TEXTS = frozenset({"title", "description"})
_DATA = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are instances, never schemas: a ``title`` key in them is data."""
_NAMES = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose keys are names, not keywords: a property named ``default`` is a schema."""


def cleaned_texts(
    schema: dict[str, Any], clean: Callable[[str], str]
) -> tuple[dict[str, Any], int]:
    """``schema`` with ``clean`` applied to each ``title`` and ``description`` string in it
    (not in the values of ``const``, ``enum``, ``default``, ``examples``), and how many
    strings it changed. Only the containers on the way to a changed string are copied (key
    order kept); the very same object is returned when nothing changes. The walks keep their
    own stack: a schema may be nested as deep as its JSON parser allowed."""
    if not _changes(schema, clean):  # the common case, once per tool at load: no path kept
        return schema, 0
    trail: list[tuple[int, str | int]] = []  # (parent's trail index, key); -1: the root
    found: list[tuple[int, str]] = []  # (trail index of the string, its cleaned text)
    stack: list[tuple[int, Any, bool]] = [(-1, schema, False)]  # (trail index, node, names)
    while stack:
        at, node, names = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, str):
                if not names and key in _TEXTS and isinstance(node, dict):
                    new = clean(value)
                    if new != value:
                        trail.append((at, key))
                        found.append((len(trail) - 1, new))
            elif isinstance(value, (dict, list)) and (names or key not in _DATA):
                trail.append((at, key))
                below = isinstance(node, dict) and not names and key in _NAMES
                stack.append((len(trail) - 1, value, below and isinstance(value, dict)))
    out = dict(schema)
    copies: dict[int, Any] = {id(schema): out}
    for index, new in found:
        path: list[str | int] = []
        while index != -1:
            index, key = trail[index][0], trail[index][1]
            path.append(key)
        path.reverse()
        original: Any = schema
        copy: Any = out
        for key in path[:-1]:
            original = original[key]
            inner = copies.get(id(original))
            if inner is None:
                inner = dict(original) if isinstance(original, dict) else list(original)
                copies[id(original)] = inner
            copy[key] = inner
            copy = inner
        copy[path[-1]] = new
    return out, len(found)


def _changes(schema: dict[str, Any], clean: Callable[[str], str]) -> bool:
    """Whether :func:`cleaned_texts` would change a text of ``schema``: the same walk, kept
    lean (about 6 µs for a tool's schema)."""
    stack: list[Any] = [schema]
    maps: list[dict[str, Any]] = []  # the values of a names keyword: schemas
    while stack or maps:
        if maps:
            stack.extend(v for v in maps.pop().values() if type(v) is dict)
            continue
        node = stack.pop()
        if type(node) is list:
            stack.extend(v for v in node if type(v) is dict or type(v) is list)
            continue
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                if key in _TEXTS and clean(value) != value:
                    return True
            elif kind is dict:
                if key in _NAMES:
                    maps.append(value)
                elif key not in _DATA:
                    stack.append(value)
            elif kind is list and key not in _DATA:
                stack.append(value)
    return False
