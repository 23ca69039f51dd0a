"""A schema compiled once, and what a value's errors against it are (:mod:`.explain` words
them). Format checking of values is off: ``format`` is an annotation (the Draft 2020-12
default). Checking it would make validity depend on which optional format libraries happen to
be installed, and it costs time on every call."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from mcp_toolbridge.schemas.drafts import validator_class, with_linear_patterns
from mcp_toolbridge.schemas.explain import WEAK, SchemaProblem, explain
from mcp_toolbridge.schemas.lines import rank

MAX_PROBLEMS = 50
"""Problems found before the search stops: an array of 8,000 wrong items took 4 s of the
event loop (a list searched for each problem's duplicate), and the 2 million a 4 MiB request
holds would have taken days."""
_ENDLESS = (
    "the schema (or the value) nests without end, e.g. a $ref that refers to itself; fix the schema"
)


_SIZES: tuple[tuple[str, type], ...] = (
    ("maxLength", str),
    ("maxItems", list),
    ("maxProperties", dict),
)


def _oversized(schema: object, value: object, path: tuple[str | int, ...]) -> list[SchemaProblem]:
    """The upper size bounds ``value`` breaks, looked for from the top down through
    ``properties`` and the ``items`` of a bounded array, and nothing below a bound broken: a
    value too big is refused without a look inside it (an array of a million items took
    seconds of the event loop, each item checked, before its maxItems of 200 was told)."""
    if not isinstance(schema, dict):
        return []
    found: list[SchemaProblem] = []
    for keyword, kind in _SIZES:
        limit = schema.get(keyword)
        if isinstance(value, kind) and isinstance(limit, int) and len(value) > limit:  # type: ignore[arg-type]
            error = ValidationError(
                f"{keyword} {limit}",
                validator=keyword,
                validator_value=limit,
                instance=value,
                schema=schema,
                path=path,
            )
            found.append(explain(error))
    if found:
        return found
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, dict):
        for name, sub in properties.items():
            if name in value:
                found += _oversized(sub, value[name], (*path, name))
    items = schema.get("items")
    if isinstance(value, list) and isinstance(schema.get("maxItems"), int):
        for index, item in enumerate(value):
            found += _oversized(items, item, (*path, index))
    return found


def _schema_fault(message: str) -> SchemaProblem:
    """A problem of the schema itself, found while checking a value (never the value's)."""
    return SchemaProblem("/", "", "", "", message)


class CompiledSchema:
    """A schema compiled once; :meth:`validate` is cheap to call many times."""

    __slots__ = ("_validator", "schema")

    def __init__(self, validator: Validator, schema: dict[str, Any]) -> None:
        self._validator = validator
        self.schema = schema

    def problems(self, instance: object) -> list[SchemaProblem]:
        """The ways ``instance`` fails the schema, shallow ones first, then in document
        order, failed ``oneOf``/``anyOf`` last; empty when it is valid. At most
        :data:`MAX_PROBLEMS` distinct ones: the first found, in the schema's order. A value
        that breaks an upper size bound (maxLength, maxItems, maxProperties) gets those alone,
        found before anything inside it is checked."""
        too_big = _oversized(self.schema, instance, ())
        if too_big:
            return too_big[:MAX_PROBLEMS]
        try:
            ranked: list[tuple[tuple[int, tuple[str, ...], bool], SchemaProblem]] = []
            seen: set[SchemaProblem] = set()
            for error in self._validator.iter_errors(instance):  # type: ignore[arg-type]
                problem = explain(error)
                if problem in seen:
                    continue
                seen.add(problem)
                ranked.append((rank(_parts(problem.path), error.validator in WEAK), problem))
                if len(ranked) >= MAX_PROBLEMS:
                    break
        except Unresolvable as exc:
            return [_schema_fault(f"the schema's $ref {exc.ref!r} cannot be resolved; fix it")]
        except re.error as exc:
            return [_schema_fault(f"the schema has an invalid regular expression ({exc}); fix it")]
        except RecursionError:
            return [_schema_fault(_ENDLESS)]
        return [problem for _, problem in sorted(ranked, key=lambda item: item[0])]

    def validate(self, instance: object) -> list[str]:
        """:meth:`problems` as lines, ``at /path: message`` (``at /: ...`` for the root)."""
        return [problem.line for problem in self.problems(instance)]

    def is_valid(self, instance: object) -> bool:
        try:
            return bool(self._validator.is_valid(instance))  # type: ignore[arg-type]
        except (Unresolvable, re.error, RecursionError):
            return False


def _parts(path: str) -> tuple[str | int, ...]:
    """A JSON pointer's parts, indexes as numbers (for the order of :func:`lines.rank`)."""
    if path == "/":
        return ()
    parts = (p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/"))
    return tuple(int(p) if p.isdigit() else p for p in parts)


def compile_schema(
    schema: dict[str, Any], registry: Mapping[str, dict[str, Any]] | None = None
) -> CompiledSchema:
    """Compile ``schema`` (assumed to pass :func:`check_schema`).

    ``registry`` maps extra ``$ref`` targets (e.g. ``schema:mail.send.request.v1``) to schemas;
    schemas made by :func:`bundle_refs` need none.
    """
    cls = with_linear_patterns(validator_class(schema))
    resources = [
        (uri, Resource.from_contents(body, default_specification=DRAFT202012))
        for uri, body in (registry or {}).items()
    ]
    # Always a registry of our own, which retrieves nothing: without one, jsonschema fetches a
    # $ref it does not hold (http://..., file:///...) with urllib, blocking, with no deadline,
    # from the server's event loop and outside any sandbox, on every call (found by the
    # red-team pass of 2026-11-29, 4th). Such a ref is the schema fault "cannot be resolved".
    validator = cls(schema, registry=Registry().with_resources(resources))
    return CompiledSchema(validator, schema)
