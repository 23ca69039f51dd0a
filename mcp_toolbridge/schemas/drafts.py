"""jsonschema's validator classes: the draft a schema is written in (its ``$schema``, Draft
2020-12 when it names none) and each draft's meta-schema validator, built once.

Imported when a check or a compilation first needs jsonschema, never at start: checking a
schema made only of keyword values :mod:`.meta` knows the meta-schema accepts needs none of it
(importing jsonschema costs about 30 ms of a cold start).

A value's ``pattern`` is matched by RE2 (time linear in the value) whenever RE2 takes the
pattern, and by Python's ``re`` only when it does not (back-references, look-arounds): a
manifest's pattern that backtracks (``^([a-zA-Z0-9])(([-.]|[_]+)?([a-zA-Z0-9]+))*@…$``, a
known email check) held the event loop for a minute on a 30-character argument, doubling with
each character more. RE2 reads ``\\w``, ``\\d`` and ``\\b`` as ASCII, as ECMA-262 (the
dialect JSON Schema names) does."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import re2
from jsonschema import validators as js_validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

_META: dict[type[Validator], Validator] = {}
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern RE2 does not take is Python's, said nowhere


@functools.lru_cache(maxsize=1024)
def _linear(pattern: str) -> Callable[[str], object] | None:
    """RE2's search for ``pattern``; None when RE2 does not take it."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS).search  # type: ignore[no-any-return]
    except re2.error:
        return None


def _pattern(
    validator: Validator, pattern: str, instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's ``pattern``, matched by RE2 when it takes the pattern."""
    if not validator.is_type(instance, "string"):
        return
    search = _linear(pattern)
    found = search(instance) if search is not None else re.search(pattern, instance)
    if not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_LINEAR: dict[type[Validator], type[Validator]] = {}


def with_linear_patterns(cls: type[Validator]) -> type[Validator]:
    """``cls`` with its ``pattern`` matched by RE2 where RE2 can (for values, not schemas)."""
    found = _LINEAR.get(cls)
    if found is None:
        found = _LINEAR[cls] = js_validators.extend(cls, {"pattern": _pattern})  # type: ignore[no-untyped-call]
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
