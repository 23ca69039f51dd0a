"""A value's schema errors said so that whoever sent the value can fix it: what the schema
expected there and what it got, long values cut (``at /title: expected at most 40 characters;
got 80 ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…")``).

Every keyword a model commonly breaks has its own wording: ``type``, ``maxLength`` and
``minLength``, ``minimum``, ``maximum`` and the exclusive ones, ``multipleOf``, ``enum``,
``const``, ``pattern``, ``required``, ``additionalProperties``, ``minItems`` and
``maxItems``, ``uniqueItems``, ``minProperties`` and ``maxProperties``, ``dependentRequired``,
a ``false`` schema, and ``oneOf``/``anyOf`` (every alternative refused the value's own type or
value: what any of them would take; otherwise the closest alternative's error). Any other
keyword keeps jsonschema's message, shortened. ``format`` is not checked (schemas.compiled).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, replace
from typing import Any

from jsonschema import exceptions as js_exceptions

from mcp_toolbridge.schemas.drafts import additional_names
from mcp_toolbridge.schemas.lines import closest, pointer, shorten

MAX_SHOWN = 40
"""Characters of a string value shown; longer ones are cut and their length given."""
MAX_JSON = 60
"""Characters of an array or object value shown (compact JSON)."""
MAX_LISTED = 12
"""Values of an enum listed before "(N more)"."""
MAX_NAMES = 30
"""Names of the allowed properties listed before "(N more)"."""
WEAK = ("anyOf", "oneOf")

_ARTICLES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """One way a value fails its schema: where (a JSON pointer into the value), the keyword it
    breaks, what was expected there and what was got, and the line that says so."""

    path: str
    keyword: str
    expected: str
    got: str
    message: str

    @property
    def line(self) -> str:
        """``at /path: message``: the form the model reads."""
        return f"at {self.path}: {self.message}"

    def as_json(self) -> dict[str, str]:
        return {
            "path": self.path,
            "keyword": self.keyword,
            "expected": self.expected,
            "got": self.got,
            "message": self.line,
        }


def _quoted(text: str) -> str:
    """A string as JSON, cut to its first 40 characters (``"xxx…"``)."""
    if len(text) <= MAX_SHOWN:
        return json.dumps(text, ensure_ascii=False)
    return json.dumps(text[:MAX_SHOWN], ensure_ascii=False)[:-1] + '…"'


def shown(value: Any) -> str:
    """``value`` as JSON, cut: a string to its first 40 characters (with its length), an
    array or object to 60 characters of compact JSON."""
    if isinstance(value, str):
        more = f" ({len(value)} characters)" if len(value) > MAX_SHOWN else ""
        return _quoted(value) + more
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= MAX_JSON else text[: MAX_JSON - 1] + "…"


def kind(value: Any) -> str:
    """The JSON type of ``value`` with its article: ``a string``, ``an integer``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _typed(value: Any) -> str:
    return "null" if value is None else f"{kind(value)} ({shown(value)})"


