"""jsonschema's validator classes: the draft a schema is written in (its ``$schema``, Draft
2020-12 when it names none) and each draft's meta-schema validator, built once.

Imported when a check or a compilation first needs jsonschema, never at start: checking a
schema made only of keyword values :mod:`.meta` knows the meta-schema accepts needs none of it
(importing jsonschema costs about 30 ms of a cold start)."""

from __future__ import annotations

from jsonschema import validators as js_validators
from jsonschema.protocols import Validator

DEFAULT = js_validators.Draft202012Validator
_META: dict[type[Validator], Validator] = {}


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
