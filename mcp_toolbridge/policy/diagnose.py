"""Policy-file error messages that point at the line and suggest the closest valid name.

``policy.toml: line 7: rules[2].acton: unknown key; did you mean "action"? (valid: permission,
pattern, action)``. pydantic says which key path failed; :mod:`.toml_lines` says where it is
written; the model says what would have been valid there.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from mcp_toolbridge.policy.toml_lines import key_lines, line_of

_UNION_TAGS = ("str", "str-enum", "int", "float", "bool", "list", "dict")
_CLASS_NAME = re.compile(r"(?:[A-Z][a-z0-9]+){2,}")


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The valid name ``name`` most likely meant, when one is close enough."""
    import difflib  # a typo's: not imported by a start without one

    found = difflib.get_close_matches(name, sorted(set(choices)), n=1, cutoff=0.6)
    return found[0] if found else None


def dotted(loc: Sequence[int | str]) -> str:
    """``("rules", 2, "action")`` -> ``rules[2].action`` (pydantic's union tags left out)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _is_tag(part):
            out += f".{part}" if out else part
    return out


def _is_tag(part: str) -> bool:
    """pydantic's name for a member of a union (``str``, ``PrefixPattern``), not a key."""
    return (
        part in _UNION_TAGS
        or _CLASS_NAME.fullmatch(part) is not None
        or part.startswith(("literal[", "list[", "function-"))
    )


def key_path(loc: Sequence[int | str]) -> tuple[int | str, ...]:
    """The key path as written in the file (union tags removed)."""
    return tuple(p for p in loc if isinstance(p, int) or not _is_tag(p))


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def fields_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys a model accepts at ``loc`` (the path to a table), or [] when unknown."""
    current: list[Any] = [model]
    for part in loc:
        following: list[Any] = []
        for candidate in current:
            for member in _members(candidate):
                origin = typing.get_origin(member)
                if isinstance(part, int) and origin in (list, tuple):
                    following += _members(typing.get_args(member)[0])
                elif isinstance(member, type) and issubclass(member, BaseModel):
                    if member.__name__ == part:
                        following.append(member)
                    elif isinstance(part, str) and part in member.model_fields:
                        following += _members(member.model_fields[part].annotation)
        current = following
    return [
        name
        for member in current
        if isinstance(member, type) and issubclass(member, BaseModel)
        for name in member.model_fields
    ]


def _table_header(loc: Sequence[int | str]) -> str:
    """How the table holding ``loc``'s last key is opened in TOML: ``[requires]``,
    ``[[rules]]``."""
    keys = [p for p in key_path(loc[:-1]) if isinstance(p, str)]
    many = any(isinstance(p, int) for p in loc[:-1])
    return f"[[{'.'.join(keys)}]]" if many else f"[{'.'.join(keys)}]"


def _explain(error: ErrorDetails, model: type[BaseModel]) -> str:
    loc = error["loc"]
    path = key_path(loc)
    key = path[-1] if path and isinstance(path[-1], str) else ""
    if error["type"] == "extra_forbidden" and len(path) > 1 and key in model.model_fields:
        table = _table_header(loc)
        return (
            f"unknown key here: {key} is a top-level key, so it goes above the first [table] "
            f"(in TOML every key after {table} belongs to that table)"
        )
    if error["type"] == "list_type" and key and isinstance(error.get("input"), str):
        written = json.dumps([error["input"]], ensure_ascii=False)
        return f"a list is expected here: {key} = {written}"
    if error["type"] == "list_type" and key and isinstance(error.get("input"), dict):
        if tables := _list_of_tables(model, loc):
            return tables
    if error["type"] == "extra_forbidden":
        valid = fields_at(model, loc[:-1])
        guess = closest(str(loc[-1]), valid)
        hint = f'did you mean "{guess}"? ' if guess else ""
        return f"unknown key; {hint}(valid here: {', '.join(valid)})" if valid else "unknown key"
    message = error["msg"]
    if error["type"] == "literal_error" and isinstance(error.get("input"), str):
        expected = re.findall(r"'([^']*)'", str((error.get("ctx") or {}).get("expected", "")))
        guess = closest(error["input"], expected)
        if guess is not None:
            message += f'; did you mean "{guess}"?'
    return message


_TABLE_EXAMPLES = {
    "rules": ('permission = "bash"', 'pattern = "git status"', 'action = "allow"'),
    "callers": ('subject = "alice"', 'allow = ["bash=git status"]'),
    "shell": ('cmd = "git"',),
}


def _list_of_tables(model: type[BaseModel], loc: Sequence[int | str]) -> str | None:
    """A table written where a list of tables goes (``[rules]`` for ``[[rules]]``): what to
    write instead, with a short example; None when a list of tables does not go there."""
    keys = fields_at(model, (*loc, 0))
    if not keys:
        return None
    path = [p for p in key_path(loc) if isinstance(p, str)]
    header = ".".join(path)
    example = _TABLE_EXAMPLES.get(path[-1], tuple(f"{k} = ..." for k in keys[:2]))
    return (
        f"a list of tables is expected here, one [[{header}]] (two brackets) per entry, not a "
        f"single [{header}] table; for example: [[{header}]] {' '.join(example)} "
        f"(keys: {', '.join(keys)})"
    )


def describe(exc: ValidationError, model: type[BaseModel], text: str) -> str:
    """Every error of ``exc`` as ``line N: key: problem``, in line order, joined by ``; ``."""
    lines = key_lines(text)
    found: list[tuple[int, str]] = []
    for error in exc.errors():
        line = line_of(lines, key_path(error["loc"]))
        parts = (f"line {line}" if line is not None else "", dotted(error["loc"]))
        where = ": ".join(p for p in parts if p)
        problem = _explain(error, model)
        found.append((line or 0, f"{where}: {problem}" if where else problem))
    return "; ".join(text for _, text in sorted(found, key=lambda f: f[0]))