def _count(n: Any, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _listing(values: list[Any], more_than: int = MAX_LISTED) -> str:
    listed = ", ".join(shown(v) for v in values[:more_than])
    rest = len(values) - more_than
    return f"{listed} ({rest} more)" if rest > 0 else listed


def _guess(word: Any, options: list[Any]) -> str:
    if not isinstance(word, str):
        return ""
    texts = [o for o in options if isinstance(o, str)]
    found = difflib.get_close_matches(word, texts, n=1, cutoff=0.75)
    return f" (did you mean {json.dumps(found[0], ensure_ascii=False)}?)" if found else ""


def _types(value: Any) -> str:
    names = [value] if isinstance(value, str) else list(value)
    return " or ".join(_ARTICLES.get(n, n) for n in names)


@dataclass(frozen=True, slots=True)
class _Failed:
    """What a jsonschema error says, typed: the keyword, its value in the schema (``limit``),
    the value that broke it, the schema object holding it, where, and jsonschema's words."""

    keyword: str
    limit: Any
    value: Any
    schema: dict[str, Any]
    path: str
    words: str
    is_false: bool

    @classmethod
    def of(cls, error: js_exceptions.ValidationError) -> _Failed:
        limit: Any = error.validator_value
        keyword: Any = error.validator
        schema: Any = error.schema
        return cls(
            keyword=keyword if isinstance(keyword, str) else "",
            limit=limit,
            value=error.instance,
            schema=schema if isinstance(schema, dict) else {},
            path=pointer(error.absolute_path),
            words=error.message,
            is_false=schema is False,
        )

    def problem(self, expected: str, got: str, message: str | None = None) -> SchemaProblem:
        said = message if message is not None else f"expected {expected}; got {got}"
        return SchemaProblem(self.path, self.keyword, expected, got, said)


def _bound(e: _Failed) -> str:
    """minimum, maximum and the exclusive ones (numbers, or the Draft 4 boolean form)."""
    if e.keyword == "minimum":
        exclusive = e.schema.get("exclusiveMinimum") is True
        return f"more than {e.limit}" if exclusive else f"at least {e.limit}"
    if e.keyword == "maximum":
        exclusive = e.schema.get("exclusiveMaximum") is True
        return f"less than {e.limit}" if exclusive else f"at most {e.limit}"
    return f"more than {e.limit}" if e.keyword == "exclusiveMinimum" else f"less than {e.limit}"


def _names(names: list[str]) -> str:
    """Property names, each cut to 40 characters, the first 30 listed and the rest counted: a
    call with 300,000 unknown names once made a 3 MB message in each of its two places."""
    listed = ", ".join(_quoted(n) for n in names[:MAX_NAMES])
    rest = len(names) - MAX_NAMES
    return f"{listed} ({rest} more)" if rest > 0 else listed


def _required(e: _Failed) -> SchemaProblem:
    """One line for all the missing properties (each missing one is an error of its own; the
    lines are alike, so one is kept), with the given name a missing one may be a typo of."""
    value = e.value if isinstance(e.value, dict) else {}
    missing = [p for p in e.limit if p not in value]
    unknown = [k for k in value if k not in e.schema.get("properties", {})]
    noun = "property" if len(missing) == 1 else "properties"
    typos = "".join(_typo(k, missing) for k in unknown[:MAX_NAMES])
    return e.problem(
        f"the required {noun} {_names(missing)}",
        "an object without " + ("it" if len(missing) == 1 else "them"),
        f"missing the required {noun} {_names(missing)}{typos}",
    )


def _typo(given: str, wanted: list[str]) -> str:
    found = difflib.get_close_matches(given, wanted, n=1, cutoff=0.75)
    return f' ("{given}" was given: a misspelling of "{found[0]}"?)' if found else ""


def _additional(e: _Failed) -> SchemaProblem:
    allowed = list(e.schema.get("properties", {}))
    patterns = list(e.schema.get("patternProperties", {}))
    value = e.value if isinstance(e.value, dict) else {}
    extra = additional_names(value, e.schema)
    if allowed:
        only = f"only the properties {_listing(allowed, MAX_NAMES)}"
    else:
        only = "only properties" if patterns else "no properties"
    if patterns:
        only += " or names matching " + ", ".join(patterns[:3])
    noun = "property" if len(extra) == 1 else "properties"
    guess = _guess(extra[0], allowed) if len(extra) == 1 else ""
    return e.problem(
        only,
        f"the {noun} {_names(extra)}",
        f"unexpected {noun} {_names(extra)}; expected {only}{guess}",
    )


def _unique(e: _Failed) -> SchemaProblem:
    seen: set[str] = set()
    repeated: Any = None
    for item in e.value if isinstance(e.value, list) else []:
        key = json.dumps(item, sort_keys=True, default=str)
        if key in seen:
            repeated = item
            break
        seen.add(key)
    return e.problem("items that are all different", f"{shown(repeated)} more than once")


def _dependent(e: _Failed) -> SchemaProblem:
    value = e.value if isinstance(e.value, dict) else {}
    for given, needs in e.limit.items():
        missing = [n for n in needs if given in value and n not in value]
        if missing:
            named = json.dumps(given, ensure_ascii=False)
            return e.problem(
                f"{_names(missing)} beside {named}",
                f"{named} without {_names(missing)}",
                f"missing {_names(missing)}, required when {named} is given",
            )
    return _fallback(e)


def _fallback(e: _Failed) -> SchemaProblem:
    return e.problem("", "", shorten(e.words))


def _length(e: _Failed) -> SchemaProblem:
    bound = "at most" if e.keyword.startswith("max") else "at least"
    if e.keyword.endswith("Length"):
        text = e.value if isinstance(e.value, str) else ""
        return e.problem(
            f"{bound} {_count(e.limit, 'character')}", f"{len(text)} ({_quoted(text)})"
        )
    unit, units = ("item", "items") if e.keyword.endswith("Items") else ("property", "properties")
    have = len(e.value) if isinstance(e.value, list | dict) else 0
    return e.problem(f"{bound} {e.limit} {unit if e.limit == 1 else units}", str(have))


def explain(error: js_exceptions.ValidationError) -> SchemaProblem:
    """The problem ``error`` reports, in the form above."""
    if error.validator in WEAK:
        return _alternatives(error)
    e = _Failed.of(error)
    keyword, value = e.keyword, e.value
    if keyword == "type":
        return e.problem(_types(e.limit), _typed(value))
    if keyword in ("maxLength", "minLength", "maxItems", "minItems"):
        return _length(e)
    if keyword in ("maxProperties", "minProperties"):
        return _length(e)
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return e.problem(_bound(e), shown(value))
    if keyword == "multipleOf":
        return e.problem(f"a multiple of {e.limit}", shown(value))
    if keyword == "enum":
        options = list(e.limit)
        return e.problem(f"one of {_listing(options)}", shown(value) + _guess(value, options))
    if keyword == "const":
        return e.problem(f"exactly {shown(e.limit)}", shown(value))
    if keyword == "pattern":
        return e.problem(f"a string matching the pattern {shorten(str(e.limit))}", shown(value))
    if keyword == "required":
        return _required(e)
    if keyword == "additionalProperties" and e.limit is False:
        return _additional(e)
    if keyword == "uniqueItems":
        return _unique(e)
    if keyword == "dependentRequired":
        return _dependent(e)
    if e.is_false:  # jsonschema does not say where: its error for a false schema has no path
        return e.problem(
            "no value where the schema is false (a property or item it forbids)", _typed(value)
        )
    return _fallback(e)


_MERGEABLE = frozenset({"type", "const", "enum"})


def _alternatives(error: js_exceptions.ValidationError) -> SchemaProblem:
    """A failed ``anyOf``/``oneOf``. When every alternative refused the value itself for its
    type or value, what any of them takes (``a string or null``, ``one of "a", "b"``);
    otherwise the closest alternative's problem, saying it is one of several."""
    e = _Failed.of(error)
    count = len(e.limit)
    if not error.context:  # oneOf: more than one alternative took it
        return e.problem(
            f"a value that exactly one of the {count} alternatives ({e.keyword}) takes",
            f"{_typed(e.value)}, which more than one takes",
        )
    own: dict[int, _Failed] = {}
    for sub in error.context:
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
        if isinstance(branch, int) and not sub.relative_path and sub.validator in _MERGEABLE:
            own.setdefault(branch, _Failed.of(sub))
    if len(own) == count:
        return e.problem(_either(list(own.values())), _typed(e.value))
    nearest = explain(closest(error))
    note = f" (the closest of the {count} alternatives of {e.keyword})"
    return replace(nearest, message=nearest.message + note)


def _either(refusals: list[_Failed]) -> str:
    """What any of the alternatives takes: their types, then their values."""
    types: list[str] = []
    values: list[Any] = []
    for refusal in refusals:
        if refusal.keyword == "type":
            for name in _types(refusal.limit).split(" or "):
                if name not in types:
                    types.append(name)
        elif refusal.keyword == "const":
            values.append(refusal.limit)
        else:
            values.extend(refusal.limit)
    parts = [*types]
    if values:
        parts.append(f"one of {_listing(values)}" if len(values) > 1 else shown(values[0]))
    return " or ".join(parts)
