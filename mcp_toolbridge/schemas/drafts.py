"""jsonschema's validator classes: the draft a schema is written in (its ``$schema``, Draft
2020-12 when it names none) and each draft's meta-schema validator, built once.

Imported when a check or a compilation first needs jsonschema, never at start: checking a
schema made only of keyword values :mod:`.meta` knows the meta-schema accepts needs none of it
(importing jsonschema costs about 30 ms of a cold start).

A value's ``pattern``, and the names of an object's properties that ``patternProperties`` and
``additionalProperties`` test, are matched by RE2 (time linear in the value) whenever RE2
takes the pattern, and by Python's ``re`` only when it does not (back-references,
look-arounds): a
manifest's pattern that backtracks (``^([a-zA-Z0-9])(([-.]|[_]+)?([a-zA-Z0-9]+))*@…$``, a
known email check) held the event loop for a minute on a 30-character argument, doubling with
each character more. RE2 reads ``\\w``, ``\\d`` and ``\\b`` as ASCII, as ECMA-262 (the
dialect JSON Schema names) does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from jsonschema import validators as js_validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from mcp_toolbridge.schemas.lines import linear

_META: dict[type[Validator], Validator] = {}


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` is found in ``text``: by RE2 when it takes the pattern, else by
    Python's ``re`` (False for a pattern neither takes)."""
    linear_search = linear(pattern)
    if linear_search is not None:
        return linear_search(text) is not None
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _pattern(
    validator: Validator, pattern: str, instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's ``pattern``, matched by RE2 when it takes the pattern."""
    if not validator.is_type(instance, "string"):
        return
    if not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Validator, patterns: dict[str, Any], instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's ``patternProperties``, its names matched by RE2 when it takes them."""
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if search(pattern, name):
                yield from validator.descend(  # type: ignore[attr-defined]
                    value, subschema, path=name, schema_path=pattern
                )


def _additional_properties(
    validator: Validator, additional: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """jsonschema's ``additionalProperties``, ``patternProperties``' names matched by RE2 when
    it takes them, with jsonschema's messages."""
    if not validator.is_type(instance, "object"):
        return
    extras = additional_names(instance, schema)
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)  # type: ignore[attr-defined]
    elif not additional and extras:
        ordered = sorted(extras, key=str)
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            names = ", ".join(repr(name) for name in ordered)
            patterns = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            names = ", ".join(repr(name) for name in ordered)
            yield ValidationError(
                f"Additional properties are not allowed ({names} {verb} unexpected)"
            )


def additional_names(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The names in ``instance`` that neither ``properties`` nor ``patternProperties`` of
    ``schema`` takes."""
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        name
        for name in instance
        if name not in properties and not any(search(p, name) for p in patterns)
    ]


_LINEAR: dict[type[Validator], type[Validator]] = {}
_LINEAR_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


def with_linear_patterns(cls: type[Validator]) -> type[Validator]:
    """``cls`` with its patterns (``pattern``, and the names ``patternProperties`` and
    ``additionalProperties`` test) matched by RE2 where RE2 can (for values, not schemas)."""
    found = _LINEAR.get(cls)
    if found is None:
        keywords = {k: v for k, v in _LINEAR_KEYWORDS.items() if k in cls.VALIDATORS}
        found = _LINEAR[cls] = js_validators.extend(cls, keywords)  # type: ignore[no-untyped-call]
    return found


DEFAULT = js_validators.Draft202012Validator


def validator_class(schema: object) -> type[Validator]:
    """The validator class of the draft ``schema`` names, Draft 2020-12 by default."""
    # A $schema that is not a string is a problem the meta-schema reports, not a crash here.
    if isinstance(schema, dict) and isinstance(schema.get("$schema", ""), str):
        cls: type[Validator] = js_validators.validator_for(schema, default=DEFAULT)
        return cls
    return DEFAULT


def meta_validator(cls: type[Validator]) -> Validator:
    """A validator of schemas written for ``cls``'s draft (its meta-schema, formats checked)."""
    meta = _META.get(cls)
    if meta is None:
        meta = _META[cls] = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER)
    return meta
